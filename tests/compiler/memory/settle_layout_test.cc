// tests/compiler/memory/settle_layout_test.cc — settling
// (compiler/memory/settle_layout.h): an overlapping layout comes back valid in
// its own vertical order, pushes travel up through a column to where there is
// spare space, and a valid layout never rises.
#include <gtest/gtest.h>

#include <random>

#include "compiler/memory/large_neighbourhood_search.h"
#include "compiler/memory/settle_layout.h"
#include "memory_test_util.h"

namespace keel::memory {
namespace {

TEST(SettleLayout, APushTravelsUpTheColumnToTheSpareSpace) {
  // Steps 0-9: a (4 bytes at 0) and b (4 bytes at 2) overlap by 2 bytes;
  // above b lie c (3 bytes at 6, steps 5-9, with 3 bytes free above it up to
  // 12) and d (4 bytes at 8, steps 0-4, with 2 bytes free below it).
  // Settling keeps a below b and lifts b onto a and c onto b, into the spare
  // space: no overlap, and the top stays 12.
  const std::vector<internal::PackingItem> items = {
      {4, 1, 0, 10},  // a
      {4, 1, 0, 10},  // b
      {3, 1, 5, 10},  // c
      {4, 1, 0, 5},   // d
  };
  internal::OverlapGraph graph;
  ASSERT_TRUE(internal::BuildOverlapGraph(items, &graph));
  const std::vector<uint64_t> overlapping = {0, 2, 6, 8};
  const std::vector<uint64_t> settled = internal::SettleLayout(items, graph, overlapping);
  EXPECT_EQ(settled, (std::vector<uint64_t>{0, 4, 8, 8}));
  EXPECT_TRUE(testing::ValidPacking(items, settled));
  EXPECT_EQ(testing::PackingTop(items, settled), 12u);
}

TEST(SettleLayout, AlignedOffsetsAndTiesByIndex) {
  // Equal offsets: the lower index stays below; b's alignment of 16 lifts it
  // from 5 to 16.
  const std::vector<internal::PackingItem> items = {{5, 1, 0, 4}, {8, 16, 2, 6}};
  internal::OverlapGraph graph;
  ASSERT_TRUE(internal::BuildOverlapGraph(items, &graph));
  EXPECT_EQ(internal::SettleLayout(items, graph, {3, 3}), (std::vector<uint64_t>{0, 16}));
}

TEST(SettleLayout, ValidAlwaysAndNoItemRisesFromAValidLayout) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const std::vector<internal::PackingItem> items =
        testing::ItemsOf(testing::RandomLifetimes(seed, 20 + seed % 30, 12, 300, seed % 2 == 0));
    internal::OverlapGraph graph;
    ASSERT_TRUE(internal::BuildOverlapGraph(items, &graph));
    // Random offsets: overlaps everywhere.
    std::mt19937 rng(seed);
    std::vector<uint64_t> random(items.size());
    for (uint64_t& o : random) o = rng() % 2000;
    const std::vector<uint64_t> settled = internal::SettleLayout(items, graph, random);
    ASSERT_TRUE(testing::ValidPacking(items, settled)) << "seed " << seed;
    // A valid layout (the greedy construction) settles with no item higher
    // than it was.
    const std::vector<uint64_t> valid = internal::ConstructLayout(items, graph);
    const std::vector<uint64_t> resettled = internal::SettleLayout(items, graph, valid);
    ASSERT_TRUE(testing::ValidPacking(items, resettled)) << "seed " << seed;
    for (size_t i = 0; i < items.size(); ++i) EXPECT_LE(resettled[i], valid[i]) << "seed " << seed << " item " << i;
  }
}

}  // namespace
}  // namespace keel::memory
