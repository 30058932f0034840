// bench/memory/planner_bench.cc — planning time of every strategy and of
// CheckPlan on synthetic lifetimes.
//
// Inputs are network-like: a chain where each step produces one tensor read by
// the next one or two steps, a few long-lived tensors (skip connections that live
// up to ~64 steps), sizes from 1 KiB to 4 MiB, alignment 64. The counters report
// TotalBytes / PeakLiveLowerBound so quality can be compared along with speed.
//
//   keel_memory_bench --benchmark_filter=GreedySize/100000
#include <benchmark/benchmark.h>

#include <random>

#include "compiler/memory/planner.h"

namespace keel::memory {
namespace {

std::vector<TensorLifetime> NetworkLike(int n, uint32_t seed = 42) {
  std::mt19937 rng(seed);
  std::vector<TensorLifetime> ts(n);
  for (int i = 0; i < n; ++i) {
    TensorLifetime& t = ts[i];
    t.size = (uint64_t{1} << (10 + rng() % 13)) + 64 * (rng() % 16);
    t.alignment = 64;
    t.first_use = i;
    const uint32_t r = rng() % 16;
    t.last_use = i + 1 + (r == 0 ? static_cast<int32_t>(rng() % 64) : static_cast<int32_t>(r % 2));
  }
  return ts;
}

void RunPlanner(benchmark::State& state, const char* name) {
  const std::vector<TensorLifetime> ts = NetworkLike(static_cast<int>(state.range(0)));
  auto planner = CreatePlanner(name);
  if (!planner.ok()) {
    state.SkipWithError(planner.status().ToString().c_str());
    return;
  }
  PlanOptions options;
  options.time_limit_seconds = 1.0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    Result<Plan> plan = (*planner)->MakePlan(ts, options);
    if (!plan.ok()) {
      state.SkipWithError(plan.status().ToString().c_str());
      return;
    }
    bytes = plan->TotalBytes();
    benchmark::DoNotOptimize(bytes);
  }
  const uint64_t peak = PeakLiveLowerBound(ts);
  state.counters["bytes/peak"] = peak == 0 ? 0.0 : static_cast<double>(bytes) / static_cast<double>(peak);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_Naive(benchmark::State& s) { RunPlanner(s, "naive"); }
void BM_Dynamic(benchmark::State& s) { RunPlanner(s, "dynamic"); }
void BM_Tvm(benchmark::State& s) { RunPlanner(s, "tvm"); }
void BM_GreedySize(benchmark::State& s) { RunPlanner(s, "greedy-size"); }
void BM_GreedySizeFirstFit(benchmark::State& s) { RunPlanner(s, "greedy-size-first-fit"); }
void BM_GreedySizeSearch(benchmark::State& s) { RunPlanner(s, "greedy-size-search"); }
void BM_GreedyBreadth(benchmark::State& s) { RunPlanner(s, "greedy-breadth"); }
void BM_GreedySizeObjects(benchmark::State& s) { RunPlanner(s, "greedy-size-objects"); }
void BM_MinCostFlow(benchmark::State& s) { RunPlanner(s, "min-cost-flow"); }
void BM_Exact(benchmark::State& s) { RunPlanner(s, "exact"); }
void BM_Best(benchmark::State& s) { RunPlanner(s, "best"); }

BENCHMARK(BM_GreedySize)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GreedySizeFirstFit)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
// greedy-size-search: up to OffsetSearchPlanner::kPlacementBudget placements (1 s limit).
BENCHMARK(BM_GreedySizeSearch)->Arg(1000)->Arg(10000)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Naive)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Dynamic)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Tvm)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GreedyBreadth)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GreedySizeObjects)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MinCostFlow)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
// exact: 1 s time limit per call (it returns greedy-size's plan or better).
BENCHMARK(BM_Exact)->Arg(1000)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Best)->Arg(1000)->Arg(10000)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_CheckPlan(benchmark::State& state) {
  const std::vector<TensorLifetime> ts = NetworkLike(static_cast<int>(state.range(0)));
  Result<Plan> plan = (*CreatePlanner("greedy-size"))->MakePlan(ts, PlanOptions{});
  if (!plan.ok()) {
    state.SkipWithError("planning failed");
    return;
  }
  for (auto _ : state) {
    Status s = CheckPlan(ts, *plan);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_CheckPlan)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_LowerBounds(benchmark::State& state) {
  const std::vector<TensorLifetime> ts = NetworkLike(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(PeakLiveLowerBound(ts));
    benchmark::DoNotOptimize(PositionalMaxLowerBound(ts));
  }
}
BENCHMARK(BM_LowerBounds)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace keel::memory

BENCHMARK_MAIN();
