// compiler/memory/window_resolve.h — re-placing the items of a time window
// exactly, every other item fixed where it is.
//
// Problem: that of skyline_search.h. Given a layout — valid, or one in which
// some items overlap (overlap_search.h's state at a capacity it has not
// reached yet) — and a set of items to free, put the freed items back below
// a capacity so that no two live-together items share a byte, without
// moving the others.
//
// Why: overlap minimization (overlap_search.h) brings a layout of 10,000
// buffers down to a capacity C until only a few dozen items still overlap,
// and then often spends its whole budget without removing the last few
// (on the 10,000-buffer perfect packings it gave up with 2-80 items
// overlapping). Those items and the items living inside the same stretch of
// time form a small problem that the complete search decides at once
// (MiniMalloc's "decomposition", here around the conflict, with the
// surroundings as obstacles).
//
// Method. Free the given items. In each time section where a freed item
// lives, a fixed item must lie entirely below the freed items' bytes there
// (it becomes the section's floor) or entirely above them (its ceiling,
// at most the capacity); a fixed item in between ("sandwiched") is freed too,
// until none is (the large-neighbourhood search's closure,
// large_neighbourhood_search.h). The freed items then go back by the
// complete skyline search between each section's floor and ceiling
// (PackBetweenBounds), in its static order and then two perturbed ones,
// within a node budget. Either every freed item is placed (the layout
// changes only there) or the layout is left as it was.
//
// The freed items are placed clear of every fixed item and of each other;
// fixed items are not looked at among themselves (where the input overlaps,
// freeing every overlapping item gives an overlap-free result). Fixed items
// above the capacity stay where they are.
//
// Determinism: depends only on the input and the node budget; the deadline is
// an outer stop. Cost: O(freed · their overlaps) for the closure, plus the
// search. Errors: none (the caller validates items).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/memory/large_neighbourhood_search.h"
#include "compiler/memory/skyline_search.h"

namespace keel::memory::internal {

// `seeds` and every item whose lifetime lies inside the time window
// [b - time_pad, e + time_pad) and whose bytes at `offsets` meet
// [l - byte_pad, h + byte_pad), where [b, e) is the hull of the seeds'
// lifetimes and [l, h) of their bytes (a rectangle of the time x bytes plane
// around them); index order.
std::vector<int32_t> ItemsInWindow(const std::vector<PackingItem>& items, const std::vector<uint64_t>& offsets,
                                   const std::vector<int32_t>& seeds, int64_t time_pad, uint64_t byte_pad);

struct WindowLimits {
  SearchClock::time_point deadline = SearchClock::time_point::max();
  uint64_t max_nodes = UINT64_MAX;  // all runs together
  size_t max_freed = SIZE_MAX;      // give up when the closure frees more
};

struct WindowOutcome {
  bool placed = false;  // every freed item re-placed below the capacity
  uint64_t nodes = 0;
  size_t freed = 0;     // items freed, sandwiched ones included
};

// Frees `free_items` (and the items sandwiched between them) and re-places
// them below `capacity`; `offsets` changes only when WindowOutcome::placed.
WindowOutcome ResolveWindow(const std::vector<PackingItem>& items, const OverlapGraph& graph,
                            std::vector<uint64_t>* offsets, std::vector<int32_t> free_items, uint64_t capacity,
                            const WindowLimits& limits);

}  // namespace keel::memory::internal
