// compiler/memory/large_neighbourhood_search.cc — greedy construction and the
// tighten-and-repair search (see the header for the method).
#include "compiler/memory/large_neighbourhood_search.h"

#include <algorithm>
#include <numeric>

namespace keel::memory::internal {

namespace {

constexpr uint64_t kNone = UINT64_MAX;
// Neighbourhood sizes: kFirstNeighbourhood << level buffers, level < kLevels.
constexpr int32_t kFirstNeighbourhood = 16;
constexpr int kLevels = 6;
// A neighbourhood that grows past this factor by its sandwiches is skipped.
constexpr size_t kMaxGrowth = 4;
// Search nodes per removed buffer for one run, and runs per neighbourhood
// (the first in the static order, the others perturbed).
constexpr uint64_t kNodesPerBuffer = 32;
// The first target: this fraction of the gap to the bound below the top.
constexpr uint64_t kFirstStepDivisor = 1;
constexpr uint64_t kMinRunNodes = 512;
// Shaking (when no target can be repaired): one neighbourhood of
// kShakeNeighbourhood buffers per kShakeBuffersPerMove buffers.
constexpr int32_t kShakeNeighbourhood = 64;
constexpr int32_t kShakeBuffersPerMove = 16;
// Shakes before giving up (so that the search ends without limits too).
constexpr int kMaxShakes = 64;
constexpr uint32_t kRunsPerNeighbourhood = 3;

uint64_t TopOf(const std::vector<PackingItem>& items, const std::vector<uint64_t>& offsets) {
  uint64_t top = 0;
  for (size_t i = 0; i < items.size(); ++i) top = std::max(top, offsets[i] + items[i].size);
  return top;
}

// Greedy placement in `order`: each buffer into the smallest (best fit) or
// lowest (first fit) gap among the placed buffers that live at the same time.
std::vector<uint64_t> PlaceInOrder(const std::vector<PackingItem>& items, const OverlapGraph& graph,
                                   const std::vector<int32_t>& order, bool best_fit) {
  std::vector<uint64_t> offsets(items.size(), 0);
  std::vector<char> placed(items.size(), 0);
  std::vector<std::pair<uint64_t, uint64_t>> below;  // (offset, end) of placed neighbours
  for (int32_t x : order) {
    below.clear();
    for (int64_t k = graph.start[x]; k < graph.start[x + 1]; ++k) {
      const int32_t y = graph.neighbours[k];
      if (placed[y]) below.emplace_back(offsets[y], offsets[y] + items[y].size);
    }
    std::sort(below.begin(), below.end());
    uint64_t prev_end = 0, best = kNone, best_gap = kNone;
    for (const auto& [off, end] : below) {
      const uint64_t candidate = AlignUp(prev_end, items[x].alignment);
      if (candidate <= off && off - candidate >= items[x].size && off - candidate < best_gap) {
        best_gap = off - candidate;
        best = candidate;
        if (!best_fit) break;
      }
      prev_end = std::max(prev_end, end);
    }
    offsets[x] = best != kNone ? best : AlignUp(prev_end, items[x].alignment);
    placed[x] = 1;
  }
  return offsets;
}

uint32_t Seed(uint64_t k) { return static_cast<uint32_t>((k + 1) * 2654435761u) | 1u; }

// Neighbourhood shapes around a buffer v (see the header), tried in the order
// line, window, column, band.
enum class Shape : uint8_t { kWindow, kColumn, kBand, kLine };

class Repairer {
 public:
  Repairer(const std::vector<PackingItem>& items, const OverlapGraph& graph, std::vector<uint64_t> offsets,
           const LnsLimits& limits)
      : items_(items), graph_(graph), limits_(limits), n_(static_cast<int32_t>(items.size())) {
    result_.offsets = std::move(offsets);
    in_set_.assign(n_, 0);
    seen_.assign(n_, 0);
    key_.assign(n_, 0);
  }

