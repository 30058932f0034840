// tests/compiler/memory/planners_test.cc — each strategy on hand-made lifetime
// sets with known optima (proved by the brute force in memory_test_util.h),
// registry behaviour, input validation, aliasing and alignment.
#include <gtest/gtest.h>

#include <map>

#include "compiler/memory/planner.h"
#include "memory_test_util.h"

namespace keel::memory {
namespace {

using testing::T;

Plan MustPlan(const std::string& name, const std::vector<TensorLifetime>& ts,
              double time_limit = 5.0) {
  auto planner = CreatePlanner(name);
  EXPECT_TRUE(planner.ok()) << name;
  if (!planner.ok()) return Plan{};
  PlanOptions options;
  options.time_limit_seconds = time_limit;
  Result<Plan> plan = (*planner)->MakePlan(ts, options);
  EXPECT_TRUE(plan.ok()) << name << ": " << plan.status().ToString();
  if (!plan.ok()) return Plan{};
  Status check = CheckPlan(ts, *plan);
  EXPECT_TRUE(check.ok()) << name << ": " << check.ToString();
  return *plan;
}

std::vector<std::string> StaticStrategies() {
  std::vector<std::string> out;
  for (const std::string& n : PlannerNames()) {
    if (n != "dynamic") out.push_back(n);
  }
  return out;
}

// A plain chain, sizes alternating: every strategy should reach the peak.
//   t0 [0,1] 100, t1 [1,2] 50, t2 [2,3] 100, t3 [3,4] 50     optimum 150
TEST(Planners, AlternatingChainReachesPeak) {
  std::vector<TensorLifetime> ts{T(100, 0, 1), T(50, 1, 2), T(100, 2, 3), T(50, 3, 4)};
  ASSERT_EQ(testing::BruteForceOffsetOptimum(ts), 150u);
  ASSERT_EQ(testing::BruteForceSharedObjectOptimum(ts), 150u);
  for (const std::string& name : StaticStrategies()) {
    if (name == "naive") continue;
    EXPECT_EQ(MustPlan(name, ts).TotalBytes(), 150u) << name;
  }
  EXPECT_EQ(MustPlan("naive", ts).TotalBytes(), 300u);
}

// Two small tensors die, one big is born: offsets can put the big one across
// both (100), shared objects cannot (100 + 40).
TEST(Planners, OffsetsBeatSharedObjectsWhenABigTensorFollowsTwoSmall) {
  std::vector<TensorLifetime> ts{T(60, 0, 0), T(40, 0, 0), T(100, 1, 1)};
  ASSERT_EQ(testing::BruteForceOffsetOptimum(ts), 100u);
  ASSERT_EQ(testing::BruteForceSharedObjectOptimum(ts), 140u);
  EXPECT_EQ(MustPlan("greedy-size", ts).TotalBytes(), 100u);
  EXPECT_EQ(MustPlan("exact", ts).TotalBytes(), 100u);
  for (const char* name : {"tvm", "greedy-breadth", "greedy-size-objects", "min-cost-flow"}) {
    EXPECT_EQ(MustPlan(name, ts).TotalBytes(), 140u) << name;
  }
  Plan best = MustPlan("best", ts);
  EXPECT_EQ(best.TotalBytes(), 100u);
  EXPECT_EQ(best.strategy.rfind("best(", 0), 0u) << best.strategy;
}

// A six-tensor set in the spirit of Pisarchyk & Lee's example (a branch and a
// join) whose optimum the brute force proves; greedy-size must find it.
//   t0 [0,1] 32   t1 [1,2] 28   t2 [1,4] 36   t3 [2,3] 16   t4 [3,4] 8   t5 [4,5] 64
TEST(Planners, BranchAndJoinExample) {
  std::vector<TensorLifetime> ts{T(32, 0, 1), T(28, 1, 2), T(36, 1, 4),
                                 T(16, 2, 3), T(8, 3, 4),  T(64, 4, 5)};
  const uint64_t opt = testing::BruteForceOffsetOptimum(ts);
  EXPECT_EQ(opt, PeakLiveLowerBound(ts));  // this set packs perfectly
  EXPECT_EQ(MustPlan("greedy-size", ts).TotalBytes(), opt);
  EXPECT_EQ(MustPlan("exact", ts).TotalBytes(), opt);
  const uint64_t shared_opt = testing::BruteForceSharedObjectOptimum(ts);
  for (const char* name : {"tvm", "greedy-breadth", "greedy-size-objects", "min-cost-flow"}) {
    const uint64_t got = MustPlan(name, ts).TotalBytes();
    EXPECT_GE(got, shared_opt) << name;
    EXPECT_GE(got, PositionalMaxLowerBound(ts)) << name;
  }
}

TEST(Planners, NaiveAndDynamicGiveOneStoragePerTensor) {
  std::vector<TensorLifetime> ts{T(10, 0, 1, 64), T(20, 1, 2, 128), T(30, 5, 6, 1, Device::kCuda)};
  Plan naive = MustPlan("naive", ts);
  EXPECT_EQ(naive.storages.size(), 3u);
  EXPECT_EQ(naive.arenas.size(), 3u);
  EXPECT_EQ(naive.TotalBytes(), 60u);
  Plan dynamic = MustPlan("dynamic", ts);
  ASSERT_EQ(dynamic.storages.size(), 3u);
  EXPECT_TRUE(dynamic.arenas.empty());
  for (const Storage& s : dynamic.storages) EXPECT_EQ(s.arena, -1);
  EXPECT_EQ(dynamic.storages[2].device, Device::kCuda);
  EXPECT_EQ(dynamic.TotalBytes(), 60u);
}

TEST(Planners, TvmMatchRangeAndGrowth) {
  // t1 (1000) finds only a 10-byte free token: outside the factor-16 range, so a
  // new token. t2 (20) then grows the 10-byte token (largest below, in range).
  std::vector<TensorLifetime> ts{T(10, 0, 0), T(1000, 1, 1), T(20, 2, 2)};
  Plan tvm = MustPlan("tvm", ts);
  EXPECT_EQ(tvm.storages.size(), 2u);
  EXPECT_EQ(tvm.placements[0].storage, tvm.placements[2].storage);
  EXPECT_NE(tvm.placements[0].storage, tvm.placements[1].storage);
  EXPECT_EQ(tvm.TotalBytes(), 1020u);
  EXPECT_EQ(tvm.arenas.size(), 2u);  // one allocation per storage
  Plan packed = MustPlan("tvm-packed", ts);
  EXPECT_EQ(packed.arenas.size(), 1u);
  EXPECT_EQ(packed.storages.size(), 2u);
}

TEST(Planners, TvmPrefersSmallestFreeTokenThatFits) {
  // Tokens of 100 and 50 are free at step 1; a 40-byte tensor takes the 50.
  std::vector<TensorLifetime> ts{T(100, 0, 0), T(50, 0, 0), T(40, 1, 1)};
  Plan tvm = MustPlan("tvm", ts);
  EXPECT_EQ(tvm.placements[2].storage, tvm.placements[1].storage);
  EXPECT_EQ(tvm.TotalBytes(), 150u);
}

TEST(Planners, GreedyBreadthFillsWidestOperatorFirst) {
  // Widest step 1 (120 + 80) creates objects 120 and 80; step 0's 70 and step 2's
  // 110 then reuse them: 110 fits best into 120, 70 into 80.
  std::vector<TensorLifetime> ts{T(70, 0, 0), T(120, 1, 1), T(80, 1, 1), T(110, 2, 2)};
  Plan plan = MustPlan("greedy-breadth", ts);
  EXPECT_EQ(plan.TotalBytes(), 200u);
  EXPECT_EQ(plan.placements[3].storage, plan.placements[1].storage);
  EXPECT_EQ(plan.placements[0].storage, plan.placements[2].storage);
}

TEST(Planners, AlignmentIsHonouredEverywhere) {
  std::vector<TensorLifetime> ts{T(100, 0, 2, 256), T(3, 0, 1, 64), T(70, 1, 3, 128),
                                 T(1, 2, 3, 512), T(33, 3, 4, 16)};
  for (const std::string& name : PlannerNames()) {
    Plan plan = MustPlan(name, ts);  // CheckPlan verifies every address
    const Storage& s = plan.storages[plan.placements[3].storage];
    const uint32_t base = s.arena == -1 ? s.alignment : plan.arenas[s.arena].alignment;
    EXPECT_EQ(base % 512, 0u) << name;
  }
}

TEST(Planners, DevicesArePlannedSeparately) {
  std::vector<TensorLifetime> ts{T(100, 0, 1), T(100, 0, 1, 1, Device::kCuda), T(50, 2, 3),
                                 T(50, 2, 3, 1, Device::kCuda)};
  for (const std::string& name : StaticStrategies()) {
    Plan plan = MustPlan(name, ts);
    if (name == "naive") continue;
    EXPECT_EQ(plan.TotalBytes(), 200u) << name;
  }
  Plan gs = MustPlan("greedy-size", ts);
  ASSERT_EQ(gs.arenas.size(), 2u);
  EXPECT_EQ(gs.arenas[0].device, Device::kCpu);
  EXPECT_EQ(gs.arenas[1].device, Device::kCuda);
}

TEST(Planners, GreedySizeHonoursInPlaceAliasing) {
  // An elementwise chain: each output may overwrite its input.
  std::vector<TensorLifetime> ts{T(256, 0, 1, 64), T(256, 1, 2, 64), T(256, 2, 3, 64)};
  EXPECT_EQ(MustPlan("greedy-size", ts).TotalBytes(), 512u);
  ts[1].may_alias_with = 0;
  ts[2].may_alias_with = 1;
  Plan plan = MustPlan("greedy-size", ts);
  EXPECT_EQ(plan.TotalBytes(), 256u);
  EXPECT_EQ(plan.placements[0].offset, plan.placements[1].offset);
  EXPECT_EQ(PeakLiveLowerBound(ts), 256u);
  Plan exact = MustPlan("exact", ts);
  EXPECT_EQ(exact.TotalBytes(), 256u);
  EXPECT_TRUE(exact.optimal);
}

TEST(Planners, InPlaceAliasingWithAThirdLiveTensor) {
  // b may overwrite a in place, but c is live with both at step 1.
  std::vector<TensorLifetime> ts{T(128, 0, 1, 64), T(64, 1, 2, 64), T(64, 1, 1, 64), T(128, 2, 2, 64)};
  ts[1].may_alias_with = 0;
  for (const std::string& name : PlannerNames()) MustPlan(name, ts);
  EXPECT_EQ(MustPlan("exact", ts).TotalBytes(), 192u);  // a|c at step 1, b over a
}

TEST(Planners, ZeroSizeAndEmptyInputs) {
  for (const std::string& name : PlannerNames()) {
    Plan empty = MustPlan(name, {});
    EXPECT_EQ(empty.TotalBytes(), 0u) << name;
    MustPlan(name, {T(0, 0, 3), T(10, 1, 2), T(0, 1, 1)});
  }
}

TEST(Planners, RegistryAndValidation) {
  std::vector<std::string> names = PlannerNames();
  for (const char* required : {"naive", "dynamic", "tvm", "greedy-size", "greedy-breadth",
                               "min-cost-flow", "exact", "best"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  }
  for (const std::string& n : names) {
    auto p = CreatePlanner(n);
    ASSERT_TRUE(p.ok()) << n;
    EXPECT_EQ((*p)->name(), n);
  }
  auto missing = CreatePlanner("no-such-planner");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  std::vector<TensorLifetime> bad{T(10, 5, 1)};
  std::vector<TensorLifetime> bad_align{T(10, 0, 1, 48)};
  std::vector<TensorLifetime> bad_alias{T(10, 0, 1), T(10, 1, 2)};
  bad_alias[1].may_alias_with = 7;
  for (const std::string& n : names) {
    auto p = CreatePlanner(n);
    ASSERT_TRUE(p.ok());
    for (const auto* ts : {&bad, &bad_align, &bad_alias}) {
      Result<Plan> r = (*p)->MakePlan(*ts, PlanOptions{});
      ASSERT_FALSE(r.ok()) << n;
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << n;
    }
  }
}

TEST(Planners, OutputIsDeterministic) {
  std::vector<TensorLifetime> ts = testing::RandomLifetimes(7, 120, 60, 5000, true, true);
  for (const std::string& name : StaticStrategies()) {
    // Time-limited searches by default (lns_planner_test.cc checks lns under a node budget).
    if (name == "exact" || name == "best" || name == "lns") continue;
    Plan a = MustPlan(name, ts), b = MustPlan(name, ts);
    ASSERT_EQ(a.placements.size(), b.placements.size());
    for (size_t i = 0; i < a.placements.size(); ++i) {
      EXPECT_EQ(a.placements[i].storage, b.placements[i].storage) << name;
      EXPECT_EQ(a.placements[i].offset, b.placements[i].offset) << name;
    }
    EXPECT_EQ(a.TotalBytes(), b.TotalBytes());
  }
}

}  // namespace
}  // namespace keel::memory
