// compiler/memory/exact_planner.h — `exact`: the smallest arena per device (offset
// form), proven optimal when the search finishes, else the best plan found.
//
// Per device group:
//   incumbent   the better of greedy-size's two gap rules (so `exact` is never
//               worse than greedy-size);
//   lower bound the peak-live bound of the group (lower_bounds.h);
//   search      PackWithRestarts (skyline_search.h): the skyline search and the
//               canonical-order search (canonical_order_search.h) interleaved
//               under growing node budgets, both complete over canonical layouts,
//               first at the lower bound (often reached: then optimal at once),
//               then bisecting between the search floor and the best arena found.
//               Each probe answers found (a smaller plan), infeasible (a proven
//               bound) or unknown (its share of the time ran out: only probes
//               above it are tried).
//   decision    with PlanOptions::capacity set (and one device group), a single
//               probe at the capacity: a plan within it, a proof that none
//               exists (lower_bound > capacity), or neither within the limit.
//   blocks      beside the search, the block construction (block_merging.h):
//               the buffers merged into rectangles (same lifetime stacked, same
//               size chained) in four ways, the blocks probed at the target,
//               else the lowest construction improved by the large-
//               neighbourhood search, (without a node budget) overlap
//               minimization on the blocks (overlap_search.h) and bisection,
//               then (without a node budget) by overlap minimization on the
//               buffers; never a proof, with a node budget of its
//               own (4x the search's), so the search runs as without it and the
//               lower top wins; under a node budget (keelc's `auto`) after the
//               search, so that keelc's plans never depend on its time
//               (BlockConstruction in exact_planner.cc says in which order, and
//               how the time is shared).
//
// In-place pairs (may_alias_with): the searches do not share bytes, so on
// a group with in-place pairs its infeasibility answers prove nothing about plans
// that do (optimal is then claimed only at the peak-live bound). Small such groups
// (at most kAliasSearchMaxTensors non-empty tensors) use the earlier branch and
// bound instead, which does place in-place partners at the same offset:
//
//   branching   which tensor next, at which offset, in increasing (offset, index)
//               order; offsets from {0} ∪ {AlignUp(end(y), a)} ∪ {a partner's offset}
//               (complete by the same "let tensors fall" argument);
//   pruning     a node is cut when max_s (c + Σ unplaced live at s + Σ placed parts
//               above c at s − alias savings at s) >= the best arena, c being the
//               last offset placed.
//
// Time: PlanOptions::time_limit_seconds for the whole call (split between
// devices). Plan::optimal is set when every device group was proven optimal;
// Plan::lower_bound is then TotalBytes(), otherwise the sum of the proven
// per-group bounds. Zero-size tensors are placed at 0 and not searched.
//
// Thread-safety: stateless. Errors: InvalidArgument for invalid lifetimes.
#pragma once

#include "compiler/memory/planner.h"

namespace keel::memory {

class ExactPlanner final : public Planner {
 public:
  static constexpr size_t kAliasSearchMaxTensors = 16;

  std::string name() const override { return "exact"; }
  Result<Plan> MakePlan(const std::vector<TensorLifetime>& tensors,
                        const PlanOptions& options) const override;
};

}  // namespace keel::memory
