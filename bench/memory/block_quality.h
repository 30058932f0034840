// bench/memory/block_quality.h — how many of a block construction's blocks
// (compiler/memory/block_merging.h) are rectangles of a known optimal layout.
//
// A block is a rectangle of a layout when its parts, at their offsets in that
// layout, tile the block's lifetime x [lowest offset, lowest offset + block
// size) exactly: their bounding box has the block's height and its area is
// the sum of the parts' areas (parts never overlap in a valid layout). The
// order of the parts inside the block does not matter: stacked bands of one
// lifetime can be permuted, so a block that is a rectangle of the layout can be
// placed where the rectangle is, and the optimum stays reachable. A block that
// is not (unrelated buffers merged by chance, or a stack formed before a part
// of it) can make the blocks need more bytes than the buffers.
//
// Used by keel_block_merge_table on generated problems (perfect_packing.h),
// whose generator's layout is optimal. Pure functions; no errors (the layout
// must be valid for the items and the problem made from them).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "compiler/memory/block_merging.h"

namespace keel::memory::bench {

struct BlockQuality {
  size_t blocks = 0;
  size_t not_rectangles = 0;        // blocks that are not rectangles of the layout
  double not_rectangle_area = 0.0;  // their share of the total area (bytes x steps)
};

inline BlockQuality MeasureBlocks(const std::vector<internal::PackingItem>& items, const std::vector<uint64_t>& layout,
                                  const internal::BlockProblem& problem) {
  const size_t m = problem.blocks.size();
  std::vector<uint64_t> low(m, UINT64_MAX), high(m, 0);
  std::vector<double> area(m, 0.0);
  double total = 0.0;
  for (size_t i = 0; i < items.size(); ++i) {
    const int32_t b = problem.block_of[i];
    low[b] = std::min(low[b], layout[i]);
    high[b] = std::max(high[b], layout[i] + items[i].size);
    const double a = static_cast<double>(items[i].size) * static_cast<double>(items[i].end - items[i].begin);
    area[b] += a;
    total += a;
  }
  BlockQuality q;
  q.blocks = m;
  double wrong = 0.0;
  for (size_t b = 0; b < m; ++b) {
    const internal::PackingItem& block = problem.blocks[b];
    const double box = static_cast<double>(high[b] - low[b]) * static_cast<double>(block.end - block.begin);
    if (high[b] - low[b] != block.size || box != area[b]) {
      ++q.not_rectangles;
      wrong += area[b];
    }
  }
  q.not_rectangle_area = total > 0 ? wrong / total : 0.0;
  return q;
}

}  // namespace keel::memory::bench
