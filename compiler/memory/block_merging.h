// compiler/memory/block_merging.h — a construction for the packing searches:
// merge buffers into rectangular blocks, and pack the (far fewer) blocks.
//
// Two buffers (or blocks) form a rectangle in the time x bytes plane when
//   - they have the same lifetime: stacked, one on the other, they are a block
//     of that lifetime whose size is the sum (plus alignment padding); or
//   - they have the same size and one starts where the other ends: side by side
//     at the same offset, they are a block of that size living over both.
// MergeIntoBlocks applies both rules until neither applies (all buffers of one
// lifetime are stacked at once, largest alignment then larger size lowest; time-
// adjacent blocks of one size are chained left to right, and where several
// could follow, the one ending first does). Blocks are buffers like
// any other, so the skyline search (skyline_search.h) packs them, and every
// layout of the blocks expands (ExpandBlockLayout) into a valid layout of the
// buffers: inside a block its members never share a byte while live together.
//
// Why. A layout without waste is a tiling of the time x capacity rectangle, and
// a tiling cut by guillotine cuts — the kind built by bench/memory/perfect_packing.h,
// and common in real schedules (a tensor freed where a same-size one is made,
// the same shapes live over the same steps) — is rebuilt bottom-up by exactly
// these two rules: each cut joins two rectangles that share a lifetime (a cut
// across bytes) or a size and a time point (a cut across time). A problem of
// thousands of buffers that no search decides then becomes tens or hundreds of
// blocks (MergeRules says why not always one).
//
// What it loses. The blocks fix the buffers' relative offsets, so the merged
// problem may need more bytes than the buffers do (two same-lifetime buffers
// may be apart in every optimal layout): callers use it as one more way to find
// a layout, never as a proof (a "no" on the blocks says nothing).
//
// Cost: O(n log n) per round of merging, rounds at most the depth of the
// merge tree. Deterministic (sorting only, no hashing). Thread-safety: none
// needed (pure functions). Errors: none (the caller validates items: sizes > 0,
// begin < end, alignments powers of two).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compiler/memory/skyline_search.h"

namespace keel::memory::internal {

struct BlockProblem {
  std::vector<PackingItem> blocks;  // the rectangles left, as buffers to pack
  // Per input item: the block holding it and its offset inside that block.
  std::vector<int32_t> block_of;
  std::vector<uint64_t> offset_in_block;
};

// How boldly to merge. Where many buffers share a few time points (short
// lifetimes in a busy stretch) or a size (a few bytes), unrelated buffers share
// a lifetime, or meet in time with one size, by chance, and merging them can
// make the blocks unpackable; which order of the rules avoids that differs
// from problem to problem, so exact_planner.h tries several.
struct MergeRules {
  // A group of more same-lifetime blocks than this is not stacked (1: no
  // stacking, chains only).
  size_t max_stack = SIZE_MAX;
  // Chain until nothing chains, then stack, and again (a part completed by
  // chaining then joins its own sibling, not a stranger of the same lifetime);
  // else each round stacks, then chains.
  bool chains_first = false;
};

// The ways of merging that `exact` tries, in its order (exact_planner.cc's
// BlockConstruction): stack then chain; chains first; stacks of pairs only;
// chains only.
inline constexpr MergeRules kMergeVariants[] = {{SIZE_MAX, false}, {SIZE_MAX, true}, {2, false}, {1, false}};

BlockProblem MergeIntoBlocks(const std::vector<PackingItem>& items, const MergeRules& rules = {});

// The items' offsets for `block_offsets` (one per block, a layout of
// problem.blocks).
std::vector<uint64_t> ExpandBlockLayout(const BlockProblem& problem, const std::vector<uint64_t>& block_offsets);

}  // namespace keel::memory::internal
