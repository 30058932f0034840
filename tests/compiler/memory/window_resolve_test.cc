// tests/compiler/memory/window_resolve_test.cc — the window re-solve
// (compiler/memory/window_resolve.h) on small constructed layouts and on
// random ones: when it places, no two live-together items share a byte, the
// freed items end under the capacity and the others stay where they were, so
// the top is never above the input's; when it cannot, the layout is
// untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "compiler/memory/large_neighbourhood_search.h"
#include "compiler/memory/window_resolve.h"
#include "memory_test_util.h"

namespace keel::memory {
namespace {

using internal::PackingItem;


internal::OverlapGraph Graph(const std::vector<PackingItem>& items) {
  internal::OverlapGraph graph;
  EXPECT_TRUE(internal::BuildOverlapGraph(items, &graph));
  return graph;
}

TEST(WindowResolve, ItemsInWindowTakesTheRectangleAroundTheSeeds) {
  //   item 0: [2, 4) at 0..8 (the seed); 1: [1, 5) at 8..16; 2: [0, 6) at
  //   16..24; 3: [3, 4) at 40..48 (far above)
  const std::vector<PackingItem> items = {{8, 1, 2, 4}, {8, 1, 1, 5}, {8, 1, 0, 6}, {8, 1, 3, 4}};
  const std::vector<uint64_t> offsets = {0, 8, 16, 40};
  EXPECT_EQ(internal::ItemsInWindow(items, offsets, {0}, 0, 0), (std::vector<int32_t>{0}));
  EXPECT_EQ(internal::ItemsInWindow(items, offsets, {0}, 1, 8), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(internal::ItemsInWindow(items, offsets, {0}, 2, 8), (std::vector<int32_t>{0, 1}));   // 2 is above 16
  EXPECT_EQ(internal::ItemsInWindow(items, offsets, {0}, 2, 17), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(internal::ItemsInWindow(items, offsets, {0}, 2, 100), (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(WindowResolve, LowersALayoutWithAHole) {
  // Steps [0, 2): a 16-byte item at 0 and an 8-byte one at 24, a hole at
  // 16..24 under it; [2, 4): a 32-byte item at 0 (fixed). The window [0, 2)
  // re-placed under 24 closes the hole.
  const std::vector<PackingItem> items = {{16, 1, 0, 2}, {8, 1, 0, 2}, {32, 1, 2, 4}};
  const internal::OverlapGraph graph = Graph(items);
  std::vector<uint64_t> offsets = {0, 24, 0};
  ASSERT_TRUE(testing::ValidPacking(items, offsets));
  const internal::WindowOutcome r =
      internal::ResolveWindow(items, graph, &offsets, internal::ItemsInWindow(items, offsets, {1}, 0, 32), 24, {});
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.freed, 2u);
  EXPECT_TRUE(testing::ValidPacking(items, offsets));
  EXPECT_EQ(offsets[2], 0u);  // fixed
  EXPECT_LE(offsets[0] + 16, 24u);
  EXPECT_LE(offsets[1] + 8, 24u);
}

TEST(WindowResolve, ClearsOverlapsAndFreesSandwichedItems) {
  // All live on [0, 4), 8 bytes each. Items 0 and 1 overlap at 0..8;
  // item 2 (at 8..16) lies between the freed items 0 and 3 (at 16..24), so
  // it is freed too; item 4 (at 24..32) is above them, the ceiling. Four
  // items need 32 bytes below it: infeasible at 24; with item 4 at 32,
  // feasible.
  const std::vector<PackingItem> items = {{8, 1, 0, 4}, {8, 1, 0, 4}, {8, 1, 0, 4}, {8, 1, 0, 4}, {8, 1, 0, 4}};
  const internal::OverlapGraph graph = Graph(items);
  std::vector<uint64_t> offsets = {0, 0, 8, 16, 24};
  const std::vector<uint64_t> before = offsets;
  internal::WindowOutcome r = internal::ResolveWindow(items, graph, &offsets, {0, 1, 3}, 40, {});
  EXPECT_FALSE(r.placed);
  EXPECT_EQ(r.freed, 4u);  // 0, 1, 3 and the sandwiched 2
  EXPECT_EQ(offsets, before);
  offsets[4] = 32;
  r = internal::ResolveWindow(items, graph, &offsets, {0, 1, 3}, 40, {});
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.freed, 4u);
  EXPECT_TRUE(testing::ValidPacking(items, offsets));
  EXPECT_EQ(offsets[4], 32u);
  for (int i = 0; i < 4; ++i) EXPECT_LE(offsets[i] + 8, 32u);
}

TEST(WindowResolve, TooManyFreedGivesUpUntouched) {
  const std::vector<PackingItem> items = {{8, 1, 0, 4}, {8, 1, 0, 4}, {8, 1, 0, 4}};
  const internal::OverlapGraph graph = Graph(items);
  std::vector<uint64_t> offsets = {0, 0, 8};
  internal::WindowLimits limits;
  limits.max_freed = 1;
  const internal::WindowOutcome r = internal::ResolveWindow(items, graph, &offsets, {0, 1}, 64, limits);
  EXPECT_FALSE(r.placed);
  EXPECT_EQ(offsets, (std::vector<uint64_t>{0, 0, 8}));
}

TEST(WindowResolve, RandomWindowsNeverBreakOrRaiseALayout) {
  // Greedy layouts of random lifetimes (alignments 1-256), windows around
  // random items, capacities from the top down to well under the bound.
  int placed = 0, refused = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const std::vector<PackingItem> items = testing::ItemsOf(testing::RandomLifetimes(seed, 60, 30, 4096, true));
    const internal::OverlapGraph graph = Graph(items);
    const std::vector<uint64_t> start = internal::ConstructLayout(items, graph);
    ASSERT_TRUE(testing::ValidPacking(items, start));
    const uint64_t top = testing::PackingTop(items, start);
    std::mt19937 rng(seed);
    for (int trial = 0; trial < 8; ++trial) {
      std::vector<uint64_t> offsets = start;
      const int32_t seed_item = static_cast<int32_t>(rng() % items.size());
      const uint64_t capacity = top - top * (rng() % 16) / 64;
      const std::vector<int32_t> freed =
          internal::ItemsInWindow(items, offsets, {seed_item}, static_cast<int64_t>(rng() % 10), rng() % 4096);
      const internal::WindowOutcome r = internal::ResolveWindow(items, graph, &offsets, freed, capacity, {});
      ASSERT_TRUE(testing::ValidPacking(items, offsets)) << "seed " << seed << " trial " << trial;
      EXPECT_LE(testing::PackingTop(items, offsets), top);
      EXPECT_GE(r.freed, freed.size());
      if (!r.placed) {
        EXPECT_EQ(offsets, start);
        ++refused;
        continue;
      }
      ++placed;
      std::vector<char> is_freed(items.size(), 0);
      for (int32_t x : freed) is_freed[x] = 1;
      for (size_t i = 0; i < items.size(); ++i) {
        if (offsets[i] != start[i]) {
          EXPECT_LE(offsets[i] + items[i].size, capacity) << "a moved item ends above the capacity";
        }
        if (is_freed[i]) {
          EXPECT_LE(offsets[i] + items[i].size, capacity);
        }
      }
    }
  }
  // Both outcomes occur (else the test says nothing).
  EXPECT_GT(placed, 20);
  EXPECT_GT(refused, 20);
}

}  // namespace
}  // namespace keel::memory
