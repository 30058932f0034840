// compiler/memory/guillotine_layout.cc — a zero-slack layout rebuilt by
// guillotine cuts, top down (see the header).
#include "compiler/memory/guillotine_layout.h"

#include <algorithm>
#include <map>
#include <cstdlib>
#include <numeric>

namespace keel::memory::internal {
namespace {

using Clock = std::chrono::steady_clock;

// Proper flat sets tried per seed item before the next seed (see SplitBands).
constexpr int kBandsPerSeed = 2;
// Search steps per item of the span per seed item, its bands' layouts
// included, before the next seed.
constexpr uint64_t kNodesPerItem = 16;
constexpr int kRounds = 4;
// Spans of at most this many items go to the skyline search first, with
// this many nodes per item.
constexpr size_t kSmallSpan = 256;
constexpr uint64_t kSmallSpanNodesPerItem = 64;

class GuillotineSearch {
 public:
  GuillotineSearch(const std::vector<PackingItem>& items, uint64_t max_nodes, Clock::time_point deadline)
      : items_(items), offsets_(items.size(), 0), failures_(items.size(), 0), nodes_left_(max_nodes), deadline_(deadline) {}

  bool Run(uint64_t height) {
    std::vector<int32_t> all(items_.size());
    std::iota(all.begin(), all.end(), 0);
    int64_t a = items_[0].begin, b = items_[0].end;
    for (const PackingItem& it : items_) {
      a = std::min(a, it.begin);
      b = std::max(b, it.end);
    }
    return Solve(std::move(all), a, b, 0, height);
  }
  std::vector<uint64_t>& offsets() { return offsets_; }

 private:
  bool Spend() {
    if (nodes_left_ == 0) return false;
    --nodes_left_;
    if ((++steps_ & 1023) == 0 && Clock::now() >= deadline_) nodes_left_ = 0;
    return true;
  }

  // Lays `set` out in [y, y + h) over [a, b), where its live bytes are h at
  // every step (the caller's invariant; a violation only makes it fail).
  bool Solve(std::vector<int32_t> set, int64_t a, int64_t b, uint64_t y, uint64_t h) {
    if (!Spend()) return false;
    if (set.empty()) return h == 0;
    std::stable_sort(set.begin(), set.end(), [&](int32_t p, int32_t q) { return items_[p].begin < items_[q].begin; });
    // Time cuts: where nothing lives across, the sides are independent.
    std::vector<size_t> cuts;  // positions in `set` where a part starts
    int64_t reach = a;
    for (size_t k = 0; k < set.size(); ++k) {
      const PackingItem& it = items_[set[k]];
      if (it.begin > reach) return false;  // an idle step: not constant
      if (k > 0 && it.begin == reach) cuts.push_back(k);
      reach = std::max(reach, it.end);
    }
    if (items_[set[0]].begin != a || reach != b) return false;
    if (!cuts.empty()) {
      cuts.push_back(set.size());
      size_t from = 0;
      for (size_t to : cuts) {
        std::vector<int32_t> part(set.begin() + from, set.begin() + to);
        const int64_t pa = items_[part[0]].begin;
        const int64_t pb = to == set.size() ? b : items_[set[to]].begin;
        if (!Solve(std::move(part), pa, pb, y, h)) return false;
        from = to;
      }
      return true;
    }
    // Items over the whole span are bands of their own, at the bottom.
    std::vector<int32_t> rest;
    uint64_t peeled = 0;
    for (int32_t i : set) {
      if (items_[i].begin == a && items_[i].end == b) {
        if (peeled + items_[i].size > h) return false;
        offsets_[i] = y + peeled;
        peeled += items_[i].size;
      } else {
        rest.push_back(i);
      }
    }
    if (peeled > 0) return Solve(std::move(rest), a, b, y + peeled, h - peeled);
    return SplitBands(set, a, b, y, h);
  }

