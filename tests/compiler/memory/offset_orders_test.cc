// Tests for greedy-size's two placement orders and the greedy-size-search
// planner: hand-made layouts whose optimum is known (and checked by brute force),
// randomized sets through CheckPlan, and the "never worse than greedy-size" and
// determinism contracts.
#include <gtest/gtest.h>

#include "compiler/memory/greedy_size_planner.h"
#include "compiler/memory/planner.h"
#include "compiler/memory/planning_support.h"
#include "memory_test_util.h"

namespace keel::memory {
namespace {

using testing::T;

Plan MustPlan(const std::string& name, const std::vector<TensorLifetime>& ts, double limit = 1.0) {
  auto planner = CreatePlanner(name);
  EXPECT_TRUE(planner.ok()) << name;
  PlanOptions options;
  options.time_limit_seconds = limit;
  Result<Plan> plan = (*planner)->MakePlan(ts, options);
  EXPECT_TRUE(plan.ok()) << name << ": " << plan.status().ToString();
  Status check = CheckPlan(ts, *plan);
  EXPECT_TRUE(check.ok()) << name << ": " << check.ToString();
  return std::move(plan).value();
}

std::vector<int32_t> AllOf(const std::vector<TensorLifetime>& ts) {
  std::vector<int32_t> g(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) g[i] = static_cast<int32_t>(i);
  return g;
}

uint64_t TopInOrder(const std::vector<TensorLifetime>& ts, GreedySizePlanner::PlacementOrder order,
                    GreedySizePlanner::AliasRule rule) {
  const std::vector<int32_t> g = AllOf(ts);
  return GreedySizePlanner::Top(
      ts, g, GreedySizePlanner::AssignOffsetsInOrder(ts, g, GapFit::kBestFit, GreedySizePlanner::OrderOf(ts, g, order), rule));
}

// The CPU pattern behind resnet18's 7.6% miss: big one-step workspaces (W*) and a
// long-lived activation M that overlaps two of them.
//
//   step     0        1       2          3
//   W0 7     ███
//   A  3     ███████████
//   M  1              ███████████████████████
//   W2 8                      ███
//   B  1                      ███████████████
//   W3 8                                 ███
//
// Live bytes: 10, 4, 10, 10 → peak 10. By size, W2/W3/W0 all take offset 0, A
// sits on W0 (7..10) and M can only go above A: 11. By first use, M takes 0..1
// under A's gap and the workspaces sit on top of it: 10, the optimum.
std::vector<TensorLifetime> WorkspaceCase() {
  return {T(7, 0, 0), T(3, 0, 1), T(1, 1, 3), T(8, 2, 2), T(1, 2, 3), T(8, 3, 3)};
}

TEST(OffsetOrders, FirstUseOrderReachesTheBoundWhereBySizeMisses) {
  const std::vector<TensorLifetime> ts = WorkspaceCase();
  ASSERT_EQ(PeakLiveLowerBound(ts), 10u);
  ASSERT_EQ(testing::BruteForceOffsetOptimum(ts), 10u);
  using Order = GreedySizePlanner::PlacementOrder;
  using Rule = GreedySizePlanner::AliasRule;
  EXPECT_EQ(TopInOrder(ts, Order::kSize, Rule::kUnlessTopGrows), 11u);
  EXPECT_EQ(TopInOrder(ts, Order::kFirstUse, Rule::kUnlessHigher), 10u);
  for (const char* name : {"greedy-size", "greedy-size-first-fit", "greedy-size-search", "best"}) {
    EXPECT_EQ(MustPlan(name, ts).TotalBytes(), 10u) << name;
  }
}

// The converse: a chain where placing in first-use order strands a small early
// tensor under a later big one, and by size is optimal.
//
//   S 1  [0,1]   L 4 [1,2]   P 2 [0,0]   Q 3 [2,2]
//   live: 3, 5, 7 → peak 7
TEST(OffsetOrders, GreedySizeKeepsTheBetterOrder) {
  const std::vector<TensorLifetime> ts = {T(1, 0, 1), T(4, 1, 2), T(2, 0, 0), T(3, 2, 2)};
  const uint64_t optimum = testing::BruteForceOffsetOptimum(ts);
  using Order = GreedySizePlanner::PlacementOrder;
  using Rule = GreedySizePlanner::AliasRule;
  const uint64_t by_size = TopInOrder(ts, Order::kSize, Rule::kUnlessTopGrows);
  const uint64_t by_first = TopInOrder(ts, Order::kFirstUse, Rule::kUnlessHigher);
  EXPECT_EQ(MustPlan("greedy-size", ts).TotalBytes(), std::min(by_size, by_first));
  EXPECT_GE(std::min(by_size, by_first), optimum);
  EXPECT_EQ(MustPlan("greedy-size-search", ts).TotalBytes(), optimum);
}

TEST(OffsetOrders, GreedySizeIsTheMinimumOfBothOrdersOnRandomSets) {
  using Order = GreedySizePlanner::PlacementOrder;
  using Rule = GreedySizePlanner::AliasRule;
  int first_use_won = 0, size_won = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    std::vector<TensorLifetime> ts = testing::RandomLifetimes(seed, 20 + static_cast<int>(seed * 7), 30, 4000,
                                                              seed % 2 == 0);
    if (seed % 3 == 0) {  // in-place pairs
      for (size_t i = 1; i < ts.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
          if (ts[j].last_use == ts[i].first_use && i % 2 == 0) {
            ts[i].may_alias_with = static_cast<int32_t>(j);
            break;
          }
        }
      }
    }
    const uint64_t by_size = TopInOrder(ts, Order::kSize, Rule::kUnlessTopGrows);
    const uint64_t by_first = TopInOrder(ts, Order::kFirstUse, Rule::kUnlessHigher);
    EXPECT_EQ(MustPlan("greedy-size", ts).TotalBytes(), std::min(by_size, by_first)) << seed;
    first_use_won += by_first < by_size ? 1 : 0;
    size_won += by_size < by_first ? 1 : 0;
  }
  // Both orders matter (otherwise one of them is dead weight).
  EXPECT_GT(first_use_won, 0);
  EXPECT_GT(size_won, 0);
}

