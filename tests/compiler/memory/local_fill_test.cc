// tests/compiler/memory/local_fill_test.cc — the skyline search's local mode
// (local_fill.h): subset sums, the assignment of a section's one-section buffers
// to its gaps, and the search with locals (and twins) deciding exactly against
// brute force.
#include <gtest/gtest.h>

#include "compiler/memory/local_fill.h"
#include "compiler/memory/skyline_search.h"
#include "memory_test_util.h"

namespace keel::memory {
namespace {

TEST(LocalFill, SubsetSumsListEveryReachableSum) {
  internal::SubsetSums sums;
  sums.Build({5, 5, 3});
  for (uint64_t v : {0u, 3u, 5u, 8u, 10u, 13u}) EXPECT_TRUE(sums.Contains(v)) << v;
  for (uint64_t v : {1u, 2u, 4u, 6u, 7u, 9u, 11u, 12u, 14u}) EXPECT_FALSE(sums.Contains(v)) << v;
  EXPECT_EQ(sums.NextAbove(0), 3u);
  EXPECT_EQ(sums.NextAbove(5), 8u);
  EXPECT_EQ(sums.NextAbove(10), 13u);
  EXPECT_EQ(sums.NextAbove(13), UINT64_MAX);
  // Shifts across 64-bit words.
  internal::SubsetSums wide;
  wide.Build({70, 130, 1});
  for (uint64_t v : {0u, 1u, 70u, 71u, 130u, 131u, 200u, 201u}) EXPECT_TRUE(wide.Contains(v)) << v;
  EXPECT_FALSE(wide.Contains(129));
  EXPECT_EQ(wide.NextAbove(71), 130u);
}

TEST(LocalFill, AssignsItemsToBinsOrProvesThatNoneFits) {
  std::vector<int32_t> bin_of;
  // Exact fill: 7 + 3 and 5 + 5.
  ASSERT_EQ(internal::AssignToBins({7, 5, 5, 3}, {10, 10}, 1000, &bin_of), internal::FillAnswer::kYes);
  std::vector<uint64_t> used(2, 0);
  const std::vector<uint64_t> items = {7, 5, 5, 3};
  for (size_t k = 0; k < items.size(); ++k) used[bin_of[k]] += items[k];
  EXPECT_EQ(used, (std::vector<uint64_t>{10, 10}));
  // The step of seed 2's piece where a longer-first layout fails: gaps of 124 and
  // 1,640 bytes, and no subset of that step's one-step buffers sums to 124.
  EXPECT_EQ(internal::AssignToBins({1005, 453, 165, 107, 27, 4, 3}, {124, 1640}, 100000, nullptr),
            internal::FillAnswer::kNo);
  // With one byte of slack the same bins still fail (124 - 107 - 4 - 3 = 10 > 1).
  EXPECT_EQ(internal::AssignToBins({1005, 453, 165, 107, 27, 4, 3}, {124, 1641}, 100000, nullptr),
            internal::FillAnswer::kNo);
  // Room enough: yes.
  EXPECT_EQ(internal::AssignToBins({1005, 453, 165, 107, 27, 4, 3}, {138, 1640}, 100000, nullptr),
            internal::FillAnswer::kYes);
  EXPECT_EQ(internal::AssignToBins({}, {4}, 10, nullptr), internal::FillAnswer::kYes);
  EXPECT_EQ(internal::AssignToBins({5}, {4}, 10, nullptr), internal::FillAnswer::kNo);
}

bool Disjoint(const std::vector<TensorLifetime>& ts, const std::vector<uint64_t>& off, uint64_t capacity) {
  for (size_t i = 0; i < ts.size(); ++i) {
    if (off[i] + ts[i].size > capacity || off[i] % ts[i].alignment != 0) return false;
    for (size_t j = i + 1; j < ts.size(); ++j) {
      if (testing::Meets(ts[i], ts[j]) && off[i] < off[j] + ts[j].size && off[j] < off[i] + ts[i].size) return false;
    }
  }
  return true;
}

// Local mode and twins decide exactly: found at the brute-force optimum with a
// valid layout, infeasible one byte below, in both orders, with and without
// fail-first — on random sets (many buffers live one section) and on the same
// sets with some buffers doubled (twins).
TEST(LocalFill, SkylineSearchInLocalModeDecidesExactly) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::vector<TensorLifetime> ts = seed <= 150 ? testing::RandomLifetimes(seed, 2 + static_cast<int>(seed % 5), 6, 40, seed % 4 == 0)
                                                 : testing::BlocksHeldByLongBuffers(seed);
    if (seed % 2 == 0 && ts.size() < 7) ts.push_back(ts[seed % ts.size()]);  // a twin
    const uint64_t opt = testing::BruteForceOffsetOptimum(ts);
    const std::vector<internal::PackingItem> items = testing::ItemsOf(ts);
    for (uint32_t order : {0u, seed}) {
      for (bool fail_first : {false, true}) {
        internal::PackingLimits limits;
        limits.local_fill = true;
        limits.twins = true;
        limits.fail_first = fail_first;
        limits.seed = order;
        internal::PackingResult fit = internal::PackWithinCapacity(items, opt, limits);
        ASSERT_EQ(fit.outcome, internal::PackingOutcome::kFound) << "seed " << seed;
        EXPECT_TRUE(Disjoint(ts, fit.offsets, opt)) << "seed " << seed;
        EXPECT_EQ(internal::PackWithinCapacity(items, opt - 1, limits).outcome, internal::PackingOutcome::kInfeasible)
            << "seed " << seed;
      }
    }
  }
}

}  // namespace
}  // namespace keel::memory
