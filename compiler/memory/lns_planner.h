// compiler/memory/lns_planner.h — `lns`: the smallest arena per device (offset
// form) by greedy construction and large-neighbourhood search
// (large_neighbourhood_search.h), for problems too large for `exact` to finish.
//
// Per device group:
//   start      the lower-top layout of ConstructLayout (eight greedy
//              placements) and greedy-size's two gap rules;
//   improve    ImproveLayout down to the group's peak-live bound, within the
//              node budget (PlanOptions::node_budget, else kDefaultNodeBudget,
//              shared by the groups in order) and the time limit (an outer
//              stop: Plan::stopped_by_time_limit says when it ended a search);
//   keep       the better of that and greedy-size (which may share bytes
//              between in-place pairs; the search does not, so `lns` is never
//              worse than greedy-size on any input).
// Groups with more than kMaxOverlapPairs pairs of live-together tensors keep the
// greedy layouts (the neighbourhoods need the overlap graph).
// Plan::optimal when every group reached its peak-live bound; Plan::lower_bound
// is the peak-live bound. Zero-size tensors are placed at 0.
//
// Deterministic: the same input and budget give the same offsets on any
// machine, unless the time limit ends the search first.
// Thread-safety: stateless. Errors: InvalidArgument for invalid lifetimes.
#pragma once

#include "compiler/memory/planner.h"

namespace keel::memory {

class LnsPlanner final : public Planner {
 public:
  static constexpr uint64_t kDefaultNodeBudget = 50000000;

  std::string name() const override { return "lns"; }
  Result<Plan> MakePlan(const std::vector<TensorLifetime>& tensors,
                        const PlanOptions& options) const override;
};

}  // namespace keel::memory