TEST(OffsetSearch, NeverWorseThanGreedySizeAndMatchesBruteForceOnSmallSets) {
  int at_optimum = 0, sets = 0;
  for (uint32_t seed = 100; seed < 160; ++seed) {
    std::vector<TensorLifetime> ts = testing::RandomLifetimes(seed, 7, 5, 64, seed % 2 == 0);
    const uint64_t optimum = testing::BruteForceOffsetOptimum(ts);
    const Plan search = MustPlan("greedy-size-search", ts);
    const Plan greedy = MustPlan("greedy-size", ts);
    EXPECT_GE(search.TotalBytes(), optimum) << seed;
    EXPECT_LE(search.TotalBytes(), greedy.TotalBytes()) << seed;
    EXPECT_EQ(search.optimal, search.TotalBytes() == PeakLiveLowerBound(ts)) << seed;
    at_optimum += search.TotalBytes() == optimum ? 1 : 0;
    ++sets;
  }
  std::printf("greedy-size-search at the brute-force optimum on %d of %d sets\n", at_optimum, sets);
  EXPECT_GE(at_optimum * 10, sets * 9);  // a search over orders finds nearly all of them
}

TEST(OffsetSearch, ImprovesOnGreedySizeOnLargerRandomSets) {
  uint64_t greedy_sum = 0, search_sum = 0;
  for (uint32_t seed = 200; seed < 208; ++seed) {
    std::vector<TensorLifetime> ts =
        testing::RandomLifetimes(seed, 100, 40, 5000, true, seed % 4 == 0);
    const Plan search = MustPlan("greedy-size-search", ts);
    const Plan greedy = MustPlan("greedy-size", ts);
    EXPECT_LE(search.TotalBytes(), greedy.TotalBytes()) << seed;
    EXPECT_GE(search.TotalBytes(), PeakLiveLowerBound(ts)) << seed;
    EXPECT_EQ(search.lower_bound, PeakLiveLowerBound(ts));
    greedy_sum += greedy.TotalBytes();
    search_sum += search.TotalBytes();
  }
  std::printf("greedy-size-search / greedy-size bytes: %.4f\n", static_cast<double>(search_sum) / greedy_sum);
  EXPECT_LT(search_sum, greedy_sum);
}

TEST(OffsetSearch, DeterministicAndTwoDevices) {
  std::vector<TensorLifetime> ts = testing::RandomLifetimes(9, 120, 50, 5000, true, true);
  for (size_t i = 1; i < ts.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (ts[j].last_use == ts[i].first_use && ts[j].device == ts[i].device && i % 4 == 0) {
        ts[i].may_alias_with = static_cast<int32_t>(j);
        break;
      }
    }
  }
  const Plan a = MustPlan("greedy-size-search", ts, 60.0), b = MustPlan("greedy-size-search", ts, 60.0);
  ASSERT_EQ(a.placements.size(), b.placements.size());
  for (size_t i = 0; i < a.placements.size(); ++i) {
    EXPECT_EQ(a.placements[i].storage, b.placements[i].storage);
    EXPECT_EQ(a.placements[i].offset, b.placements[i].offset);
  }
  EXPECT_EQ(a.arenas.size(), 2u);
  EXPECT_LE(a.TotalBytes(), MustPlan("greedy-size", ts).TotalBytes());
}

TEST(OffsetSearch, BestIsMarkedOptimalAtThePeakLiveBound) {
  const std::vector<TensorLifetime> ts = WorkspaceCase();
  const Plan best = MustPlan("best", ts);
  EXPECT_TRUE(best.optimal);
  EXPECT_EQ(best.lower_bound, best.TotalBytes());
  // A set whose bound is not reachable in one arena (alignment padding): the
  // search cannot prove its plan optimal.
  const std::vector<TensorLifetime> padded = {T(3, 0, 1, 4), T(3, 0, 1, 4)};
  ASSERT_EQ(PeakLiveLowerBound(padded), 6u);
  const Plan search = MustPlan("greedy-size-search", padded);
  EXPECT_EQ(search.TotalBytes(), 7u);  // 0..3, 4..7
  EXPECT_FALSE(search.optimal);
}

}  // namespace
}  // namespace keel::memory
