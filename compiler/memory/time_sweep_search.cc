// compiler/memory/time_sweep_search.cc — the start-time sweep (see the header
// for the method and when it is complete).
//
// State: the placed buffers live at the current start time, sorted by offset
// (they never overlap there, so their ends are sorted too), and per starting
// buffer whether it is placed. Entering a start time removes the buffers that
// ended; the removed ones are put back when the search returns through it.
#include "compiler/memory/time_sweep_search.h"

#include <algorithm>
#include <map>
#include <utility>

namespace keel::memory::internal {

namespace {

// Real choices on one path beyond which the run gives up (kUnknown) rather than
// risk the thread's stack.
constexpr int kMaxDepth = 60000;
// Restarts: the first budget is max(kNodesPerBuffer * n, kMinRunNodes).
constexpr uint64_t kNodesPerBuffer = 4;
constexpr uint64_t kMinRunNodes = 4096;
// Steps of one subset-sum check of the run inference before it answers "yes".
constexpr uint64_t kSubsetSumSteps = 4096;

struct Slot {
  uint64_t lo, hi;  // bytes [lo, hi) at the current time
  int32_t item;
};

class Sweep {
 public:
  // `nodes_per_time` != 0: the relaxed mode of SweepLayout (no backtracking
  // across start times; at most that many nodes per start time).
  Sweep(const std::vector<PackingItem>& items, uint64_t capacity, const PackingLimits& limits,
        uint64_t nodes_per_time = 0)
      : relaxed_(nodes_per_time != 0), nodes_per_time_(nodes_per_time), items_(items), n_(static_cast<int32_t>(items.size())), capacity_(capacity), limits_(limits),
        rng_(limits.seed == 0 ? 1u : limits.seed) {
    // Start times and the buffers starting at each, larger first (the static
    // tie order of the value heuristic).
    std::vector<int32_t> by_begin(n_);
    for (int32_t i = 0; i < n_; ++i) by_begin[i] = i;
    std::sort(by_begin.begin(), by_begin.end(), [&](int32_t a, int32_t b) {
      if (items_[a].begin != items_[b].begin) return items_[a].begin < items_[b].begin;
      if (items_[a].size != items_[b].size) return items_[a].size > items_[b].size;
      return a < b;
    });
    for (int32_t i : by_begin) {
      if (times_.empty() || times_.back() != items_[i].begin) {
        times_.push_back(items_[i].begin);
        start_of_.push_back(static_cast<int32_t>(starting_.size()));
      }
      starting_.push_back(i);
    }
    start_of_.push_back(static_cast<int32_t>(starting_.size()));
    // Bytes live at each start time (a sweep over begins and ends).
    std::vector<int32_t> by_end(n_);
    for (int32_t i = 0; i < n_; ++i) by_end[i] = i;
    std::sort(by_end.begin(), by_end.end(), [&](int32_t a, int32_t b) { return items_[a].end < items_[b].end; });
    uint64_t live = 0;
    size_t next_begin = 0, next_end = 0;
    slack_.assign(times_.size(), 0);
    need_.assign(times_.size(), 0);
    feasible_ = true;
    complete_ = true;
    for (size_t e = 0; e < times_.size(); ++e) {
      while (next_end < by_end.size() && items_[by_end[next_end]].end <= times_[e]) live -= items_[by_end[next_end++]].size;
      while (next_begin < by_begin.size() && items_[by_begin[next_begin]].begin <= times_[e]) {
        live += items_[by_begin[next_begin]].size;
        need_[e] += items_[by_begin[next_begin++]].size;
      }
      if (live > capacity_) feasible_ = false;  // above the peak-live bound
      slack_[e] = live > capacity_ ? 0 : capacity_ - live;
      complete_ = complete_ && slack_[e] == 0;
    }
    placed_.assign(n_, 0);
    offsets_.assign(n_, 0);
  }

  PackingResult Run() {
    PackingResult result;
    bool fits = feasible_;
    for (int32_t i = 0; i < n_ && fits; ++i) fits = items_[i].size <= capacity_;
    const bool found = fits && EnterTime(0, 0);
    result.nodes = nodes_;
    if (found) {
      result.outcome = PackingOutcome::kFound;
      result.offsets = offsets_;
    } else if (!fits || (complete_ && !aborted_)) {
      result.outcome = PackingOutcome::kInfeasible;
    } else {
      result.outcome = PackingOutcome::kUnknown;
    }
    return result;
  }

