// compiler/memory/auto_planner.h — `auto`: keelc's default plan, the best offset
// plan found within a compile-time budget, never worse than greedy-size.
//
//   1. greedy-size (best fit); at the peak-live bound it is optimal: done (most
//      graphs stop here, so compile time is greedy-size's);
//   2. otherwise `exact` with a budget of kNodeBudget search nodes (a node
//      budget, not a time limit, so that keelc writes the same plan on every
//      machine: under a node budget `exact` shares nodes, not time, between
//      its searches; PlanOptions::time_limit_seconds, capped at kSafetySeconds,
//      only guards against very slow machines — on the 2-core build machine
//      at load 10 the whole budget took up to 1.5 s on MiniMalloc's instances,
//      so the former 1 s cap cut it there and made the plan of J depend on the
//      run): its incumbent is the better of
//      greedy-size's two gap rules, and its first probe is at the peak-live
//      bound, which it usually reaches within a few thousand nodes on real
//      graphs.
// The plan is named "auto(greedy-size)" or "auto(exact)" after the step that
// produced it; optimal/lower_bound are that step's.
//
// Thread-safety: stateless. Errors: InvalidArgument for invalid lifetimes.
#pragma once

#include "compiler/memory/planner.h"

namespace keel::memory {

class AutoPlanner final : public Planner {
 public:
  static constexpr uint64_t kNodeBudget = 20000;
  static constexpr double kSafetySeconds = 5.0;

  std::string name() const override { return "auto"; }
  Result<Plan> MakePlan(const std::vector<TensorLifetime>& tensors,
                        const PlanOptions& options) const override;
};

}  // namespace keel::memory
