// compiler/memory/settle_layout.h — a layout in which items may overlap made
// valid by letting every item fall, in the layout's own vertical order, onto
// the items below it.
//
// Problem: that of skyline_search.h. Given offsets in which some live-together
// items may share bytes (overlap_search.h's state at a capacity it has not
// reached), find a valid layout that keeps as much of that layout as it can.
//
// Why: overlap minimization (overlap_search.h) brings a 10,000-buffer layout
// down to a capacity C until a handful of items still overlap, and then
// either removes the last overlaps (C reached) or gives C up and resumes
// above it. The last overlaps are often a few bytes deep, and the column
// above them has spare space somewhere — at another height, hundreds of
// kilobytes away, which neither a move of one item nor a window repair
// (window_resolve.h, which frees a rectangle around the conflict) reaches.
// Settling pushes each overlapping item up by its overlap and every item
// resting on it by as much, through the whole height, until the push meets
// spare space; the spare space elsewhere falls. The result is valid and
// usually ends a little above C: below the best top found, it is a better
// layout even though C was not reached (10,000-buffer perfect packings:
// settled layouts 46 bytes above a capacity given up with 5 items
// overlapping, 1,790 below the best top).
//
// Method. The items in (height, index) order — height the offset, or any
// other key of the caller's; each goes to the lowest aligned
// offset at or above the ends of the items before it in that order that live
// at the same time (0 if none): the longest-path layout of the vertical
// order, the least top any layout keeping that order can have. For a valid
// input no item rises (the items before an item that live with it lie below
// it, and by induction stay at or below where they were), so the top never
// grows (heights = offsets); for an overlapping pair the lower height stays
// below.
//
// Cost: O(n log n + Σ overlaps). Deterministic. Errors: none (the caller
// validates items: sizes > 0, begin < end, alignments powers of two).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/memory/large_neighbourhood_search.h"
#include "compiler/memory/skyline_search.h"

namespace keel::memory::internal {

// `heights`: one per item, the vertical order (lower first, ties by index) —
// the offsets of a layout whose live-together items may overlap, or any key
// derived from them (overlap_search.h also tries the items' centres);
// returns a valid layout in that order.
std::vector<uint64_t> SettleLayout(const std::vector<PackingItem>& items, const OverlapGraph& graph,
                                   const std::vector<uint64_t>& heights);

}  // namespace keel::memory::internal
