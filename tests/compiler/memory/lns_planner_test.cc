// tests/compiler/memory/lns_planner_test.cc — `lns` and its parts: the
// skyline search between fixed floors and ceilings (PackBetweenBounds) against
// brute force, the known optimum of generated perfect packings, validity on
// random lifetimes (alignments, two devices, in-place pairs), determinism and
// the node budget.
#include <gtest/gtest.h>

#include <random>

#include "bench/memory/perfect_packing.h"
#include "compiler/memory/large_neighbourhood_search.h"
#include "compiler/memory/lns_planner.h"
#include "compiler/memory/planner.h"
#include "compiler/memory/skyline_search.h"
#include "memory_test_util.h"

namespace keel::memory {
namespace {


bool Overlap(const internal::PackingItem& a, uint64_t oa, const internal::PackingItem& b, uint64_t ob) {
  return a.begin < b.end && b.begin < a.end && oa < ob + b.size && ob < oa + a.size;
}

// Is there a layout within the bounds? Every order, each buffer at its lowest
// feasible aligned offset at or above its floors (complete: see
// memory_test_util.h's argument; ceilings only cut).
bool BruteForceFits(const std::vector<internal::PackingItem>& items, const internal::SectionedItems& form,
                    const internal::SectionBounds& bounds) {
  std::vector<int> perm(items.size());
  std::iota(perm.begin(), perm.end(), 0);
  do {
    std::vector<uint64_t> off(items.size(), 0);
    std::vector<char> placed(items.size(), 0);
    bool ok = true;
    for (int x : perm) {
      uint64_t floor = 0, ceiling = UINT64_MAX;
      for (int32_t s = form.first[x]; s < form.end[x]; ++s) {
        floor = std::max(floor, bounds.floor[s]);
        ceiling = std::min(ceiling, bounds.ceiling[s]);
      }
      std::vector<uint64_t> cand{internal::AlignUp(floor, items[x].alignment)};
      for (size_t y = 0; y < items.size(); ++y) {
        if (placed[y]) cand.push_back(internal::AlignUp(std::max(floor, off[y] + items[y].size), items[x].alignment));
      }
      std::sort(cand.begin(), cand.end());
      bool put = false;
      for (uint64_t o : cand) {
        bool free = true;
        for (size_t y = 0; y < items.size() && free; ++y) free = !placed[y] || !Overlap(items[x], o, items[y], off[y]);
        if (free) {
          off[x] = o;
          put = true;
          break;
        }
      }
      if (!put || off[x] + items[x].size > ceiling) {
        ok = false;
        break;
      }
      placed[x] = 1;
    }
    if (ok) return true;
  } while (std::next_permutation(perm.begin(), perm.end()));
  return false;
}

TEST(PackBetweenBounds, AgreesWithBruteForce) {
  int found = 0, infeasible = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<internal::PackingItem> items =
        testing::ItemsOf(testing::RandomLifetimes(seed, 3 + static_cast<int>(seed % 4), 6, 20, seed % 2 == 0));
    const internal::SectionedItems form = internal::ToSections(items);
    internal::SectionBounds bounds;
    for (int32_t s = 0; s < form.sections; ++s) {
      bounds.floor.push_back(rng() % 16);
      bounds.ceiling.push_back(bounds.floor.back() + 10 + rng() % 60);
    }
    const internal::PackingResult r = internal::PackBetweenBounds(items, bounds, {});
    ASSERT_NE(r.outcome, internal::PackingOutcome::kUnknown);
    const bool brute = BruteForceFits(items, form, bounds);
    EXPECT_EQ(r.outcome == internal::PackingOutcome::kFound, brute) << "seed " << seed;
    if (r.outcome != internal::PackingOutcome::kFound) {
      ++infeasible;
      continue;
    }
    ++found;
    for (size_t x = 0; x < items.size(); ++x) {
      EXPECT_EQ(r.offsets[x] % items[x].alignment, 0u);
      for (int32_t s = form.first[x]; s < form.end[x]; ++s) {
        EXPECT_GE(r.offsets[x], bounds.floor[s]) << "seed " << seed;
        EXPECT_LE(r.offsets[x] + items[x].size, bounds.ceiling[s]) << "seed " << seed;
      }
      for (size_t y = 0; y < x; ++y) EXPECT_FALSE(Overlap(items[x], r.offsets[x], items[y], r.offsets[y]));
    }
  }
  EXPECT_GT(found, 30);  // both answers are exercised
  EXPECT_GT(infeasible, 30);
}

// A node budget decides: the time limit is far away.
PlanOptions Budgeted(uint64_t nodes) {
  PlanOptions options;
  options.time_limit_seconds = 600;
  options.node_budget = nodes;
  return options;
}

TEST(LnsPlanner, FindsTheKnownOptimumOfPerfectPackings) {
  for (int n : {50, 100, 200}) {
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      const std::vector<TensorLifetime> ts = bench::PerfectPacking(n, seed);
      ASSERT_EQ(PeakLiveLowerBound(ts), uint64_t{1} << 20);
      Result<Plan> plan = LnsPlanner().MakePlan(ts, Budgeted(20000000));
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      ASSERT_TRUE(CheckPlan(ts, *plan).ok());
      EXPECT_EQ(plan->TotalBytes(), uint64_t{1} << 20) << n << " buffers, seed " << seed;
      EXPECT_TRUE(plan->optimal);
      EXPECT_FALSE(plan->stopped_by_time_limit);
    }
  }
}

