// compiler/memory/exact_planner.h — `exact`: branch and bound for the smallest
// arena (offset form, one arena per device), for small graphs.
//
// Search space. Take any optimal layout and let tensors fall ("gravity") to the
// lowest aligned offset they can reach, alone or together with their in-place
// partners. Then every tensor sits at 0, right on top (aligned up) of a tensor
// whose lifetime intersects its own or its partners', or at a partner's offset. Placing
// tensors in increasing (offset, index) order, each one's offset is therefore in
//
//   { 0 } ∪ { AlignUp(end(y), a) : y placed, lifetime meets x or x's partners,
//             a ∈ {align(x), alignment of x's alias group} } ∪ { offset of a placed partner }
//
// so branching on "which tensor next, at which such offset, not below the last
// one placed" is complete:
//
//   depth 0:  t3@0   t1@0   t0@0 ...        (largest tensors tried first)
//   depth 1:  t1@96  t0@96  t2@96 ...       (offsets >= the previous one)
//
// Pruning (B = best arena found, initially greedy-size's, so the result is never
// worse than greedy-size): a node is cut when its bound >= B, where with c = the
// last offset placed, for every step s
//
//   bound_s = c + Σ_{unplaced u live at s} size_u
//               + Σ_{placed p live at s} max(0, end_p − max(off_p, c))
//               − Σ_{alias pairs at s} min(sizes)        (Bonferroni)
//
// (everything still to come at s lies above c and is disjoint), and the bound
// is max(current top, max_s bound_s) — at the root this is the peak-live bound.
//
// Time: PlanOptions::time_limit_seconds for the whole call (split evenly between
// devices). Plan::optimal is set when every device's search finished (or hit its
// lower bound); Plan::lower_bound is then TotalBytes(), otherwise the sum of the
// proven per-device bounds. Zero-size tensors are placed at 0 and not searched.
// Practical for up to ~10-15 tensors per device; larger inputs return the
// greedy-size incumbent (improved if the search finds better in time).
//
// Thread-safety: stateless. Errors: InvalidArgument for invalid lifetimes.
#pragma once

#include "compiler/memory/planner.h"

namespace keel::memory {

class ExactPlanner final : public Planner {
 public:
  std::string name() const override { return "exact"; }
  Result<Plan> MakePlan(const std::vector<TensorLifetime>& tensors,
                        const PlanOptions& options) const override;
};

}  // namespace keel::memory
