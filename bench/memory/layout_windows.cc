// bench/memory/layout_windows.cc — where a plan of a generated problem
// (perfect_packing.h, optimum known) loses bytes: the time windows in which
// its top is above the optimum, and what holds each window there.
//
//   keel_layout_windows [--buffers 10000] [--seed 2] [--strategy exact]
//                       [--time-limit 10] [--export-window K PATH]
//
// Plans the problem, then prints, for each maximal run of steps whose top is
// above the optimum: its steps and highest excess; the buffers inside it and
// their live bytes (a perfect packing is full at every step: no slack); the
// buffers crossing its ends, those living over nearly all of it ("walls":
// fixed columns that every step of the window shares with the rest of the
// layout) and the bytes they take; the excess in eight equal slices of the
// window; the buffers reaching above the optimum against the window's own
// lifetimes; and, per way of merging (block_merging.h), the blocks with
// buffers in the window and how many of them are not rectangles of the
// generator's layout. --export-window writes window K (0-based) as a problem
// of its own (MiniMalloc's CSV: the buffers living in it, crossing ones cut
// to it), e.g. for `keel-plan --buffers PATH --strategies exact`: its optimum
// is the generator's too, and nothing outside fixes its boundary.
//
// Why: the last percent on the 10,000-buffer problems is lost in a few such
// windows; whether their boundary or their inside holds them up decides
// which moves can help (docs/MEMORY_PLANNING.md, "Windows").
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bench/memory/block_quality.h"
#include "bench/memory/perfect_packing.h"
#include "compiler/memory/buffer_csv.h"
#include "compiler/memory/planner.h"

