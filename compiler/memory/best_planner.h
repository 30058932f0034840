// compiler/memory/best_planner.h — `best`: run the static strategies, keep the
// smallest plan.
//
// Candidates, in this order: naive, tvm, tvm-packed, greedy-size,
// greedy-size-first-fit, greedy-size-search (an order search around greedy-size:
// random restarts and moves within a placement budget; see
// offset_search_planner.h), greedy-breadth, greedy-size-objects, min-cost-flow, and
// exact (which returns at once where greedy-size reaches the peak-live bound, and
// otherwise searches up to the time limit), lns (the same; it finds plans
// that exact does not on large problems: lns_planner.h), and auto (keelc's
// default: exact under a node budget, whose result does not depend on the
// machine — a time-limited exact can end above it — so that `best` is never
// worse than what keelc writes). `dynamic` is
// not a candidate (it reserves nothing at load time, so its bytes are not
// comparable). Every candidate plan is run through CheckPlan; one that fails is
// skipped (a bug in that strategy must not break compilation).
//
// Winner: smallest TotalBytes(); ties: fewest allocations (arenas + dynamic
// storages); then the earlier candidate. The plan keeps the winner's fields and is
// named "best(<winner>)"; lower_bound and optimal are the winner's (its bound
// holds for plans of its form; PeakLiveLowerBound holds for every form), except
// that a winner at the peak-live bound is marked optimal (no plan of any form
// can be smaller).
//
// Thread-safety: stateless. Errors: InvalidArgument for invalid lifetimes;
// Internal if every candidate failed.
#pragma once

#include "compiler/memory/planner.h"

namespace keel::memory {

class BestPlanner final : public Planner {
 public:
  std::string name() const override { return "best"; }
  Result<Plan> MakePlan(const std::vector<TensorLifetime>& tensors,
                        const PlanOptions& options) const override;
};

}  // namespace keel::memory
