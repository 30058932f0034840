// compiler/memory/overlap_search.h — lowering a layout's top by overlap
// minimization: fix a capacity below the top, let items overlap, and move
// them one at a time to where they overlap least, until nothing overlaps.
//
// Problem: that of skyline_search.h (offsets for items with fixed lifetimes, no
// two live-together items sharing bytes), minimizing the top; the input is a
// valid layout (a greedy construction, or anything better).
//
// Why beside the large-neighbourhood search (large_neighbourhood_search.h):
// its repairs re-place a neighbourhood exactly under a target C, all of it or
// nothing; on large problems whose waste is spread thin (1-3% above the
// optimum, at every height) the top item cannot drop even one byte unless
// the items under it move too, across its whole lifetime and beyond, the exact
// search inside a neighbourhood ends unknown, and no repair succeeds. Letting
// items overlap turns "fits or not" into a quantity that moves can lower step
// by step: the method of the best strip-packing heuristics (overlap
// minimization with guided local search: Egeblad et al.; Imahori and Yagiura;
// Umetani et al.), here in one dimension, since lifetimes are fixed.
//
// Method. With the best top T and the peak-live bound L, pick a capacity
// C < T (the step T - C halves after a failure and doubles after a success,
// unless the capacity before it failed),
// and from the best layout push every item ending above C down to end at C.
// Then, while some pair of live-together items shares bytes:
//
//   move      each overlapping item (in index order) goes to the offset in
//             [0, C - size] with the least weighted overlap
//             Σ_y w(x, y) · |lifetimes' intersection| · |bytes' intersection|
//             over the items y it lives with — a piecewise-linear function of
//             the offset, minimized exactly by a sweep over its breakpoints
//             (aligned); ties go to the lowest offset; it moves only when
//             that is strictly less than where it is;
//   penalize  when a whole pass moves nothing (a local minimum), every pair
//             still overlapping gets its weight w raised by one (guided local
//             search), so that the next passes push those pairs apart.
//
// No overlap left: the layout fits in C, becomes the best, and a lower C is
// tried. A capacity not reached within kMovesPerItem moves per item (at least
// kMinMoves) goes to a last step, the window repair: the few items still
// overlapping (at most kMaxRepairOverlaps), in clusters, are freed with the
// items around them in time and bytes and re-placed exactly under C, every
// other item fixed (window_resolve.h; on 100- and 300-buffer perfect
// packings the moves leave 2-20 items overlapping, which this places at
// once: the optimum from 3 to 7 of 8 greedy starts at 100 buffers, 0 to 4 at
// 300). When that fails too, the capacity is given up and the next, higher
// one resumes from the state it left (the weights kept), not from the best
// layout; when even T - 1 is given up, the budget doubles (up to
// kMaxPatience times).
//
// Settling: whenever at most kMaxSettleOverlaps items overlap, at most half
// as many as when last settled at this capacity, and when the capacity is
// given up, the overlapping state is settled (settle_layout.h: every item
// falls onto the items below it in the state's vertical order, so a few
// bytes of overlap push a column up into the spare space above it, wherever
// that lies), and the lowest settled layout below the best top becomes the
// best (C is still given up, with the step kept, and the next capacity
// resumes from the overlapping state; greedy starts of 300-buffer perfect
// packings, 200,000 moves: the optimum on 5 of 8 instead of 4). The layout
// returned is settled once more at the end (a reached capacity leaves the
// moves' layout, whose items need not rest on anything; settling a valid
// layout never raises its top).
//
// Every layout returned is overlap-free (the input's when nothing better was
// found).
//
// Determinism: no randomness; the move budget (RefineLimits::max_moves) and
// the input decide the result; the deadline is an outer stop
// (RefineResult::stopped_by_deadline).
//
// On 10,000-buffer perfect packings the repair never succeeds: the waste is
// spread over every height (1-2% of each time step's bytes), so the room a
// cluster needs exists only in a band of hundreds of kilobytes, more items
// than a repair may free.
//
// Cost: a move is O(d), d the item's overlaps in time (its 4d breakpoints
// radix-sorted: at 1 MiB capacities in two passes, in three below 1,024
// breakpoints); a repair's search nodes count as moves, kNodesPerMove to
// one. Memory O(pairs): the caller's overlap graph
// (large_neighbourhood_search.h), a pair's weight at both of its entries,
// and each entry's partner. Thread-safety: each call has its own state.
// Errors: none (the caller validates items: sizes > 0, begin < end,
// alignments powers of two).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/memory/large_neighbourhood_search.h"
#include "compiler/memory/skyline_search.h"

namespace keel::memory::internal {

struct RefineLimits {
  SearchClock::time_point deadline = SearchClock::time_point::max();
  uint64_t max_moves = UINT64_MAX;  // item moves tried, by all capacities together
};

struct RefineResult {
  std::vector<uint64_t> offsets;  // a valid layout, top <= the starting layout's
  uint64_t top = 0;
  uint64_t moves = 0;         // item moves tried (the budget's unit)
  uint64_t improvements = 0;  // capacities reached
  bool stopped_by_deadline = false;
};

// `offsets`: a valid starting layout; `lower_bound`: a proven bound (the
// search stops there).
RefineResult MinimizeOverlap(const std::vector<PackingItem>& items, const OverlapGraph& graph,
                             std::vector<uint64_t> offsets, uint64_t lower_bound, const RefineLimits& limits);

// Measurement only (`keel_perfect_packing_table --trace`): when set, called
// with the number of items and the top at a call's start and each time its
// best layout gets lower. Process-wide; null (the default) traces nothing.
using OverlapTrace = void (*)(size_t items, uint64_t top);
void SetOverlapTrace(OverlapTrace trace);

}  // namespace keel::memory::internal
