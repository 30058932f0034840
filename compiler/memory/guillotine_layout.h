// compiler/memory/guillotine_layout.h — a layout without slack rebuilt by
// guillotine cuts, top down.
//
// Problem: that of skyline_search.h, for items whose live bytes are the same,
// H, at every step of their time span (no slack anywhere: the peak-live bound
// H is the only height a layout can have). Such a layout, if guillotine cuts
// split it, has a first cut: across time (no item lives on both sides of
// some time point: the parts are independent), or across bytes (the items
// split into a lower band and an upper band, each again of constant live
// bytes over the whole span). The search looks for that cut and recurses:
// time cuts are forced; an item spanning the whole span is a band of its own;
// otherwise it looks for a proper subset of the items, containing a chosen
// item, whose live bytes are constant — at each time point inside the span
// its items ending there and those starting there must have equal sums —
// deciding one time point at a time (every undecided item ending or starting
// there, subsets with the fewest items first), and backtracks over those
// subsets when a band does not split further. The bands of a cut may go in
// any order (each spans the whole span), so one item's band is as good a
// lower band as any.
//
// Why: the block construction (block_merging.h) rebuilds the same cuts bottom
// up, from pairs of buffers that happen to share a lifetime or a size, and
// where thousands of buffers of a few bytes and steps crowd a strip, pairs
// agree by chance and the blocks fit nowhere. A band's constant live bytes is
// a condition over all of its time points at once, which chance rarely meets.
// On a zero-slack strip of 5,716 such buffers `exact`'s other engines end
// 1.004–1.055× the height in 10 s (MEASUREMENTS.md, 2026-11-27).
//
// A span of at most a few hundred items goes to the complete skyline search
// (fail-first) first, which also refutes a span left without a layout by a
// band found by chance. Incomplete otherwise: layouts that no guillotine cut
// splits (and alignments the cuts do not respect) are not found, and a band
// search gives a seed up after an allowance of steps; `max_nodes` and the
// deadline bound the whole search. Deterministic. Errors: none (an empty
// result: not found). An experiment (MEASUREMENTS.md, 2026-11-27): it rebuilds
// strips of up to 2,000 such buffers in 0.2 s, not the 5,716 of 10000/2's.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "compiler/memory/skyline_search.h"

namespace keel::memory::internal {

// Whether the items' live bytes are the same at every step from the first
// begin to the last end (and that amount, else 0).
uint64_t ConstantLiveBytes(const std::vector<PackingItem>& items);

// A layout of `items` within ConstantLiveBytes(items) (one offset per item),
// or empty where none was found within `max_nodes` search steps and the
// deadline.
std::vector<uint64_t> GuillotineLayout(const std::vector<PackingItem>& items, uint64_t max_nodes,
                                       std::chrono::steady_clock::time_point deadline);

}  // namespace keel::memory::internal
