// compiler/memory/overlap_search.cc — overlap minimization with guided local
// search (see the header for the method and why it complements the exact
// repairs).
#include "compiler/memory/overlap_search.h"

#include <algorithm>
#include <atomic>

#include "compiler/memory/planning_support.h"
#include "compiler/memory/settle_layout.h"
#include "compiler/memory/window_resolve.h"

namespace keel::memory::internal {

namespace {

// A capacity is given up after this many moves per item (at least kMinMoves).
// The next capacity resumes from where a failed one stopped, so a short
// budget loses little (2 rather than 8: 10,000-buffer perfect packing of seed
// 2, 200,000 moves, 1.0155 -> 1.0141 the optimum).
constexpr uint64_t kMovesPerItem = 2;
constexpr uint64_t kMinMoves = 2048;
// When even one byte lower is not reached, that budget doubles, up to this
// many times the first (then the search ends).
constexpr uint64_t kMaxPatience = 64;
// The first capacity tried: this fraction of the gap to the bound below the
// top (small steps succeed in few moves; the step doubles after each).
constexpr uint64_t kFirstStepDivisor = 16;
// Window repairs (RepairWindows): tried when at most this many items still
// overlap, each freeing at most kMaxRepairItems; their search nodes are
// charged to the move budget, kNodesPerMove to a move.
constexpr size_t kMaxRepairOverlaps = 128;
constexpr size_t kMaxRepairItems = 2048;
constexpr uint64_t kNodesPerMove = 16;
constexpr uint64_t kMaxRepairScale = 16;
// Settling (settle_layout.h): tried when at most this many items overlap and
// at most half as many as when last settled at this capacity (a settle costs
// about as much as a few hundred moves on 10,000 items, O(n log n +
// overlaps); settling at every new low took 9% of `exact`'s time there and
// ended 10,000-buffer perfect packings higher in 10 s: seed 1 1.0093-1.0101
// against 1.0073-1.0094, seed 2 1.0149-1.0162 against 1.0145).
constexpr size_t kMaxSettleOverlaps = 64;
// SortEvents' digits: at most this many bits, at most 8 below kFewEvents
// events.
constexpr int kMaxRadixBits = 11;
constexpr size_t kFewEvents = 1024;

std::atomic<OverlapTrace> g_trace{nullptr};

void Trace(size_t items, uint64_t top) {
  if (const OverlapTrace trace = g_trace.load(std::memory_order_relaxed)) trace(items, top);
}

uint64_t AlignDown(uint64_t value, uint32_t alignment) { return value & ~(uint64_t{alignment} - 1); }

class OverlapMinimizer {
 public:
  OverlapMinimizer(const std::vector<PackingItem>& items, const OverlapGraph& graph, std::vector<uint64_t> offsets,
                   const RefineLimits& limits)
      : items_(items), graph_(graph), limits_(limits), n_(static_cast<int32_t>(items.size())),
        offsets_(std::move(offsets)) {
    // A pair's weight is kept at both of its entries of the graph, so that
    // a move reads its neighbours' weights in order (one per pair, looked
    // up through pair_of, the lookup missed the cache on most neighbours:
    // 30% of a move's time on 10,000 buffers).
    weight_.assign(graph_.neighbours.size(), 1);
    mirror_.resize(graph_.neighbours.size());
    // (Entries < 2 * kMaxOverlapPairs = 2^25: int32_t holds them.)
    std::vector<int32_t> first(graph_.neighbours.size() / 2, -1);  // per pair: its first entry
    for (int32_t k = 0; k < static_cast<int32_t>(graph_.neighbours.size()); ++k) {
      int32_t& other = first[graph_.pair_of[k]];
      if (other < 0) {
        other = k;
      } else {
        mirror_[k] = other;
        mirror_[other] = k;
      }
    }
    overlaps_.assign(n_, 0);
    slot_.assign(n_, -1);
  }

