// compiler/memory/canonical_order_search.cc — the canonical-order search (see
// the header for the method and why each rule is sound).
//
// State: per buffer its rest (the highest aligned end among placed buffers that
// live at the same time; kept up to date by pushing each placement to the
// placed buffer's overlap list) and rank; per section the number and total size
// of the buffers still to come, their lowest rest and how many sit at it (a
// section is rescanned only when the last of those leaves); per boundary the
// number of buffers still to come that cross it. Every change goes on one
// trail, so a failed branch is undone exactly.
#include "compiler/memory/canonical_order_search.h"

#include <algorithm>
#include <array>

namespace keel::memory::internal {

namespace {

constexpr uint64_t kNone = UINT64_MAX;
// Solve's scanned_at before any scan.
constexpr uint64_t kNeverScanned = UINT64_MAX;
// A search deeper than this gives up (kUnknown) rather than risk the stack.
constexpr int kMaxRecursion = 50000;
// How far a perturbed order (limits.seed != 0) moves a buffer at most.
constexpr uint32_t kPerturbReach = 8;

class CanonicalSearch {
 public:
  CanonicalSearch(const std::vector<PackingItem>& items, uint64_t capacity, const PackingLimits& limits)
      : n_(static_cast<int32_t>(items.size())), capacity_(capacity), limits_(limits), rng_(limits.seed) {
    SectionedItems form = ToSections(items);
    sections_ = form.sections;
    size_ = std::move(form.size);
    align_ = std::move(form.align);
    first_ = std::move(form.first);
    end_ = std::move(form.end);
    count_.assign(sections_, 0);
    rem_.assign(sections_, 0);
    cross_.assign(sections_ + 1, 0);
    for (int32_t i = 0; i < n_; ++i) {
      for (int32_t s = first_[i]; s < end_[i]; ++s) {
        ++count_[s];
        rem_[s] += size_[i];
      }
      for (int32_t b = first_[i] + 1; b < end_[i]; ++b) ++cross_[b];
    }
    RankBuffers(items);
    // Buffers by first section (a part [a, b) holds exactly the buffers still to
    // come whose first section is in [a, b)), and the overlap lists.
    by_first_.resize(n_);
    for (int32_t i = 0; i < n_; ++i) by_first_[i] = i;
    std::sort(by_first_.begin(), by_first_.end(), [&](int32_t x, int32_t y) {
      return first_[x] != first_[y] ? first_[x] < first_[y] : x < y;
    });
    overlap_start_.assign(n_ + 1, 0);
    std::vector<std::vector<int32_t>> overlaps(n_);
    for (int32_t k = 0; k < n_; ++k) {
      const int32_t x = by_first_[k];
      for (int32_t j = k + 1; j < n_ && first_[by_first_[j]] < end_[x]; ++j) {
        overlaps[x].push_back(by_first_[j]);
        overlaps[by_first_[j]].push_back(x);
      }
    }
    for (int32_t i = 0; i < n_; ++i) overlap_start_[i + 1] = overlap_start_[i] + static_cast<int64_t>(overlaps[i].size());
    overlap_.reserve(overlap_start_[n_]);
    for (int32_t i = 0; i < n_; ++i) overlap_.insert(overlap_.end(), overlaps[i].begin(), overlaps[i].end());
    rest_.assign(n_, 0);
    open_rest_.assign(n_, 0);
    low_rest_.assign(sections_, kNone);
    low_count_.assign(sections_, 0);
    for (int32_t s = 0; s < sections_; ++s) {
      if (count_[s] > 0) low_rest_[s] = 0;
      low_count_[s] = static_cast<uint32_t>(count_[s]);
    }
    touch_stamp_.assign(sections_, 0);
    cover_start_.assign(sections_ + 1, 0);
    for (int32_t i = 0; i < n_; ++i) {
      for (int32_t s = first_[i]; s < end_[i]; ++s) ++cover_start_[s + 1];
    }
    for (int32_t s = 0; s < sections_; ++s) cover_start_[s + 1] += cover_start_[s];
    cover_.resize(cover_start_[sections_]);
    std::vector<int32_t> fill(cover_start_.begin(), cover_start_.end() - 1);
    for (int32_t i = 0; i < n_; ++i) {
      for (int32_t s = first_[i]; s < end_[i]; ++s) cover_[fill[s]++] = i;
    }
    placed_.assign(n_, 0);
    offset_.assign(n_, 0);
  }

