// compiler/memory/piece_search.cc — pieces of constant live bytes, found by
// closures over time points and packed as blocks (see the header).
#include "compiler/memory/piece_search.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace keel::memory::internal {

// See the header.
std::vector<std::vector<int32_t>> SubsetsWithSum(const std::vector<PackingItem>& items,
                                                 const std::vector<int32_t>& candidates, uint64_t target,
                                                 size_t cap, uint64_t max_nodes) {
  std::vector<std::vector<int32_t>> found;
  std::vector<uint64_t> suffix(candidates.size() + 1, 0);
  for (size_t k = candidates.size(); k-- > 0;) suffix[k] = suffix[k + 1] + items[candidates[k]].size;
  std::vector<int32_t> chosen;
  uint64_t nodes = 0;
  auto rec = [&](auto&& self, size_t k, uint64_t rest) -> void {
    if (++nodes > max_nodes || found.size() >= cap) return;
    if (rest == 0) {
      found.push_back(chosen);
      return;
    }
    if (k == candidates.size() || suffix[k] < rest) return;
    if (items[candidates[k]].size <= rest) {
      chosen.push_back(candidates[k]);
      self(self, k + 1, rest - items[candidates[k]].size);
      chosen.pop_back();
    }
    self(self, k + 1, rest);
  };
  rec(rec, 0, target);
  std::stable_sort(found.begin(), found.end(),
                   [](const std::vector<int32_t>& a, const std::vector<int32_t>& b) { return a.size() < b.size(); });
  return found;
}

namespace {

// The time points of the eligible items in one direction of time: `opening[q]`
// the items that begin at point q, `closing[q]` those that end there, and
// `close_at[i]` item i's closing point (backward, time is mirrored: an item
// "begins" at its end).
struct Direction {
  std::vector<std::vector<int32_t>> opening, closing;
  std::vector<int32_t> close_at;
};

class PieceFinder {
 public:
  PieceFinder(const std::vector<PackingItem>& items, const PieceSearchLimits& limits)
      : items_(items), limits_(limits) {
    for (const PackingItem& item : items) {
      if (item.alignment != 1) continue;
      points_.push_back(item.begin);
      points_.push_back(item.end);
    }
    std::sort(points_.begin(), points_.end());
    points_.erase(std::unique(points_.begin(), points_.end()), points_.end());
    const size_t n = points_.size();
    for (Direction* d : {&forward_, &backward_}) {
      d->opening.assign(n, {});
      d->closing.assign(n, {});
      d->close_at.assign(items.size(), -1);
    }
    for (int32_t i = 0; i < static_cast<int32_t>(items.size()); ++i) {
      if (items[i].alignment != 1) continue;
      const int32_t b = PointOf(items[i].begin), e = PointOf(items[i].end);
      const int32_t mb = static_cast<int32_t>(n) - 1 - b, me = static_cast<int32_t>(n) - 1 - e;
      forward_.opening[b].push_back(i);
      forward_.closing[e].push_back(i);
      forward_.close_at[i] = e;
      backward_.opening[me].push_back(i);
      backward_.closing[mb].push_back(i);
      backward_.close_at[i] = mb;
    }
    auto larger_first = [&](int32_t a, int32_t b) {
      return items_[a].size != items_[b].size ? items_[a].size > items_[b].size : a < b;
    };
    for (Direction* d : {&forward_, &backward_}) {
      for (auto& list : d->opening) std::sort(list.begin(), list.end(), larger_first);
      for (auto& list : d->closing) std::sort(list.begin(), list.end(), larger_first);
    }
  }

