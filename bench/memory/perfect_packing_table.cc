// bench/memory/perfect_packing_table.cc — planners on generated problems whose
// optimum is known (bench/memory/perfect_packing.h): bytes / optimum and time.
//
//   keel_perfect_packing_table [--sizes 100,300,1000,3000,10000] [--seeds 3]
//                              [--time-limit 10] [--node-budget 0]
//                              [--strategies greedy-size,exact,lns]
//                              [--capacity 1048576] [--steps 100000]
//                              [--first-seed 1] [--trace 1]
//
// Prints one row per (buffers, seed, strategy): bytes, ratio to the optimum,
// whether the plan was proven optimal, planning time, and "time" when the time
// limit rather than the node budget ended a search (`lns`: the plan then
// depends on the machine); every plan is checked. --capacity and --steps set the
// generator's rectangle (the optimum is the capacity): a small one packs the
// same number of buffers denser — few bytes and steps each, as in the 10,000-
// buffer problem of seed 2's first window (docs/MEMORY_PLANNING.md, "Windows").
// --trace 1 prints, to stderr, every new best top of overlap minimization
// (`exact`'s last phases) with the seconds since the plan's start, and the
// item count (blocks or buffers) it works on: when the search stops improving.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench/memory/perfect_packing.h"
#include "compiler/memory/overlap_search.h"
#include "compiler/memory/planner.h"

namespace {

std::chrono::steady_clock::time_point g_plan_start;

void PrintTrace(size_t items, uint64_t top) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - g_plan_start).count();
  std::fprintf(stderr, "trace %8.3f s  items %6zu  top %llu\n", seconds, items, static_cast<unsigned long long>(top));
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string p; std::getline(in, p, ',');) parts.push_back(p);
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> sizes = Split("100,300,1000,3000,10000");
  std::vector<std::string> strategies = Split("greedy-size,greedy-size-search,exact,lns");
  int seeds = 3, first_seed = 1;  // seeds first_seed .. seeds
  double time_limit = 10;
  unsigned long long node_budget = 0;
  uint64_t optimum = uint64_t{1} << 20;
  int32_t steps = 100000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--sizes") sizes = Split(value);
    else if (flag == "--seeds") seeds = std::atoi(value.c_str());
    else if (flag == "--first-seed") first_seed = std::atoi(value.c_str());
    else if (flag == "--time-limit") time_limit = std::atof(value.c_str());
    else if (flag == "--strategies") strategies = Split(value);
    else if (flag == "--node-budget") node_budget = std::strtoull(value.c_str(), nullptr, 10);
    else if (flag == "--capacity") optimum = std::strtoull(value.c_str(), nullptr, 10);
    else if (flag == "--steps") steps = std::atoi(value.c_str());
    else if (flag == "--trace") keel::memory::internal::SetOverlapTrace(std::atoi(value.c_str()) != 0 ? PrintTrace : nullptr);
    else {
      std::fprintf(stderr, "usage: %s [--sizes N,..] [--seeds K] [--first-seed S] [--time-limit SEC] [--node-budget N] [--strategies A,B] [--capacity BYTES] [--steps N] [--trace 0|1]\n", argv[0]);
      return 2;
    }
  }
  std::printf("%-8s %-5s %-20s %12s %9s %8s %9s %s\n", "buffers", "seed", "strategy", "bytes", "/optimum", "proven",
              "seconds", "stop");
  int failures = 0;
  for (const std::string& size_text : sizes) {
    const int n = std::atoi(size_text.c_str());
    for (int seed = first_seed; seed <= seeds; ++seed) {
      const std::vector<keel::memory::TensorLifetime> ts = keel::memory::bench::PerfectPacking(n, seed, optimum, steps);
      for (const std::string& name : strategies) {
        auto planner = keel::memory::CreatePlanner(name);
        if (!planner.ok()) {
          std::fprintf(stderr, "%s\n", planner.status().ToString().c_str());
          return 2;
        }
        keel::memory::PlanOptions options;
        options.time_limit_seconds = time_limit;
        options.node_budget = node_budget;
        const auto start = std::chrono::steady_clock::now();
        g_plan_start = start;
        auto plan = (*planner)->MakePlan(ts, options);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!plan.ok() || !keel::memory::CheckPlan(ts, *plan).ok()) {
          std::printf("%-8d %-5d %-20s FAILED\n", n, seed, name.c_str());
          ++failures;
          continue;
        }
        std::printf("%-8d %-5d %-20s %12llu %9.4f %8s %9.3f %s\n", n, seed, name.c_str(),
                    static_cast<unsigned long long>(plan->TotalBytes()),
                    static_cast<double>(plan->TotalBytes()) / static_cast<double>(optimum),
                    plan->optimal ? "yes" : "no", seconds, plan->stopped_by_time_limit ? "time" : "");
        std::fflush(stdout);
      }
    }
  }
  return failures == 0 ? 0 : 1;
}
