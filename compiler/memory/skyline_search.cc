// compiler/memory/skyline_search.cc — the canonical-layout search (see the header
// for the method and why each rule is sound).
//
// State: per section its floor, the number and total size of the unplaced
// buffers covering it, and the buffer on top; per boundary the number of unplaced
// buffers crossing it. Every change goes on a trail so that a failed branch is
// undone exactly. Two segment trees answer "highest floor over a buffer's
// sections" and "lowest floor among sections with unplaced buffers".
// Forced moves (one branch) are applied in a loop instead of recursing, so the
// recursion depth is the number of real choices on the current path.
#include "compiler/memory/skyline_search.h"

#include <algorithm>
#include <tuple>

#include "compiler/memory/canonical_order_search.h"
#include "compiler/memory/local_fill.h"

namespace keel::memory::internal {

namespace {

constexpr uint64_t kNone = UINT64_MAX;
// Sections at the lowest floor examined for one without a choice (no branch: the
// node fails; one branch: forced).
constexpr int kTiedSectionsExamined = 8;
// Fail-first runs (PackingLimits::fail_first): sections at the lowest floor
// examined for the one with the fewest branches. On generated perfect packings
// the few-choice sections lie anywhere along the lowest floor, so 8 finds them
// too rarely (300 buffers, seed 1: 282,115 nodes with 32, 306 with 256 or all).
constexpr int kFailFirstSectionsExamined = 256;
// Node budget of the first run of PackWithRestarts (the static skyline order):
// kFirstRunNodesPerBuffer per buffer, at least kFirstRunNodes. At least half of
// keelc's AutoPlanner::kNodeBudget, so that its probes stay single static runs
// (as they were before the restarts were added); per buffer, because on large
// problems with slack this run is the one that finds layouts (a dive costs a
// node per buffer).
constexpr uint64_t kFirstRunNodes = 16384;
constexpr uint64_t kFirstRunNodesPerBuffer = 64;
// Smallest node budget of a restart round (else 2 per buffer).
constexpr uint64_t kMinRoundNodes = 1024;
// The fail-first run of a round gets the round's budget divided by this.
constexpr uint64_t kFailFirstBudgetDivisor = 4;
// Runs of the skyline search with perturbed orders per round (half budgets).
constexpr uint32_t kPerturbedRunsPerRound = 4;
// Buffers examined per rejected candidate when computing the (B) raise; beyond
// it the raise falls back to a weaker bound (still sound).
constexpr int kRestVisitsPerCandidate = 512;
// A search deeper than this many real choices gives up (kUnknown) rather than
// risk the thread's stack.
constexpr int kMaxRecursion = 50000;
// Local mode: nodes of the assignment of a section's locals to its gaps while
// the section still has other buffers to place (beyond it the check passes:
// it only prunes) and once it has none (beyond it the branch fails and the
// search can no longer prove infeasibility).
constexpr uint64_t kOpenFillNodes = 1024;
constexpr uint64_t kFinalFillNodes = uint64_t{1} << 16;

// Point-update segment tree over uint64 with min (or max) and "leftmost index in
// [a, b) whose value is <= v".
class SegmentTree {
 public:
  void Init(size_t n, bool is_max) {
    is_max_ = is_max;
    size_ = 1;
    while (size_ < n) size_ <<= 1;
    tree_.assign(2 * size_, Neutral());
  }
  void Set(size_t i, uint64_t v) {
    i += size_;
    tree_[i] = v;
    for (i >>= 1; i > 0; i >>= 1) tree_[i] = Combine(tree_[2 * i], tree_[2 * i + 1]);
  }
  uint64_t Query(size_t a, size_t b) const {  // over [a, b)
    uint64_t r = Neutral();
    for (a += size_, b += size_; a < b; a >>= 1, b >>= 1) {
      if (a & 1) r = Combine(r, tree_[a++]);
      if (b & 1) r = Combine(r, tree_[--b]);
    }
    return r;
  }
  // Min trees only: leftmost i in [a, b) with value <= v, or -1.
  int64_t FindFirstAtMost(size_t a, size_t b, uint64_t v) const { return Find(1, 0, size_, a, b, v); }

