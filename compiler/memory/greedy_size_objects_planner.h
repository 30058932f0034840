// compiler/memory/greedy_size_objects_planner.h — `greedy-size-objects`: shared
// objects, "Greedy by Size" (Pisarchyk & Lee 2020, shared-object variant).
//
// Tensors are taken by size, largest first (ties: lower index). Since every
// object was created by a larger-or-equal tensor, any object free during the
// tensor's lifetime is big enough; among those it takes the one whose nearest
// tensor is closest in time (tightest fit in time, leaving long idle stretches of
// other objects for later tensors), ties by lower object index; with none free it
// creates an object of its size.
//
//   object 0: [t0 ]   [t3   ]        t5 (free in both) joins object 1,
//   object 1:     [t1]  ·t5·         whose neighbour t1 is nearer in time.
//
// Objects become storages (offset 0), one arena each.
// Cost: O(n log n + n · objects · log n). Thread-safety: stateless.
// Errors: InvalidArgument for invalid lifetimes.
#pragma once

#include "compiler/memory/planner.h"
#include "compiler/memory/planning_support.h"

namespace keel::memory {

class GreedySizeObjectsPlanner final : public Planner {
 public:
  std::string name() const override { return "greedy-size-objects"; }
  Result<Plan> MakePlan(const std::vector<TensorLifetime>& tensors,
                        const PlanOptions& options) const override;

  static internal::ObjectAssignment AssignObjects(const std::vector<TensorLifetime>& tensors,
                                                  const std::vector<int32_t>& group);
};

}  // namespace keel::memory
