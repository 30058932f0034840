// bench/memory/window_sweep.cc — experiment (issue 10, seed 2's zero-slack
// strip): can exact re-placements of parts of a finished `exact` layout lower
// its top? Not a planner; its numbers are in docs/MEASUREMENTS.md ("window
// re-solves ... tried").
//
//   keel_window_sweep [--buffers N] [--seed S] [--capacity B] [--steps T]
//                     [--time-limit SEC] [--sweep-limit SEC] [--mode M]
//                     [--nodes NODES] [--lns-seed S] [--power P] [--to-top PCT]
//
// Plans the generated problem (perfect_packing.h; defaults: the strip
// benchmark, 5,716 buffers in 203,352 B x 12,685 steps, seed 2) with `exact`
// (the layout cached under /tmp/p18), then per --mode:
//   clean     for capacities C below the top: the runs of steps whose top is
//             above C, widened to time points that no buffer above C lives
//             across, re-placed whole (every buffer inside, all bytes) under C,
//             the rest fixed (ResolveWindow);
//   lid       random moves: a step t above C, the hull of the lifetimes of the
//             buffers above C at t plus a random margin, the band from the top
//             down to where enough free space lies at t; re-placed with the
//             ceiling C where no fixed buffer above C lives (else the top);
//             accepted when the steps above C do not grow;
//   gravity   random time x byte windows re-placed under the top (any
//             placement of the search), then the layout settled
//             (settle_layout.h); accepted when sum (centre/B)^P x area does not
//             grow;
//   critical  as gravity, each window around a random critical buffer (zero
//             slack on a longest path of the settled layout); accepted when
//             (top, critical buffers) does not grow;
//   layer     the K highest buffers (K = 100 ... 2,000) re-placed at once over
//             the rest as a floor, under the top minus 64 / 512 / 4,096 B.
// Every re-placement is the complete skyline search between per-section floors
// and ceilings (PackBetweenBounds) within --nodes nodes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/memory/perfect_packing.h"
#include "compiler/memory/buffer_csv.h"
#include "compiler/memory/large_neighbourhood_search.h"
#include "compiler/memory/planner.h"
#include "compiler/memory/settle_layout.h"
#include "compiler/memory/window_resolve.h"

