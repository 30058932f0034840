// compiler/memory/skyline_search.h — does a set of buffers fit in `capacity`
// bytes? A complete search over canonical layouts (the engine of `exact`).
//
// Problem. Buffer i has size s_i > 0, alignment a_i and the half-open lifetime
// [begin_i, end_i). Find offsets o_i (multiples of a_i) with o_i + s_i <= C such that
// buffers whose lifetimes intersect occupy disjoint byte ranges.
//
// Sections. The sorted distinct begin/end values cut time into sections; inside a
// section the set of live buffers does not change, so a layout is a stack of
// byte ranges per section. The search keeps, per section, a floor: the height
// below which nothing more can be placed.
//
// Canonical layouts (the idea MiniMalloc's paper builds on: let every buffer fall
// as low as it can). Drop every buffer of a solution, lowest first, to the lowest
// aligned offset where it overlaps nothing below it; the result is still a
// solution, and in it every buffer sits at AlignUp(max end of the buffers below
// it, a_i). Building such a layout bottom-up, the next buffer's offset is fixed by
// the floors of its sections, so the only choice is WHICH buffer comes next.
//
// Branching at the lowest point. Let h be the lowest floor over sections that
// still have unplaced buffers and s a section at h. In any canonical completion,
// the byte at height h of section s is either
//   (A) the bottom of some unplaced buffer x covering s — then x's sections are
//       all at floor h (none can be lower; none higher, or x would sit above h),
//       h is aligned for x, and a placed buffer really ends at h under x (a
//       canonical buffer rests on something; raised floors hold nothing up): the
//       "candidates"; one branch per candidate; or
//   (B) empty forever — then every buffer covering s ends up at least at the
//       `raise` computed below, and the floor of s is lifted to it (one branch).
// The branches are disjoint and cover every canonical completion, so the search
// is complete; offsets are placed in non-decreasing order.
//
// Inference that cuts branches (each keeps at least one solution of every kind
// that exists; the lexicographically least-offset one is never cut):
//   - capacity per section: floor + Σ sizes of unplaced buffers covering it <= C
//     (checked where a floor rises);
//   - raise in (B): a buffer covering s whose sections are not all at h sits at
//     its canonical offset or higher; a rejected candidate x must rest on some
//     unplaced y live at the same time (above h if y covers s too), so x >= y's
//     lowest possible offset + s_y — and when no such y exists, (B) is impossible;
//   - floating buffers: one whose sections are all at h with nothing placed under
//     it must rest on a buffer still to come (bounded like a rejected candidate;
//     when nothing can hold it, the node fails);
//   - forced moves: the leftmost few sections at the lowest floor are checked for
//     one without a choice — no branch fails the node, one branch is taken without
//     a choice point; otherwise the leftmost is branched on;
//   - hatless: a candidate whose sections hold no other unplaced buffer is placed
//     without alternatives (nothing can want its space);
//   - symmetry: two buffers with the same lifetime stacked directly one on the
//     other are kept only with the smaller (then lower index) below;
//   - decomposition: when no unplaced buffer crosses a section boundary, the two
//     sides are independent; each side is solved on its own and a failure on one
//     side never re-opens the other;
//   - local mode (PackingLimits::local_fill, local_fill.h): buffers of
//     alignment 1 living in one section are not placed by the branching; a
//     buffer may also rest on a sum of them (aligned up), floors rise to such
//     sums, and each closed gap must stay fillable by them;
//   - twins (PackingLimits::twins): buffers of one size, alignment and
//     lifetime become candidates in index order only;
//   - fail-first runs (PackingLimits::fail_first) branch on the section with
//     the fewest branches among up to 256 at the lowest floor, and after each
//     placement check every section whose buffers it may have pushed up: the
//     unplaced buffers covering a section t sit at least at their canonical
//     offsets, so the bytes of t between its floor and the lowest of those
//     offsets stay empty, and t's unplaced bytes must still fit above them.
//
// Limits: a deadline and a node budget; the result is then kUnknown. `seed` != 0
// perturbs the order in which candidates are tried (for restarts).
//
// Cost: O(n log n + Σ sections per buffer) to set up; per node about O(k log S) for
// k buffers at the branching section, plus the decomposition scan of the current
// part after a placement that left a boundary with no crossing buffer (only
// then can the part split). Memory O(n + Σ sections per buffer).
// Thread-safety: each call has its own state. Errors: none (the caller validates:
// sizes > 0, begin < end, alignments powers of two).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/memory/planning_support.h"

