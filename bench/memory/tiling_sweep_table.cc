// bench/memory/tiling_sweep_table.cc — the PQ-tree time sweep
// (compiler/memory/tiling_sweep.h) on generated perfect packings: whether it
// tiles them at the optimum, where it gave up, and how many of the time
// points the generator's own layout frees in two or more gaps.
//
//   keel_tiling_sweep_table [--sizes 300,1000,3000,10000] [--seeds 3]
//                           [--capacity 1048576] [--steps 100000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench/memory/perfect_packing.h"
#include "compiler/memory/buffer_csv.h"
#include "compiler/memory/tiling_sweep.h"

namespace {

std::vector<int> Sizes(const std::string& text) {
  std::vector<int> sizes;
  std::stringstream in(text);
  for (std::string p; std::getline(in, p, ',');) sizes.push_back(std::atoi(p.c_str()));
  return sizes;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = Sizes("300,1000,3000,10000");
  int seeds = 3;
  uint64_t capacity = uint64_t{1} << 20;
  int32_t steps = 100000;
  std::string csv;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--sizes") sizes = Sizes(value);
    else if (flag == "--seeds") seeds = std::atoi(value.c_str());
    else if (flag == "--capacity") capacity = std::strtoull(value.c_str(), nullptr, 10);
    else if (flag == "--steps") steps = std::atoi(value.c_str());
    else if (flag == "--buffers") csv = value;
    else {
      std::fprintf(stderr, "usage: %s [--sizes N,..] [--seeds K] [--capacity BYTES] [--steps N]\n", argv[0]);
      return 2;
    }
  }
  if (!csv.empty()) {
    // A problem of its own (e.g. a piece from keel_guillotine_pieces): tiled
    // at its live bytes or not.
    auto tensors = keel::memory::ReadBufferCsv(csv);
    if (!tensors.ok()) {
      std::fprintf(stderr, "%s\n", tensors.status().message().c_str());
      return 2;
    }
    std::vector<keel::memory::internal::PackingItem> items;
    for (const auto& t : *tensors) items.push_back(keel::memory::internal::ItemOf(t));
    if (std::getenv("KS_REVERSE")) {
      // Time reversed: the same problem, swept from its end.
      int64_t last = 0;
      for (const auto& it : items) last = std::max(last, it.end);
      for (auto& it : items) it = {it.size, it.alignment, last - it.end, last - it.begin};
    }
    if (const char* truth = std::getenv("KS_TRUTH")) {
      // The generator's layout of problem N/S (ids are its indices): per end
      // time, the gaps its enders free.
      int tn = 0, ts = 0;
      std::sscanf(truth, "%d,%d", &tn, &ts);
      const auto problem = keel::memory::bench::PerfectPackingWithLayout(tn, static_cast<uint32_t>(ts), capacity, steps);
      std::map<int64_t, std::vector<std::pair<uint64_t, size_t>>> ends;
      std::map<int64_t, int> starts;
      for (size_t k = 0; k < tensors->size(); ++k) {
        const size_t id = std::stoul((*tensors)[k].name);
        ends[items[k].end].push_back({problem.offsets[id], k});
        ++starts[items[k].begin];
      }
      for (auto& [t, e] : ends) {
        std::sort(e.begin(), e.end());
        int gaps = 1;
        for (size_t k = 1; k < e.size(); ++k) gaps += e[k - 1].first + items[e[k - 1].second].size != e[k].first;
        std::printf("truth t=%lld enders=%zu starters=%d gaps=%d\n", static_cast<long long>(t), e.size(), starts[t], gaps);
      }
    }
    const auto start = std::chrono::steady_clock::now();
    const keel::memory::internal::TilingResult tiled = keel::memory::internal::TileWithoutSlack(items);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%zu buffers: %s, gave up at %lld, %.3f s\n", items.size(),
                tiled.offsets.empty() ? "none" : "optimum", static_cast<long long>(tiled.failed_at), seconds);
    return tiled.offsets.empty() ? 1 : 0;
  }
  std::printf("%-8s %-5s %8s %12s %10s %12s %9s\n", "buffers", "seed", "events", "multi-gap", "result", "gave up at", "seconds");
  for (int n : sizes) {
    for (int seed = 1; seed <= seeds; ++seed) {
      const keel::memory::bench::PerfectPackingProblem problem =
          keel::memory::bench::PerfectPackingWithLayout(n, static_cast<uint32_t>(seed), capacity, steps);
      std::vector<keel::memory::internal::PackingItem> items;
      for (const auto& t : problem.tensors) items.push_back(keel::memory::internal::ItemOf(t));
      // Per end time (but the last): the gaps its enders leave in the
      // generator's layout.
      std::map<int64_t, std::vector<std::pair<uint64_t, int32_t>>> ends;
      int64_t last = 0;
      for (const auto& it : items) last = std::max(last, it.end);
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].end < last) ends[items[i].end].push_back({problem.offsets[i], static_cast<int32_t>(i)});
      }
      int multi = 0;
      for (auto& [t, enders] : ends) {
        std::sort(enders.begin(), enders.end());
        int gaps = 1;
        for (size_t k = 1; k < enders.size(); ++k) {
          const auto& below = items[enders[k - 1].second];
          if (enders[k - 1].first + below.size != enders[k].first) ++gaps;
        }
        if (gaps > 1) ++multi;
      }
      const auto start = std::chrono::steady_clock::now();
      const keel::memory::internal::TilingResult tiled = keel::memory::internal::TileWithoutSlack(items);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("%-8d %-5d %8zu %12d %10s %12lld %9.3f\n", n, seed, ends.size(), multi,
                  tiled.offsets.empty() ? "none" : "optimum", static_cast<long long>(tiled.failed_at), seconds);
      std::fflush(stdout);
    }
  }
  return 0;
}
