// tests/compiler/memory/time_segments_test.cc — the split at idle times
// (compiler/memory/time_segments.h) on hand-made lifetimes, and `exact` on
// problems made of independent parts (planned part by part in its
// optimization form): valid plans, the optimum proven, never above greedy,
// and its time limit kept where the parts are too large to finish.
#include <gtest/gtest.h>

#include <chrono>

#include "bench/memory/perfect_packing.h"
#include "compiler/memory/planner.h"
#include "compiler/memory/time_segments.h"

namespace keel::memory {
namespace {

using internal::PackingItem;

TEST(TimeSegments, SplitsWhereNothingIsLiveAcross) {
  // [0,3) [1,2) | [3,5) [4,6) | [6,7) — an end equal to a begin is no overlap;
  // items given out of time order.
  const std::vector<PackingItem> items = {{8, 1, 4, 6}, {8, 1, 0, 3}, {8, 1, 6, 7}, {8, 1, 3, 5}, {8, 1, 1, 2}};
  const std::vector<std::vector<int32_t>> parts = internal::SplitAtIdleTimes(items);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0], (std::vector<int32_t>{1, 4}));
  EXPECT_EQ(parts[1], (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(parts[2], (std::vector<int32_t>{2}));
}

TEST(TimeSegments, ALongItemJoinsEverythingItCrosses) {
  const std::vector<PackingItem> items = {{8, 1, 0, 2}, {8, 1, 2, 4}, {8, 1, 1, 3}, {8, 1, 5, 6}};
  const std::vector<std::vector<int32_t>> parts = internal::SplitAtIdleTimes(items);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0], (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(parts[1], (std::vector<int32_t>{3}));
  EXPECT_TRUE(internal::SplitAtIdleTimes({}).empty());
}

// Perfect packings of different capacities one after another in time (each
// shifted past the previous one), interleaved in the input order: the
// optimum is the largest capacity.
std::vector<TensorLifetime> PartsInSequence(const std::vector<std::pair<int, uint64_t>>& parts, uint32_t seed,
                                            int32_t steps = 2000) {
  std::vector<std::vector<TensorLifetime>> each;
  int32_t shift = 0;
  for (const auto& [n, capacity] : parts) {
    each.push_back(bench::PerfectPacking(n, seed++, capacity, steps));
    for (TensorLifetime& t : each.back()) {
      t.first_use += shift;
      t.last_use += shift;
    }
    shift += steps;
  }
  size_t longest = 0;
  for (const std::vector<TensorLifetime>& e : each) longest = std::max(longest, e.size());
  std::vector<TensorLifetime> all;
  for (size_t k = 0; k < longest; ++k) {
    for (const std::vector<TensorLifetime>& e : each) {
      if (k < e.size()) all.push_back(e[k]);
    }
  }
  for (size_t i = 0; i < all.size(); ++i) all[i].name = std::to_string(i);
  return all;
}

TEST(ExactPlanner, PlansIndependentPartsToTheOptimum) {
  const std::vector<TensorLifetime> ts =
      PartsInSequence({{200, uint64_t{1} << 16}, {150, uint64_t{1} << 15}, {300, uint64_t{1} << 16}}, 7);
  auto exact = CreatePlanner("exact");
  auto greedy = CreatePlanner("greedy-size");
  ASSERT_TRUE(exact.ok() && greedy.ok());
  PlanOptions options;
  options.time_limit_seconds = 20;
  Result<Plan> plan = (*exact)->MakePlan(ts, options);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(CheckPlan(ts, *plan).ok());
  EXPECT_TRUE(plan->optimal);
  EXPECT_EQ(plan->TotalBytes(), uint64_t{1} << 16);
  EXPECT_EQ(plan->lower_bound, uint64_t{1} << 16);
  Result<Plan> base = (*greedy)->MakePlan(ts, options);
  ASSERT_TRUE(base.ok());
  EXPECT_GT(base->TotalBytes(), uint64_t{1} << 16);  // greedy is above: the parts are searched
  EXPECT_LE(plan->TotalBytes(), base->TotalBytes());
}

// `planner`'s plan of `ts`, which must come within twice options' limit + 0.5 s.
Result<Plan> PlanWithinItsLimit(Planner& planner, const std::vector<TensorLifetime>& ts, const PlanOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Result<Plan> plan = planner.MakePlan(ts, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2 * options.time_limit_seconds + 0.5);
  return plan;
}

// The time limit is a contract: every phase of `exact` (the searches, the
// piece search and tiling, the constructions, the overlap minimization) stops
// at it, and a part that the time did not reach keeps its greedy layout.
// Eight parts of 2,000 buffers over 20,000 steps each (as dense as the
// 10,000-buffer perfect packings), none finished in the time: until 2026-11-28
// each part after the deadline still ran its merges, its piece search, a
// greedy construction and an overlap graph (0.1-0.3 s each part), so a
// 0.5 s limit ended after 1-3 s. The bound (twice the limit + 0.5 s) leaves
// room for a loaded machine; the incumbent (greedy-size's passes) is the
// only work before the first check.
TEST(ExactPlanner, KeepsItsTimeLimitOnManyLargeParts) {
  std::vector<std::pair<int, uint64_t>> parts;
  for (int k = 0; k < 8; ++k) parts.emplace_back(2000, uint64_t{1} << 20);
  const std::vector<TensorLifetime> ts = PartsInSequence(parts, 31, 20000);
  auto exact = CreatePlanner("exact");
  auto greedy = CreatePlanner("greedy-size");
  ASSERT_TRUE(exact.ok() && greedy.ok());
  PlanOptions options;
  options.time_limit_seconds = 0.5;
  Result<Plan> plan = PlanWithinItsLimit(**exact, ts, options);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(CheckPlan(ts, *plan).ok());  // no two buffers live at once overlap
  Result<Plan> base = (*greedy)->MakePlan(ts, options);
  ASSERT_TRUE(base.ok());
  EXPECT_LE(plan->TotalBytes(), base->TotalBytes());
  EXPECT_LE(plan->lower_bound, plan->TotalBytes());
}

// One part of 10,000 buffers (the perfect packing of seed 15, where a 0.5 s
// limit ended after 0.8-1.6 s before 2026-11-28: the tiling's piece search,
// the blocks' construction and the buffers' overlap graph ran past it).
TEST(ExactPlanner, KeepsItsTimeLimitOnTenThousandBuffers) {
  const std::vector<TensorLifetime> ts = bench::PerfectPacking(10000, 15);
  auto exact = CreatePlanner("exact");
  ASSERT_TRUE(exact.ok());
  PlanOptions options;
  options.time_limit_seconds = 0.5;
  Result<Plan> plan = PlanWithinItsLimit(**exact, ts, options);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(CheckPlan(ts, *plan).ok());
  EXPECT_GE(plan->TotalBytes(), uint64_t{1} << 20);  // the optimum
}

}  // namespace
}  // namespace keel::memory