 private:
  uint64_t Neutral() const { return is_max_ ? 0 : kNone; }
  uint64_t Combine(uint64_t x, uint64_t y) const { return is_max_ ? std::max(x, y) : std::min(x, y); }
  int64_t Find(size_t node, size_t lo, size_t hi, size_t a, size_t b, uint64_t v) const {
    if (hi <= a || b <= lo || tree_[node] > v) return -1;
    if (hi - lo == 1) return static_cast<int64_t>(lo);
    const size_t mid = (lo + hi) / 2;
    const int64_t left = Find(2 * node, lo, mid, a, b, v);
    return left >= 0 ? left : Find(2 * node + 1, mid, hi, a, b, v);
  }
  bool is_max_ = false;
  size_t size_ = 1;
  std::vector<uint64_t> tree_;
};

class Search {
 public:
  // `bounds` (may be null: floors 0, ceilings `capacity`) gives each section of
  // ToSections(items) its fixed floor and ceiling.
  Search(const std::vector<PackingItem>& items, uint64_t capacity, const SectionBounds* bounds,
         const PackingLimits& limits)
      : n_(static_cast<int32_t>(items.size())), limits_(limits), rng_(limits.seed) {
    SectionedItems form = ToSections(items);
    sections_ = form.sections;
    base_floor_.assign(sections_, 0);
    cap_.assign(sections_, capacity);
    if (bounds != nullptr) {
      for (int32_t s = 0; s < sections_; ++s) {
        base_floor_[s] = bounds->floor[s];
        cap_[s] = bounds->ceiling[s];
      }
    }
    size_ = std::move(form.size);
    align_ = std::move(form.align);
    first_ = std::move(form.first);
    end_ = std::move(form.end);
    min_size_ = kNone;
    for (int32_t i = 0; i < n_; ++i) min_size_ = std::min(min_size_, size_[i]);
    SetUpLocals();
    SetUpTwins();
    // Candidate order: larger buffers first (they are the hardest to fit later),
    // then longer lifetimes, then index.
    std::vector<int32_t> order(n_);
    for (int32_t i = 0; i < n_; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      if (size_[a] != size_[b]) return size_[a] > size_[b];
      const int32_t la = end_[a] - first_[a], lb = end_[b] - first_[b];
      if (la != lb) return la > lb;
      return a < b;
    });
    cover_start_.assign(sections_ + 1, 0);
    for (int32_t i = 0; i < n_; ++i) {
      if (local_[i]) continue;
      for (int32_t s = first_[i]; s < end_[i]; ++s) ++cover_start_[s + 1];
    }
    for (int32_t s = 0; s < sections_; ++s) cover_start_[s + 1] += cover_start_[s];
    cover_.resize(cover_start_[sections_]);
    std::vector<int32_t> fill(cover_start_.begin(), cover_start_.end() - 1);
    for (int32_t i : order) {
      if (local_[i]) continue;
      for (int32_t s = first_[i]; s < end_[i]; ++s) cover_[fill[s]++] = i;
    }
    floor_ = base_floor_;
    item_cap_.assign(n_, kNone);
    for (int32_t i = 0; i < n_; ++i) {
      for (int32_t s = first_[i]; s < end_[i]; ++s) item_cap_[i] = std::min(item_cap_[i], cap_[s]);
    }
    count_.assign(sections_, 0);
    rem_.assign(sections_, 0);
    top_.assign(sections_, -1);
    cross_.assign(sections_ + 1, 0);
    for (int32_t i = 0; i < n_; ++i) {
      if (local_[i]) continue;
      for (int32_t s = first_[i]; s < end_[i]; ++s) {
        ++count_[s];
        rem_[s] += size_[i];
      }
      for (int32_t b = first_[i] + 1; b < end_[i]; ++b) ++cross_[b];
    }
    high_.Init(sections_, true);
    support_.Init(sections_, true);
    low_.Init(sections_, false);
    for (int32_t s = 0; s < sections_; ++s) {
      high_.Set(s, floor_[s]);
      support_.Set(s, floor_[s]);  // a fixed floor holds buffers up
      low_.Set(s, count_[s] > 0 ? floor_[s] : kNone);
    }
    placed_.assign(n_, 0);
    offset_.assign(n_, 0);
  }

  PackingResult Run() {
    PackingResult result;
    bool fits = true;
    for (int32_t i = 0; i < n_ && fits; ++i) fits = size_[i] <= item_cap_[i];
    for (int32_t s = 0; s < sections_ && fits; ++s) fits = floor_[s] + rem_[s] + local_sum_[s] <= cap_[s];
    const bool found = fits && Solve(0, sections_) && AssignLocals();
    result.nodes = nodes_;
    if (found) {
      result.outcome = PackingOutcome::kFound;
      result.offsets = offset_;
    } else {
      result.outcome = aborted_ || incomplete_ ? PackingOutcome::kUnknown : PackingOutcome::kInfeasible;
    }
    return result;
  }

 private:
  enum class Change : uint8_t { kPlace, kRaise, kGap };
  struct TrailEntry {
    Change change;
    int32_t index;      // buffer (kPlace) or section (kRaise, kGap)
    uint64_t previous;  // kRaise: the floor before
  };

