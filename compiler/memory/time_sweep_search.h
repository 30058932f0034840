// compiler/memory/time_sweep_search.h — do the buffers fit in `capacity` bytes?
// A search that places buffers in order of their start time, filling the free
// gaps of each start time from the bottom (the engine `lns` tries first).
//
// Problem: that of skyline_search.h (offsets for buffers with fixed lifetimes,
// live-together buffers on disjoint bytes, every end <= C).
//
// Why a second search. The skyline search builds layouts bottom-up in bytes;
// on large problems whose optimum leaves no slack (at the busiest times the
// live buffers must tile [0, C) exactly) its choices low in the arena are
// judged only when the arena is nearly full. Sweeping in time instead, the
// buffers placed so far that are live at time t are exactly the ones a new
// buffer starting at t can collide with (every other placed buffer has ended),
// so a placement is a one-dimensional choice among the free gaps at t, and a
// wrong choice shows at the next start time whose gaps cannot be filled.
//
// Method. Start times are taken in increasing order. At start time t the
// buffers that ended are removed; the free bytes of [0, C) at t form gaps; the
// slack at t is C minus the bytes of every buffer live at t. The buffers
// starting at t are placed from the lowest free byte b upwards: either some
// starting buffer x sits at AlignUp(b, a_x) (one branch per kind of buffer:
// same size, alignment and end are interchangeable), or the rest of b's gap
// stays empty at t (one branch). Padding and empty rests consume the slack;
// a node whose remaining slack cannot absorb a forced hole (a gap's rest
// smaller than every buffer still to place at t) fails.
//
// Completeness. When the slack is zero at every start time (capacity equal to
// the peak-live bound and every start time at the peak), every free byte at
// t must be the bottom of a buffer starting at t, so the branches above cover
// every layout: exhausting them proves infeasibility (kInfeasible). Otherwise
// a buffer could float in a gap above bytes that a later buffer fills, which
// the branches skip: exhausting them then gives kUnknown. A kFound layout is
// always valid.
//
// Value order (which candidate first), the heuristic that makes the search
// fast where it is: a buffer that fills the rest of the gap exactly; then one
// ending when the buffer right below it ends (buffers that end together leave
// one gap, which the buffers starting then can fill); then larger first.
// `seed` != 0 breaks ties among equal keys at random (for restarts).
//
// Cost: O(n log n) set-up; per node O(k + L) for k buffers starting at t and
// L buffers live at t. Memory O(n). Recursion depth about n (kMaxDepth caps
// it: kUnknown beyond).
// Deterministic for a given node budget; the deadline is an outer stop.
// Thread-safety: each call has its own state. Errors: none (the caller
// validates: sizes > 0, begin < end, alignments powers of two).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/memory/skyline_search.h"

namespace keel::memory::internal {

// One run: `limits.max_nodes`, `limits.deadline` and `limits.seed` apply
// (`order` and `rerank_parts` do not).
PackingResult SweepWithinCapacity(const std::vector<PackingItem>& items, uint64_t capacity,
                                  const PackingLimits& limits);

// A layout for LNS to start from (large_neighbourhood_search.h): the sweep
// without backtracking across start times. Each start time is filled by the
// search within `nodes_per_time` nodes (the fill placing the most bytes below
// `capacity` is kept when none places all); buffers left over go first fit
// above `capacity`. Valid; its top may exceed `capacity`.
std::vector<uint64_t> SweepLayout(const std::vector<PackingItem>& items, uint64_t capacity, uint64_t nodes_per_time);

// Runs with restarts: the static order with budget b, then perturbed orders,
// b doubling from 4 nodes per buffer (at least 4096), until one decides or
// `max_nodes` (all runs together) or the deadline is spent.
PackingResult SweepWithRestarts(const std::vector<PackingItem>& items, uint64_t capacity,
                                SearchClock::time_point deadline, uint64_t max_nodes);

}  // namespace keel::memory::internal