namespace {

namespace memory = keel::memory;
namespace internal = keel::memory::internal;

struct Window {
  int64_t begin = 0, end = 0;  // steps [begin, end)
};

int64_t Median(std::vector<int64_t> values) {
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// A buffer spanning at least this share of a window (in steps) counts as a wall.
constexpr double kWallShare = 0.9;
constexpr int kSlices = 8;

void Describe(const std::vector<internal::PackingItem>& items, const std::vector<uint64_t>& generator,
              const std::vector<uint64_t>& offsets, const std::vector<uint64_t>& top, uint64_t optimum,
              const Window& w, size_t index) {
  const int64_t steps = w.end - w.begin;
  uint64_t excess = 0;
  for (int64_t t = w.begin; t < w.end; ++t) excess = std::max(excess, top[t] - optimum);
  std::vector<int64_t> lifetimes, above_lifetimes;
  size_t inside = 0, crossing = 0, walls = 0;
  uint64_t wall_bytes = 0;
  std::vector<uint64_t> live(steps, 0);
  std::vector<char> in_window(items.size(), 0);
  for (size_t i = 0; i < items.size(); ++i) {
    const internal::PackingItem& it = items[i];
    if (it.end <= w.begin || it.begin >= w.end) continue;
    in_window[i] = 1;
    const int64_t b = std::max(it.begin, w.begin), e = std::min(it.end, w.end);
    for (int64_t t = b; t < e; ++t) live[t - w.begin] += it.size;
    if (it.begin >= w.begin && it.end <= w.end) {
      ++inside;
    } else {
      ++crossing;
      if (static_cast<double>(e - b) >= kWallShare * static_cast<double>(steps)) {
        ++walls;
        wall_bytes += it.size;
      }
    }
    lifetimes.push_back(it.end - it.begin);
    if (offsets[i] + it.size > optimum) above_lifetimes.push_back(it.end - it.begin);
  }
  const auto [low, high] = std::minmax_element(live.begin(), live.end());
  std::printf("window %zu: steps [%lld, %lld) (%lld), excess up to %llu B (%.4f); buffers %zu inside, %zu crossing its ends"
              " (%zu walls over >= %.0f%% of it, %llu B); live bytes %llu..%llu\n",
              index, static_cast<long long>(w.begin), static_cast<long long>(w.end), static_cast<long long>(steps),
              static_cast<unsigned long long>(excess), 1.0 + static_cast<double>(excess) / static_cast<double>(optimum),
              inside, crossing, walls, kWallShare * 100, static_cast<unsigned long long>(wall_bytes),
              static_cast<unsigned long long>(*low), static_cast<unsigned long long>(*high));
  std::printf("  excess per eighth:");
  for (int s = 0; s < kSlices; ++s) {
    uint64_t e = 0;
    for (int64_t t = w.begin + steps * s / kSlices; t < w.begin + steps * (s + 1) / kSlices; ++t) {
      e = std::max(e, top[t] - optimum);
    }
    std::printf(" %llu", static_cast<unsigned long long>(e));
  }
  std::printf("\n  buffers above the optimum: %zu, median lifetime %lld steps (the window's buffers: %lld)\n",
              above_lifetimes.size(), static_cast<long long>(Median(above_lifetimes)),
              static_cast<long long>(Median(lifetimes)));
  for (const internal::MergeRules& rules : internal::kMergeVariants) {
    const internal::BlockProblem problem = internal::MergeIntoBlocks(items, rules);
    // The quality of every block, then those holding a buffer of the window.
    std::vector<char> wrong(problem.blocks.size(), 0), counted(problem.blocks.size(), 0);
    for (size_t b = 0; b < problem.blocks.size(); ++b) {
      internal::BlockProblem one;
      one.blocks = {problem.blocks[b]};
      std::vector<internal::PackingItem> members;
      std::vector<uint64_t> layout;
      for (size_t i = 0; i < items.size(); ++i) {
        if (problem.block_of[i] != static_cast<int32_t>(b)) continue;
        members.push_back(items[i]);
        layout.push_back(generator[i]);
        one.block_of.push_back(0);
        one.offset_in_block.push_back(problem.offset_in_block[i]);
      }
      wrong[b] = memory::bench::MeasureBlocks(members, layout, one).not_rectangles != 0;
    }
    size_t blocks = 0, not_rectangles = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      const int32_t b = problem.block_of[i];
      if (!in_window[i] || counted[b]) continue;
      counted[b] = 1;
      ++blocks;
      not_rectangles += wrong[b];
    }
    std::printf("  merge max_stack=%zu%s: %zu blocks in it, %zu not rectangles of the generator's layout\n",
                rules.max_stack == SIZE_MAX ? 0 : rules.max_stack, rules.chains_first ? " chains first" : "", blocks,
                not_rectangles);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int n = 10000;
  uint32_t seed = 2;
  std::string strategy = "exact", export_path;
  double time_limit = 10;
  long export_window = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--export-window" && i + 2 < argc) {
      export_window = std::atol(argv[++i]);
      export_path = argv[++i];
    } else if (i + 1 < argc && flag == "--buffers") {
      n = std::atoi(argv[++i]);
    } else if (i + 1 < argc && flag == "--seed") {
      seed = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (i + 1 < argc && flag == "--strategy") {
      strategy = argv[++i];
    } else if (i + 1 < argc && flag == "--time-limit") {
      time_limit = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--buffers N] [--seed S] [--strategy NAME] [--time-limit SEC] [--export-window K PATH]\n",
                   argv[0]);
      return 2;
    }
  }
  const uint64_t optimum = uint64_t{1} << 20;
  const memory::bench::PerfectPackingProblem problem = memory::bench::PerfectPackingWithLayout(n, seed, optimum);
  auto planner = memory::CreatePlanner(strategy);
  if (!planner.ok()) {
    std::fprintf(stderr, "%s\n", planner.status().ToString().c_str());
    return 2;
  }
  memory::PlanOptions options;
  options.time_limit_seconds = time_limit;
  auto plan = (*planner)->MakePlan(problem.tensors, options);
  if (!plan.ok() || !memory::CheckPlan(problem.tensors, *plan).ok()) {
    std::fprintf(stderr, "planning failed\n");
    return 1;
  }
  auto offsets = memory::SingleArenaAddresses(*plan);
  if (!offsets.ok()) {
    std::fprintf(stderr, "%s\n", offsets.status().ToString().c_str());
    return 1;
  }
  std::vector<internal::PackingItem> items;
  int64_t steps = 0;
  for (const memory::TensorLifetime& t : problem.tensors) {
    items.push_back(internal::ItemOf(t));
    steps = std::max(steps, items.back().end);
  }
  std::vector<uint64_t> top(steps, 0);
  for (size_t i = 0; i < items.size(); ++i) {
    for (int64_t t = items[i].begin; t < items[i].end; ++t) top[t] = std::max(top[t], (*offsets)[i] + items[i].size);
  }
  std::vector<Window> windows;
  for (int64_t t = 0; t < steps; ++t) {
    if (top[t] <= optimum) continue;
    if (windows.empty() || windows.back().end != t) windows.push_back({t, t});
    windows.back().end = t + 1;
  }
  std::printf("%d buffers, seed %u, %s: %llu B (%.4f the optimum), %zu windows above it\n", n, seed, strategy.c_str(),
              static_cast<unsigned long long>(plan->TotalBytes()),
              static_cast<double>(plan->TotalBytes()) / static_cast<double>(optimum), windows.size());
  for (size_t k = 0; k < windows.size(); ++k) Describe(items, problem.offsets, *offsets, top, optimum, windows[k], k);
  if (export_window >= 0) {
    if (export_window >= static_cast<long>(windows.size())) {
      std::fprintf(stderr, "no window %ld\n", export_window);
      return 2;
    }
    const Window& w = windows[export_window];
    std::vector<memory::TensorLifetime> part;
    for (const memory::TensorLifetime& t : problem.tensors) {
      if (t.last_use < w.begin || t.first_use >= w.end) continue;
      memory::TensorLifetime cut = t;
      cut.first_use = static_cast<int32_t>(std::max<int64_t>(t.first_use, w.begin));
      cut.last_use = static_cast<int32_t>(std::min<int64_t>(t.last_use, w.end - 1));
      part.push_back(std::move(cut));
    }
    auto csv = memory::FormatBufferCsv(part, nullptr);
    if (!csv.ok()) {
      std::fprintf(stderr, "%s\n", csv.status().ToString().c_str());
      return 1;
    }
    std::ofstream(export_path) << *csv;
    std::printf("window %ld: %zu buffers written to %s\n", export_window, part.size(), export_path.c_str());
  }
  return 0;
}