  PackingResult Run() {
    PackingResult result;
    bool fits = true;
    for (int32_t i = 0; i < n_ && fits; ++i) fits = size_[i] <= capacity_;
    for (int32_t s = 0; s < sections_ && fits; ++s) fits = rem_[s] <= capacity_;
    const bool found = fits && Solve(0, sections_, 0, -1, kNeverScanned);
    result.nodes = nodes_;
    if (found) {
      result.outcome = PackingOutcome::kFound;
      result.offsets = offset_;
    } else {
      result.outcome = aborted_ ? PackingOutcome::kUnknown : PackingOutcome::kInfeasible;
    }
    return result;
  }

 private:
  // The keys of buffer x in limits_.order (compared descending). Its crowd is
  // taken over the sizes still to come (rem_), so that a part cut off during the
  // search is ordered by its own busiest sections.
  std::array<uint64_t, 3> Keys(int32_t x) const {
    uint64_t crowd = 0;
    for (int32_t s = first_[x]; s < end_[x]; ++s) crowd = std::max(crowd, rem_[s]);
    switch (limits_.order) {
      case CandidateOrder::kCrowdAreaLength: return {crowd, area_[x], length_[x]};
      case CandidateOrder::kLengthAreaCrowd: return {length_[x], area_[x], crowd};
      case CandidateOrder::kCrowdLengthArea: return {crowd, length_[x], area_[x]};
    }
    return {0, 0, 0};
  }

  // Sorts `order` by Keys (descending, ties by index).
  void SortByKeys(std::vector<int32_t>* order) {
    keys_.resize(n_);
    for (int32_t x : *order) keys_[x] = Keys(x);
    std::sort(order->begin(), order->end(), [&](int32_t a, int32_t b) {
      return keys_[a] != keys_[b] ? keys_[a] > keys_[b] : a < b;
    });
  }

  // With limits_.seed != 0, a perturbed order for restarts: some buffers trade
  // places with one a few positions later (the order's broad shape stays).
  void Perturb(std::vector<int32_t>* order) {
    if (limits_.seed == 0) return;
    const int32_t m = static_cast<int32_t>(order->size());
    for (int32_t k = 0; k + 1 < m; ++k) {
      if (NextRandom() % 4 != 0) continue;
      const int32_t j = k + 1 + static_cast<int32_t>(NextRandom() % std::min<uint32_t>(kPerturbReach, m - k - 1));
      std::swap((*order)[k], (*order)[j]);
    }
  }
  uint32_t NextRandom() {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 17;
    rng_ ^= rng_ << 5;
    return rng_;
  }

  // rank_[i]: position of buffer i in limits_.order (lower = tried first).
  void RankBuffers(const std::vector<PackingItem>& items) {
    length_.resize(n_);
    area_.resize(n_);
    for (int32_t i = 0; i < n_; ++i) {
      length_[i] = static_cast<uint64_t>(items[i].end - items[i].begin);
      area_[i] = size_[i] * length_[i];  // far below 2^64 in practice; a wrap only reorders
    }
    std::vector<int32_t> order(n_);
    for (int32_t i = 0; i < n_; ++i) order[i] = i;
    SortByKeys(&order);
    Perturb(&order);
    rank_.assign(n_, 0);
    for (int32_t k = 0; k < n_; ++k) rank_[order[k]] = k;
  }

