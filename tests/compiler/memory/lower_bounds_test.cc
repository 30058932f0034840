// tests/compiler/memory/lower_bounds_test.cc — PeakLive and PositionalMax bounds
// on hand-computed sets, and against brute-force optima on random small sets.
#include <gtest/gtest.h>

#include "compiler/memory/planner.h"
#include "memory_test_util.h"

namespace keel::memory {
namespace {

using testing::T;

TEST(LowerBounds, EmptyInputIsZero) {
  EXPECT_EQ(PeakLiveLowerBound({}), 0u);
  EXPECT_EQ(PositionalMaxLowerBound({}), 0u);
}

TEST(LowerBounds, HandComputedExample) {
  // step 0: {8, 4}; step 1: {6, 5}; step 2: {9}.
  std::vector<TensorLifetime> ts{T(8, 0, 0), T(4, 0, 0), T(6, 1, 1), T(5, 1, 1), T(9, 2, 2)};
  EXPECT_EQ(PeakLiveLowerBound(ts), 12u);
  EXPECT_EQ(PositionalMaxLowerBound(ts), 9u + 5u);
}

TEST(LowerBounds, LongLivedTensorCountsAtEveryStep) {
  // 100 lives through steps 0..4, short 10s come and go, 50 at step 3.
  std::vector<TensorLifetime> ts{T(100, 0, 4), T(10, 0, 1), T(10, 2, 2), T(50, 3, 3), T(20, 3, 4)};
  EXPECT_EQ(PeakLiveLowerBound(ts), 170u);
  EXPECT_EQ(PositionalMaxLowerBound(ts), 100u + 50u + 20u);
}

TEST(LowerBounds, DevicesAreSummed) {
  std::vector<TensorLifetime> ts{T(100, 0, 0), T(60, 1, 1, 1, Device::kCuda), T(70, 2, 2, 1, Device::kCuda)};
  EXPECT_EQ(PeakLiveLowerBound(ts), 100u + 70u);
  EXPECT_EQ(PositionalMaxLowerBound(ts), 100u + 70u);
}

TEST(LowerBounds, InPlacePairSharesBytesAtItsStep) {
  std::vector<TensorLifetime> ts{T(100, 0, 1), T(80, 1, 2)};
  EXPECT_EQ(PeakLiveLowerBound(ts), 180u);
  ts[1].may_alias_with = 0;
  EXPECT_EQ(PeakLiveLowerBound(ts), 100u);  // 180 - min(100, 80)
}

TEST(LowerBounds, BoundsHoldAgainstBruteForceOptima) {
  for (uint32_t seed = 0; seed < 60; ++seed) {
    std::vector<TensorLifetime> ts = testing::RandomLifetimes(seed, 3 + seed % 4, 6, 100, false);
    const uint64_t offset_opt = testing::BruteForceOffsetOptimum(ts);
    const uint64_t shared_opt = testing::BruteForceSharedObjectOptimum(ts);
    const uint64_t peak = PeakLiveLowerBound(ts);
    const uint64_t positional = PositionalMaxLowerBound(ts);
    EXPECT_LE(peak, offset_opt) << "seed " << seed;
    EXPECT_LE(positional, shared_opt) << "seed " << seed;
    EXPECT_LE(peak, positional) << "seed " << seed;
    EXPECT_LE(offset_opt, shared_opt) << "seed " << seed;  // shared objects are offset plans too
  }
}

}  // namespace
}  // namespace keel::memory
