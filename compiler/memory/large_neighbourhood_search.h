// compiler/memory/large_neighbourhood_search.h — a good layout fast, then
// better ones by re-solving neighbourhoods exactly (the engine of `lns`).
//
// Problem: that of skyline_search.h (offsets for buffers with fixed lifetimes,
// no two live-together buffers sharing bytes), minimizing the top.
//
// Construction (ConstructLayout). Best fit and first fit (as greedy-size:
// every buffer into the smallest / lowest gap between the placed buffers that
// live at the same time) in four orders — size, area (size x lifetime length),
// lifetime length (all descending) and start time — and the lowest top kept.
// Each order wins on some problems; all eight cost O(Σ overlaps log overlaps).
//
// Improvement (ImproveLayout): "tighten the capacity and repair". With the
// current top T and the peak-live bound L, pick a target C < T (first L
// itself; the step T - C doubles after a success and halves after a failure,
// as in a bisection) and repair every violator (a buffer ending above
// C), highest first:
//
//   neighbourhood  the violator v and, in four shapes tried in turn, the
//                  buffers nearest to it: line — the highest-placed buffers
//                  (everything above a horizontal line); window — the buffers
//                  reaching least outside v's lifetime; column — by time
//                  distance to v's lifetime, ties by height (highest first);
//                  band — the highest buffers within one lifetime's length of
//                  v. Sizes 16, 32, ... 512 buffers, in that order, until one
//                  repair works (on small problems the larger sizes take every
//                  buffer: the repeats run with other perturbed orders);
//   sandwiches     a fixed buffer lying between two removed ones in some time
//                  section is removed too (repeat until none; a set that grows
//                  past 4x is skipped), so that in every section the fixed
//                  buffers lie below or above the free bytes;
//   re-solving     the removed buffers go back by the complete skyline search
//                  between each section's fixed floor and its ceiling (the
//                  lowest fixed buffer above, or C) — PackBetweenBounds in
//                  skyline_search.h — within a node budget (32 per buffer, a
//                  static run and two perturbed ones: the search is
//                  heavy-tailed; a proof of infeasibility ends them).
//
// A repair changes only removed buffers and keeps them below C, so violators
// only disappear; a target whose violator cannot be repaired is given up (the
// partial progress stays: the layout is valid and no higher) and a nearer one
// is tried. When even T - 1 fails, the search shakes the layout — random
// neighbourhoods re-solved under T, each coming back fallen (the skyline
// search builds bottom-up) — and tightens again (at most 64 shakes). It stops
// at L (optimal) or when the limits are spent.
//
// What it does not reach: on generated problems whose optimum is a perfect
// packing (bench/memory/perfect_packing.h) it finds the optimum up to a few
// hundred buffers; from about 1,000 on, a greedy layout's waste lies at every
// height, and lowering the top needs moves wider than these neighbourhoods
// (docs/memory-planning.md has the measurements).
//
// Determinism: choices depend only on the input and the node budget; the
// deadline is an outer stop (LnsResult::stopped_by_deadline says when it,
// rather than the budget or convergence, ended the search).
//
// Memory: the overlap graph (pairs of buffers live together), O(n + pairs);
// OverlapGraph refuses more than kMaxOverlapPairs pairs (the caller then keeps
// its own layout). Thread-safety: each call has its own state. Errors: none
// (the caller validates: sizes > 0, begin < end, alignments powers of two).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/memory/planning_support.h"
#include "compiler/memory/skyline_search.h"

namespace keel::memory::internal {

inline constexpr uint64_t kMaxOverlapPairs = uint64_t{1} << 24;

// Pairs of buffers whose lifetimes intersect, as adjacency lists (CSR).
struct OverlapGraph {
  std::vector<int64_t> start;  // n + 1 entries
  std::vector<int32_t> neighbours;
  // Per entry of `neighbours`: the index of its pair (each pair is listed
  // twice, once per item; < kMaxOverlapPairs), for per-pair state
  // (overlap_search.h's weights).
  std::vector<int32_t> pair_of;
};
// False (and `graph` untouched) when there are more than kMaxOverlapPairs pairs.
bool BuildOverlapGraph(const std::vector<PackingItem>& items, OverlapGraph* graph);

// The lowest-top layout of the eight greedy placements above.
std::vector<uint64_t> ConstructLayout(const std::vector<PackingItem>& items, const OverlapGraph& graph);

struct LnsLimits {
  SearchClock::time_point deadline = SearchClock::time_point::max();
  uint64_t max_nodes = UINT64_MAX;  // search nodes of all repairs together
};

struct LnsResult {
  std::vector<uint64_t> offsets;  // a valid layout, top <= the starting layout's
  uint64_t top = 0;
  uint64_t nodes = 0;
  uint64_t repairs = 0;             // neighbourhoods re-placed
  bool stopped_by_deadline = false;
};

// `offsets`: a valid starting layout; `lower_bound`: a proven bound (the
// search stops there).
LnsResult ImproveLayout(const std::vector<PackingItem>& items, const OverlapGraph& graph,
                        std::vector<uint64_t> offsets, uint64_t lower_bound, const LnsLimits& limits);

}  // namespace keel::memory::internal