  RefineResult Run(uint64_t lower_bound) {
    for (const PackingItem& it : items_) lower_bound = std::max(lower_bound, it.size);  // capacities hold every item
    std::vector<uint64_t> best = offsets_;
    uint64_t best_top = TopOf(best);
    Trace(items_.size(), best_top);
    uint64_t step = best_top > lower_bound ? std::max<uint64_t>(1, (best_top - lower_bound) / kFirstStepDivisor) : 0;
    bool resume = false;
    bool failed_last = false;  // the previous capacity was given up
    // (The clock at every capacity: one may end without a move — nothing
    // overlaps once pushed under it — while its recount and settling cost
    // O(pairs): on 6,532 buffers at a quarter of a core, runs of such
    // capacities ended 4-7 s past the deadline.)
    while (best_top > lower_bound && !Spent(/*read_clock=*/true)) {
      const uint64_t capacity = best_top - std::min(step, best_top - lower_bound);
      if (!resume) offsets_ = best;
      settled_top_ = best_top;
      const bool ok = Reach(capacity, resume);
      resume = !ok;
      if (!ok && settled_top_ < best_top) {
        // C not reached, but a settled state lies between C and the best:
        // the new best; the step stays, and the next capacity resumes from
        // the overlapping state (not from the settled one).
        best = std::move(settled_);
        best_top = settled_top_;
        ++result_.improvements;
        Trace(items_.size(), best_top);
      } else if (ok) {
        best = offsets_;
        best_top = TopOf(best);
        ++result_.improvements;
        Trace(items_.size(), best_top);
        // The step doubles after a success, unless the capacity before
        // was given up: the step that just worked is the one to repeat
        // (eight greedy starts per size, 200,000 moves each: at 300
        // buffers the same five reach the optimum and seed 1 ends 1.0485x
        // instead of 1.0708x; at 1,000 lower on five of the eight, higher
        // on one). (A settled best leaves this as it was: counting it as
        // given up lost 300/7's optimum.)
        if (!failed_last) step *= 2;
        failed_last = false;
      } else if (step > 1) {
        step /= 2;
        failed_last = true;
      } else if (patience_ < kMaxPatience) {
        patience_ *= 2;  // not even one byte lower: try longer
      } else {
        break;
      }
    }
    // The best layout settled too (Settle's two keys): a reached capacity
    // leaves the moves' layout, in which items need not rest on the items
    // below them, and letting them fall never raises the top (10,000-buffer
    // perfect packing of seed 2: `exact`'s 10 s plan 1,063,760 B, settled
    // 1,063,676).
    offsets_ = best;
    settled_top_ = best_top;
    Settle();
    if (settled_top_ < best_top) {
      best = std::move(settled_);
      best_top = settled_top_;
      Trace(items_.size(), best_top);
    }
    result_.offsets = std::move(best);
    result_.top = best_top;
    return std::move(result_);
  }

 private:
  uint64_t next_clock_check_ = 0;  // Spent() reads the clock from here on
  uint64_t End(int32_t i) const { return offsets_[i] + items_[i].size; }
  uint64_t TopOf(const std::vector<uint64_t>& offsets) const {
    uint64_t top = 0;
    for (int32_t i = 0; i < n_; ++i) top = std::max(top, offsets[i] + items_[i].size);
    return top;
  }
  // The clock is read every 256 moves, counted from the last reading (a
  // window repair adds its nodes' worth of moves at once), and wherever
  // `read_clock` says.
  bool Spent(bool read_clock = false) {
    if (result_.moves >= limits_.max_moves) return true;
    if (read_clock || result_.moves >= next_clock_check_) {
      next_clock_check_ = result_.moves + 256;
      if (SearchClock::now() > limits_.deadline) {
        result_.stopped_by_deadline = true;
        return true;
      }
    }
    return false;
  }
  bool Share(int32_t x, uint64_t x_offset, int32_t y) const {
    return x_offset < End(y) && offsets_[y] < x_offset + items_[x].size;
  }
  void Track(int32_t i) {  // keeps i in overlapping_ exactly while it overlaps
    if (overlaps_[i] > 0 && slot_[i] < 0) {
      slot_[i] = static_cast<int32_t>(overlapping_.size());
      overlapping_.push_back(i);
    } else if (overlaps_[i] == 0 && slot_[i] >= 0) {
      const int32_t last = overlapping_.back();
      overlapping_[slot_[i]] = last;
      slot_[last] = slot_[i];
      overlapping_.pop_back();
      slot_[i] = -1;
    }
  }

  // overlaps_ and overlapping_ from offsets_.
  void Recount() {
    for (int32_t i : overlapping_) slot_[i] = -1;
    overlapping_.clear();
    for (int32_t x = 0; x < n_; ++x) {
      overlaps_[x] = 0;
      for (int64_t k = graph_.start[x]; k < graph_.start[x + 1]; ++k) {
        overlaps_[x] += Share(x, offsets_[x], graph_.neighbours[k]) ? 1 : 0;
      }
      Track(x);
    }
  }