  LnsResult Run(uint64_t lower_bound) {
    uint64_t top = TopOf(items_, result_.offsets);
    uint64_t step = top > lower_bound ? (top - lower_bound) / kFirstStepDivisor : 0;
    int shakes = 0;
    while (top > lower_bound && !Spent()) {
      step = std::max<uint64_t>(1, std::min(step, top - lower_bound));
      if (RepairTo(top - step)) {
        top = TopOf(items_, result_.offsets);
        step *= 2;
      } else if (step > 1) {
        step /= 2;
      } else if (shakes++ < kMaxShakes) {
        // Stuck: re-place random neighbourhoods under the current top (each
        // comes back fallen, as low as the search can put it), then tighten again.
        Shake(top);
        step = std::max<uint64_t>(1, (top - lower_bound) / 16);
      } else {
        break;
      }
    }
    result_.top = TopOf(items_, result_.offsets);
    return std::move(result_);
  }

 private:
  bool Spent() {
    if (result_.nodes >= limits_.max_nodes) return true;
    if (SearchClock::now() > limits_.deadline) {
      result_.stopped_by_deadline = true;
      return true;
    }
    return false;
  }

  void Shake(uint64_t top) {
    const int32_t moves = std::max<int32_t>(1, n_ / kShakeBuffersPerMove);
    for (int32_t k = 0; k < moves && !Spent(); ++k) {
      const int32_t v = static_cast<int32_t>(NextRandom() % static_cast<uint32_t>(n_));
      const Shape shape = static_cast<Shape>(NextRandom() % 4);
      RepairAround(v, top, kShakeNeighbourhood, shape);
    }
  }
  uint32_t NextRandom() {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 17;
    rng_ ^= rng_ << 5;
    return rng_;
  }

  uint64_t End(int32_t i) const { return result_.offsets[i] + items_[i].size; }

  // Repairs violators of `capacity`, highest first, until none is left (true)
  // or one resists every neighbourhood (false).
  bool RepairTo(uint64_t capacity) {
    while (true) {
      int32_t v = -1;
      for (int32_t i = 0; i < n_; ++i) {
        if (End(i) > capacity && (v < 0 || End(i) > End(v))) v = i;
      }
      if (v < 0) return true;
      bool repaired = false;
      for (int level = 0; level < kLevels && !repaired; ++level) {
        for (Shape shape : {Shape::kLine, Shape::kWindow, Shape::kColumn, Shape::kBand}) {
          if (Spent()) return false;
          if (RepairAround(v, capacity, kFirstNeighbourhood << level, shape)) {
            repaired = true;
            break;
          }
        }
      }
      if (!repaired) return false;
    }
  }

  // The `size` buffers nearest to v in `shape` (see the header) into set_; v first.
  void SelectNeighbourhood(int32_t v, int32_t size, Shape shape) {
    const PackingItem& iv = items_[v];
    const int64_t length = iv.end - iv.begin;
    candidates_.clear();
    for (int32_t i = 0; i < n_; ++i) {
      const PackingItem& it = items_[i];
      const int64_t distance = std::max<int64_t>({0, it.begin - iv.end + 1, iv.begin - it.end + 1});
      if (shape == Shape::kBand && distance > length) continue;
      switch (shape) {
        case Shape::kWindow: key_[i] = std::max<int64_t>({0, iv.begin - it.begin, it.end - iv.end}); break;
        case Shape::kColumn: key_[i] = distance; break;
        case Shape::kBand: key_[i] = 0; break;
        case Shape::kLine: key_[i] = -static_cast<int64_t>(result_.offsets[i]); break;
      }
      candidates_.push_back(i);
    }
    auto nearer = [&](int32_t a, int32_t b) {
      if (a == v || b == v) return a == v && b != v;
      if (key_[a] != key_[b]) return key_[a] < key_[b];
      if (End(a) != End(b)) return End(a) > End(b);
      return a < b;
    };
    const size_t take = std::min(candidates_.size(), static_cast<size_t>(size));
    std::nth_element(candidates_.begin(), candidates_.begin() + (take - 1), candidates_.end(), nearer);
    set_.assign(candidates_.begin(), candidates_.begin() + take);
  }

