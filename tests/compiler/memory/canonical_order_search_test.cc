// tests/compiler/memory/canonical_order_search_test.cc — the canonical-order
// search decides exactly (found at the brute-force optimum, infeasible one byte
// below) in every candidate order, perturbed or not; the restarts over both
// engines decide the same way, deterministically; and with a fixed node budget
// they place MiniMalloc's challenging instances that the skyline search alone
// does not (no timed assertions: node budgets only).
#include <gtest/gtest.h>

#include "compiler/memory/buffer_csv.h"
#include "compiler/memory/canonical_order_search.h"
#include "compiler/memory/lower_bounds.h"
#include "compiler/memory/planner.h"
#include "memory_test_util.h"

namespace keel::memory {
namespace {


bool Fits(const std::vector<internal::PackingItem>& items, const std::vector<uint64_t>& off, uint64_t capacity) {
  if (off.size() != items.size()) return false;
  for (size_t i = 0; i < items.size(); ++i) {
    if (off[i] + items[i].size > capacity || off[i] % items[i].alignment != 0) return false;
    for (size_t j = i + 1; j < items.size(); ++j) {
      const bool live_together = items[i].begin < items[j].end && items[j].begin < items[i].end;
      if (live_together && off[i] < off[j] + items[j].size && off[j] < off[i] + items[i].size) return false;
    }
  }
  return true;
}

constexpr internal::CandidateOrder kOrders[] = {internal::CandidateOrder::kCrowdAreaLength,
                                                internal::CandidateOrder::kLengthAreaCrowd,
                                                internal::CandidateOrder::kCrowdLengthArea};

// In every candidate order, static, perturbed and re-ranked: a layout within
// `opt` is found and fits, and `opt - 1` is proven infeasible.
void ExpectDecidedInEveryOrder(const std::vector<internal::PackingItem>& items, uint64_t opt, uint32_t seed) {
  for (internal::CandidateOrder order : kOrders) {
    for (uint32_t variant = 0; variant < 3; ++variant) {
      internal::PackingLimits limits;
      limits.order = order;
      limits.seed = variant == 1 ? seed : 0;  // perturbed ranks
      limits.rerank_parts = variant == 2;     // parts re-ranked by their own crowds
      const internal::PackingResult fit = internal::PackInCanonicalOrder(items, opt, limits);
      ASSERT_EQ(fit.outcome, internal::PackingOutcome::kFound) << "seed " << seed;
      EXPECT_TRUE(Fits(items, fit.offsets, opt)) << "seed " << seed;
      EXPECT_EQ(internal::PackInCanonicalOrder(items, opt - 1, limits).outcome, internal::PackingOutcome::kInfeasible)
          << "seed " << seed;
    }
  }
}

TEST(CanonicalOrderSearch, DecidesExactlyOnSmallRandomSets) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    const int n = 2 + static_cast<int>(seed % 7);  // 2..8 tensors
    const std::vector<TensorLifetime> ts = testing::RandomLifetimes(seed, n, 6, 40, seed % 3 == 0);
    const uint64_t opt = testing::BruteForceOffsetOptimum(ts);
    const std::vector<internal::PackingItem> items = testing::ItemsOf(ts);
    ExpectDecidedInEveryOrder(items, opt, seed);
    const internal::PackingResult restarts = internal::PackWithRestarts(items, opt, internal::SearchClock::time_point::max());
    ASSERT_EQ(restarts.outcome, internal::PackingOutcome::kFound) << "seed " << seed;
    EXPECT_TRUE(Fits(items, restarts.offsets, opt));
    EXPECT_EQ(internal::PackWithRestarts(items, opt - 1, internal::SearchClock::time_point::max()).outcome,
              internal::PackingOutcome::kInfeasible);
  }
}