  // From offsets_ (a valid layout, or `resume`: the state a failed Reach
  // left, at a lower capacity, with its weights): every item pushed under
  // `capacity`, then moves until nothing overlaps (true: offsets_ fits) or
  // the budget is spent, then window repairs.
  bool Reach(uint64_t capacity, bool resume) {
    capacity_ = capacity;
    for (int32_t i = 0; i < n_; ++i) {
      if (End(i) > capacity) offsets_[i] = AlignDown(capacity - items_[i].size, items_[i].alignment);
    }
    if (!resume) std::fill(weight_.begin(), weight_.end(), 1);
    Recount();
    const uint64_t budget = result_.moves + patience_ * std::max(kMinMoves, kMovesPerItem * static_cast<uint64_t>(n_));
    size_t settled_at = 2 * kMaxSettleOverlaps + 1;  // overlapping items when last settled
    while (!overlapping_.empty()) {
      if (overlapping_.size() <= settled_at / 2) {
        settled_at = overlapping_.size();
        Settle();
      }
      pass_ = overlapping_;
      std::sort(pass_.begin(), pass_.end());
      bool moved = false;
      for (int32_t x : pass_) {
        if (overlaps_[x] == 0) continue;
        if (Spent()) return false;
        if (result_.moves >= budget) {
          if (RepairWindows()) return true;
          Settle();
          return false;
        }
        ++result_.moves;
        moved = Move(x) || moved;
      }
      if (!moved) Penalize();
    }
    return true;
  }

  // The current (overlapping) state settled (settle_layout.h) in two
  // vertical orders — by offset and by centre: of two overlapping items
  // either may be better below (60 states of the 10,000-buffer perfect
  // packing of seed 2: by centre lower in 29, by offset in 12) — the lower
  // kept in settled_ when lower than any settled or best layout so far.
  void Settle() {
    for (int key = 0; key < 2; ++key) {
      heights_ = offsets_;
      if (key == 1) {
        for (int32_t i = 0; i < n_; ++i) heights_[i] += items_[i].size / 2;
      }
      std::vector<uint64_t> settled = SettleLayout(items_, graph_, heights_);
      const uint64_t top = TopOf(settled);
      if (top < settled_top_) {
        settled_top_ = top;
        settled_ = std::move(settled);
      }
    }
  }

  // The budget of a capacity is spent with a few items still overlapping:
  // each cluster of them (the components of "overlaps with") and the items
  // around it in time and bytes are re-placed exactly under the capacity,
  // the rest fixed (window_resolve.h); the window doubles (up to
  // kMaxRepairScale times the cluster's extent, kMaxRepairItems freed)
  // while that fails. True when every cluster is re-placed (offsets_ then
  // fits).
  bool RepairWindows() {
    if (overlapping_.empty() || overlapping_.size() > kMaxRepairOverlaps) return false;
    // Clusters: the components of "overlaps with", smallest index first.
    std::vector<int32_t> seeds = overlapping_;
    std::sort(seeds.begin(), seeds.end());
    std::vector<char> done(n_, 0);
    std::vector<std::vector<int32_t>> clusters;
    for (int32_t root : seeds) {
      if (done[root]) continue;
      clusters.emplace_back(1, root);
      done[root] = 1;
      for (size_t k = 0; k < clusters.back().size(); ++k) {
        const int32_t x = clusters.back()[k];
        for (int64_t j = graph_.start[x]; j < graph_.start[x + 1]; ++j) {
          const int32_t y = graph_.neighbours[j];
          if (!done[y] && Share(x, offsets_[x], y)) {
            done[y] = 1;
            clusters.back().push_back(y);
          }
        }
      }
    }
    for (const std::vector<int32_t>& cluster : clusters) {
      // Still overlapping? (an earlier cluster's repair may have moved it)
      bool overlapping = false;
      for (int32_t x : cluster) {
        for (int64_t j = graph_.start[x]; j < graph_.start[x + 1] && !overlapping; ++j) {
          overlapping = Share(x, offsets_[x], graph_.neighbours[j]);
        }
      }
      if (!overlapping) continue;
      int64_t begin = items_[cluster[0]].begin, end = items_[cluster[0]].end;
      uint64_t low = offsets_[cluster[0]], high = End(cluster[0]);
      for (int32_t x : cluster) {
        begin = std::min(begin, items_[x].begin);
        end = std::max(end, items_[x].end);
        low = std::min(low, offsets_[x]);
        high = std::max(high, End(x));
      }
      bool placed = false;
      for (uint64_t scale = 1; scale <= kMaxRepairScale && !placed; scale *= 2) {
        if (Spent()) return false;
        WindowLimits window;
        window.deadline = limits_.deadline;
        window.max_freed = kMaxRepairItems;
        const uint64_t moves_left = limits_.max_moves - result_.moves;  // > 0: not Spent()
        window.max_nodes = moves_left > UINT64_MAX / kNodesPerMove ? UINT64_MAX : moves_left * kNodesPerMove;
          const std::vector<int32_t> freed =
            ItemsInWindow(items_, offsets_, cluster, static_cast<int64_t>(scale) * (end - begin) / 2, scale * (high - low));
        const WindowOutcome r = ResolveWindow(items_, graph_, &offsets_, freed, capacity_, window);
        result_.moves += std::min(moves_left, (r.nodes + kNodesPerMove - 1) / kNodesPerMove);
        placed = r.placed;
        if (r.freed > kMaxRepairItems) break;
      }
      if (!placed) return false;
    }
    Recount();
    return overlapping_.empty();
  }