  // The per-span state of the search for a lower band.
  struct Span {
    std::vector<int32_t> items;              // the set, by begin
    std::vector<int32_t> begin_at, end_at;   // per item: its time points' ids (-1: a span end)
    std::vector<std::vector<int32_t>> touching;  // per time point: items beginning or ending there
    std::vector<int8_t> status;              // per item: 0 undecided, 1 in the band, 2 out
    std::vector<char> decided;               // per time point
    std::vector<int32_t> queue;              // time points to decide (appended only; see Close)
    int64_t a = 0, b = 0;
    uint64_t y = 0, h = 0;
    int bands_tried = 0;  // proper bands found that did not lay out
    uint64_t closing_left = 0;  // closing steps left to the current seed
  };

  bool SplitBands(const std::vector<int32_t>& set, int64_t a, int64_t b, uint64_t y, uint64_t h) {
    // A small span goes to the complete skyline search, fail-first (it
    // decides zero-slack problems of a few hundred buffers in a few hundred
    // nodes): it also refutes at once a span that a band found by chance
    // left without a layout, which the band search below refutes only after
    // trying every seed.
    if (set.size() <= kSmallSpan) {
      std::vector<PackingItem> small;
      for (int32_t i : set) small.push_back(items_[i]);
      PackingLimits limits;
      limits.fail_first = true;
      limits.max_nodes = std::min<uint64_t>(nodes_left_, kSmallSpanNodesPerItem * set.size());
      limits.deadline = deadline_;
      const PackingResult packed = PackWithinCapacity(small, h, limits);
      nodes_left_ -= std::min(nodes_left_, packed.nodes);
      if (packed.outcome == PackingOutcome::kFound) {
        for (size_t k = 0; k < set.size(); ++k) offsets_[set[k]] = y + packed.offsets[k];
        return true;
      }
      if (packed.outcome == PackingOutcome::kInfeasible) return false;
    }
    Span s;
    s.items = set;
    s.a = a, s.b = b, s.y = y, s.h = h;
    std::vector<int64_t> points;
    for (int32_t i : set) {
      if (items_[i].begin > a) points.push_back(items_[i].begin);
      if (items_[i].end < b) points.push_back(items_[i].end);
    }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    auto id_of = [&](int64_t t) {
      return static_cast<int32_t>(std::lower_bound(points.begin(), points.end(), t) - points.begin());
    };
    const size_t n = set.size();
    s.begin_at.assign(n, -1);
    s.end_at.assign(n, -1);
    s.touching.resize(points.size());
    s.status.assign(n, 0);
    s.decided.assign(points.size(), 0);
    bool seed = false;
    for (size_t k = 0; k < n; ++k) {
      const PackingItem& it = items_[set[k]];
      if (it.begin > a) {
        s.begin_at[k] = id_of(it.begin);
        s.touching[s.begin_at[k]].push_back(static_cast<int32_t>(k));
      } else {
        seed = true;
      }
      if (it.end < b) {
        s.end_at[k] = id_of(it.end);
        s.touching[s.end_at[k]].push_back(static_cast<int32_t>(k));
      }
    }
    if (!seed) return false;
    // The bands of one seed item after a few that did not lay out: the
    // search under it usually found flat sets by chance (crumbs of a few
    // bytes balance anywhere), so the next seed is tried rather than the
    // next such set.
    std::vector<int32_t> seeds;
    for (size_t k = 0; k < n; ++k) {
      if (s.begin_at[k] < 0) seeds.push_back(static_cast<int32_t>(k));
    }
    // Larger first, but seeds that failed to close before (in an enclosing
    // span: the band peeled there leaves much the same problem) after those
    // that did not.
    std::stable_sort(seeds.begin(), seeds.end(), [&](int32_t p, int32_t q) {
      if (failures_[set[p]] != failures_[set[q]]) return failures_[set[p]] < failures_[set[q]];
      return items_[set[p]].size > items_[set[q]].size;
    });
    // Rounds over the seeds with growing allowances (some seeds close in a
    // few steps where others take millions; which is not known in advance).
    // Rounds over the seeds with growing allowances of closing steps (some
    // seeds close in a few steps where others take millions; which is not
    // known in advance), up to kRounds; the layouts of the bands found have
    // allowances of their own.
    uint64_t allowance = kNodesPerItem * n + 256;
    for (int round = 0; round < kRounds; ++round, allowance *= 4) {
      for (int32_t x : seeds) {
        // First with the band cut in time where x ends (every item living
        // across that point out of it: a band is a piece cut across time
        // somewhere after its first items end), then without.
        for (int cut = 1; cut >= 0; --cut) {
          if (nodes_left_ == 0) return false;
          s.bands_tried = 0;
          s.closing_left = allowance;
          std::fill(s.status.begin(), s.status.end(), 0);
          std::fill(s.decided.begin(), s.decided.end(), 0);
          s.queue.clear();
          const int64_t at = items_[set[x]].end;
          if (cut) {
            if (at >= b) continue;
            for (size_t k = 0; k < n; ++k) {
              if (items_[set[k]].begin < at && items_[set[k]].end > at) s.status[k] = 2;
            }
          }
          Include(s, x);
          const bool found = Close(s, 0);
          if (found) return true;
        }
        ++failures_[set[x]];
      }
    }
    return false;
  }

