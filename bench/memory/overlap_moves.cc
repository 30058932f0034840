// bench/memory/overlap_moves.cc — the speed of overlap minimization's moves
// (compiler/memory/overlap_search.h) on a fixed amount of work.
//
//   keel_overlap_moves --save PATH [--buffers 10000] [--seed 2] [--seconds 4]
//   keel_overlap_moves --load PATH [--buffers 10000] [--seed 2] [--moves 100000]
//
// --save plans a generated problem (perfect_packing.h) with `exact` for
// --seconds and writes each buffer's offset, one a line (a realistic start:
// the layout overlap minimization works on late in `exact`, 1-2% above the
// optimum, rather than a greedy one). --load reads such a file and runs
// MinimizeOverlap from it with a budget of --moves moves and no deadline,
// then prints the moves, the top reached, and the wall and CPU seconds.
//
// Why: the search is deterministic for a move budget, so two builds that
// print the same top did the same work, and their CPU seconds compare the
// speed of the same moves — where `exact` under a time limit takes another
// path as soon as anything is faster or the machine is loaded.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "bench/memory/perfect_packing.h"
#include "compiler/memory/large_neighbourhood_search.h"
#include "compiler/memory/overlap_search.h"
#include "compiler/memory/planner.h"

namespace {

namespace memory = keel::memory;
namespace internal = keel::memory::internal;

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s (--save PATH [--seconds S] | --load PATH [--moves M]) [--buffers N] [--seed S]\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string save, load;
  int buffers = 10000, seed = 2;
  double seconds = 4;
  unsigned long long moves = 100000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--save") save = value;
    else if (flag == "--load") load = value;
    else if (flag == "--buffers") buffers = std::atoi(value.c_str());
    else if (flag == "--seed") seed = std::atoi(value.c_str());
    else if (flag == "--seconds") seconds = std::atof(value.c_str());
    else if (flag == "--moves") moves = std::strtoull(value.c_str(), nullptr, 10);
    else return Usage(argv[0]);
  }
  if (save.empty() == load.empty() || buffers <= 0) return Usage(argv[0]);
  const uint64_t optimum = uint64_t{1} << 20;
  const std::vector<memory::TensorLifetime> ts = memory::bench::PerfectPacking(buffers, seed, optimum, 100000);
  if (!save.empty()) {
    memory::PlanOptions options;
    options.time_limit_seconds = seconds;
    auto plan = (*memory::CreatePlanner("exact"))->MakePlan(ts, options);
    if (!plan.ok() || !memory::CheckPlan(ts, *plan).ok()) return 1;
    FILE* out = std::fopen(save.c_str(), "w");
    if (out == nullptr) return 1;
    for (const memory::Placement& p : plan->placements) {
      std::fprintf(out, "%llu\n", static_cast<unsigned long long>(plan->storages[p.storage].offset + p.offset));
    }
    std::fclose(out);
    std::printf("saved %llu bytes (%.4f the optimum)\n", static_cast<unsigned long long>(plan->TotalBytes()),
                static_cast<double>(plan->TotalBytes()) / static_cast<double>(optimum));
    return 0;
  }
  std::vector<internal::PackingItem> items;
  for (const memory::TensorLifetime& t : ts) items.push_back(internal::ItemOf(t));
  std::vector<uint64_t> offsets(items.size());
  FILE* in = std::fopen(load.c_str(), "r");
  if (in == nullptr) return 1;
  for (uint64_t& offset : offsets) {
    unsigned long long value = 0;
    if (std::fscanf(in, "%llu", &value) != 1) return 1;
    offset = value;
  }
  std::fclose(in);
  internal::OverlapGraph graph;
  if (!internal::BuildOverlapGraph(items, &graph)) return 1;
  internal::RefineLimits limits;
  limits.max_moves = moves;
  const std::clock_t cpu_start = std::clock();
  const auto start = std::chrono::steady_clock::now();
  const internal::RefineResult r = internal::MinimizeOverlap(items, graph, std::move(offsets), optimum, limits);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  std::printf("moves %llu  top %llu (%.4f)  wall %.3f s  cpu %.3f s\n", static_cast<unsigned long long>(r.moves),
              static_cast<unsigned long long>(r.top), static_cast<double>(r.top) / static_cast<double>(optimum), wall,
              cpu);
  return 0;
}
