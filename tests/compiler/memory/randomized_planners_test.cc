// tests/compiler/memory/randomized_planners_test.cc — many seeded random lifetime
// sets through every planner and CheckPlan; no plan beats the lower bounds; and
// greedy-size against the peak-live bound on CNN-like chains.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "compiler/memory/planner.h"
#include "memory_test_util.h"

namespace keel::memory {
namespace {

TEST(RandomizedPlanners, EveryPlannerValidAndAboveBounds) {
  std::map<std::string, double> ratio_sum;
  int sets = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const int n = 5 + static_cast<int>((seed * 37) % 300);
    std::vector<TensorLifetime> ts =
        testing::RandomLifetimes(seed, n, n / 2 + 2, 1000 + (seed % 3) * 4000, seed % 2 == 1, seed % 4 == 0);
    if (seed % 5 == 0) {  // some in-place pairs
      for (size_t i = 1; i < ts.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
          if (ts[j].last_use == ts[i].first_use && ts[j].device == ts[i].device && i % 3 == 0) {
            ts[i].may_alias_with = static_cast<int32_t>(j);
            break;
          }
        }
      }
    }
    const uint64_t peak = PeakLiveLowerBound(ts);
    const uint64_t positional = PositionalMaxLowerBound(ts);
    ++sets;
    for (const std::string& name : PlannerNames()) {
      auto planner = CreatePlanner(name);
      ASSERT_TRUE(planner.ok());
      PlanOptions options;
      options.time_limit_seconds = 0.05;
      Result<Plan> plan = (*planner)->MakePlan(ts, options);
      ASSERT_TRUE(plan.ok()) << name << " seed " << seed << ": " << plan.status().ToString();
      Status check = CheckPlan(ts, *plan);
      ASSERT_TRUE(check.ok()) << name << " seed " << seed << ": " << check.ToString();
      EXPECT_GE(plan->TotalBytes(), peak) << name << " seed " << seed;
      EXPECT_LE(plan->lower_bound, plan->TotalBytes()) << name << " seed " << seed;
      if (testing::IsSharedObjectStrategy(name)) {
        EXPECT_GE(plan->TotalBytes(), positional) << name << " seed " << seed;
      }
      ratio_sum[name] += peak == 0 ? 1.0 : static_cast<double>(plan->TotalBytes()) / peak;
    }
  }
  for (const auto& [name, sum] : ratio_sum) {
    std::printf("%-22s mean TotalBytes / peak-live = %.3f over %d sets\n", name.c_str(), sum / sets, sets);
  }
}

TEST(RandomizedPlanners, BestIsNoWorseThanAnyStaticStrategy) {
  for (uint32_t seed = 300; seed < 310; ++seed) {
    std::vector<TensorLifetime> ts = testing::RandomLifetimes(seed, 40, 25, 1000, true);
    auto best = CreatePlanner("best");
    ASSERT_TRUE(best.ok());
    PlanOptions options;
    options.time_limit_seconds = 0.05;
    Result<Plan> b = (*best)->MakePlan(ts, options);
    ASSERT_TRUE(b.ok());
    for (const std::string& name : PlannerNames()) {
      if (name == "dynamic" || name == "best") continue;
      // Time-limited searches may do more work alone than inside best (which shares
      // the limit among its candidates), so their plans depend on machine load.
      // So may auto at this limit: its node budget decides its plan only when the
      // limit (here 0.05 s, keelc's is 1 s) does not cut its block construction
      // first (AutoPlanner.NeverWorseThanGreedySizeAndDeterministic checks it
      // under the default limit).
      if (name == "exact" || name == "lns" || name == "greedy-size-search" || name == "auto") continue;
      Result<Plan> p = (*CreatePlanner(name))->MakePlan(ts, options);
      ASSERT_TRUE(p.ok());
      EXPECT_LE(b->TotalBytes(), p->TotalBytes()) << name << " seed " << seed;
    }
  }
}

// CNN-like chains: each op reads the previous activation, sizes shrink by stages
// (stride-2 stages halve H and W, double C), residual blocks keep the block input
// alive across two convs, occasional wide concat branches.
std::vector<TensorLifetime> CnnChain(uint32_t seed, int stages, int blocks_per_stage) {
  std::mt19937 rng(seed);
  std::vector<TensorLifetime> ts;
  int step = 0;
  uint64_t act = 64ull * 112 * 112 * 4;  // bytes of one activation
  ts.push_back(testing::T(act, step, step + 1, 64));
  ++step;
  for (int s = 0; s < stages; ++s) {
    if (s > 0) act /= 2;  // H/2, W/2, 2C
    for (int b = 0; b < blocks_per_stage; ++b) {
      const int block_in = step;  // tensor produced at step-1 is read at step and by the add
      ts.back().last_use = block_in + 2;  // the residual input lives to the add
      ts.push_back(testing::T(act, step, step + 1, 64));      // conv1
      ts.push_back(testing::T(act, step + 1, step + 2, 64));  // conv2
      ts.push_back(testing::T(act, step + 2, step + 3, 64));  // add
      step += 3;
      if (rng() % 4 == 0) {  // a branch: two parallel convs concatenated
        ts.back().last_use = step + 1;
        ts.push_back(testing::T(act / 2, step, step + 2, 64));
        ts.push_back(testing::T(act / 2, step + 1, step + 2, 64));
        ts.push_back(testing::T(act, step + 2, step + 3, 64));
        step += 3;
      }
    }
  }
  return ts;
}

TEST(RandomizedPlanners, GreedySizeNearPeakOnCnnChains) {
  for (uint32_t seed = 0; seed < 10; ++seed) {
    std::vector<TensorLifetime> ts = CnnChain(seed, 4, 3 + static_cast<int>(seed % 3));
    const uint64_t peak = PeakLiveLowerBound(ts);
    Result<Plan> plan = (*CreatePlanner("greedy-size"))->MakePlan(ts, PlanOptions{});
    ASSERT_TRUE(plan.ok());
    ASSERT_TRUE(CheckPlan(ts, *plan).ok());
    const double ratio = static_cast<double>(plan->TotalBytes()) / static_cast<double>(peak);
    std::printf("cnn chain seed %u: %zu tensors, greedy-size / peak-live = %.4f\n", seed, ts.size(), ratio);
    EXPECT_LE(ratio, 1.05) << "seed " << seed;
  }
}

}  // namespace
}  // namespace keel::memory