namespace {

namespace memory = keel::memory;
namespace internal = keel::memory::internal;

uint64_t TopOf(const std::vector<internal::PackingItem>& items, const std::vector<uint64_t>& offsets) {
  uint64_t top = 0;
  for (size_t i = 0; i < items.size(); ++i) top = std::max(top, offsets[i] + items[i].size);
  return top;
}


// window_resolve.h's ResolveWindow with a ceiling per step (`cap`, at least
// the sections' min) instead of one capacity.
internal::WindowOutcome LocalResolve(const std::vector<internal::PackingItem>& items, const internal::OverlapGraph& graph,
                                     std::vector<uint64_t>* offsets, std::vector<int32_t> free_items,
                                     const std::vector<uint64_t>& cap, uint64_t max_nodes, uint32_t seed) {
  constexpr uint64_t kNone = UINT64_MAX;
  internal::WindowOutcome outcome;
  const std::vector<uint64_t>& at = *offsets;
  std::vector<char> freed(items.size(), 0);
  std::vector<uint32_t> seen(items.size(), 0);
  uint32_t stamp = 0;
  std::vector<internal::PackingItem> sub;
  internal::SectionedItems form;
  internal::SectionBounds bounds;
  while (true) {
    if (free_items.size() > 8192) return outcome;
    for (int32_t x : free_items) freed[x] = 1;
    sub.clear();
    for (int32_t x : free_items) sub.push_back(items[x]);
    form = internal::ToSections(sub);
    const int32_t sections = form.sections;
    std::vector<uint64_t> lo(sections, kNone), hi(sections, 0);
    for (size_t k = 0; k < free_items.size(); ++k) {
      const int32_t x = free_items[k];
      for (int32_t s = form.first[k]; s < form.end[k]; ++s) {
        lo[s] = std::min(lo[s], at[x]);
        hi[s] = std::max(hi[s], at[x] + items[x].size);
      }
    }
    bounds.floor.assign(sections, 0);
    bounds.ceiling.assign(sections, kNone);
    const std::vector<int64_t>& p = form.points;
    for (int32_t s = 0; s < sections; ++s) {
      for (int64_t t = p[s]; t < p[s + 1]; ++t) bounds.ceiling[s] = std::min(bounds.ceiling[s], cap[t]);
    }
    ++stamp;
    const size_t before = free_items.size();
    for (size_t k = 0; k < before; ++k) {
      const int32_t x = free_items[k];
      for (int64_t j = graph.start[x]; j < graph.start[x + 1]; ++j) {
        const int32_t y = graph.neighbours[j];
        if (freed[y] || seen[y] == stamp) continue;
        seen[y] = stamp;
        const int32_t a = std::max<int32_t>(0, static_cast<int32_t>(std::upper_bound(p.begin(), p.end(), items[y].begin) - p.begin()) - 1);
        const int32_t b = std::min<int32_t>(sections, static_cast<int32_t>(std::lower_bound(p.begin(), p.end(), items[y].end) - p.begin()));
        for (int32_t s = a; s < b; ++s) {
          if (lo[s] == kNone) continue;
          const uint64_t end = at[y] + items[y].size;
          if (end <= lo[s]) {
            bounds.floor[s] = std::max(bounds.floor[s], end);
          } else if (at[y] >= hi[s]) {
            bounds.ceiling[s] = std::min(bounds.ceiling[s], at[y]);
          } else {
            free_items.push_back(y);
            break;
          }
        }
      }
    }
    if (free_items.size() == before) break;
  }
  outcome.freed = free_items.size();
  std::vector<uint64_t> live(form.sections, 0);
  for (size_t k = 0; k < sub.size(); ++k) {
    for (int32_t s = form.first[k]; s < form.end[k]; ++s) live[s] += sub[k].size;
  }
  for (int32_t s = 0; s < form.sections; ++s) {
    if (bounds.ceiling[s] < bounds.floor[s] || live[s] > bounds.ceiling[s] - bounds.floor[s]) return outcome;
  }
  internal::PackingLimits search;
  search.max_nodes = max_nodes;
  search.seed = seed;
  const internal::PackingResult r = internal::PackBetweenBounds(sub, bounds, search);
  outcome.nodes = r.nodes;
  if (r.outcome == internal::PackingOutcome::kFound) {
    for (size_t k = 0; k < free_items.size(); ++k) (*offsets)[free_items[k]] = r.offsets[k];
    outcome.placed = true;
  }
  return outcome;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 5716;
  uint32_t seed = 2;
  uint64_t capacity = 203352;
  int32_t steps = 12685;
  double time_limit = 10, sweep_limit = 20;
  uint32_t seed_lns = 1;
  std::string mode = "gravity";
  double power = 1;
  uint32_t to_top_percent = 0;
  uint64_t node_budget = 20000;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return 2;
    if (flag == "--buffers") n = std::atoi(argv[++i]);
    else if (flag == "--seed") seed = static_cast<uint32_t>(std::atoi(argv[++i]));
    else if (flag == "--capacity") capacity = std::strtoull(argv[++i], nullptr, 10);
    else if (flag == "--steps") steps = std::atoi(argv[++i]);
    else if (flag == "--time-limit") time_limit = std::atof(argv[++i]);
    else if (flag == "--sweep-limit") sweep_limit = std::atof(argv[++i]);
    else if (flag == "--lns-seed") seed_lns = static_cast<uint32_t>(std::atoi(argv[++i]));
    else if (flag == "--power") power = std::atof(argv[++i]);
    else if (flag == "--to-top") to_top_percent = static_cast<uint32_t>(std::atoi(argv[++i]));
    else if (flag == "--mode") mode = argv[++i];
    else if (flag == "--nodes") node_budget = std::strtoull(argv[++i], nullptr, 10);
    else return 2;
  }
  const memory::bench::PerfectPackingProblem problem = memory::bench::PerfectPackingWithLayout(n, seed, capacity, steps);
  auto planner = memory::CreatePlanner("exact");
  memory::PlanOptions options;
  options.time_limit_seconds = time_limit;
  std::vector<uint64_t> offsets;
  const std::string cache = "/tmp/p18/layout_" + std::to_string(n) + "_" + std::to_string(seed) + "_" + std::to_string(capacity) + "_" + std::to_string(int(time_limit));
  if (FILE* f = std::fopen(cache.c_str(), "rb")) {
    offsets.resize(problem.tensors.size());
    if (std::fread(offsets.data(), 8, offsets.size(), f) != offsets.size()) return 1;
    std::fclose(f);
  } else {
    auto plan = (*planner)->MakePlan(problem.tensors, options);
    offsets = *memory::SingleArenaAddresses(*plan);
    if (FILE* g = std::fopen(cache.c_str(), "wb")) {
      std::fwrite(offsets.data(), 8, offsets.size(), g);
      std::fclose(g);
    }
  }
  std::vector<internal::PackingItem> items;
  for (const memory::TensorLifetime& t : problem.tensors) items.push_back(internal::ItemOf(t));
  internal::OverlapGraph graph;
  if (!internal::BuildOverlapGraph(items, &graph)) return 1;
  uint64_t top = TopOf(items, offsets);
  std::printf("exact %.0f s: %llu (%.4f)\n", time_limit, (unsigned long long)top, double(top) / double(capacity));
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(sweep_limit));
  int64_t horizon = 0;
  for (const auto& it : items) horizon = std::max(horizon, it.end);
  if (mode == "clean") {
    uint64_t step = std::max<uint64_t>(1, (top - capacity) / 4);
    while (top > capacity && std::chrono::steady_clock::now() < deadline) {
      const uint64_t c = top - std::min(step, top - capacity);
      // Clean time points: no item reaching above c lives across them.
      std::vector<char> crossed(horizon + 1, 0), high(horizon, 0);
      for (size_t i = 0; i < items.size(); ++i) {
        if (offsets[i] + items[i].size <= c) continue;
        for (int64_t t = items[i].begin + 1; t < items[i].end; ++t) crossed[t] = 1;
        for (int64_t t = items[i].begin; t < items[i].end; ++t) high[t] = 1;
      }
      std::vector<std::pair<int64_t, int64_t>> windows;
      for (int64_t t = 0; t < horizon; ++t) {
        if (!high[t]) continue;
        int64_t a = t;
        while (crossed[a]) --a;
        int64_t b = t + 1;
        while (b < horizon && (high[b] || crossed[b])) ++b;
        windows.push_back({a, b});
        t = b;
      }
      size_t ok = 0, fail = 0, freed_max = 0;
      int64_t steps_max = 0;
      for (auto [a, b] : windows) {
        std::vector<int32_t> freed;
        for (size_t i = 0; i < items.size(); ++i) {
          if (items[i].begin >= a && items[i].end <= b) freed.push_back(static_cast<int32_t>(i));
        }
        internal::WindowLimits limits;
        limits.deadline = deadline;
        limits.max_nodes = node_budget;
        const internal::WindowOutcome r = internal::ResolveWindow(items, graph, &offsets, freed, c, limits);
        r.placed ? ++ok : ++fail;
        freed_max = std::max(freed_max, r.freed);
        steps_max = std::max(steps_max, b - a);
      }
      const uint64_t new_top = TopOf(items, offsets);
      std::printf("%.1f s: C %llu: %zu windows (longest %lld steps, most freed %zu), %zu placed, %zu not; top %llu\n",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), (unsigned long long)c,
                  windows.size(), (long long)steps_max, freed_max, ok, fail, (unsigned long long)new_top);
      if (new_top < top) {
        top = new_top;
        step *= 2;
      } else if (step == 1) {
        break;
      } else {
        step /= 2;
      }
    }
    std::printf("final %llu (%.4f)\n", (unsigned long long)top, double(top) / double(capacity));
    return 0;
  }
  if (mode == "layer") {
    // The items of the upper layer (offset >= B, B such that K items lie
    // there) re-placed exactly over the rest as a floor, under top - delta.
    offsets = internal::SettleLayout(items, graph, offsets);
    top = TopOf(items, offsets);
    std::printf("settled top %llu\n", (unsigned long long)top);
    std::vector<uint64_t> sorted_offsets(offsets);
    std::sort(sorted_offsets.rbegin(), sorted_offsets.rend());
    for (size_t k : {100, 200, 500, 1000, 2000}) {
      const uint64_t b = sorted_offsets[std::min(k, sorted_offsets.size() - 1)];
      std::vector<int32_t> freed;
      for (size_t i = 0; i < items.size(); ++i) {
        if (offsets[i] > b) freed.push_back(static_cast<int32_t>(i));
      }
      for (uint64_t delta : {64, 512, 4096}) {
        std::vector<uint64_t> cap_all(horizon, top - delta), trial = offsets;
        const auto t0 = std::chrono::steady_clock::now();
        const internal::WindowOutcome r = LocalResolve(items, graph, &trial, freed, cap_all, node_budget, 1u);
        std::printf("layer above %llu: %zu items (%zu with the closure), top - %llu: %s, %llu nodes, %.2f s\n",
                    (unsigned long long)b, freed.size(), r.freed, (unsigned long long)delta, r.placed ? "placed" : "not",
                    (unsigned long long)r.nodes, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        std::fflush(stdout);
        if (!r.placed) break;
      }
    }
    return 0;
  }
  if (mode == "critical") {
    std::mt19937 g(seed_lns);
    // Settled layout and its critical items (zero slack on a longest path).
    std::vector<char> crit(items.size(), 0);
    auto evaluate = [&](const std::vector<uint64_t>& off, uint64_t* t_out, std::vector<int32_t>* list) {
      const uint64_t t = TopOf(items, off);
      std::vector<uint64_t> flipped_h(items.size());
      for (size_t i = 0; i < items.size(); ++i) flipped_h[i] = t - off[i] - items[i].size;
      const std::vector<uint64_t> flipped = internal::SettleLayout(items, graph, flipped_h);
      size_t count = 0;
      if (list) list->clear();
      for (size_t i = 0; i < items.size(); ++i) {
        if (off[i] + items[i].size + flipped[i] == t) {
          ++count;
          if (list) list->push_back(static_cast<int32_t>(i));
        }
      }
      *t_out = t;
      return count;
    };
    offsets = internal::SettleLayout(items, graph, offsets);
    std::vector<int32_t> critical;
    size_t ncrit = evaluate(offsets, &top, &critical);
    std::printf("settled top %llu, %zu critical\n", (unsigned long long)top, ncrit);
    std::vector<uint64_t> cap_all(horizon, top);
    size_t moves = 0, placed = 0, accepted = 0, lowered = 0;
    auto last = start;
    while (std::chrono::steady_clock::now() < deadline && top > capacity) {
      ++moves;
      const int32_t x = critical[g() % critical.size()];
      const int64_t life = items[x].end - items[x].begin;
      const int64_t pad = (int64_t{1} << (g() % 10)) + life * static_cast<int64_t>(g() % 3) / 2;  // 1 .. 512 steps, + 0-1 lifetimes
      const uint64_t below = uint64_t{1} << (8 + g() % 9), above = uint64_t{1} << (8 + g() % 9);  // 256 B .. 64 KiB
      const int64_t wa = std::max<int64_t>(0, items[x].begin - pad), wb = std::min(horizon, items[x].end + pad);
      const uint64_t b0 = offsets[x] > below ? offsets[x] - below : 0, b1 = offsets[x] + items[x].size + above;
      std::vector<int32_t> freed;
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].begin >= wa && items[i].end <= wb && offsets[i] < b1 && b0 < offsets[i] + items[i].size) {
          freed.push_back(static_cast<int32_t>(i));
        }
      }
      if (freed.size() < 2) continue;
      std::vector<uint64_t> trial = offsets;
      const internal::WindowOutcome r = LocalResolve(items, graph, &trial, freed, cap_all, node_budget, static_cast<uint32_t>(g()) | 1u);
      if (!r.placed) continue;
      ++placed;
      trial = internal::SettleLayout(items, graph, trial);
      uint64_t t2 = 0;
      std::vector<int32_t> list;
      const size_t n2 = evaluate(trial, &t2, &list);
      if (t2 < top || (t2 == top && n2 <= ncrit)) {
        ++accepted;
        if (t2 < top) {
          ++lowered;
          std::fill(cap_all.begin(), cap_all.end(), t2);
        }
        top = t2;
        ncrit = n2;
        critical = std::move(list);
        offsets = std::move(trial);
      }
      if (std::chrono::steady_clock::now() - last > std::chrono::seconds(5)) {
        last = std::chrono::steady_clock::now();
        std::printf("%.1f s: top %llu (%.4f), %zu critical; %zu moves, %zu placed, %zu accepted, %zu lowered\n",
                    std::chrono::duration<double>(last - start).count(), (unsigned long long)top,
                    double(top) / double(capacity), ncrit, moves, placed, accepted, lowered);
        std::fflush(stdout);
      }
    }
    std::printf("final %llu (%.4f)\n", (unsigned long long)top, double(top) / double(capacity));
    return 0;
  }
  if (mode == "gravity") {
    std::mt19937 g(seed_lns);
    auto potential = [&](const std::vector<uint64_t>& off) {
      double p = 0;
      for (size_t i = 0; i < items.size(); ++i) {
        const double centre = (double(off[i]) + double(items[i].size) / 2) / double(capacity);
        p += std::pow(centre, power) * double(items[i].size) * double(items[i].end - items[i].begin);
      }
      return p;
    };
    offsets = internal::SettleLayout(items, graph, offsets);
    double pot = potential(offsets);
    std::vector<uint64_t> cap_all(horizon, top);
    size_t moves = 0, placed = 0, accepted = 0, lowered = 0;
    auto last = start;
    while (std::chrono::steady_clock::now() < deadline && top > capacity) {
      ++moves;
      const int64_t t = static_cast<int64_t>(g() % static_cast<uint32_t>(horizon));
      const int64_t w = int64_t{1} << (4 + g() % 8);       // 16 .. 2048 steps
      const uint64_t h = uint64_t{1} << (10 + g() % 7);    // 1 .. 64 KiB
      const bool to_top = g() % 100 < to_top_percent;
      const uint64_t b0 = to_top ? (top > h ? top - h : 0) : g() % top, b1 = to_top ? top : b0 + h;
      const int64_t wa = std::max<int64_t>(0, t - w / 2), wb = std::min(horizon, t + w / 2);
      std::vector<int32_t> freed;
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].begin >= wa && items[i].end <= wb && offsets[i] < b1 && b0 < offsets[i] + items[i].size) {
          freed.push_back(static_cast<int32_t>(i));
        }
      }
      if (freed.size() < 2) continue;
      std::vector<uint64_t> trial = offsets;
      const internal::WindowOutcome r = LocalResolve(items, graph, &trial, freed, cap_all, node_budget, static_cast<uint32_t>(g()) | 1u);
      if (!r.placed) continue;
      ++placed;
      trial = internal::SettleLayout(items, graph, trial);
      const double p = potential(trial);
      if (p <= pot) {
        ++accepted;
        pot = p;
        offsets = std::move(trial);
        const uint64_t nt = TopOf(items, offsets);
        if (nt < top) {
          ++lowered;
          top = nt;
          std::fill(cap_all.begin(), cap_all.end(), top);
        }
      }
      if (std::chrono::steady_clock::now() - last > std::chrono::seconds(5)) {
        last = std::chrono::steady_clock::now();
        std::printf("%.1f s: top %llu (%.4f), potential %.6e; %zu moves, %zu placed, %zu accepted, %zu lowered\n",
                    std::chrono::duration<double>(last - start).count(), (unsigned long long)top,
                    double(top) / double(capacity), pot, moves, placed, accepted, lowered);
        std::fflush(stdout);
      }
    }
    std::printf("final %llu (%.4f)\n", (unsigned long long)top, double(top) / double(capacity));
    return 0;
  }
  // mode "lid"
  std::mt19937 rng(seed_lns);
  uint64_t step = std::max<uint64_t>(1, (top - capacity) / 16);
  uint64_t c = top - step;
  std::vector<uint64_t> top_at(horizon), cap(horizon, top);
  auto high_steps = [&](const std::vector<uint64_t>& off, std::vector<int64_t>* list) {
    std::fill(top_at.begin(), top_at.end(), 0);
    for (size_t i = 0; i < items.size(); ++i) {
      for (int64_t t = items[i].begin; t < items[i].end; ++t) top_at[t] = std::max(top_at[t], off[i] + items[i].size);
    }
    size_t count = 0;
    if (list) list->clear();
    for (int64_t t = 0; t < horizon; ++t) {
      if (top_at[t] > c) {
        ++count;
        if (list) list->push_back(t);
      }
    }
    return count;
  };
  std::vector<int64_t> high_list;
  size_t high = high_steps(offsets, &high_list);
  size_t refused = 0, moves = 0, placed = 0, accepted = 0, skipped = 0;
  uint64_t nodes = 0;
  std::vector<char> in_free(items.size(), 0), fixed_high;
  auto last_report = start;
  std::printf("C %llu: %zu high steps\n", (unsigned long long)c, high);
  while (std::chrono::steady_clock::now() < deadline && top > capacity) {
    if (high == 0) {
      top = TopOf(items, offsets);
      step *= 2;
      c = top - std::min(step, top - capacity);
      std::fill(cap.begin(), cap.end(), top);
      high = high_steps(offsets, &high_list);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("%.1f s: top %llu (%.4f); next C %llu: %zu high steps\n", secs, (unsigned long long)top,
                  double(top) / double(capacity), (unsigned long long)c, high);
      continue;
    }
    ++moves;
    const int64_t t = high_list[rng() % high_list.size()];
    const int64_t w = int64_t{1} << (5 + rng() % 8);  // 32 .. 4096 steps
    // The band: from the top down to the gap at t below which lies less
    // free space than the step needs, plus a random margin.
    std::vector<std::pair<uint64_t, uint64_t>> alive;
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].begin <= t && t < items[i].end) alive.push_back({offsets[i], offsets[i] + items[i].size});
    }
    std::sort(alive.rbegin(), alive.rend());
    uint64_t free_above = 0, band_low = top, ceiling_at = top;
    for (const auto& [b0, b1] : alive) {
      if (b1 < ceiling_at) free_above += ceiling_at - b1;
      ceiling_at = std::min(ceiling_at, b0);
      band_low = b0;
      if (free_above >= top - c) break;
    }
    const uint64_t h = (top - band_low) + (top - band_low) * (rng() % 4) / 4 + 1;
    int64_t ha = t, hb = t + 1;  // the hull of the lifetimes of the items above c at t
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].begin <= t && t < items[i].end && offsets[i] + items[i].size > c) {
        ha = std::min(ha, items[i].begin);
        hb = std::max(hb, items[i].end);
      }
    }
    const int64_t wa = std::max<int64_t>(0, ha - w / 2), wb = std::min(horizon, hb + w / 2);
    std::vector<int32_t> freed;
    for (size_t i = 0; i < items.size(); ++i) {
      in_free[i] = items[i].begin >= wa && items[i].end <= wb && offsets[i] + items[i].size + h > top;
      if (in_free[i]) freed.push_back(static_cast<int32_t>(i));
    }
    fixed_high.assign(wb - wa, 0);
    for (size_t i = 0; i < items.size(); ++i) {
      if (in_free[i] || items[i].end <= wa || items[i].begin >= wb || offsets[i] + items[i].size <= c) continue;
      for (int64_t u = std::max(items[i].begin, wa); u < std::min(items[i].end, wb); ++u) fixed_high[u - wa] = 1;
    }
    if (fixed_high[t - wa] || freed.empty()) {
      ++skipped;
      continue;
    }
    int64_t la = t, lb = t + 1;
    while (la > wa && !fixed_high[la - 1 - wa]) --la;
    while (lb < wb && !fixed_high[lb - wa]) ++lb;
    for (int64_t u = la; u < lb; ++u) cap[u] = c;
    std::vector<uint64_t> trial = offsets;
    const internal::WindowOutcome r = LocalResolve(items, graph, &trial, freed, cap, node_budget, static_cast<uint32_t>(rng()) | 1u);
    for (int64_t u = la; u < lb; ++u) cap[u] = top;
    nodes += r.nodes;
    if (r.freed > 8192 || r.nodes == 0) ++refused;
    if (moves <= 40) {
      std::printf("  t %lld hull [%lld, %lld) window [%lld, %lld) band %llu lid [%lld, %lld): freed %zu -> %zu, nodes %llu, %s\n",
                  (long long)t, (long long)ha, (long long)hb, (long long)wa, (long long)wb, (unsigned long long)h,
                  (long long)la, (long long)lb, freed.size(), r.freed, (unsigned long long)r.nodes, r.placed ? "placed" : "no");
    }
    if (r.placed) {
      ++placed;
      std::vector<int64_t> list;
      const size_t now = high_steps(trial, &list);
      if (now <= high) {
        ++accepted;
        offsets = std::move(trial);
        high = now;
        high_list = std::move(list);
      }
    }
    if (std::chrono::steady_clock::now() - last_report > std::chrono::seconds(5)) {
      last_report = std::chrono::steady_clock::now();
      const double secs = std::chrono::duration<double>(last_report - start).count();
      std::printf("%.1f s: C %llu: %zu high steps; %zu moves, %zu skipped, %zu refused, %zu placed, %zu accepted, %llu nodes\n", secs,
                  (unsigned long long)c, high, moves, skipped, refused, placed, accepted, (unsigned long long)nodes);
      std::fflush(stdout);
    }
  }
  std::printf("final %llu (%.4f)\n", (unsigned long long)top, double(top) / double(capacity));
  return 0;
}