  // Local mode (local_fill.h): which buffers are locals, and per section its
  // locals (largest first), their sum and achievable sums. Without it every
  // buffer is placed by the search and local_sum_ is 0.
  void SetUpLocals() {
    local_.assign(n_, 0);
    local_sum_.assign(sections_, 0);
    locals_of_.assign(sections_, {});
    gaps_of_.assign(sections_, {});
    if (!limits_.local_fill) return;
    for (int32_t i = 0; i < n_; ++i) {
      if (end_[i] != first_[i] + 1 || align_[i] != 1) continue;
      local_[i] = 1;
      locals_of_[first_[i]].push_back(i);
      local_sum_[first_[i]] += size_[i];
    }
    sums_.resize(sections_);
    for (int32_t s = 0; s < sections_; ++s) {
      std::vector<int32_t>& ids = locals_of_[s];
      if (ids.empty()) continue;
      std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
        return size_[a] != size_[b] ? size_[a] > size_[b] : a < b;
      });
      std::vector<uint64_t> sizes;
      for (int32_t i : ids) sizes.push_back(size_[i]);
      sums_[s].Build(sizes);
    }
  }
  bool HasLocals(int32_t s) const { return !locals_of_[s].empty(); }
  bool HasAnyLocals() const { return !sums_.empty(); }

  // Twins: buffers of one size, alignment and lifetime are interchangeable, so
  // only layouts where they come in index order (the lower index lower) are
  // searched: a buffer is a candidate only once its previous twin is placed.
  void SetUpTwins() {
    twin_prev_.assign(n_, -1);
    if (!limits_.twins) return;
    std::vector<int32_t> ids(n_);
    for (int32_t i = 0; i < n_; ++i) ids[i] = i;
    auto key = [&](int32_t i) { return std::make_tuple(first_[i], end_[i], size_[i], align_[i]); };
    std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return key(a) != key(b) ? key(a) < key(b) : a < b; });
    for (size_t k = 1; k < ids.size(); ++k) {
      if (key(ids[k]) == key(ids[k - 1])) twin_prev_[ids[k]] = ids[k - 1];
    }
  }
  bool WaitsForTwin(int32_t x) const { return twin_prev_[x] >= 0 && !placed_[twin_prev_[x]]; }
  // The highest end of a placed buffer in section s (its fixed floor if none):
  // where the gap that locals may fill there begins.
  uint64_t GapStart(int32_t s) const {
    return top_[s] >= 0 ? offset_[top_[s]] + size_[top_[s]] : base_floor_[s];
  }
  // Whether x at h can rest on locals stacked from the gap start of one of its
  // sections (all of x's sections are at h or below; h is aligned for x): some
  // sum v > 0 of them with AlignUp(gap start + v) = h.
  bool RestsOnLocals(int32_t x, uint64_t h) const {
    for (int32_t t = first_[x]; t < end_[x]; ++t) {
      if (!HasLocals(t)) continue;
      const uint64_t g = GapStart(t);
      if (h <= g) continue;
      const uint64_t lowest = h - g > align_[x] ? h - g - align_[x] : 0;
      if (sums_[t].NextAbove(lowest) <= h - g) return true;
    }
    return false;
  }
  // The lowest offset above h at which x can rest on locals, or kNone.
  uint64_t LocalRest(int32_t x, uint64_t h) const {
    uint64_t best = kNone;
    for (int32_t t = first_[x]; t < end_[x]; ++t) {
      if (!HasLocals(t)) continue;
      const uint64_t g = GapStart(t);
      const uint64_t next = sums_[t].NextAbove(h - g);
      if (next != kNone) best = std::min(best, AlignUp(g + next, align_[x]));
    }
    return best;
  }
  // Can section s's locals still fill its closed gaps and the room left at the
  // top? Final (no other buffer left there): the answer must be certain.
  bool LocalsStillFit(int32_t s) {
    const bool final_check = count_[s] == 0;
    fill_items_.clear();
    for (int32_t i : locals_of_[s]) fill_items_.push_back(size_[i]);
    fill_bins_.clear();
    for (const auto& gap : gaps_of_[s]) fill_bins_.push_back(gap.second);
    fill_bins_.push_back(cap_[s] - GapStart(s) - rem_[s]);
    const FillAnswer answer =
        AssignToBins(fill_items_, fill_bins_, final_check ? kFinalFillNodes : kOpenFillNodes, nullptr);
    if (answer == FillAnswer::kUnknown && final_check) incomplete_ = true;
    return answer == FillAnswer::kYes || (answer == FillAnswer::kUnknown && !final_check);
  }
  // After a complete placement of the others: each section's locals stacked
  // from the bottom of the gap (or the top room) they are assigned to.
  bool AssignLocals() {
    std::vector<int32_t> bin_of;
    for (int32_t s = 0; s < sections_; ++s) {
      if (!HasLocals(s)) continue;
      fill_items_.clear();
      for (int32_t i : locals_of_[s]) fill_items_.push_back(size_[i]);
      std::vector<std::pair<uint64_t, uint64_t>> bins = gaps_of_[s];
      bins.emplace_back(GapStart(s), cap_[s] - GapStart(s));
      fill_bins_.clear();
      for (const auto& bin : bins) fill_bins_.push_back(bin.second);
      if (AssignToBins(fill_items_, fill_bins_, UINT64_MAX, &bin_of) != FillAnswer::kYes) return false;
      for (size_t k = 0; k < bin_of.size(); ++k) {
        const int32_t i = locals_of_[s][k];
        offset_[i] = bins[bin_of[k]].first;
        bins[bin_of[k]].first += size_[i];
      }
    }
    return true;
  }

  uint64_t CanonicalOffset(int32_t x) const {
    return AlignUp(high_.Query(first_[x], end_[x]), align_[x]);
  }
  // Where x would rest on what is really below it: the highest end of a placed
  // buffer over its sections, aligned (raised floors are not supports).
  uint64_t SupportedOffset(int32_t x) const {
    return AlignUp(support_.Query(first_[x], end_[x]), align_[x]);
  }
  bool Covers(int32_t y, int32_t s) const { return first_[y] <= s && s < end_[y]; }

  void SetFloor(int32_t s, uint64_t v) {
    floor_[s] = v;
    high_.Set(s, v);
    low_.Set(s, count_[s] > 0 ? v : kNone);
  }

  void Place(int32_t x, uint64_t h) {
    placed_[x] = 1;
    offset_[x] = h;
    trail_.push_back({Change::kPlace, x, 0});
    fill_checks_.clear();
    for (int32_t s = first_[x]; s < end_[x]; ++s) {
      if (HasLocals(s)) {
        const uint64_t g = GapStart(s);
        if (h > g) {  // x closes a gap of s: its locals must fill it
          gaps_of_[s].emplace_back(g, h - g);
          trail_.push_back({Change::kGap, s, 0});
        }
        if (h > g || count_[s] == 1) fill_checks_.push_back(s);
      }
      tops_trail_.push_back(top_[s]);
      top_[s] = x;
      --count_[s];
      rem_[s] -= size_[x];
      SetFloor(s, h + size_[x]);
      support_.Set(s, h + size_[x]);
    }
    for (int32_t b = first_[x] + 1; b < end_[x]; ++b) {
      if (--cross_[b] == 0) ++cut_events_;
    }
  }

  void Unplace(int32_t x) {
    placed_[x] = 0;
    for (int32_t b = first_[x] + 1; b < end_[x]; ++b) ++cross_[b];
    for (int32_t s = end_[x] - 1; s >= first_[x]; --s) {
      top_[s] = tops_trail_.back();
      tops_trail_.pop_back();
      support_.Set(s, top_[s] >= 0 ? offset_[top_[s]] + size_[top_[s]] : base_floor_[s]);
      ++count_[s];
      rem_[s] += size_[x];
      SetFloor(s, offset_[x]);  // every section of x was at x's offset when it was placed
    }
  }

  void Raise(int32_t s, uint64_t v) {
    trail_.push_back({Change::kRaise, s, floor_[s]});
    SetFloor(s, v);
  }

  void UndoTo(size_t mark) {
    while (trail_.size() > mark) {
      const TrailEntry e = trail_.back();
      trail_.pop_back();
      if (e.change == Change::kPlace) Unplace(e.index);
      else if (e.change == Change::kGap) gaps_of_[e.index].pop_back();
      else SetFloor(e.index, e.previous);
    }
  }

  // True when the search must stop (deadline or node budget).
  bool Tick() {
    ++nodes_;
    if (nodes_ > limits_.max_nodes) aborted_ = true;
    if ((nodes_ & 255) == 0 && SearchClock::now() > limits_.deadline) aborted_ = true;
    return aborted_;
  }

  // The independent parts of sections [a, b): maximal runs joined by boundaries
  // that unplaced buffers cross, holding at least one unplaced buffer.
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

  // The branches at section s of floor h: candidates appended to cand_ (returns
  // how many), and whether (B) passes the cheap test; dead = some buffer covering
  // s can no longer fit under the capacity.
  struct Options {
    size_t num_candidates = 0;
    bool waste_possible = false;
    bool dead = false;
    uint64_t noncandidate_raise = kNone;
  };
  Options CollectOptions(int32_t s, uint64_t h) {
    Options o;
    for (int32_t k = cover_start_[s]; k < cover_start_[s + 1]; ++k) {
      const int32_t x = cover_[k];
      if (placed_[x]) continue;
      const uint64_t off = CanonicalOffset(x);
      if (off + size_[x] > item_cap_[x]) {
        o.dead = true;
        return o;
      }
      if (off == h && (SupportedOffset(x) == h || RestsOnLocals(x, h))) {
        if (limits_.twins && WaitsForTwin(x)) continue;  // its previous twin is a candidate here too
        cand_.push_back(x);
        ++o.num_candidates;
      } else if (off == h) {
        // All its sections are at h but nothing placed holds it there (the floors
        // were raised): in a canonical layout it rests on a buffer still to come
        // (or, in local mode, on locals reaching higher).
        const uint64_t bound = std::min(RestLowerBound(x, s, h, false), LocalRest(x, h));
        if (bound == kNone || bound + size_[x] > item_cap_[x]) {
          o.dead = true;
          return o;
        }
        o.noncandidate_raise = std::min(o.noncandidate_raise, bound);
      } else {
        o.noncandidate_raise = std::min(o.noncandidate_raise, off);
      }
    }
    uint64_t cheapest_raise = std::min(o.noncandidate_raise, h + min_size_);
    // Local mode: a rejected candidate may rest on locals lower than that.
    for (size_t k = cand_.size() - o.num_candidates; k < cand_.size() && HasAnyLocals(); ++k) {
      cheapest_raise = std::min(cheapest_raise, LocalRest(cand_[k], h));
    }
    o.waste_possible = cheapest_raise + rem_[s] <= cap_[s];
    return o;
  }

  // A lower bound on the offset of x, which is aligned at h but cannot stay there
  // (rejected in branch (B) of section s — then `byte_empty`: nothing occupies the
  // byte at h of s — or floating: nothing placed holds it at h): x ends up on top
  // of some unplaced y live at the same time. kNone when no such y exists (x can
  // never be placed above h).
  uint64_t RestLowerBound(int32_t x, int32_t s, uint64_t h, bool byte_empty) const {
    uint64_t rest = kNone;
    int visits = 0;
    for (int32_t t = first_[x]; t < end_[x]; ++t) {
      for (int32_t j = cover_start_[t]; j < cover_start_[t + 1]; ++j) {
        const int32_t y = cover_[j];
        if (placed_[y] || y == x) continue;
        if (++visits > kRestVisitsPerCandidate) return std::max(AlignUp(h + min_size_, align_[x]), h + align_[x]);
        const uint64_t lowest = byte_empty && Covers(y, s) ? AlignUp(std::max(CanonicalOffset(y), h + 1), align_[y])
                                                           : CanonicalOffset(y);
        rest = std::min(rest, lowest + size_[y]);
      }
    }
    if (rest == kNone) return kNone;
    return std::max(AlignUp(rest, align_[x]), h + align_[x]);  // aligned and above h
  }

  // The floor of section s in branch (B), or kNone when (B) is impossible. The
  // candidates of s are cand_[first, last).
  uint64_t WasteRaise(int32_t s, uint64_t h, size_t first, size_t last, uint64_t noncandidate_raise) const {
    uint64_t raise = noncandidate_raise;
    for (size_t k = first; k < last; ++k) {
      const uint64_t bound = std::min(RestLowerBound(cand_[k], s, h, true), LocalRest(cand_[k], h));
      if (bound == kNone) return kNone;  // nothing can hold it up: it must sit at h
      raise = std::min(raise, bound);
    }
    if (raise == kNone || raise + rem_[s] > cap_[s]) return kNone;
    return raise;
  }

  // Fail-first runs, after x was placed: every section whose buffers may have
  // been pushed up by x can still be filled. The unplaced buffers covering a
  // section t sit at least at their canonical offsets, so the bytes of t from
  // its floor to the lowest of those offsets stay empty, and the buffers still
  // to place there must fit above it. Only buffers overlapping x changed their
  // canonical offsets, so only their sections are checked.
  bool SectionsAroundStillFit(int32_t x) const {
    int32_t lo = first_[x], hi = end_[x];
    for (int32_t t = first_[x]; t < end_[x]; ++t) {
      for (int32_t j = cover_start_[t]; j < cover_start_[t + 1]; ++j) {
        const int32_t y = cover_[j];
        if (placed_[y]) continue;
        lo = std::min(lo, first_[y]);
        hi = std::max(hi, end_[y]);
      }
    }
    for (int32_t t = lo; t < hi; ++t) {
      if (count_[t] == 0) continue;
      uint64_t lowest = kNone;
      for (int32_t j = cover_start_[t]; j < cover_start_[t + 1] && lowest != floor_[t]; ++j) {
        const int32_t y = cover_[j];
        if (!placed_[y]) lowest = std::min(lowest, CanonicalOffset(y));
      }
      if (lowest + rem_[t] > cap_[t]) return false;
    }
    return true;
  }

  // Whether the search may go on after placing x (local mode: the locals of
  // the sections where x closed a gap, or placed the last other buffer, still
  // fit; fail-first runs check more).
  bool PlacementLeavesRoom(int32_t x) {
    for (int32_t s : fill_checks_) {
      if (!LocalsStillFit(s)) return false;
    }
    return !limits_.fail_first || SectionsAroundStillFit(x);
  }

  // Nothing else to place over x's lifetime: x at h is as good as higher. In
  // local mode only where x closes no gap (a gap closed lower may be one that
  // the locals cannot fill).
  bool Hatless(int32_t x, uint64_t h) const {
    for (int32_t s = first_[x]; s < end_[x]; ++s) {
      if (count_[s] != 1) return false;
      if (HasLocals(s) && GapStart(s) != h) return false;
    }
    return true;
  }

  // Symmetry: x directly on top of a buffer y of the same lifetime is kept only
  // when y is the larger one (ties: lower index), and only when the swap would
  // respect both alignments. (Larger below matches the candidate order, which
  // tries larger buffers first.)
  bool BrokenSymmetry(int32_t x, uint64_t h) const {
    const int32_t y = top_[first_[x]];
    if (y < 0 || first_[y] != first_[x] || end_[y] != end_[x] || offset_[y] + size_[y] != h) return false;
    if (size_[y] > size_[x] || (size_[y] == size_[x] && y < x)) return false;
    return offset_[y] % align_[x] == 0 && (offset_[y] + size_[x]) % align_[y] == 0;
  }

  void Shuffle(size_t first, size_t last) {
    for (size_t k = first; k + 1 < last; ++k) {
      if (NextRandom() % 4 != 0) continue;
      const size_t j = k + 1 + NextRandom() % (last - k - 1);
      std::swap(cand_[k], cand_[j]);
    }
  }
  uint32_t NextRandom() {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 17;
    rng_ ^= rng_ << 5;
    return rng_;
  }

  // Places every unplaced buffer of sections [a, b) (none crosses a or b). On
  // failure, everything it changed is undone.
  bool Solve(int32_t a, int32_t b) {
    const size_t mark = trail_.size();
    auto fail = [&] {
      UndoTo(mark);
      return false;
    };
    if (++depth_ > kMaxRecursion) aborted_ = true;
    struct DepthGuard {
      int* depth;
      ~DepthGuard() { --*depth; }
    } guard{&depth_};
    std::vector<std::pair<int32_t, int32_t>> parts;
    // The part splits only where a boundary loses its last crossing buffer
    // (Place counts those events), so between such events the scan is skipped:
    // [a, b) is then still one part, done when no section has unplaced buffers
    // (its lowest floor among those is kNone).
    uint64_t scanned_at = UINT64_MAX;
    while (true) {
      if (Tick()) return fail();
      if (scanned_at != cut_events_) {
        scanned_at = cut_events_;
        Components(a, b, &parts);
        if (parts.empty()) return true;
        if (parts.size() > 1) {
          for (const auto& [pa, pb] : parts) {
            if (!Solve(pa, pb)) return fail();
          }
          return true;
        }
        a = parts[0].first;
        b = parts[0].second;
      }

      // The section to branch on: among the leftmost sections at the lowest
      // floor, the one with the fewest branches.
      const uint64_t h = low_.Query(a, b);
      if (h == kNone) return true;
      const size_t base = cand_.size();
      int32_t best_section = -1;
      Options best;
      size_t best_branches = SIZE_MAX;
      int64_t s = low_.FindFirstAtMost(a, b, h);
      const int examine = limits_.fail_first ? kFailFirstSectionsExamined : kTiedSectionsExamined;
      for (int examined = 0; s >= 0 && examined < examine; ++examined) {
        const size_t first = cand_.size();
        const Options o = CollectOptions(static_cast<int32_t>(s), h);
        const size_t branches = o.dead ? 0 : o.num_candidates + (o.waste_possible ? 1 : 0);
        // The leftmost section, unless another one has no choice (0 or 1 branch);
        // fail-first runs: the leftmost of those with the fewest branches.
        if (best_section < 0 || branches <= 1 || (limits_.fail_first && branches < best_branches)) {
          // Keep this section's candidates at [base, ...).
          cand_.erase(cand_.begin() + base, cand_.begin() + first);
          best_branches = branches;
          best_section = static_cast<int32_t>(s);
          best = o;
        } else {
          cand_.resize(first);
        }
        if (best_branches <= 1) break;
        s = low_.FindFirstAtMost(static_cast<size_t>(s) + 1, b, h);
      }
      if (best_branches == 0 || best.dead) {
        cand_.resize(base);
        return fail();
      }
      const size_t end = base + best.num_candidates;
      cand_.resize(end);

      // A hatless candidate, or a single branch: apply it and go on.
      int32_t forced = -1;
      for (size_t k = base; k < end && forced < 0; ++k) {
        if (Hatless(cand_[k], h)) forced = cand_[k];
      }
      if (forced < 0 && best.num_candidates == 1 && !best.waste_possible) forced = cand_[base];
      if (forced >= 0) {
        cand_.resize(base);
        Place(forced, h);
        if (!PlacementLeavesRoom(forced)) return fail();
        continue;
      }
      if (best.num_candidates == 0) {  // only (B)
        const uint64_t raise = WasteRaise(best_section, h, base, end, best.noncandidate_raise);
        cand_.resize(base);
        if (raise == kNone) return fail();
        Raise(best_section, raise);
        continue;
      }

      // Real choice: each candidate at h, then (B).
      if (limits_.seed != 0) Shuffle(base, end);
      for (size_t k = base; k < end; ++k) {
        const int32_t x = cand_[k];
        if (BrokenSymmetry(x, h)) continue;
        const size_t before = trail_.size();
        Place(x, h);
        if (PlacementLeavesRoom(x) && Solve(a, b)) {
          cand_.resize(base);
          return true;
        }
        UndoTo(before);
        if (aborted_) break;
      }
      uint64_t raise = kNone;
      if (!aborted_ && best.waste_possible) {
        raise = WasteRaise(best_section, h, base, end, best.noncandidate_raise);
      }
      cand_.resize(base);
      if (raise == kNone) return fail();
      Raise(best_section, raise);
      if (Solve(a, b)) return true;
      return fail();
    }
  }

  int32_t n_ = 0;
  int32_t sections_ = 0;
  std::vector<uint64_t> base_floor_, cap_;  // per section: fixed floor and ceiling
  std::vector<uint64_t> item_cap_;          // per buffer: lowest ceiling over its sections
  PackingLimits limits_;
  uint32_t rng_;
  uint64_t min_size_ = 0;
  std::vector<uint64_t> size_;
  std::vector<uint32_t> align_;
  std::vector<int32_t> first_, end_;             // section span [first, end)
  std::vector<int32_t> cover_start_, cover_;     // CSR: buffers covering each section, in candidate order
  std::vector<uint64_t> floor_, rem_;
  std::vector<int32_t> count_, top_, cross_;
  SegmentTree high_, support_, low_;  // max floor, max placed end, min open floor
  std::vector<char> placed_;
  std::vector<uint64_t> offset_;
  std::vector<TrailEntry> trail_;
  std::vector<int32_t> tops_trail_;
  std::vector<int32_t> cand_;  // candidate lists of the open choices, stacked
  uint64_t nodes_ = 0;
  uint64_t cut_events_ = 0;  // boundaries whose crossing count fell to 0, ever
  int depth_ = 0;
  bool aborted_ = false;
  // Local mode (SetUpLocals).
  std::vector<int32_t> twin_prev_;  // the previous twin (SetUpTwins), or -1
  std::vector<char> local_;
  std::vector<uint64_t> local_sum_;
  std::vector<std::vector<int32_t>> locals_of_;
  std::vector<SubsetSums> sums_;
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> gaps_of_;  // closed gaps: start, size
  std::vector<int32_t> fill_checks_;                                 // sections the last Place affected
  std::vector<uint64_t> fill_items_, fill_bins_;
  bool incomplete_ = false;  // a final fill check gave up: infeasibility not proven
};