  // Completes set_ with its sandwiches and computes the bounds of the section
  // form `form` of set_. False when the set grows past `max_size`.
  bool CloseAndBound(uint64_t capacity, size_t max_size, SectionedItems* form, SectionBounds* bounds) {
    while (true) {
      if (set_.size() > max_size) return false;
      for (int32_t x : set_) in_set_[x] = 1;
      sub_.clear();
      for (int32_t x : set_) sub_.push_back(items_[x]);
      *form = ToSections(sub_);
      const int32_t sections = form->sections;
      std::vector<uint64_t> lo(sections, kNone), hi(sections, 0);
      for (size_t k = 0; k < set_.size(); ++k) {
        const int32_t x = set_[k];
        for (int32_t s = form->first[k]; s < form->end[k]; ++s) {
          lo[s] = std::min(lo[s], result_.offsets[x]);
          hi[s] = std::max(hi[s], End(x));
        }
      }
      bounds->floor.assign(sections, 0);
      bounds->ceiling.assign(sections, capacity);
      ++stamp_;
      const size_t before = set_.size();
      for (size_t k = 0; k < before; ++k) {
        const int32_t x = set_[k];
        for (int64_t j = graph_.start[x]; j < graph_.start[x + 1]; ++j) {
          const int32_t y = graph_.neighbours[j];
          if (in_set_[y] || seen_[y] == stamp_) continue;
          seen_[y] = stamp_;
          const std::vector<int64_t>& p = form->points;
          // Sections [a, b) that y's lifetime meets.
          const int32_t a = std::max<int32_t>(
              0, static_cast<int32_t>(std::upper_bound(p.begin(), p.end(), items_[y].begin) - p.begin()) - 1);
          const int32_t b = std::min<int32_t>(
              sections, static_cast<int32_t>(std::lower_bound(p.begin(), p.end(), items_[y].end) - p.begin()));
          for (int32_t s = a; s < b; ++s) {
            if (lo[s] == kNone) continue;  // no removed buffer lives here
            if (End(y) <= lo[s]) {
              bounds->floor[s] = std::max(bounds->floor[s], End(y));
            } else if (result_.offsets[y] >= hi[s]) {
              bounds->ceiling[s] = std::min(bounds->ceiling[s], result_.offsets[y]);
            } else {
              set_.push_back(y);  // between removed buffers: remove it too
              break;
            }
          }
        }
      }
      if (set_.size() == before) return true;
    }
  }

  bool RepairAround(int32_t v, uint64_t capacity, int32_t size, Shape shape) {
    SelectNeighbourhood(v, size, shape);
    SectionedItems form;
    SectionBounds bounds;
    const bool closed = CloseAndBound(capacity, kMaxGrowth * static_cast<size_t>(size), &form, &bounds);
    bool found = false;
    if (closed) {
      for (uint32_t run = 0; run < kRunsPerNeighbourhood && !found && !Spent(); ++run) {
        PackingLimits limits;
        limits.deadline = limits_.deadline;
        limits.max_nodes = std::min(limits_.max_nodes - result_.nodes,
                                    std::max(kMinRunNodes, kNodesPerBuffer * set_.size()));
        limits.seed = run == 0 ? 0 : Seed(runs_);
        ++runs_;
        PackingResult r = PackBetweenBounds(sub_, bounds, limits);
        result_.nodes += r.nodes;
        if (r.outcome == PackingOutcome::kFound) {
          for (size_t k = 0; k < set_.size(); ++k) result_.offsets[set_[k]] = r.offsets[k];
          ++result_.repairs;
          found = true;
        } else if (r.outcome == PackingOutcome::kInfeasible) {
          break;  // proven: no perturbed order can do better
        }
      }
    }
    for (int32_t x : set_) in_set_[x] = 0;
    return found;
  }