  enum class Change : uint8_t { kPlace, kRest, kLowRest, kLowCount, kRank };
  struct TrailEntry {
    Change change;
    int32_t index;      // buffer (kPlace, kRest, kRank) or section (kLowRest, kLowCount)
    uint64_t previous;  // the value before (not kPlace)
  };

  // New ranks for the buffers still to come of sections [a, b) (kept on the
  // trail; they are compared only among themselves).
  void Rerank(int32_t a, int32_t b) {
    rerank_.clear();
    const auto from = std::lower_bound(by_first_.begin(), by_first_.end(), a,
                                       [&](int32_t x, int32_t v) { return first_[x] < v; });
    for (auto it = from; it != by_first_.end() && first_[*it] < b; ++it) {
      if (!placed_[*it]) rerank_.push_back(*it);
    }
    SortByKeys(&rerank_);
    Perturb(&rerank_);
    for (size_t k = 0; k < rerank_.size(); ++k) {
      trail_.push_back({Change::kRank, rerank_[k], static_cast<uint64_t>(rank_[rerank_[k]])});
      rank_[rerank_[k]] = static_cast<int32_t>(k);
    }
  }

  // Places x at o; true when no buffer still to come lives at the same time.
  bool Place(int32_t x, uint64_t o) {
    placed_[x] = 1;
    open_rest_[x] = kNone;
    offset_[x] = o;
    trail_.push_back({Change::kPlace, x, 0});
    const uint64_t top = o + size_[x];
    ++stamp_;
    // A section's lowest rest can change only where the buffer leaving it (x)
    // or a buffer whose rest rises was at that lowest rest.
    for (int32_t s = first_[x]; s < end_[x]; ++s) {
      --count_[s];
      rem_[s] -= size_[x];
      if (low_rest_[s] == rest_[x]) LeaveLowest(s);
    }
    for (int32_t b = first_[x] + 1; b < end_[x]; ++b) {
      if (--cross_[b] == 0) ++cut_events_;
    }
    bool hatless = true;
    for (int64_t k = overlap_start_[x]; k < overlap_start_[x + 1]; ++k) {
      const int32_t y = overlap_[k];
      if (placed_[y]) continue;
      hatless = false;
      const uint64_t r = AlignUp(top, align_[y]);
      if (r > rest_[y]) {
        for (int32_t s = first_[y]; s < end_[y]; ++s) {
          if (low_rest_[s] == rest_[y]) LeaveLowest(s);
        }
        trail_.push_back({Change::kRest, y, rest_[y]});
        rest_[y] = r;
        open_rest_[y] = r;
      }
    }
    // The lowest rest of every touched section, recomputed.
    for (int32_t s : touched_) {
      uint64_t low = kNone;
      uint32_t at_low = 0;
      for (int32_t k = cover_start_[s]; k < cover_start_[s + 1]; ++k) {
        const uint64_t r = open_rest_[cover_[k]];
        if (r < low) {
          low = r;
          at_low = 1;
        } else if (r == low) {
          ++at_low;
        }
      }
      if (low == kNone) at_low = 0;
      trail_.push_back({Change::kLowRest, s, low_rest_[s]});
      low_rest_[s] = low;
      trail_.push_back({Change::kLowCount, s, low_count_[s]});
      low_count_[s] = at_low;
    }
    touched_.clear();
    return hatless;
  }

  // A buffer at the lowest rest of section s leaves it (placed, or its rest
  // rises); when it was the last one there, the section is recomputed.
  void LeaveLowest(int32_t s) {
    if (touch_stamp_[s] == stamp_) return;  // recomputed anyway
    trail_.push_back({Change::kLowCount, s, low_count_[s]});
    if (--low_count_[s] == 0) Touch(s);
  }

  void Touch(int32_t s) {
    if (touch_stamp_[s] == stamp_) return;
    touch_stamp_[s] = stamp_;
    touched_.push_back(s);
  }

