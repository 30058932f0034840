// tests/compiler/memory/block_merging_test.cc — buffers merged into blocks
// (block_merging.h): the two rules on hand-made cases, guillotine packings
// rebuilt into one block, every block layout expanding into a valid layout,
// and `exact` reaching the known optimum of 1,000-buffer perfect packings
// through the blocks.
#include <gtest/gtest.h>

#include "bench/memory/block_quality.h"
#include "bench/memory/perfect_packing.h"
#include "compiler/memory/block_merging.h"
#include "compiler/memory/planner.h"
#include "memory_test_util.h"

namespace keel::memory {
namespace {

using internal::MergeIntoBlocks;
using internal::MergeRules;
using internal::PackingItem;

// No two items live together share a byte; alignments hold; all under `capacity`.
bool ValidLayout(const std::vector<PackingItem>& items, const std::vector<uint64_t>& off, uint64_t capacity) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (off[i] + items[i].size > capacity || off[i] % items[i].alignment != 0) return false;
    for (size_t j = i + 1; j < items.size(); ++j) {
      const bool meet = std::max(items[i].begin, items[j].begin) < std::min(items[i].end, items[j].end);
      if (meet && off[i] < off[j] + items[j].size && off[j] < off[i] + items[i].size) return false;
    }
  }
  return true;
}

// A layout of the blocks: stacked one on the other, each aligned.
std::vector<uint64_t> StackedBlocks(const internal::BlockProblem& p, uint64_t* top) {
  std::vector<uint64_t> offsets;
  uint64_t height = 0;
  for (const PackingItem& b : p.blocks) {
    height = testing::AlignUpTest(height, b.alignment);
    offsets.push_back(height);
    height += b.size;
  }
  *top = height;
  return offsets;
}

TEST(BlockMerging, StacksBuffersOfOneLifetimeLargerAlignmentLowest) {
  const std::vector<PackingItem> items = {{3, 1, 0, 4}, {8, 8, 0, 4}, {5, 1, 4, 6}};
  const internal::BlockProblem p = MergeIntoBlocks(items);
  ASSERT_EQ(p.blocks.size(), 2u);
  const PackingItem& stack = p.blocks[p.block_of[0]];
  EXPECT_EQ(p.block_of[0], p.block_of[1]);
  EXPECT_EQ(stack.size, 11u);  // 8 at 0, then 3 at 8
  EXPECT_EQ(stack.alignment, 8u);
  EXPECT_EQ(p.offset_in_block[1], 0u);
  EXPECT_EQ(p.offset_in_block[0], 8u);
  EXPECT_NE(p.block_of[2], p.block_of[0]);  // different lifetime and size: alone
}

TEST(BlockMerging, ChainsBuffersOfOneSizeThatMeetInTime) {
  const std::vector<PackingItem> items = {{4, 1, 5, 9}, {4, 1, 0, 5}, {4, 1, 9, 12}, {4, 1, 13, 20}};
  const internal::BlockProblem p = MergeIntoBlocks(items);
  ASSERT_EQ(p.blocks.size(), 2u);  // [0, 12) of three buffers; [13, 20) does not meet it
  const PackingItem& chain = p.blocks[p.block_of[0]];
  EXPECT_EQ(chain.begin, 0);
  EXPECT_EQ(chain.end, 12);
  EXPECT_EQ(chain.size, 4u);
  EXPECT_EQ(p.block_of[1], p.block_of[0]);
  EXPECT_EQ(p.block_of[2], p.block_of[0]);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(p.offset_in_block[i], 0u);
  // Chains only, no stacking: the same here.
  EXPECT_EQ(MergeIntoBlocks(items, MergeRules{1, false}).blocks.size(), 2u);
}

TEST(BlockMerging, RebuildsAGuillotinePackingIntoOneBlock) {
  // [0, 10) x [0, 8): cut across bytes at 3; the lower part cut across time
  // at 4, the upper part across bytes at 6 and its top across time at 7.
  const std::vector<PackingItem> items = {
      {3, 1, 0, 4}, {3, 1, 4, 10},                // lower part: one size, meeting at 4
      {3, 1, 0, 10},                              // [3, 6)
      {2, 1, 0, 7}, {2, 1, 7, 10}};               // [6, 8)
  for (const MergeRules& rules : {MergeRules{}, MergeRules{SIZE_MAX, true}}) {
    const internal::BlockProblem p = MergeIntoBlocks(items, rules);
    ASSERT_EQ(p.blocks.size(), 1u);
    EXPECT_EQ(p.blocks[0].size, 8u);
    EXPECT_EQ(p.blocks[0].begin, 0);
    EXPECT_EQ(p.blocks[0].end, 10);
    EXPECT_TRUE(ValidLayout(items, internal::ExpandBlockLayout(p, {0}), 8));
  }
}

TEST(BlockMerging, PerfectPackingsOf100BuffersBecomeOneBlock) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    const std::vector<PackingItem> items = testing::ItemsOf(bench::PerfectPacking(100, seed));
    const internal::BlockProblem p = MergeIntoBlocks(items);
    ASSERT_EQ(p.blocks.size(), 1u) << "seed " << seed;
    EXPECT_EQ(p.blocks[0].size, uint64_t{1} << 20);
    EXPECT_TRUE(ValidLayout(items, internal::ExpandBlockLayout(p, {0}), uint64_t{1} << 20)) << "seed " << seed;
  }
}