// Parts that split in the middle of the search (the decomposition scan is
// skipped while no split can have happened; memory_test_util.h), in every
// order, perturbed and re-ranked.
TEST(CanonicalOrderSearch, DecidesExactlyWhenPartsSplitDuringTheSearch) {
  for (uint32_t seed = 1; seed <= 150; ++seed) {
    const std::vector<TensorLifetime> ts = testing::BlocksHeldByLongBuffers(seed);
    const uint64_t opt = testing::BruteForceOffsetOptimum(ts);
    const std::vector<internal::PackingItem> items = testing::ItemsOf(ts);
    ExpectDecidedInEveryOrder(items, opt, seed);
  }
}

TEST(CanonicalOrderSearch, NodeBudgetGivesUnknown) {
  const std::vector<TensorLifetime> ts = testing::RandomLifetimes(5, 200, 60, 1000, false);
  internal::PackingLimits limits;
  limits.max_nodes = 3;
  // The peak-live bound is tight enough that 3 nodes cannot settle it.
  EXPECT_EQ(internal::PackInCanonicalOrder(testing::ItemsOf(ts), PeakLiveLowerBound(ts), limits).outcome,
            internal::PackingOutcome::kUnknown);
}

std::vector<internal::PackingItem> Challenging(const std::string& name) {
  Result<std::vector<TensorLifetime>> ts = ReadBufferCsv(std::string(KEEL_MEMPLAN_INSTANCES) + "/" + name);
  EXPECT_TRUE(ts.ok()) << ts.status().ToString();
  return ts.ok() ? testing::ItemsOf(*ts) : std::vector<internal::PackingItem>{};
}

// Under a node budget `exact`'s plan depends on the nodes only, not on how the
// time limit would have been shared between its searches (J: the buffers'
// search stays above the bound, then the block construction's probes and
// improvement split the nodes; with time shares the plan changed from run to
// run on a loaded machine).
TEST(ExactPlanner, UnderANodeBudgetThePlanDoesNotDependOnTheTimeLimit) {
  Result<std::vector<TensorLifetime>> ts = ReadBufferCsv(std::string(KEEL_MEMPLAN_INSTANCES) + "/J.1048576.csv");
  ASSERT_TRUE(ts.ok()) << ts.status().ToString();
  std::vector<uint64_t> first;
  for (double seconds : {60.0, 600.0}) {
    PlanOptions options;
    options.node_budget = 20000;  // keelc's `auto`
    options.time_limit_seconds = seconds;
    Result<Plan> plan = (*CreatePlanner("exact"))->MakePlan(*ts, options);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_TRUE(CheckPlan(*ts, *plan).ok());
    EXPECT_LT(plan->TotalBytes(), 1136640u);  // below the buffers' search's own plan: the blocks helped
    std::vector<uint64_t> offsets;
    for (const Placement& p : plan->placements) offsets.push_back(p.offset);
    if (first.empty()) {
      first = offsets;
    } else {
      EXPECT_EQ(offsets, first) << "time limit " << seconds << " s";
    }
  }
}

// J and F: the skyline search's static order does not place them within
// 1 MiB in its first run; the restarts' canonical-order runs do, within a fixed
// node budget (the answer depends only on the input).
TEST(PackWithRestarts, PlacesChallengingInstancesWithinANodeBudget) {
  for (const char* name : {"J.1048576.csv", "F.1048576.csv"}) {
    const std::vector<internal::PackingItem> items = Challenging(name);
    ASSERT_FALSE(items.empty());
    const internal::PackingResult a = internal::PackWithRestarts(items, 1048576, internal::SearchClock::time_point::max(), 2000000);
    ASSERT_EQ(a.outcome, internal::PackingOutcome::kFound) << name;
    EXPECT_TRUE(Fits(items, a.offsets, 1048576)) << name;
    const internal::PackingResult b = internal::PackWithRestarts(items, 1048576, internal::SearchClock::time_point::max(), 2000000);
    EXPECT_EQ(a.offsets, b.offsets) << name << ": same input, same plan";
    EXPECT_EQ(a.nodes, b.nodes);
  }
}

}  // namespace
}  // namespace keel::memory