TEST(LnsPlanner, ValidAndNoWorseThanGreedySizeOnRandomLifetimes) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::vector<TensorLifetime> ts = testing::RandomLifetimes(seed, 30 + static_cast<int>(seed % 50), 40, 5000,
                                                              seed % 2 == 0, seed % 3 == 0);
    if (seed % 4 == 0) {  // in-place pairs (greedy-size may use them; the search does not)
      for (size_t i = 1; i < ts.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
          if (ts[j].last_use == ts[i].first_use && ts[j].device == ts[i].device) {
            ts[i].may_alias_with = static_cast<int32_t>(j);
            break;
          }
        }
      }
    }
    ts.push_back(testing::T(0, 3, 5));  // an empty tensor
    Result<Plan> lns = LnsPlanner().MakePlan(ts, Budgeted(200000));
    ASSERT_TRUE(lns.ok()) << lns.status().ToString();
    ASSERT_TRUE(CheckPlan(ts, *lns).ok()) << "seed " << seed << ": " << CheckPlan(ts, *lns).message();
    Result<Plan> greedy = (*CreatePlanner("greedy-size"))->MakePlan(ts, {});
    ASSERT_TRUE(greedy.ok());
    EXPECT_LE(lns->TotalBytes(), greedy->TotalBytes()) << "seed " << seed;
    EXPECT_GE(lns->TotalBytes(), PeakLiveLowerBound(ts));
  }
}

TEST(LnsPlanner, SameInputSameOffsets) {
  const std::vector<TensorLifetime> ts = bench::PerfectPacking(1000, 4);
  Result<Plan> a = LnsPlanner().MakePlan(ts, Budgeted(300000));
  Result<Plan> b = LnsPlanner().MakePlan(ts, Budgeted(300000));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(CheckPlan(ts, *a).ok());
  ASSERT_EQ(a->placements.size(), b->placements.size());
  for (size_t i = 0; i < a->placements.size(); ++i) EXPECT_EQ(a->placements[i].offset, b->placements[i].offset);
  EXPECT_EQ(a->TotalBytes(), b->TotalBytes());
}

TEST(LargeNeighbourhoodSearch, RespectsTheNodeBudget) {
  const std::vector<internal::PackingItem> items = testing::ItemsOf(bench::PerfectPacking(500, 2));
  internal::OverlapGraph graph;
  ASSERT_TRUE(internal::BuildOverlapGraph(items, &graph));
  const std::vector<uint64_t> start = internal::ConstructLayout(items, graph);
  // No budget: the starting layout comes back unchanged.
  internal::LnsLimits none;
  none.max_nodes = 0;
  internal::LnsResult same = internal::ImproveLayout(items, graph, start, uint64_t{1} << 20, none);
  EXPECT_EQ(same.offsets, start);
  EXPECT_EQ(same.nodes, 0u);
  // A budget is kept (one node over at most: the run that finds it spent).
  for (uint64_t budget : {1000u, 20000u, 100000u}) {
    internal::LnsLimits limits;
    limits.max_nodes = budget;
    internal::LnsResult r = internal::ImproveLayout(items, graph, start, uint64_t{1} << 20, limits);
    EXPECT_LE(r.nodes, budget + 1);
    uint64_t start_top = 0;
    for (size_t i = 0; i < items.size(); ++i) start_top = std::max(start_top, start[i] + items[i].size);
    EXPECT_LE(r.top, start_top);
    for (size_t x = 0; x < items.size(); ++x) {
      for (int64_t k = graph.start[x]; k < graph.start[x + 1]; ++k) {
        const size_t y = static_cast<size_t>(graph.neighbours[k]);
        ASSERT_FALSE(Overlap(items[x], r.offsets[x], items[y], r.offsets[y])) << x << " and " << y;
      }
    }
  }
}

}  // namespace
}  // namespace keel::memory
