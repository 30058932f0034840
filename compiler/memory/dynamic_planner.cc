// compiler/memory/dynamic_planner.cc — one run-time storage per tensor.
#include "compiler/memory/dynamic_planner.h"

#include "compiler/memory/planning_support.h"

namespace keel::memory {

Result<Plan> DynamicPlanner::MakePlan(const std::vector<TensorLifetime>& tensors,
                                      const PlanOptions& /*options*/) const {
  KEEL_RETURN_IF_ERROR(internal::ValidateLifetimes(tensors));
  Plan plan;
  plan.strategy = name();
  for (const TensorLifetime& t : tensors) {
    Storage st;
    st.size = t.size;
    st.alignment = t.alignment;
    st.device = t.device;
    st.arena = -1;
    plan.placements.push_back(Placement{static_cast<int32_t>(plan.storages.size()), 0});
    plan.storages.push_back(st);
  }
  plan.lower_bound = PeakLiveLowerBound(tensors);
  return plan;
}

}  // namespace keel::memory