  void UndoTo(size_t mark) {
    while (trail_.size() > mark) {
      const TrailEntry e = trail_.back();
      trail_.pop_back();
      switch (e.change) {
        case Change::kRest: rest_[e.index] = open_rest_[e.index] = e.previous; break;
        case Change::kLowRest: low_rest_[e.index] = e.previous; break;
        case Change::kLowCount: low_count_[e.index] = static_cast<uint32_t>(e.previous); break;
        case Change::kRank: rank_[e.index] = static_cast<int32_t>(e.previous); break;
        case Change::kPlace: {
          const int32_t x = e.index;
          placed_[x] = 0;
          open_rest_[x] = rest_[x];
          for (int32_t s = first_[x]; s < end_[x]; ++s) {
            ++count_[s];
            rem_[s] += size_[x];
          }
          for (int32_t b = first_[x] + 1; b < end_[x]; ++b) ++cross_[b];
          break;
        }
      }
    }
  }

  bool Tick() {
    ++nodes_;
    if (nodes_ > limits_.max_nodes) aborted_ = true;
    if ((nodes_ & 255) == 0 && SearchClock::now() > limits_.deadline) aborted_ = true;
    return aborted_;
  }

  // The independent parts of sections [a, b) (as in the skyline search).
  void Components(int32_t a, int32_t b, std::vector<std::pair<int32_t, int32_t>>* parts) const {
    parts->clear();
    int32_t s = a;
    while (s < b) {
      while (s < b && count_[s] == 0) ++s;
      if (s >= b) break;
      const int32_t start = s++;
      while (s < b && cross_[s] > 0) ++s;
      parts->emplace_back(start, s);
    }
  }

  // Places every buffer still to come of sections [a, b) (none crosses a or b),
  // each after (last_offset, last_rank) in canonical order. On failure,
  // everything it changed is undone. `scanned_at`: the cut_events_ count at
  // which [a, b) was last found to be one part (a part splits only where a
  // boundary loses its last crossing buffer, and Place counts those events),
  // so while no event has happened since, the decomposition scan is skipped.
  bool Solve(int32_t a, int32_t b, uint64_t last_offset, int32_t last_rank, uint64_t scanned_at) {
    const size_t mark = trail_.size();
    if (Tick()) return false;
    if (++depth_ > kMaxRecursion) aborted_ = true;
    struct DepthGuard {
      int* depth;
      ~DepthGuard() { --*depth; }
    } guard{&depth_};
    if (aborted_) return false;
    const bool rescan = scanned_at != cut_events_;
    std::vector<std::pair<int32_t, int32_t>> parts;
    if (rescan) Components(a, b, &parts);
    scanned_at = cut_events_;
    if (rescan && parts.empty()) return true;
    if (rescan && (parts.size() > 1 || parts[0] != std::make_pair(a, b))) {
      // Cut off: each part is its own problem (the placed buffers are fixed
      // obstacles), searched in its own canonical order from the bottom, with
      // ranks by its own crowds.
      for (const auto& [pa, pb] : parts) {
        if (limits_.rerank_parts) Rerank(pa, pb);
        if (!Solve(pa, pb, 0, -1, scanned_at)) {
          UndoTo(mark);
          return false;
        }
      }
      return true;
    }

    // Capacity per section: what is still to come is stacked above
    // max(last offset, top).
    bool any_to_come = false;
    for (int32_t s = a; s < b; ++s) {
      if (count_[s] == 0) continue;
      any_to_come = true;
      if (std::max(last_offset, low_rest_[s]) + rem_[s] > capacity_) return false;
    }
    if (!any_to_come) return true;  // (a scan skipped above would have found no part)
    // The buffers still to come of this part, their lowest end, the candidates.
    const size_t base = cand_.size();
    uint64_t lowest_end = kNone;
    const auto from = std::lower_bound(by_first_.begin(), by_first_.end(), a,
                                       [&](int32_t x, int32_t v) { return first_[x] < v; });
    for (auto it = from; it != by_first_.end() && first_[*it] < b; ++it) {
      const int32_t x = *it;
      if (placed_[x]) continue;
      const uint64_t end = rest_[x] + size_[x];
      if (end > capacity_) {
        cand_.resize(base);
        return false;
      }
      lowest_end = std::min(lowest_end, end);
      if (rest_[x] > last_offset || (rest_[x] == last_offset && rank_[x] > last_rank)) cand_.push_back(x);
    }
    // A candidate at or above lowest_end leaves room below for a buffer still to
    // come: not canonical.
    size_t last = base;
    for (size_t k = base; k < cand_.size(); ++k) {
      if (rest_[cand_[k]] < lowest_end) cand_[last++] = cand_[k];
    }
    cand_.resize(last);
    std::sort(cand_.begin() + static_cast<std::ptrdiff_t>(base), cand_.end(), [&](int32_t x, int32_t y) {
      return rest_[x] != rest_[y] ? rest_[x] < rest_[y] : rank_[x] < rank_[y];
    });
    for (size_t k = base; k < last; ++k) {
      const int32_t x = cand_[k];
      const uint64_t o = rest_[x];
      const size_t before = trail_.size();
      const bool hatless = Place(x, o);
      if (Solve(a, b, o, rank_[x], scanned_at)) {
        cand_.resize(base);
        return true;
      }
      UndoTo(before);
      // Nothing still to come lives with x: x's place takes nobody's space, so
      // another buffer first leads to the same dead end.
      if (aborted_ || hatless) break;
    }
    cand_.resize(base);
    return false;
  }

