// compiler/memory/piece_search.h — finding "pieces" of a packing problem: sets
// of buffers inside a time window whose live bytes are the same at every step
// of it, so that they may tile a rectangle of the time x bytes plane; each one
// that a search tiles at that height becomes one block to pack.
//
// How a piece is found (a search over time points, no layout involved). A
// piece P of height H on [a, b) satisfies, at every time point t inside its
// window, "the bytes of P's buffers ending at t = the bytes of P's buffers
// starting at t" (its live bytes stay H), H at a for its starters and at b for
// its enders. So from a seed — a set of buffers starting at one point — a
// closure follows time: at the next point where chosen buffers end, with e
// bytes ending, it chooses buffers starting there whose sizes sum to e (a
// subset sum, several answers tried in a depth-first search with a node
// budget, fewest buffers first), and it closes where every chosen buffer has
// ended and other buffers end there too (a point where only chosen buffers end
// is crossed: the piece goes on). Seeds: at each time point, the buffers
// starting there, and pairs (enders, starters) with equal sums — all of them,
// and where few buffers meet there, a subset of the starters with the one
// subset of the enders of its sum; a pair is closed forward from its starters
// and backward (time reversed) from its enders, and the union is a piece
// around that time point. Each piece found is also extended into chains: past
// its end by the closure of buffers starting there whose sizes sum to its
// height, again and again (up to 8 times), then past its beginning the same
// way — two pieces of one height that meet in time are one piece, and a strip
// of one-step buffers cut across time at many points is found only so (a
// closure stops at its first slice). Buffers of alignment above 1 are never in a piece.
//
// TilePieces then takes the pieces of `min_buffers` to `max_buffers` buffers,
// largest first, disjoint, and packs each at its height with PackWithRestarts
// (a node budget per buffer); each one packed is a block of the returned
// BlockProblem (block_merging.h), every other buffer a block of its own. Any
// layout of the blocks expands into a valid layout of the buffers.
//
// Why: on the 10,000-buffer generated perfect packings (bench/memory/
// perfect_packing.h) the last percent of seed 2 is lost in a strip of short
// buffers that `exact`'s searches interleave; with the strip's small pieces
// packed as blocks first, `exact` ends within 1% (docs/MEASUREMENTS.md, "pieces
// of constant live bytes found by a search"). Nothing here knows a generator: a piece is a set
// with constant live bytes that a complete search packed at that height. It
// is never a proof: the blocks fix the pieces' layouts, which an optimal
// layout need not contain (callers keep it as one more way to a layout).
//
// Cost: near-linear in practice (each closure has a node budget; subset sums
// are enumerated with caps; 0.3-0.8 s on 10,000 buffers with the chains,
// 0.06-0.13 s without); the search and the
// tiling both stop at the deadline. Deterministic for a given input when the
// deadline is not reached.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compiler/memory/block_merging.h"
#include "compiler/memory/skyline_search.h"

namespace keel::memory::internal {

struct ConstantPiece {
  std::vector<int32_t> members;  // item indices, ascending
  int64_t begin = 0, end = 0;    // its window [begin, end)
  uint64_t height = 0;           // its live bytes at every step of the window
};

struct PieceSearchLimits {
  uint64_t closure_nodes = 300;  // per closure (a depth-first search over subset sums)
  size_t max_members = 400;      // a closure that grows past this is given up
  // The search stops here with the pieces found so far (checked every few
  // time points: a time point's seeds cost at most ~1,000 closures).
  SearchClock::time_point deadline = SearchClock::time_point::max();
};

// Up to `cap` subsets of `candidates` (sorted by size, larger first) whose
// sizes sum to `target`, within `max_nodes` steps of the enumeration; larger
// buffers are included first. Returned fewest buffers first (stable), each in
// the order of `candidates`.
std::vector<std::vector<int32_t>> SubsetsWithSum(const std::vector<PackingItem>& items,
                                                 const std::vector<int32_t>& candidates, uint64_t target,
                                                 size_t cap, uint64_t max_nodes);

// Every piece the closures find (deduplicated), in a deterministic order.
std::vector<ConstantPiece> FindConstantPieces(const std::vector<PackingItem>& items,
                                              const PieceSearchLimits& limits = {});

// The forward closure from `seed` (items starting at one time point), as
// the search runs it: its members ascending, or empty where it does not
// close within the limits (for measurement: keel_guillotine_pieces --cuts).
std::vector<int32_t> ClosureFrom(const std::vector<PackingItem>& items, const std::vector<int32_t>& seed,
                                 const PieceSearchLimits& limits = {});

// Pieces of 8-400 buffers: with 20-400 (the first version) `exact` ended at
// 1.039x the optimum on 10,000-buffer seed 4 and 1.019 on seed 20 of the
// perfect packings, with 8 1.008 and 1.003, and seed 9 was proven in 0.4 s
// (1.003); seed 8 is the one of 20 where 20 did clearly better (1.017
// against 1.03; seed 2 1.0038 against 1.0064). With 4, seed 8 ended at 1.109
// and the tiling ran past the time limit (docs/MEASUREMENTS.md, "ten seeds
// at 10,000 buffers").
struct PieceTiling {
  size_t min_buffers = 8, max_buffers = 400;
  uint64_t nodes_per_buffer = 64;  // the packing search's budget per piece
};

// The pieces found, packed at their heights where the search does so before
// `deadline`, as blocks (see the header comment). `pieces_tiled` (optional)
// receives how many were.
BlockProblem TilePieces(const std::vector<PackingItem>& items, SearchClock::time_point deadline,
                        const PieceTiling& tiling = {}, size_t* pieces_tiled = nullptr);

}  // namespace keel::memory::internal
