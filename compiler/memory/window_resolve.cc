// compiler/memory/window_resolve.cc — a time window's items re-placed
// exactly between fixed surroundings (see the header).
#include "compiler/memory/window_resolve.h"

#include <algorithm>

namespace keel::memory::internal {

namespace {

constexpr uint64_t kNone = UINT64_MAX;
// The search's nodes per freed item and run (at least kMinRunNodes), and the
// runs: the static order, then perturbed ones (the search is heavy-tailed).
constexpr uint64_t kNodesPerItem = 64;
constexpr uint64_t kMinRunNodes = 4096;
constexpr uint32_t kRuns = 3;

}  // namespace

std::vector<int32_t> ItemsInWindow(const std::vector<PackingItem>& items, const std::vector<uint64_t>& offsets,
                                   const std::vector<int32_t>& seeds, int64_t time_pad, uint64_t byte_pad) {
  if (seeds.empty()) return {};
  int64_t begin = items[seeds[0]].begin, end = items[seeds[0]].end;
  uint64_t low = offsets[seeds[0]], high = offsets[seeds[0]] + items[seeds[0]].size;
  for (int32_t s : seeds) {
    begin = std::min(begin, items[s].begin);
    end = std::max(end, items[s].end);
    low = std::min(low, offsets[s]);
    high = std::max(high, offsets[s] + items[s].size);
  }
  low = low > byte_pad ? low - byte_pad : 0;
  high = high > UINT64_MAX - byte_pad ? UINT64_MAX : high + byte_pad;
  std::vector<char> chosen(items.size(), 0);
  for (int32_t s : seeds) chosen[s] = 1;
  std::vector<int32_t> result;
  for (size_t i = 0; i < items.size(); ++i) {
    const bool inside = items[i].begin >= begin - time_pad && items[i].end <= end + time_pad &&
                        offsets[i] < high && low < offsets[i] + items[i].size;
    if (chosen[i] || inside) result.push_back(static_cast<int32_t>(i));
  }
  return result;
}

WindowOutcome ResolveWindow(const std::vector<PackingItem>& items, const OverlapGraph& graph,
                            std::vector<uint64_t>* offsets, std::vector<int32_t> free_items, uint64_t capacity,
                            const WindowLimits& limits) {
  WindowOutcome outcome;
  const std::vector<uint64_t>& at = *offsets;
  std::vector<char> freed(items.size(), 0);
  std::vector<uint32_t> seen(items.size(), 0);
  uint32_t stamp = 0;
  std::vector<PackingItem> sub;
  SectionedItems form;
  SectionBounds bounds;
  // The closure: free every fixed item that lies between freed ones in a
  // section; then each section's floor and ceiling.
  while (true) {
    if (free_items.size() > limits.max_freed) {
      outcome.freed = free_items.size();
      return outcome;
    }
    for (int32_t x : free_items) freed[x] = 1;
    sub.clear();
    for (int32_t x : free_items) sub.push_back(items[x]);
    form = ToSections(sub);
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
    bounds.ceiling.assign(sections, capacity);
    ++stamp;
    const size_t before = free_items.size();
    const std::vector<int64_t>& p = form.points;
    for (size_t k = 0; k < before; ++k) {
      const int32_t x = free_items[k];
      for (int64_t j = graph.start[x]; j < graph.start[x + 1]; ++j) {
        const int32_t y = graph.neighbours[j];
        if (freed[y] || seen[y] == stamp) continue;
        seen[y] = stamp;
        // The sections [a, b) that y's lifetime meets.
        const int32_t a =
            std::max<int32_t>(0, static_cast<int32_t>(std::upper_bound(p.begin(), p.end(), items[y].begin) - p.begin()) - 1);
        const int32_t b =
            std::min<int32_t>(sections, static_cast<int32_t>(std::lower_bound(p.begin(), p.end(), items[y].end) - p.begin()));
        for (int32_t s = a; s < b; ++s) {
          if (lo[s] == kNone) continue;  // no freed item lives here
          const uint64_t end = at[y] + items[y].size;
          if (end <= lo[s]) {
            bounds.floor[s] = std::max(bounds.floor[s], end);
          } else if (at[y] >= hi[s]) {
            bounds.ceiling[s] = std::min(bounds.ceiling[s], at[y]);
          } else {
            free_items.push_back(y);  // between freed items: free it too
            break;
          }
        }
      }
    }
    if (free_items.size() == before) break;
  }
  outcome.freed = free_items.size();
  // A section whose freed items cannot fit between its floor and ceiling
  // (more bytes live there than the room) needs no search.
  std::vector<uint64_t> live(form.sections, 0);
  for (size_t k = 0; k < sub.size(); ++k) {
    for (int32_t s = form.first[k]; s < form.end[k]; ++s) live[s] += sub[k].size;
  }
  for (int32_t s = 0; s < form.sections; ++s) {
    if (bounds.ceiling[s] < bounds.floor[s] || live[s] > bounds.ceiling[s] - bounds.floor[s]) return outcome;
  }
  for (uint32_t run = 0; run < kRuns && outcome.nodes < limits.max_nodes; ++run) {
    PackingLimits search;
    search.deadline = limits.deadline;
    search.max_nodes = std::min(limits.max_nodes - outcome.nodes, std::max(kMinRunNodes, kNodesPerItem * sub.size()));
    search.seed = run == 0 ? 0 : (run * 2654435761u) | 1u;
    const PackingResult r = PackBetweenBounds(sub, bounds, search);
    outcome.nodes += r.nodes;
    if (r.outcome == PackingOutcome::kFound) {
      for (size_t k = 0; k < free_items.size(); ++k) (*offsets)[free_items[k]] = r.offsets[k];
      outcome.placed = true;
      break;
    }
    if (r.outcome == PackingOutcome::kInfeasible || SearchClock::now() > limits.deadline) break;
  }
  return outcome;
}

}  // namespace keel::memory::internal