 // SweepLayout: every start time filled by the search alone (its best partial
  // fill when the search fails), the rest first fit above the capacity.
  std::vector<uint64_t> RunRelaxed() {
    for (size_t e = 0; e < times_.size(); ++e) {
      const int64_t t = times_[e];
      live_.erase(std::remove_if(live_.begin(), live_.end(), [&](const Slot& s) { return items_[s.item].end <= t; }),
                  live_.end());
      uint64_t used = 0;
      for (const Slot& slot : live_) used += slot.hi <= capacity_ ? slot.hi - slot.lo : 0;
      const uint64_t free = capacity_ - used;
      best_placed_ = 0;
      best_.clear();
      aborted_ = false;
      time_nodes_ = 0;
      if (!Fill(e, 0, need_[e], free >= need_[e] ? free - need_[e] : 0, 0)) {
        for (const auto& [x, at] : best_) Insert(x, at);
      }
      for (int32_t k = start_of_[e]; k < start_of_[e + 1]; ++k) {
        const int32_t x = starting_[k];
        if (placed_[x]) continue;
        uint64_t at = AlignUp(capacity_, items_[x].alignment);
        for (const Slot& slot : live_) {
          if (slot.hi <= at) continue;
          if (slot.lo >= at + items_[x].size) break;
          at = AlignUp(slot.hi, items_[x].alignment);
        }
        Insert(x, at);
      }
    }
    return offsets_;
  }

 private:
  void Insert(int32_t x, uint64_t at) {
    const Slot slot{at, at + items_[x].size, x};
    live_.insert(std::upper_bound(live_.begin(), live_.end(), slot, [](const Slot& a, const Slot& b) { return a.lo < b.lo; }),
                 slot);
    placed_[x] = 1;
    offsets_[x] = at;
  }

  // Start time e: drop the buffers that ended, fill, put them back on failure.
  bool EnterTime(size_t e, int depth) {
    if (e == times_.size()) return true;
    const int64_t t = times_[e];
    bool any_ended = false;
    for (const Slot& slot : live_) any_ended = any_ended || items_[slot.item].end <= t;
    std::vector<Slot> before;
    if (any_ended) {
      before = live_;  // restore point
      live_.erase(std::remove_if(live_.begin(), live_.end(), [&](const Slot& s) { return items_[s.item].end <= t; }),
                  live_.end());
    }
    const bool ok = Fill(e, 0, need_[e], slack_[e], depth);
    if (!ok && any_ended) live_ = std::move(before);
    return ok;
  }