  bool Closing(Span& s) {
    if (s.bands_tried > kBandsPerSeed || s.closing_left == 0) return false;
    --s.closing_left;
    return Spend();
  }

  void Include(Span& s, int32_t k) {
    s.status[k] = 1;
    if (s.begin_at[k] >= 0 && !s.decided[s.begin_at[k]]) s.queue.push_back(s.begin_at[k]);
    if (s.end_at[k] >= 0 && !s.decided[s.end_at[k]]) s.queue.push_back(s.end_at[k]);
  }

  // Decides the time points queued from `head` on. The queue is only
  // appended to, so a branch restores it by its length and head.
  bool Close(Span& s, size_t head) {
    if (!Closing(s)) return false;
    while (head < s.queue.size() && s.decided[s.queue[head]]) ++head;
    if (head == s.queue.size()) return SplitAt(s);
    // Fail first: the queued time point with the fewest undecided items (a
    // wrong choice is refuted where its consequences are forced, not after
    // every free choice queued before them).
    int32_t t = s.queue[head];
    size_t fewest = SIZE_MAX;
    // Every queued point must still be able to balance (forward checking).
    for (size_t q = head; q < s.queue.size(); ++q) {
      if (s.decided[s.queue[q]]) continue;
      size_t undecided = 0;
      int64_t need = 0, can_close = 0, can_widen = 0;
      for (int32_t k : s.touching[s.queue[q]]) {
        const int64_t size = static_cast<int64_t>(items_[s.items[k]].size);
        const bool ends = s.end_at[k] == s.queue[q];
        if (s.status[k] == 1) {
          need += ends ? size : -size;
        } else if (s.status[k] == 0) {
          ++undecided;
          (ends ? can_widen : can_close) += size;
        }
      }
      if (need > can_close || -need > can_widen) return false;
      if (undecided < fewest) {
        fewest = undecided;
        t = s.queue[q];
      }
    }
    // What the band still needs at t (bytes ending minus bytes beginning),
    // and the undecided items there, each with what taking it subtracts
    // from that need (its size if it begins at t, minus it if it ends).
    int64_t need = 0;
    std::vector<std::pair<int64_t, int32_t>> open;
    for (int32_t k : s.touching[t]) {
      const int64_t size = static_cast<int64_t>(items_[s.items[k]].size);
      const bool ends = s.end_at[k] == t;
      if (s.status[k] == 1) {
        need += ends ? size : -size;
      } else if (s.status[k] == 0) {
        open.push_back({ends ? -size : size, k});
      }
    }
    // Items that close the need first, largest first and taken first (few
    // items: a small band); those that widen it after, left out first.
    const bool up = need >= 0;
    std::stable_sort(open.begin(), open.end(), [&](const auto& p, const auto& q) {
      const bool pc = (p.first >= 0) == up, qc = (q.first >= 0) == up;
      if (pc != qc) return pc;
      return std::abs(p.first) > std::abs(q.first);
    });
    std::vector<int64_t> plus_after(open.size() + 1, 0), minus_after(open.size() + 1, 0);
    for (size_t j = open.size(); j-- > 0;) {
      plus_after[j] = plus_after[j + 1] + std::max<int64_t>(open[j].first, 0);
      minus_after[j] = minus_after[j + 1] + std::max<int64_t>(-open[j].first, 0);
    }
    s.decided[t] = 1;
    // Subsets with the fewest items first: the smallest band that closes.
    for (size_t k = 0; k <= open.size(); ++k) {
      if (Pick(s, head, open, plus_after, minus_after, 0, k, need)) return true;
      if (nodes_left_ == 0) break;
    }
    s.decided[t] = 0;
    return false;
  }