  int32_t n_ = 0;
  int32_t sections_ = 0;
  uint64_t capacity_;
  PackingLimits limits_;
  uint32_t rng_;
  std::vector<uint64_t> size_;
  std::vector<uint32_t> align_;
  std::vector<int32_t> first_, end_;  // section span [first, end)
  std::vector<int32_t> rank_;
  std::vector<uint64_t> length_, area_;  // lifetime length, size x length
  std::vector<std::array<uint64_t, 3>> keys_;  // scratch of SortByKeys
  std::vector<int32_t> rerank_;              // scratch of Rerank
  std::vector<int32_t> by_first_;
  std::vector<int64_t> overlap_start_;  // CSR: buffers live at the same time as each buffer
  std::vector<int32_t> overlap_;
  std::vector<uint64_t> rem_;
  std::vector<int32_t> count_, cross_;
  std::vector<uint64_t> rest_;
  std::vector<uint64_t> open_rest_;  // rest_, or kNone once placed (one load per scan)
  std::vector<uint64_t> low_rest_;  // per section: the lowest rest of a buffer still to come (kNone: none)
  std::vector<uint32_t> low_count_;  // per section: how many buffers still to come are at low_rest_
  std::vector<int32_t> cover_start_, cover_;  // CSR: buffers covering each section
  std::vector<uint32_t> touch_stamp_;
  std::vector<int32_t> touched_;
  uint32_t stamp_ = 0;
  std::vector<char> placed_;
  std::vector<uint64_t> offset_;
  std::vector<TrailEntry> trail_;
  std::vector<int32_t> cand_;  // candidate lists of the open choices, stacked
  uint64_t nodes_ = 0;
  uint64_t cut_events_ = 0;  // boundaries whose crossing count fell to 0, ever
  int depth_ = 0;
  bool aborted_ = false;
};

}  // namespace

PackingResult PackInCanonicalOrder(const std::vector<PackingItem>& items, uint64_t capacity,
                                   const PackingLimits& limits) {
  if (items.empty()) {
    PackingResult r;
    r.outcome = PackingOutcome::kFound;
    return r;
  }
  CanonicalSearch search(items, capacity, limits);
  return search.Run();
}

}  // namespace keel::memory::internal
