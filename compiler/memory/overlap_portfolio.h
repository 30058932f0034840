// compiler/memory/overlap_portfolio.h — overlap minimization (overlap_search.h)
// run by two threads at once on differently ordered copies of one problem,
// the lower layout kept: a portfolio that uses a second core within the same
// wall-clock limit.
//
// Why: overlap minimization's path depends on the order of the items (a pass
// moves the overlapping items in index order; ties go to the lowest offset),
// and from the same start two orders end at different tops (10,000-buffer
// perfect packing of seed 2, `exact` 10 s on the items as given, reversed and
// four shuffles: 1.0139-1.0162x the optimum). The second member works on the
// items in reversed order, so the two explore different paths; each gets the
// whole deadline (the machine has the cores: the searches are single-threaded).
//
// Stop: a member that reaches `lower_bound` (the optimum) raises a shared flag
// (RefineLimits::stop) and the other ends at its next check, so a proven
// optimum costs no more wall time than one member's search.
//
// Determinism: none promised — each member stops at the deadline, and which
// member wins depends on how far each got (the caller uses it only where a
// time limit, not a node budget, ends the search: `exact`'s optimization form
// without a node budget; keelc's `auto` never runs it). On a machine with one
// hardware thread, or with `max_moves` limited (a budget that must decide the
// result), it is MinimizeOverlap itself. Ties go to the first member (the
// items as given).
//
// Cost: twice the CPU time of MinimizeOverlap and a second overlap graph
// (O(n + pairs)) for the reversed copy. Thread-safety: each call has its own
// state; `items`, `graph` and `offsets` are read by both threads.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/memory/overlap_search.h"

namespace keel::memory::internal {

RefineResult MinimizeOverlapPortfolio(const std::vector<PackingItem>& items, const OverlapGraph& graph,
                                      std::vector<uint64_t> offsets, uint64_t lower_bound,
                                      const RefineLimits& limits);

}  // namespace keel::memory::internal