namespace keel::memory::internal {

struct PackingItem {
  uint64_t size = 0;       // > 0
  uint32_t alignment = 1;  // power of two
  int64_t begin = 0;       // live on [begin, end)
  int64_t end = 0;
};

// A tensor's packing item: live from its first use through its last.
inline PackingItem ItemOf(const TensorLifetime& t) {
  return {t.size, t.alignment, t.first_use, int64_t{t.last_use} + 1};
}

// The problem as both searches see it: the distinct time points split time into
// `sections`; buffer i lives in sections [first[i], end[i]).
struct SectionedItems {
  int32_t sections = 0;
  std::vector<uint64_t> size;
  std::vector<uint32_t> align;
  std::vector<int32_t> first, end;
  std::vector<int64_t> points;  // the distinct times: section k is [points[k], points[k + 1])
};
SectionedItems ToSections(const std::vector<PackingItem>& items);

enum class PackingOutcome { kFound, kInfeasible, kUnknown };

// A static priority among buffers (descending keys, ties by index). A buffer's
// "crowd" is the most bytes live at one step of its lifetime (its busiest
// section); "area" is size x lifetime length.
enum class CandidateOrder : uint8_t {
  kCrowdAreaLength,
  kLengthAreaCrowd,
  kCrowdLengthArea,
};

struct PackingResult {
  PackingOutcome outcome = PackingOutcome::kUnknown;
  std::vector<uint64_t> offsets;  // kFound: one per item, every end <= capacity
  uint64_t nodes = 0;
};

struct PackingLimits {
  SearchClock::time_point deadline = SearchClock::time_point::max();
  uint64_t max_nodes = UINT64_MAX;
  uint32_t seed = 0;  // 0: the static candidate order; else a perturbed one
  // The canonical-order search's priority (canonical_order_search.h); the
  // skyline search always tries larger buffers first.
  CandidateOrder order = CandidateOrder::kCrowdAreaLength;
  // The canonical-order search: a part cut off during the search gets ranks by
  // its own crowds (else the ranks of the whole problem stay).
  bool rerank_parts = false;
  // The skyline search, fail-first: branch on the section with the fewest
  // branches among up to 256 at the lowest floor (else among 8, taking the
  // leftmost unless one has no choice), and after each placement check that
  // every section whose buffers it pushed up can still be filled (the bytes
  // between its floor and the lowest canonical offset of its buffers stay
  // empty). Costlier nodes, far fewer of them on problems with little slack.
  bool fail_first = false;
  // The skyline search, local mode (local_fill.h): buffers of alignment 1 that
  // live in one section only are not placed one by one; each section's are a
  // multiset that must fill the gaps the other buffers leave there (checked
  // whenever a gap closes), and floors rise only to heights those sums reach.
  bool local_fill = false;
  // Buffers of one size, alignment and lifetime ("twins") are placed in index
  // order only (any layout can swap them into it).
  bool twins = false;
};

PackingResult PackWithinCapacity(const std::vector<PackingItem>& items, uint64_t capacity,
                                 const PackingLimits& limits);

// The same search inside fixed surroundings: section s of ToSections(items)
// offers the bytes [floor[s], ceiling[s]) (other buffers, fixed, lie below the
// floor and above the ceiling). A floor holds buffers up like a placed buffer
// (a canonical buffer may rest on it), and the capacity rules use each
// section's ceiling, so the search stays complete for this problem. Used by the
// large-neighbourhood repair of lns_planner.h. `bounds` must have one floor and
// one ceiling per section.
struct SectionBounds {
  std::vector<uint64_t> floor, ceiling;
};
PackingResult PackBetweenBounds(const std::vector<PackingItem>& items, const SectionBounds& bounds,
                                const PackingLimits& limits);

// PackWithinCapacity with restarts, over both engines: a first run of the
// skyline search in its static order (64 nodes per buffer, at least 16384),
// then rounds of doubling node
// budgets b (from 2 per buffer, at least 1024). Each round runs the
// canonical-order search (canonical_order_search.h) in each CandidateOrder,
// with and without re-ranked parts (b nodes each), then the skyline search
// fail-first in its static order (b/4: its nodes cost more), then in four
// perturbed orders (b/2 each), then in local mode with twins broken
// (PackingLimits::local_fill, ::twins; b/2) on the buffers and on the buffers
// time reversed (the same conflicts; the search sweeps the other way), until
// one run decides or the limits are spent. (Fail-first decides generated perfect packings of 300 buffers in a
// few hundred nodes where the other runs need millions, and MiniMalloc's
// instance A; keelc's small budgets never reach it.) Each engine and order is fast on some problems and heavy-tailed on
// others (on MiniMalloc's challenging set, every instance is decided by a run
// of at most 65536 nodes, by four different kinds of run); interleaving them
// costs a constant factor over the best one.
// `max_nodes` caps the nodes of all runs together (a deterministic budget: the
// answer then depends only on the input, unless the deadline comes first).
PackingResult PackWithRestarts(const std::vector<PackingItem>& items, uint64_t capacity,
                               SearchClock::time_point deadline, uint64_t max_nodes = UINT64_MAX);

}  // namespace keel::memory::internal