  // Places the rest of time e's starting buffers at or above `cursor`.
  bool Fill(size_t e, uint64_t cursor, uint64_t need, uint64_t slack, int depth) {
    if (need == 0) return relaxed_ || EnterTime(e + 1, depth);
    if (aborted_) return false;
    if (relaxed_ && need_[e] - need > best_placed_) {
      best_placed_ = need_[e] - need;
      best_.clear();
      for (int32_t k = start_of_[e]; k < start_of_[e + 1]; ++k) {
        if (placed_[starting_[k]]) best_.emplace_back(starting_[k], offsets_[starting_[k]]);
      }
    }
    ++nodes_;
    if ((relaxed_ && ++time_nodes_ > nodes_per_time_) || nodes_ > limits_.max_nodes || depth > kMaxDepth ||
        ((nodes_ & 255) == 0 && SearchClock::now() > limits_.deadline)) {
      aborted_ = true;
      return false;
    }
    // The gap holding the lowest free byte at or above the cursor.
    size_t idx = static_cast<size_t>(
        std::partition_point(live_.begin(), live_.end(), [&](const Slot& s) { return s.hi <= cursor; }) -
        live_.begin());
    uint64_t b = cursor;
    while (idx < live_.size() && live_[idx].lo <= b) b = std::max(b, live_[idx++].hi);
    if (b >= capacity_) return false;
    const uint64_t top = idx < live_.size() ? std::min(live_[idx].lo, capacity_) : capacity_;
    // What lies right below b (its end: the value heuristic's "ends together").
    int64_t below_end = -1;
    if (idx > 0 && live_[idx - 1].hi == b) below_end = items_[live_[idx - 1].item].end;

    // Candidates: one per kind (size, alignment, end) among the unplaced
    // starting buffers that fit the gap.
    struct Candidate {
      uint64_t key;
      uint32_t tie;
      int32_t x;
      uint64_t pad;
    };
    std::vector<Candidate> candidates;
    for (int32_t k = start_of_[e]; k < start_of_[e + 1]; ++k) {
      const int32_t x = starting_[k];
      if (placed_[x]) continue;
      const PackingItem& it = items_[x];
      const uint64_t at = AlignUp(b, it.alignment);
      const uint64_t pad = at - b;
      if (pad > slack || at + it.size > top) continue;
      const uint64_t rest = top - (at + it.size);
      // A rest smaller than every other buffer still to place is a hole for sure.
      if (rest > 0 && rest + pad > slack) {
        uint64_t others_min = UINT64_MAX;
        for (int32_t j = start_of_[e]; j < start_of_[e + 1]; ++j) {
          const int32_t y = starting_[j];
          if (!placed_[y] && y != x) others_min = std::min(others_min, items_[y].size);
        }
        if (rest < others_min) continue;
      }
      bool duplicate = false;
      for (const Candidate& c : candidates) {
        const PackingItem& o = items_[c.x];
        if (o.size == it.size && o.alignment == it.alignment && o.end == it.end) duplicate = true;
      }
      if (duplicate) continue;
      // Smaller key first: exact fit, then ending with the buffer below, then
      // larger.
      const uint64_t fit_rank = rest == 0 ? 0 : 1;
      const uint64_t end_rank = (below_end >= 0 && it.end == below_end) ? 0 : 1;
      const uint64_t key = (fit_rank << 62) | (end_rank << 61) | ((uint64_t{1} << 60) - std::min(it.size, uint64_t{1} << 59));
      candidates.push_back({key, limits_.seed == 0 ? 0u : Next(), x, pad});
    }
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& c) {
      if (a.key != c.key) return a.key < c.key;
      if (a.tie != c.tie) return a.tie < c.tie;
      return a.x < c.x;
    });
    for (const Candidate& c : candidates) {
      const uint64_t at = b + c.pad;
      const Slot slot{at, at + items_[c.x].size, c.x};
      live_.insert(live_.begin() + static_cast<int64_t>(idx), slot);
      placed_[c.x] = 1;
      offsets_[c.x] = at;
      const bool runs_ok = RunFits(idx) && (idx == 0 || RunFits(idx - 1));
      if (runs_ok && Fill(e, slot.hi, need - items_[c.x].size, slack - c.pad, depth + 1)) return true;
      placed_[c.x] = 0;
      live_.erase(live_.begin() + static_cast<int64_t>(idx));
      if (aborted_) return false;
    }
    // The rest of the gap stays empty at t.
    if (top - b <= slack && top < capacity_) return Fill(e, top, need, slack - (top - b), depth + 1);
    return false;
  }

  // Run inference. A run of contiguous buffers ending at the same time u,
  // between buffers (or 0 / the capacity) that live past u, becomes a gap of
  // exactly its size at u. When nothing may stay empty at u (zero slack), the
  // buffers starting at u must fill it exactly: its size must be a sum of some
  // of their sizes. Checks the run holding live_[i] once both its ends are known.
  bool RunFits(size_t i) {
    const int64_t u = items_[live_[i].item].end;
    size_t lo = i, hi = i;
    while (lo > 0 && live_[lo - 1].hi == live_[lo].lo && items_[live_[lo - 1].item].end == u) --lo;
    while (hi + 1 < live_.size() && live_[hi + 1].lo == live_[hi].hi && items_[live_[hi + 1].item].end == u) ++hi;
    const bool bottom_fixed = live_[lo].lo == 0 || (lo > 0 && live_[lo - 1].hi == live_[lo].lo);
    const bool top_fixed = live_[hi].hi == capacity_ || (hi + 1 < live_.size() && live_[hi + 1].lo == live_[hi].hi);
    if (!bottom_fixed || !top_fixed) return true;  // a free neighbour: not known yet
    if (lo > 0 && live_[lo].lo != 0 && items_[live_[lo - 1].item].end < u) return true;  // replaced before u
    if (hi + 1 < live_.size() && live_[hi].hi != capacity_ && items_[live_[hi + 1].item].end < u) return true;
    const auto at = std::lower_bound(times_.begin(), times_.end(), u);
    if (at == times_.end() || *at != u) return true;  // nothing starts at u
    const size_t e = static_cast<size_t>(at - times_.begin());
    if (slack_[e] != 0) return true;
    return IsSubsetSum(e, live_[hi].hi - live_[lo].lo);
  }

