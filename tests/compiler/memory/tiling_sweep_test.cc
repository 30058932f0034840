// tests/compiler/memory/tiling_sweep_test.cc — the PQ-tree time sweep
// (compiler/memory/tiling_sweep.h): zero-slack problems tiled at their live
// bytes, and the problems it must refuse.
#include <gtest/gtest.h>

#include "bench/memory/perfect_packing.h"
#include "compiler/memory/tiling_sweep.h"
#include "memory_test_util.h"

namespace keel::memory {
namespace {

TEST(TilingSweep, KeepsTogetherWhatEndsTogether) {
  // 10 bytes at every step. At 4, a and b end and d takes their 5 bytes; at
  // 7, c ends and e takes its 5. Nothing at step 0 says that a and b must
  // be neighbours; the tree keeps every order open until step 4 asks.
  const std::vector<internal::PackingItem> items = {
      {2, 1, 0, 4},   // a
      {5, 1, 0, 7},   // c
      {3, 1, 0, 4},   // b
      {5, 1, 4, 10},  // d
      {5, 1, 7, 10},  // e
  };
  const internal::TilingResult tiled = internal::TileWithoutSlack(items);
  ASSERT_EQ(tiled.offsets.size(), items.size());
  EXPECT_TRUE(testing::ValidPacking(items, tiled.offsets));
  EXPECT_EQ(testing::PackingTop(items, tiled.offsets), 10u);
}

TEST(TilingSweep, TilesGeneratedPerfectPackingsAtTheOptimum) {
  // Hundreds of time points, splits, backjumps; 1000/1 needs frozen runs
  // turned with their Q-node (read as listed, its offsets overlap).
  const std::vector<std::pair<int, uint32_t>> problems = {{20, 1},  {20, 2},  {20, 3},  {100, 1},  {100, 2},
                                                          {100, 3}, {300, 1}, {300, 2}, {300, 3}, {1000, 1}};
  for (const auto& [n, seed] : problems) {
    std::vector<internal::PackingItem> items;
    for (const TensorLifetime& t : bench::PerfectPacking(n, seed)) items.push_back(internal::ItemOf(t));
    const internal::TilingResult tiled = internal::TileWithoutSlack(items);
    ASSERT_EQ(tiled.offsets.size(), items.size()) << n << "/" << seed << " gave up at " << tiled.failed_at;
    EXPECT_TRUE(testing::ValidPacking(items, tiled.offsets));
    EXPECT_EQ(testing::PackingTop(items, tiled.offsets), uint64_t{1} << 20);
  }
}

TEST(TilingSweep, RefusesSlackAndAlignment) {
  // Slack: 4 bytes live at steps 0-1, 2 at step 2.
  EXPECT_TRUE(internal::TileWithoutSlack({{2, 1, 0, 3}, {2, 1, 0, 2}}).offsets.empty());
  // An alignment other than 1.
  EXPECT_TRUE(internal::TileWithoutSlack({{2, 4, 0, 3}, {2, 1, 0, 3}}).offsets.empty());
  // Idle steps between two parts are slack too.
  EXPECT_TRUE(internal::TileWithoutSlack({{2, 1, 0, 2}, {2, 1, 3, 5}}).offsets.empty());
}

}  // namespace
}  // namespace keel::memory
