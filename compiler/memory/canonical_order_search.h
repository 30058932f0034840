// compiler/memory/canonical_order_search.h — does a set of buffers fit in
// `capacity` bytes? A complete search that places whole buffers in canonical
// order (the second engine of `exact`, next to skyline_search.h).
//
// Canonical order (the idea of MiniMalloc, Moffitt 2023). Take any solution and
// let every buffer fall to the lowest aligned offset where it overlaps nothing
// below; then list the buffers by (offset, rank), rank being a fixed priority.
// Rebuilding the solution in that list's order, each buffer lands on the
// highest end among the buffers placed before it that live at the same time
// (its "rest", aligned up). So the search only chooses which buffer comes next:
// a buffer x may follow the last one placed (offset o, rank r) when its rest
// (o_x, rank_x) is lexicographically above (o, r). Every solution has one such
// list, so the search is complete; the lists it builds are all different.
//
// Inference that cuts branches (each is sound for the argument above):
//   - capacity per section: every buffer still to come is placed at o or above
//     and at its rest or above, and the buffers still to come in one section are
//     stacked on each other: max(o, their lowest rest) + their total size <= C;
//     a buffer whose rest already passes C kills the node;
//   - gaps that a later buffer would fill: x may not be placed at or above the
//     lowest rest + size of any buffer still to come (that buffer would fit
//     entirely below x, where nothing placed later can be, so the solution
//     would not be canonical);
//   - decomposition: when no buffer still to come crosses a section boundary,
//     the two sides are searched independently (each keeps the (o, r) start),
//     and a failure on one side never re-opens the other.
//
//   - spent places: a buffer placed where nothing still to come lives at the
//     same time takes nobody's space; when the search under it fails, trying
//     another buffer first fails the same way (no more branches).
//
// Branch order: by (rest, rank). Ranks come from a static priority
// (CandidateOrder: keys of lifetime length, area = size x length, and crowd =
// the most bytes still to come in one of the buffer's sections), optionally
// perturbed (limits.seed); with limits.rerank_parts, a part cut off by
// decomposition is re-ranked by its own crowds and searched from its bottom
// (as its own problem: the placed buffers are fixed obstacles). Restarts
// (PackWithRestarts in skyline_search.h) round-robin these under growing node
// budgets, since each one is fast on different instances.
//
// Memory planning literature: the canonical order, the section inference with
// the lowest rest, the gap rule and the crowd/length/area priorities are those
// of MiniMalloc (Moffitt, ASPLOS 2023); this is Keel's own implementation
// (incremental rests and per-section lowest rests on one undo trail).
//
// Cost: O(n log n + overlapping pairs) to set up; per node O(buffers of the
// current part + sections of the part + the placed buffer's overlaps); the
// decomposition scan runs only after a placement that left a boundary with no
// crossing buffer.
// Memory O(n + overlapping pairs + Σ sections per buffer).
// Thread-safety: each call has its own state. Errors: none (the caller validates:
// sizes > 0, begin < end, alignments powers of two).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/memory/skyline_search.h"

namespace keel::memory::internal {

// Same question and answers as PackWithinCapacity. The candidate order comes
// from limits.order; limits.seed != 0 perturbs it (for restarts).
PackingResult PackInCanonicalOrder(const std::vector<PackingItem>& items, uint64_t capacity,
                                   const PackingLimits& limits);

}  // namespace keel::memory::internal