  // Is `target` a sum of sizes of buffers starting at times_[e]? Memoized;
  // "yes" when the enumeration exceeds its step cap (the check is only a cut).
  bool IsSubsetSum(size_t e, uint64_t target) {
    const auto key = std::make_pair(e, target);
    const auto memo = subset_memo_.find(key);
    if (memo != subset_memo_.end()) return memo->second;
    sizes_.clear();
    for (int32_t k = start_of_[e]; k < start_of_[e + 1]; ++k) sizes_.push_back(items_[starting_[k]].size);
    // starting_ is sorted larger first within a time; suffix sums bound the rest.
    suffix_.assign(sizes_.size() + 1, 0);
    for (size_t k = sizes_.size(); k-- > 0;) suffix_[k] = suffix_[k + 1] + sizes_[k];
    uint64_t steps = 0;
    const bool found = SubsetSearch(0, target, &steps);
    const bool result = found || steps > kSubsetSumSteps;
    subset_memo_.emplace(key, result);
    return result;
  }
  bool SubsetSearch(size_t k, uint64_t target, uint64_t* steps) {
    if (target == 0) return true;
    if (k == sizes_.size() || suffix_[k] < target || ++*steps > kSubsetSumSteps) return false;
    if (sizes_[k] <= target && SubsetSearch(k + 1, target - sizes_[k], steps)) return true;
    // Skip equal sizes together (taking the first of them was just tried).
    size_t next = k + 1;
    while (next < sizes_.size() && sizes_[next] == sizes_[k]) ++next;
    return SubsetSearch(next, target, steps);
  }

  uint32_t Next() {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 17;
    rng_ ^= rng_ << 5;
    return rng_;
  }

  bool relaxed_;
  uint64_t nodes_per_time_, time_nodes_ = 0, best_placed_ = 0;
  std::vector<std::pair<int32_t, uint64_t>> best_;  // relaxed: the best partial fill of this start time
  const std::vector<PackingItem>& items_;
  int32_t n_;
  uint64_t capacity_;
  PackingLimits limits_;
  uint32_t rng_;
  std::vector<int64_t> times_;     // distinct start times, increasing
  std::vector<int32_t> start_of_;  // starting_[start_of_[e], start_of_[e + 1]) start at times_[e]
  std::vector<int32_t> starting_;
  std::vector<uint64_t> slack_, need_;  // per start time
  bool feasible_ = true, complete_ = true, aborted_ = false;
  std::vector<Slot> live_;
  std::map<std::pair<size_t, uint64_t>, bool> subset_memo_;
  std::vector<uint64_t> sizes_, suffix_;
  std::vector<char> placed_;
  std::vector<uint64_t> offsets_;
  uint64_t nodes_ = 0;
};

}  // namespace

PackingResult SweepWithinCapacity(const std::vector<PackingItem>& items, uint64_t capacity,
                                  const PackingLimits& limits) {
  if (items.empty()) return {PackingOutcome::kFound, {}, 0};
  return Sweep(items, capacity, limits).Run();
}

std::vector<uint64_t> SweepLayout(const std::vector<PackingItem>& items, uint64_t capacity, uint64_t nodes_per_time) {
  if (items.empty()) return {};
  return Sweep(items, capacity, PackingLimits{}, std::max<uint64_t>(nodes_per_time, 1)).RunRelaxed();
}

PackingResult SweepWithRestarts(const std::vector<PackingItem>& items, uint64_t capacity,
                                SearchClock::time_point deadline, uint64_t max_nodes) {
  uint64_t total = 0;
  uint64_t budget = std::max<uint64_t>(kMinRunNodes, kNodesPerBuffer * items.size());
  PackingResult last;
  for (uint32_t run = 0;; ++run) {
    PackingLimits limits;
    limits.deadline = deadline;
    limits.max_nodes = std::min(budget, max_nodes - total);
    limits.seed = run == 0 ? 0 : 0x9E3779B9u * run;
    last = SweepWithinCapacity(items, capacity, limits);
    total += last.nodes;
    last.nodes = total;
    if (last.outcome != PackingOutcome::kUnknown || total >= max_nodes || SearchClock::now() > deadline) return last;
    if (run % 2 == 1) budget *= 2;
  }
}

}  // namespace keel::memory::internal