  // Moves x to the offset of least weighted overlap, if less than where it is.
  bool Move(int32_t x) {
    const PackingItem& it = items_[x];
    const int64_t size = static_cast<int64_t>(it.size);
    const int64_t low = 0, high = static_cast<int64_t>(AlignDown(capacity_ - it.size, it.alignment));
    const int64_t current = static_cast<int64_t>(offsets_[x]);
    // The weighted overlap as a function of x's offset o is piecewise linear;
    // per neighbour y (bytes [a, b), weight c) its slope rises by c at a - s,
    // falls by c at min(a, b - s) and at max(a, b - s), and rises by c at b.
    events_.clear();
    events_.push_back(Event{low, 0.0});
    events_.push_back(Event{high, 0.0});
    events_.push_back(Event{current, 0.0});
    int64_t lowest = std::min(low, current), highest = std::max(high, current);
    for (int64_t k = graph_.start[x]; k < graph_.start[x + 1]; ++k) {
      const int32_t y = graph_.neighbours[k];
      const int64_t a = static_cast<int64_t>(offsets_[y]), b = static_cast<int64_t>(End(y));
      if (b <= low || a - size >= high) continue;  // never overlaps inside [low, high + size)
      const double c = static_cast<double>(weight_[k]) *
                       static_cast<double>(std::min(it.end, items_[y].end) - std::max(it.begin, items_[y].begin));
      events_.push_back(Event{a - size, c});
      events_.push_back(Event{std::min(a, b - size), -c});
      events_.push_back(Event{std::max(a, b - size), -c});
      events_.push_back(Event{b, c});
      lowest = std::min(lowest, a - size);  // the least of the four
      highest = std::max(highest, b);       // the largest
    }
    SortEvents(lowest, highest);
    // Alignments are powers of two: masks, not divisions (which were a
    // tenth of a move). align_up's argument is never negative;
    // align_down's may be, and rounds towards zero there, as the division
    // did.
    const int64_t mask = ~(static_cast<int64_t>(it.alignment) - 1);
    auto align_up = [&](int64_t v) { return (v + ~mask) & mask; };
    auto align_down = [&](int64_t v) { return v >= 0 ? v & mask : -(-v & mask); };
    double f = 0, slope = 0, f_current = 0, f_best = 0;
    int64_t best = -1;
    auto consider = [&](int64_t o, double value) {
      if (best < 0 || value < f_best || (value == f_best && o < best)) {
        best = o;
        f_best = value;
      }
    };
    for (size_t e = 0; e < events_.size();) {
      const int64_t p = events_[e].at;
      while (e < events_.size() && events_[e].at == p) slope += events_[e++].slope_change;
      if (p == current) f_current = f;
      // The segment [p, q] to the next event: f + slope * (o - p).
      const int64_t q = e < events_.size() ? events_[e].at : p;
      const int64_t lo = align_up(std::max<int64_t>(p, low)), hi = align_down(std::min(q, high));
      if (lo <= hi) {
        consider(lo, f + slope * static_cast<double>(lo - p));
        consider(hi, f + slope * static_cast<double>(hi - p));
      }
      f += slope * static_cast<double>(q - p);
    }
    if (best < 0 || f_best >= f_current) return false;
    const uint64_t old_offset = offsets_[x];
    for (int64_t k = graph_.start[x]; k < graph_.start[x + 1]; ++k) {
      const int32_t y = graph_.neighbours[k];
      const bool before = Share(x, old_offset, y), after = Share(x, static_cast<uint64_t>(best), y);
      if (before == after) continue;
      overlaps_[y] += after ? 1 : -1;
      overlaps_[x] += after ? 1 : -1;
      Track(y);
    }
    offsets_[x] = static_cast<uint64_t>(best);
    Track(x);
    return true;
  }

