// tests/compiler/memory/guillotine_layout_test.cc — the top-down guillotine
// search (compiler/memory/guillotine_layout.h): constant live bytes detected,
// zero-slack strips of many tiny short-lived buffers rebuilt at their height
// (where `exact`'s other engines end a few percent above it), and problems
// with slack or no guillotine layout refused.
#include <gtest/gtest.h>

#include "bench/memory/perfect_packing.h"
#include "compiler/memory/guillotine_layout.h"
#include "memory_test_util.h"

namespace keel::memory {
namespace {

using internal::PackingItem;

std::chrono::steady_clock::time_point Far() { return std::chrono::steady_clock::now() + std::chrono::hours(1); }

TEST(GuillotineLayout, ConstantLiveBytes) {
  // Steps 0-3: 6 bytes live at each (4+2, then 4+1+1, then 3+3).
  const std::vector<PackingItem> flat = {{4, 1, 0, 2}, {2, 1, 0, 1}, {1, 1, 1, 2}, {1, 1, 1, 2}, {3, 1, 2, 4}, {3, 1, 2, 4}};
  EXPECT_EQ(internal::ConstantLiveBytes(flat), 6u);
  const std::vector<PackingItem> bumpy = {{4, 1, 0, 2}, {2, 1, 1, 3}};
  EXPECT_EQ(internal::ConstantLiveBytes(bumpy), 0u);
  EXPECT_EQ(internal::ConstantLiveBytes({}), 0u);
  // An idle step between two parts: not constant.
  EXPECT_EQ(internal::ConstantLiveBytes({{4, 1, 0, 2}, {4, 1, 3, 5}}), 0u);
}

TEST(GuillotineLayout, NeedsTheRightBandsNotTheFirstThatFit) {
  // Height 4 over steps 0-3. a (2 B, 0-2) and b (2 B, 0-2) at the start,
  // then c (2 B, 2-4) and d (1 B, 2-4), e (1 B, 2-4). The band holding a
  // can be {a, c} or {a, d, e}: both balance at step 2, either works.
  const std::vector<PackingItem> items = {{2, 1, 0, 2}, {2, 1, 0, 2}, {2, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 4}};
  const std::vector<uint64_t> offsets = internal::GuillotineLayout(items, 1000, Far());
  ASSERT_EQ(offsets.size(), items.size());
  EXPECT_TRUE(testing::ValidPacking(items, offsets));
  EXPECT_EQ(testing::PackingTop(items, offsets), 4u);
}

TEST(GuillotineLayout, RebuildsDenseStripsOfTinyBuffers) {
  // The density of the strip that holds 10,000/2 up (MEASUREMENTS.md,
  // 2026-11-27): thousands of buffers of a few bytes and steps filling a
  // rectangle without slack.
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    const std::vector<TensorLifetime> tensors = bench::PerfectPacking(2000, seed, 203352, 12685);
    const std::vector<PackingItem> items = testing::ItemsOf(tensors);
    ASSERT_EQ(internal::ConstantLiveBytes(items), 203352u);
    const std::vector<uint64_t> offsets = internal::GuillotineLayout(items, 10'000'000, Far());
    ASSERT_EQ(offsets.size(), items.size()) << "seed " << seed;
    EXPECT_TRUE(testing::ValidPacking(items, offsets)) << "seed " << seed;
    EXPECT_EQ(testing::PackingTop(items, offsets), 203352u) << "seed " << seed;
  }
}

TEST(GuillotineLayout, SmallSpansGoToTheSkylineSearch) {
  // Constant (3 bytes), and laid out only as a pinwheel (3 steps × 3 bytes:
  // four pieces of 2 cells around a centre cell), which no guillotine cut
  // splits: the skyline search of a small span finds it.
  const std::vector<PackingItem> pinwheel = {
      {1, 1, 0, 2}, {2, 1, 2, 3}, {1, 1, 1, 3}, {2, 1, 0, 1}, {1, 1, 1, 2}};
  ASSERT_EQ(internal::ConstantLiveBytes(pinwheel), 3u);
  const std::vector<uint64_t> offsets = internal::GuillotineLayout(pinwheel, 1000, Far());
  ASSERT_EQ(offsets.size(), pinwheel.size());
  EXPECT_TRUE(testing::ValidPacking(pinwheel, offsets));
  EXPECT_EQ(testing::PackingTop(pinwheel, offsets), 3u);
}

TEST(GuillotineLayout, RefusesWhatItCannotBuild) {
  // Slack (live bytes 4, then 2): not constant, nothing searched.
  EXPECT_TRUE(internal::GuillotineLayout({{2, 1, 0, 2}, {2, 1, 0, 1}}, 1000, Far()).empty());
  // Aligned offsets that the cuts miss (the full-span bands stacked in
  // order) are refused.
  EXPECT_TRUE(internal::GuillotineLayout({{3, 1, 0, 2}, {1, 2, 0, 2}}, 1000, Far()).empty());
}

}  // namespace
}  // namespace keel::memory
