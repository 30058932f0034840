// compiler/memory/greedy_breadth_planner.h — `greedy-breadth`: shared objects,
// "Greedy by Breadth" (Pisarchyk & Lee 2020).
//
// The breadth of an operator (a step) is the sum of the sizes of the tensors live
// at it. Operators are visited by breadth, widest first (ties: earlier step):
// the widest one decides the objects' sizes, narrower ones then fit into them.
// At each operator its still-unassigned live tensors, largest first, take
//
//   1. the smallest object >= the tensor, among objects free during its lifetime;
//   2. else the largest free object, grown to the tensor's size;
//   3. else a new object of the tensor's size.
//
//   breadth ▲      ┌──┐
//           │   ┌──┘  │        visit order: step 2, 1, 3, 0 ...
//           │ ┌─┘     └──┐
//           └─┴──────────┴──▶ steps 0 1 2 3
//
// Objects become storages (tensors at offset 0), one arena each.
// Only the first_use steps are visited (every live set is contained in the one at
// the latest first_use before it). Cost: O(Σ_s |live(s)| + n · objects · log n).
// Thread-safety: stateless. Errors: InvalidArgument for invalid lifetimes.
#pragma once

#include "compiler/memory/planner.h"
#include "compiler/memory/planning_support.h"

namespace keel::memory {

class GreedyBreadthPlanner final : public Planner {
 public:
  std::string name() const override { return "greedy-breadth"; }
  Result<Plan> MakePlan(const std::vector<TensorLifetime>& tensors,
                        const PlanOptions& options) const override;

  static internal::ObjectAssignment AssignObjects(const std::vector<TensorLifetime>& tensors,
                                                  const std::vector<int32_t>& group);
};

}  // namespace keel::memory
