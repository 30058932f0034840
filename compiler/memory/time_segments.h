// compiler/memory/time_segments.h — a packing problem split at the time points
// where nothing is live across: independent parts.
//
// Problem: that of skyline_search.h. Where no item lives on both sides of a
// time point t (every item ends at or before t, or begins at or after it),
// the items before t and after it never share a step, so each part is packed
// on its own and the plan's top is the highest part's top. The searches of
// `exact` already split the problem they are deciding this way as they go
// (skyline_search.h's decomposition); splitting once up front lets the
// searches that work on the whole layout (the block construction, the
// overlap minimization) work on one part at a time, each with its own share
// of the time (exact_planner.cc). Generated perfect packings whose first cut
// is across time split into a few large parts and many small ones (the
// 10,000-buffer problem of seed 3: parts of 6,157 and 2,915 buffers and 21
// of at most 254).
//
// Cost: O(n log n). Deterministic (parts in time order, items in index order
// inside each). Errors: none (the caller validates: begin < end).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/memory/skyline_search.h"

namespace keel::memory::internal {

// The items' indices, one list per independent part, parts in time order; a
// problem that does not split gives one part of every item (none: no part).
std::vector<std::vector<int32_t>> SplitAtIdleTimes(const std::vector<PackingItem>& items);

}  // namespace keel::memory::internal