  // The forward closure from `seed` (items starting at one point), or empty.
  std::vector<int32_t> ClosureOf(const std::vector<int32_t>& seed) {
    std::vector<int32_t> sorted = seed, members;
    std::sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) {
      return items_[a].size != items_[b].size ? items_[a].size > items_[b].size : a < b;
    });
    if (!Close(forward_, sorted, &members)) return {};
    std::sort(members.begin(), members.end());
    return members;
  }

  std::vector<ConstantPiece> Find() {
    std::set<std::vector<int32_t>> seen;
    std::vector<ConstantPiece> pieces;
    auto add = [&](std::vector<int32_t> members) {
      std::sort(members.begin(), members.end());
      if (members.size() < 2 || !seen.insert(members).second) return;
      ConstantPiece piece;
      piece.begin = INT64_MAX;
      piece.end = INT64_MIN;
      for (int32_t i : members) {
        piece.begin = std::min(piece.begin, items_[i].begin);
        piece.end = std::max(piece.end, items_[i].end);
      }
      for (int32_t i : members) {
        if (items_[i].begin == piece.begin) piece.height += items_[i].size;
      }
      piece.members = std::move(members);
      pieces.push_back(std::move(piece));
    };
    const int32_t n = static_cast<int32_t>(points_.size());
    for (int32_t p = 0; p < n; ++p) {
      if ((p & 15) == 0 && SearchClock::now() >= limits_.deadline) break;
      const std::vector<int32_t>& enders = forward_.closing[p];
      const std::vector<int32_t>& starters = forward_.opening[p];
      if (starters.empty()) continue;
      if (!enders.empty()) {
        std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> pairs;
        if (Sum(enders) == Sum(starters)) pairs.emplace_back(enders, starters);
        if (starters.size() >= 2 && starters.size() <= kMaxSplitStarters && enders.size() <= kMaxSplitEnders) {
          const uint32_t all = (1u << starters.size()) - 1;
          for (uint32_t mask = 1; mask < all; ++mask) {
            std::vector<int32_t> part;
            for (size_t k = 0; k < starters.size(); ++k) {
              if (mask >> k & 1) part.push_back(starters[k]);
            }
            std::vector<std::vector<int32_t>> match = SubsetsWithSum(items_, enders, Sum(part), 2, kSubsetNodes);
            if (match.size() == 1) pairs.emplace_back(std::move(match[0]), std::move(part));
          }
        }
        for (const auto& [left, right] : pairs) {
          std::vector<int32_t> ahead, behind;
          if (!Close(forward_, right, &ahead)) continue;
          if (!Close(backward_, left, &behind)) continue;
          ahead.insert(ahead.end(), behind.begin(), behind.end());
          Chain(ahead, Sum(right), add);
          add(std::move(ahead));
        }
      }
      std::vector<int32_t> ahead;
      if (Close(forward_, starters, &ahead)) {
        Chain(ahead, Sum(starters), add);
        add(std::move(ahead));
      }
    }
    return pieces;
  }

 private:
  // Where few buffers meet at a point, its starters are split into subsets
  // (2^10 at most), each matched with the enders (at most this many).
  static constexpr size_t kMaxSplitStarters = 10;
  static constexpr size_t kMaxSplitEnders = 20;
  static constexpr size_t kSubsetsTried = 64;  // per point of a closure
  static constexpr uint64_t kSubsetNodes = 20000;
  // Chains (see Chain), 8 steps and 16 options: `exact` on the 10,000-buffer
  // perfect packings in 10 s, seed 8 1.010-1.015x the optimum (1.034
  // without chains), seed 2 1.0037 (1.0064). The option count moves them
  // chaotically: 32 options seed 8 1.0058 but seed 2 1.0138, 24 and 48 both
  // above 1.01, 8 seed 8 1.0166; one way only, 1.0188 (docs/MEASUREMENTS.md).
  // The search takes 0.3-0.8 s instead of 0.1-0.13 on 10,000 buffers.
  static constexpr size_t kChainSteps = 8;
  static constexpr size_t kChainOptions = 16;

  int32_t PointOf(int64_t t) const {
    return static_cast<int32_t>(std::lower_bound(points_.begin(), points_.end(), t) - points_.begin());
  }
  uint64_t Sum(const std::vector<int32_t>& list) const {
    uint64_t s = 0;
    for (int32_t i : list) s += items_[i].size;
    return s;
  }

  // Chains of pieces of one height: `piece` (of height `height`) extended
  // past its end by the closure of a set of buffers starting there whose
  // sizes sum to `height` (the first of up to kChainOptions that closes,
  // fewest buffers first), up to kChainSteps times, then past its
  // beginning the same way (time reversed); every chain is passed to
  // `add`. Two pieces of one height that meet in time are one piece. Why:
  // a closure closes at the first point where its buffers have all ended,
  // so a strip of short buffers cut across time at many points (a dense
  // cluster of one-step buffers: the 10,000-buffer perfect packing of seed
  // 8, 3,355 buffers in 387 steps, ~120 live at each) is found only as its
  // slices of 2-20 buffers; its strips of 100-400 buffers, merged as
  // rectangles, bring that problem from 1.034x to 1.003x the optimum
  // (docs/MEASUREMENTS.md, "seed 8's dense cluster").
  template <typename Add>
  void Chain(const std::vector<int32_t>& piece, uint64_t height, Add& add) {
    const std::vector<int32_t> ahead = ChainOneWay(forward_, piece, height, add);
    ChainOneWay(backward_, ahead, height, add);
  }

  template <typename Add>
  std::vector<int32_t> ChainOneWay(const Direction& d, const std::vector<int32_t>& piece, uint64_t height, Add& add) {
    std::vector<int32_t> chained = piece;
    int32_t end = 0;
    for (int32_t i : piece) end = std::max(end, d.close_at[i]);
    for (size_t step = 0; step < kChainSteps; ++step) {
      if (SearchClock::now() >= limits_.deadline) break;  // (a point's chains can take milliseconds)
      const std::vector<std::vector<int32_t>> options =
          SubsetsWithSum(items_, d.opening[end], height, kChainOptions, kSubsetNodes);
      bool extended = false;
      for (const std::vector<int32_t>& option : options) {
        std::vector<int32_t> next;
        if (!Close(d, option, &next) || chained.size() + next.size() > limits_.max_members) continue;
        chained.insert(chained.end(), next.begin(), next.end());
        for (int32_t i : next) end = std::max(end, d.close_at[i]);
        add(chained);
        extended = true;
        break;
      }
      if (!extended) break;
    }
    return chained;
  }

  // The closure from `seed` (items opening at one point of direction `d`):
  // true with `members` when it closes within the limits.
  bool Close(const Direction& d, const std::vector<int32_t>& seed, std::vector<int32_t>* members) {
    nodes_ = 0;
    std::vector<int32_t> chosen = seed;
    return Extend(d, seed, &chosen) && (*members = std::move(chosen), true);
  }

  // One step of the closure's depth-first search: `live` are the chosen items
  // not yet closed, `chosen` all chosen items.
  bool Extend(const Direction& d, const std::vector<int32_t>& live, std::vector<int32_t>* chosen) {
    if (++nodes_ > limits_.closure_nodes) return false;
    int32_t next = INT32_MAX;
    for (int32_t i : live) next = std::min(next, d.close_at[i]);
    std::vector<int32_t> rest;
    uint64_t ending = 0;
    size_t ours = 0;
    for (int32_t i : live) {
      if (d.close_at[i] == next) {
        ending += items_[i].size;
        ++ours;
      } else {
        rest.push_back(i);
      }
    }
    const bool whole = ours == d.closing[next].size();
    if (rest.empty() && !whole) return true;  // every chosen item ends here, and others too: closed
    const std::vector<std::vector<int32_t>> options =
        SubsetsWithSum(items_, d.opening[next], ending, kSubsetsTried, kSubsetNodes);
    const size_t chosen_before = chosen->size();
    for (const std::vector<int32_t>& option : options) {
      if (chosen_before + option.size() > limits_.max_members) continue;
      std::vector<int32_t> live_next = rest;
      live_next.insert(live_next.end(), option.begin(), option.end());
      chosen->insert(chosen->end(), option.begin(), option.end());
      if (Extend(d, live_next, chosen)) return true;
      chosen->resize(chosen_before);
      if (nodes_ > limits_.closure_nodes) return false;
    }
    return false;
  }

  const std::vector<PackingItem>& items_;
  const PieceSearchLimits limits_;
  std::vector<int64_t> points_;
  Direction forward_, backward_;
  uint64_t nodes_ = 0;
};

}  // namespace