  const std::vector<PackingItem>& items_;
  const OverlapGraph& graph_;
  LnsLimits limits_;
  int32_t n_;
  LnsResult result_;
  std::vector<char> in_set_;
  std::vector<uint64_t> seen_;
  uint64_t stamp_ = 0;
  std::vector<int64_t> key_;
  std::vector<int32_t> candidates_, set_;
  std::vector<PackingItem> sub_;
  uint64_t runs_ = 0;
  uint32_t rng_ = 2463534242u;
};

}  // namespace

bool BuildOverlapGraph(const std::vector<PackingItem>& items, OverlapGraph* graph) {
  const int32_t n = static_cast<int32_t>(items.size());
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return items[a].begin != items[b].begin ? items[a].begin < items[b].begin : a < b;
  });
  // Sweep by start time: each buffer meets the active ones that end after it starts.
  std::vector<std::pair<int32_t, int32_t>> pairs;
  std::vector<int32_t> active;
  for (int32_t x : order) {
    size_t keep = 0;
    for (int32_t y : active) {
      if (items[y].end > items[x].begin) active[keep++] = y;
    }
    active.resize(keep);
    if (pairs.size() + active.size() > kMaxOverlapPairs) return false;
    for (int32_t y : active) pairs.emplace_back(x, y);
    active.push_back(x);
  }
  graph->start.assign(n + 1, 0);
  for (const auto& [a, b] : pairs) {
    ++graph->start[a + 1];
    ++graph->start[b + 1];
  }
  for (int32_t i = 0; i < n; ++i) graph->start[i + 1] += graph->start[i];
  graph->neighbours.assign(graph->start[n], 0);
  graph->pair_of.assign(graph->start[n], 0);
  std::vector<int64_t> fill(graph->start.begin(), graph->start.end() - 1);
  for (size_t p = 0; p < pairs.size(); ++p) {
    const auto [a, b] = pairs[p];
    graph->pair_of[fill[a]] = graph->pair_of[fill[b]] = static_cast<int32_t>(p);
    graph->neighbours[fill[a]++] = b;
    graph->neighbours[fill[b]++] = a;
  }
  return true;
}

std::vector<uint64_t> ConstructLayout(const std::vector<PackingItem>& items, const OverlapGraph& graph) {
  const int32_t n = static_cast<int32_t>(items.size());
  auto length = [&](int32_t i) { return items[i].end - items[i].begin; };
  auto area = [&](int32_t i) { return static_cast<double>(items[i].size) * static_cast<double>(length(i)); };
  std::vector<std::vector<int32_t>> orders(4, std::vector<int32_t>(n));
  for (auto& o : orders) std::iota(o.begin(), o.end(), 0);
  std::stable_sort(orders[0].begin(), orders[0].end(), [&](int32_t a, int32_t b) { return items[a].size > items[b].size; });
  std::stable_sort(orders[1].begin(), orders[1].end(), [&](int32_t a, int32_t b) { return area(a) > area(b); });
  std::stable_sort(orders[2].begin(), orders[2].end(), [&](int32_t a, int32_t b) { return length(a) > length(b); });
  std::stable_sort(orders[3].begin(), orders[3].end(), [&](int32_t a, int32_t b) {
    if (items[a].begin != items[b].begin) return items[a].begin < items[b].begin;
    return items[a].size > items[b].size;
  });
  std::vector<uint64_t> best;
  uint64_t best_top = kNone;
  for (const auto& order : orders) {
    for (bool best_fit : {true, false}) {
      std::vector<uint64_t> offsets = PlaceInOrder(items, graph, order, best_fit);
      const uint64_t top = TopOf(items, offsets);
      if (top < best_top) {
        best_top = top;
        best = std::move(offsets);
      }
    }
  }
  return best;
}

LnsResult ImproveLayout(const std::vector<PackingItem>& items, const OverlapGraph& graph,
                        std::vector<uint64_t> offsets, uint64_t lower_bound, const LnsLimits& limits) {
  return Repairer(items, graph, std::move(offsets), limits).Run(lower_bound);
}

}  // namespace keel::memory::internal