  // events_ by position (all in [lowest, highest]): a stable LSD radix
  // sort on the positions above the lowest, in as few passes of at most kMaxRadixBits bits as the span
  // needs (the sort was half of a move's time with std::sort; spans of
  // 1 MiB take two passes of 10-11 bits instead of three of 8), with
  // digits of at most 8 bits for few events, where clearing and summing
  // a larger count table would cost more than the pass it saves.
  void SortEvents(int64_t lowest, int64_t highest) {
    const uint64_t span = static_cast<uint64_t>(highest) - static_cast<uint64_t>(lowest);
    int bits = 0;
    while (bits < 64 && (span >> bits) != 0) ++bits;
    const int max_digit = events_.size() < kFewEvents ? 8 : kMaxRadixBits;
    const int passes = (bits + max_digit - 1) / max_digit;
    if (passes == 0) return;
    const int digit = (bits + passes - 1) / passes;
    const uint64_t mask = (uint64_t{1} << digit) - 1;
    sorted_.resize(events_.size());
    // Every pass's digit counts from one scan of the events.
    const size_t buckets = size_t{1} << digit;
    count_.assign(static_cast<size_t>(passes) * buckets, 0);
    for (const Event& e : events_) {
      const uint64_t key = static_cast<uint64_t>(e.at) - static_cast<uint64_t>(lowest);
      for (int pass = 0; pass < passes; ++pass) ++count_[pass * buckets + (key >> (pass * digit) & mask)];
    }
    for (int pass = 0; pass < passes; ++pass) {
      uint32_t* count = count_.data() + pass * buckets;
      uint32_t sum = 0;
      for (size_t d = 0; d < buckets; ++d) {
        const uint32_t c = count[d];
        count[d] = sum;
        sum += c;
      }
      const int shift = pass * digit;
      for (const Event& e : events_) {
        sorted_[count[(static_cast<uint64_t>(e.at) - static_cast<uint64_t>(lowest)) >> shift & mask]++] = e;
      }
      events_.swap(sorted_);
    }
  }

  // A local minimum: every pair still overlapping weighs one more.
  void Penalize() {
    for (int32_t x : overlapping_) {
      for (int64_t k = graph_.start[x]; k < graph_.start[x + 1]; ++k) {
        const int32_t y = graph_.neighbours[k];
        if (y > x && Share(x, offsets_[x], y)) {
          ++weight_[k];
          ++weight_[mirror_[k]];
        }
      }
    }
  }

  const std::vector<PackingItem>& items_;
  const OverlapGraph& graph_;
  RefineLimits limits_;
  int32_t n_;
  std::vector<uint64_t> offsets_;
  std::vector<uint32_t> weight_;  // per entry of graph_.neighbours: its pair's weight
  std::vector<int32_t> mirror_;   // per entry: the pair's other entry
  std::vector<int64_t> overlaps_;  // per item: neighbours it shares bytes with
  std::vector<int32_t> overlapping_, slot_, pass_;
  struct Event {
    int64_t at;
    double slope_change;
  };
  std::vector<Event> events_, sorted_;
  std::vector<uint32_t> count_;  // SortEvents' digit counts, per pass (events < 2^32)
  uint64_t capacity_ = 0;
  std::vector<uint64_t> heights_;  // Settle's vertical order
  std::vector<uint64_t> settled_;  // the lowest settled layout of this capacity
  uint64_t settled_top_ = 0;       // its top (the best top when none is lower)
  uint64_t patience_ = 1;  // the budget of a capacity, in kMovesPerItem units
  RefineResult result_;
};

}  // namespace

void SetOverlapTrace(OverlapTrace trace) { g_trace.store(trace, std::memory_order_relaxed); }

RefineResult MinimizeOverlap(const std::vector<PackingItem>& items, const OverlapGraph& graph,
                             std::vector<uint64_t> offsets, uint64_t lower_bound, const RefineLimits& limits) {
  return OverlapMinimizer(items, graph, std::move(offsets), limits).Run(lower_bound);
}

}  // namespace keel::memory::internal
