// A published usage-record set: the 9 records (size, first op, last op) of TensorFlow
// Lite GPU's memory-management tests, from the authors of Pisarchyk & Lee (2020).
// (The paper's own 8-tensor figure is only an image; this set is the authors'
// machine-readable example.) Optima are computed here by brute force, independently of
// the planners; the published results (greedy objects 32+64+16+8 = 120 bytes,
// min-cost-flow 32+64+8+8 = 112) are checked for consistency with them.
#include <gtest/gtest.h>

#include "compiler/memory/planner.h"
#include "memory_test_util.h"

namespace keel::memory {
namespace {

using testing::T;

std::vector<TensorLifetime> PublishedRecords() {
  return {T(32, 0, 1), T(32, 1, 4), T(8, 2, 5),  T(16, 3, 5), T(8, 4, 5),
          T(64, 5, 7), T(8, 6, 8),  T(8, 7, 8),  T(16, 8, 9)};
}

TEST(PublishedRecords, BoundsAndOptimaAreConsistent) {
  const std::vector<TensorLifetime> ts = PublishedRecords();
  const uint64_t offset_optimum = testing::BruteForceOffsetOptimum(ts);
  const uint64_t object_optimum = testing::BruteForceSharedObjectOptimum(ts);
  EXPECT_LE(PeakLiveLowerBound(ts), offset_optimum);
  EXPECT_LE(PositionalMaxLowerBound(ts), object_optimum);
  EXPECT_LE(offset_optimum, object_optimum);  // objects are one way to lay out offsets
  EXPECT_LE(object_optimum, 112u);             // the published min-cost-flow result
  std::printf("published records: peak-live %llu, positional-max %llu, offset optimum %llu, object optimum %llu\n",
              static_cast<unsigned long long>(PeakLiveLowerBound(ts)),
              static_cast<unsigned long long>(PositionalMaxLowerBound(ts)),
              static_cast<unsigned long long>(offset_optimum), static_cast<unsigned long long>(object_optimum));
}

TEST(PublishedRecords, EveryPlannerIsValidAndNoBetterThanTheOptimum) {
  const std::vector<TensorLifetime> ts = PublishedRecords();
  const uint64_t offset_optimum = testing::BruteForceOffsetOptimum(ts);
  const uint64_t object_optimum = testing::BruteForceSharedObjectOptimum(ts);
  for (const std::string& name : PlannerNames()) {
    auto planner = CreatePlanner(name);
    ASSERT_TRUE(planner.ok()) << name;
    PlanOptions options;
    options.time_limit_seconds = 10;
    Result<Plan> plan = (*planner)->MakePlan(ts, options);
    ASSERT_TRUE(plan.ok()) << name << ": " << plan.status().ToString();
    Status check = CheckPlan(ts, *plan);
    EXPECT_TRUE(check.ok()) << name << ": " << check.ToString();
    const uint64_t floor = testing::IsSharedObjectStrategy(name) ? object_optimum : offset_optimum;
    EXPECT_GE(plan->TotalBytes(), floor) << name;
    std::printf("%-22s %llu bytes\n", name.c_str(), static_cast<unsigned long long>(plan->TotalBytes()));
    // The published min-cost-flow result (112) is this set's shared-object optimum.
    if (name == "min-cost-flow") {
      EXPECT_EQ(plan->TotalBytes(), object_optimum);
    }
    if (name == "greedy-size" || name == "best") {
      EXPECT_EQ(plan->TotalBytes(), offset_optimum) << name;
    }
  }
}

TEST(PublishedRecords, ExactFindsAndProvesTheOffsetOptimum) {
  const std::vector<TensorLifetime> ts = PublishedRecords();
  PlanOptions options;
  options.time_limit_seconds = 30;
  Result<Plan> plan = (*CreatePlanner("exact"))->MakePlan(ts, options);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->TotalBytes(), testing::BruteForceOffsetOptimum(ts));
  EXPECT_TRUE(plan->optimal);
}

}  // namespace
}  // namespace keel::memory