// The nonzero seed of the k-th perturbed run.
uint32_t Seed(uint32_t k) { return ((k + 1) * 2654435761u) | 1u; }

}  // namespace

PackingResult PackWithinCapacity(const std::vector<PackingItem>& items, uint64_t capacity,
                                 const PackingLimits& limits) {
  if (items.empty()) {
    PackingResult r;
    r.outcome = PackingOutcome::kFound;
    return r;
  }
  Search search(items, capacity, nullptr, limits);
  return search.Run();
}

PackingResult PackBetweenBounds(const std::vector<PackingItem>& items, const SectionBounds& bounds,
                                const PackingLimits& limits) {
  if (items.empty()) {
    PackingResult r;
    r.outcome = PackingOutcome::kFound;
    return r;
  }
  Search search(items, 0, &bounds, limits);
  return search.Run();
}

SectionedItems ToSections(const std::vector<PackingItem>& items) {
  std::vector<int64_t> points;
  points.reserve(2 * items.size());
  for (const PackingItem& it : items) {
    points.push_back(it.begin);
    points.push_back(it.end);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  SectionedItems out;
  out.sections = points.empty() ? 0 : static_cast<int32_t>(points.size()) - 1;
  auto at = [&](int64_t t) { return static_cast<int32_t>(std::lower_bound(points.begin(), points.end(), t) - points.begin()); };
  for (const PackingItem& it : items) {
    out.size.push_back(it.size);
    out.align.push_back(it.alignment);
    out.first.push_back(at(it.begin));
    out.end.push_back(at(it.end));
  }
  out.points = std::move(points);
  return out;
}

PackingResult PackWithRestarts(const std::vector<PackingItem>& items, uint64_t capacity,
                               SearchClock::time_point deadline, uint64_t max_nodes) {
  uint64_t total_nodes = 0;
  PackingResult last;
  // One run; true when it decided or the limits are spent.
  std::vector<PackingItem> mirrored;  // time reversed (same conflicts), made on first use
  auto run = [&](bool canonical, CandidateOrder order, bool rerank, uint32_t seed, uint64_t budget,
                 bool fail_first = false, bool local_fill = false, bool mirror = false) {
    PackingLimits limits;
    limits.fail_first = fail_first;
    limits.local_fill = local_fill;
    // Twins only with local mode: in the other runs the changed order made
    // MiniMalloc's E and H 15-150x slower to decide (heavy tails).
    limits.twins = local_fill;
    if (mirror && mirrored.empty()) {
      int64_t last_end = 0;
      for (const PackingItem& it : items) last_end = std::max(last_end, it.end);
      for (PackingItem it : items) {
        const int64_t begin = it.begin;
        it.begin = last_end - it.end;
        it.end = last_end - begin;
        mirrored.push_back(it);
      }
    }
    const std::vector<PackingItem>& input = mirror ? mirrored : items;
    limits.rerank_parts = rerank;
    limits.deadline = deadline;
    limits.max_nodes = std::min(budget, max_nodes - total_nodes);
    limits.seed = seed;
    limits.order = order;
    last = canonical ? PackInCanonicalOrder(input, capacity, limits) : PackWithinCapacity(input, capacity, limits);
    total_nodes += last.nodes;
    last.nodes = total_nodes;
    return last.outcome != PackingOutcome::kUnknown || SearchClock::now() > deadline || total_nodes >= max_nodes;
  };
  // The skyline search in its static order first (alone, it decides most
  // problems of real models; small budgets, like keelc's, go to it whole).
  const uint64_t first_run = std::max<uint64_t>(kFirstRunNodes, kFirstRunNodesPerBuffer * items.size());
  if (run(false, CandidateOrder::kCrowdAreaLength, false, 0, first_run)) return last;
  const uint64_t base = std::max<uint64_t>(2 * items.size(), kMinRoundNodes);
  for (uint32_t round = 0;; ++round) {
    const uint64_t budget = base << std::min<uint32_t>(round, 40);
    for (bool rerank : {false, true}) {
      for (CandidateOrder order : {CandidateOrder::kLengthAreaCrowd, CandidateOrder::kCrowdAreaLength,
                                   CandidateOrder::kCrowdLengthArea}) {
        if (run(true, order, rerank, 0, budget)) return last;
      }
    }
    // Fail-first: its nodes cost several of the others', so a quarter budget.
    if (run(false, CandidateOrder::kCrowdAreaLength, false, 0, budget / kFailFirstBudgetDivisor, true)) return last;
    for (uint32_t k = 0; k < kPerturbedRunsPerRound; ++k) {
      if (run(false, CandidateOrder::kCrowdAreaLength, false, Seed(round * kPerturbedRunsPerRound + k), budget / 2)) {
        return last;
      }
    }
    // Local mode, on the buffers and time reversed (its nodes cost more).
    for (bool mirror : {false, true}) {
      if (run(false, CandidateOrder::kCrowdAreaLength, false, 0, budget / 2, false, true, mirror)) return last;
    }
  }
}

}  // namespace keel::memory::internal