  // Takes `k` more of open[j..] (their contributions summing to `need`),
  // leaves the others out, then decides the rest of the queue.
  bool Pick(Span& s, size_t head, const std::vector<std::pair<int64_t, int32_t>>& open,
            const std::vector<int64_t>& plus_after, const std::vector<int64_t>& minus_after, size_t j, size_t k,
            int64_t need) {
    if (need > plus_after[j] || -need > minus_after[j]) return false;
    if (!Closing(s)) return false;
    if (k == 0) {
      if (need != 0) return false;
      for (size_t r = j; r < open.size(); ++r) s.status[open[r].second] = 2;
      const bool found = Close(s, head);
      if (!found) {
        for (size_t r = j; r < open.size(); ++r) s.status[open[r].second] = 0;
      }
      return found;
    }
    const size_t length = s.queue.size();
    bool found = false;
    size_t r = j;
    for (; r + k <= open.size(); ++r) {
      Include(s, open[r].second);
      found = Pick(s, head, open, plus_after, minus_after, r + 1, k - 1, need - open[r].first);
      if (found) break;
      s.queue.resize(length);
      s.status[open[r].second] = 2;  // skipped: out for the later picks
      if (nodes_left_ == 0) break;
    }
    if (!found) {
      for (size_t q = j; q < open.size() && q <= r; ++q) s.status[open[q].second] = 0;
    }
    return found;
  }

  // Every queued time point balances: the items in the band have constant
  // live bytes. A proper band goes below, the rest above it.
  bool SplitAt(Span& s) {
    std::vector<int32_t> band, rest;
    uint64_t band_height = 0;
    for (size_t k = 0; k < s.items.size(); ++k) {
      if (s.status[k] == 1) {
        band.push_back(s.items[k]);
        if (s.begin_at[k] < 0) band_height += items_[s.items[k]].size;
      } else {
        rest.push_back(s.items[k]);
      }
    }
    if (rest.empty() || band_height >= s.h) return false;
    if (Solve(std::move(band), s.a, s.b, s.y, band_height) &&
        Solve(std::move(rest), s.a, s.b, s.y + band_height, s.h - band_height)) {
      return true;
    }
    ++s.bands_tried;
    return false;
  }

  const std::vector<PackingItem>& items_;
  std::vector<uint64_t> offsets_;
  std::vector<int32_t> failures_;  // per item: attempts as a seed that did not close
  uint64_t nodes_left_;
  uint64_t steps_ = 0;
  Clock::time_point deadline_;
};

}  // namespace

uint64_t ConstantLiveBytes(const std::vector<PackingItem>& items) {
  if (items.empty()) return 0;
  std::map<int64_t, int64_t> change;  // time point -> change of live bytes
  for (const PackingItem& it : items) {
    change[it.begin] += static_cast<int64_t>(it.size);
    change[it.end] -= static_cast<int64_t>(it.size);
  }
  int64_t live = 0, level = -1;
  for (auto it = change.begin(); std::next(it) != change.end(); ++it) {
    live += it->second;
    if (level >= 0 && live != level) return 0;
    level = live;
  }
  return level > 0 ? static_cast<uint64_t>(level) : 0;
}

std::vector<uint64_t> GuillotineLayout(const std::vector<PackingItem>& items, uint64_t max_nodes,
                                       Clock::time_point deadline) {
  const uint64_t height = ConstantLiveBytes(items);
  if (height == 0) return {};
  GuillotineSearch search(items, max_nodes, deadline);
  if (!search.Run(height)) return {};
  std::vector<uint64_t>& offsets = search.offsets();
  for (size_t i = 0; i < items.size(); ++i) {
    if (offsets[i] % items[i].alignment != 0) return {};
  }
  return std::move(offsets);
}

}  // namespace keel::memory::internal