TEST(PerfectPacking, TheGeneratorsLayoutIsValidAndFillsTheCapacity) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    const bench::PerfectPackingProblem p = bench::PerfectPackingWithLayout(300, seed);
    ASSERT_EQ(p.offsets.size(), p.tensors.size());
    const std::vector<PackingItem> items = testing::ItemsOf(p.tensors);
    EXPECT_TRUE(ValidLayout(items, p.offsets, uint64_t{1} << 20)) << "seed " << seed;
    // The same problem as PerfectPacking's.
    const std::vector<TensorLifetime> plain = bench::PerfectPacking(300, seed);
    ASSERT_EQ(plain.size(), p.tensors.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(plain[i].size, p.tensors[i].size);
      EXPECT_EQ(plain[i].first_use, p.tensors[i].first_use);
      EXPECT_EQ(plain[i].last_use, p.tensors[i].last_use);
    }
  }
}

TEST(BlockQuality, BlocksRebuildingAGuillotineLayoutAreItsRectangles) {
  // On these problems stacking then chaining rebuilds the whole layout (one
  // block), and chains alone merge no two buffers of one size by chance;
  // keel_block_merge_table shows where the other merges do.
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    const bench::PerfectPackingProblem p = bench::PerfectPackingWithLayout(100, seed);
    const std::vector<PackingItem> items = testing::ItemsOf(p.tensors);
    for (const MergeRules& rules : {MergeRules{SIZE_MAX, false}, MergeRules{1, false}}) {
      const internal::BlockProblem blocks = MergeIntoBlocks(items, rules);
      const bench::BlockQuality q = bench::MeasureBlocks(items, p.offsets, blocks);
      EXPECT_EQ(q.blocks, blocks.blocks.size());
      EXPECT_GT(q.blocks, 0u);
      EXPECT_EQ(q.not_rectangles, 0u) << "seed " << seed << " max_stack " << rules.max_stack;
      EXPECT_EQ(q.not_rectangle_area, 0.0);
    }
  }
}

TEST(BlockQuality, CountsABlockOfBuffersThatAreApartInTheLayout) {
  // Layout (capacity 3, one step): a at 0, c at 1, b at 2.
  const std::vector<PackingItem> items = {{1, 1, 0, 1}, {1, 1, 0, 1}, {1, 1, 0, 1}};
  const std::vector<uint64_t> layout = {0, 2, 1};
  internal::BlockProblem apart;  // a and b stacked (c lies between them), c alone
  apart.blocks = {{2, 1, 0, 1}, {1, 1, 0, 1}};
  apart.block_of = {0, 0, 1};
  apart.offset_in_block = {0, 1, 0};
  bench::BlockQuality q = bench::MeasureBlocks(items, layout, apart);
  EXPECT_EQ(q.blocks, 2u);
  EXPECT_EQ(q.not_rectangles, 1u);
  EXPECT_DOUBLE_EQ(q.not_rectangle_area, 2.0 / 3.0);
  internal::BlockProblem adjacent = apart;  // b and c stacked (in either order), a alone
  adjacent.block_of = {1, 0, 0};
  adjacent.offset_in_block = {0, 0, 1};
  q = bench::MeasureBlocks(items, layout, adjacent);
  EXPECT_EQ(q.not_rectangles, 0u);
  EXPECT_EQ(q.not_rectangle_area, 0.0);
}

TEST(BlockMerging, EveryBlockLayoutExpandsIntoAValidLayout) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    // Few time points and sizes, so that both rules fire often (and by chance).
    const std::vector<TensorLifetime> ts = testing::RandomLifetimes(seed, 40, 8, 6, seed % 2 == 0);
    const std::vector<PackingItem> items = testing::ItemsOf(ts);
    for (const MergeRules& rules : internal::kMergeVariants) {
      const internal::BlockProblem p = MergeIntoBlocks(items, rules);
      ASSERT_EQ(p.block_of.size(), items.size());
      uint64_t top = 0;
      const std::vector<uint64_t> offsets = internal::ExpandBlockLayout(p, StackedBlocks(p, &top));
      EXPECT_TRUE(ValidLayout(items, offsets, top)) << "seed " << seed << " max_stack " << rules.max_stack;
      // Each block covers its parts' lifetimes and holds them within its size.
      for (size_t i = 0; i < items.size(); ++i) {
        const PackingItem& b = p.blocks[p.block_of[i]];
        EXPECT_LE(b.begin, items[i].begin);
        EXPECT_GE(b.end, items[i].end);
        EXPECT_LE(p.offset_in_block[i] + items[i].size, b.size);
      }
    }
  }
}

TEST(ExactPlanner, FindsTheKnownOptimumOf1000BufferPerfectPackingsThroughBlocks) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    const std::vector<TensorLifetime> ts = bench::PerfectPacking(1000, seed);
    PlanOptions options;
    // No node budget (that would run the buffers' search first, with all of
    // it); the blocks decide each in under a second of the minute.
    options.time_limit_seconds = 60;
    Result<Plan> plan = (*CreatePlanner("exact"))->MakePlan(ts, options);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_TRUE(CheckPlan(ts, *plan).ok());
    EXPECT_EQ(plan->TotalBytes(), uint64_t{1} << 20) << "seed " << seed;
    EXPECT_TRUE(plan->optimal);
  }
}

}  // namespace
}  // namespace keel::memory