std::vector<ConstantPiece> FindConstantPieces(const std::vector<PackingItem>& items,
                                              const PieceSearchLimits& limits) {
  return PieceFinder(items, limits).Find();
}

std::vector<int32_t> ClosureFrom(const std::vector<PackingItem>& items, const std::vector<int32_t>& seed,
                                 const PieceSearchLimits& limits) {
  return PieceFinder(items, limits).ClosureOf(seed);
}

BlockProblem TilePieces(const std::vector<PackingItem>& items, SearchClock::time_point deadline,
                        const PieceTiling& tiling, size_t* pieces_tiled) {
  PieceSearchLimits search;
  search.deadline = deadline;
  std::vector<ConstantPiece> pieces = FindConstantPieces(items, search);
  std::vector<size_t> order;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const size_t m = pieces[k].members.size();
    if (m >= tiling.min_buffers && m <= tiling.max_buffers) order.push_back(k);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return pieces[a].members.size() > pieces[b].members.size(); });
  BlockProblem problem;
  problem.block_of.assign(items.size(), -1);
  problem.offset_in_block.assign(items.size(), 0);
  size_t tiled = 0;
  for (size_t k : order) {
    if (SearchClock::now() >= deadline) break;
    const ConstantPiece& piece = pieces[k];
    bool free = true;
    for (int32_t i : piece.members) free = free && problem.block_of[i] < 0;
    if (!free) continue;
    std::vector<PackingItem> part;
    for (int32_t i : piece.members) part.push_back(items[i]);
    const PackingResult packed =
        PackWithRestarts(part, piece.height, deadline, tiling.nodes_per_buffer * piece.members.size());
    if (packed.outcome != PackingOutcome::kFound) continue;
    const int32_t block = static_cast<int32_t>(problem.blocks.size());
    problem.blocks.push_back({piece.height, 1, piece.begin, piece.end});
    for (size_t m = 0; m < piece.members.size(); ++m) {
      problem.block_of[piece.members[m]] = block;
      problem.offset_in_block[piece.members[m]] = packed.offsets[m];
    }
    ++tiled;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (problem.block_of[i] >= 0) continue;
    problem.block_of[i] = static_cast<int32_t>(problem.blocks.size());
    problem.blocks.push_back(items[i]);
  }
  if (pieces_tiled != nullptr) *pieces_tiled = tiled;
  return problem;
}

}  // namespace keel::memory::internal
