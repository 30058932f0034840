// compiler/memory/naive_planner.cc — one storage and one arena per tensor.
#include "compiler/memory/naive_planner.h"

#include <algorithm>

#include "compiler/memory/planning_support.h"

namespace keel::memory {

Result<Plan> NaivePlanner::MakePlan(const std::vector<TensorLifetime>& tensors,
                                    const PlanOptions& /*options*/) const {
  KEEL_RETURN_IF_ERROR(internal::ValidateLifetimes(tensors));
  Plan plan;
  plan.strategy = name();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorLifetime& t = tensors[i];
    Arena arena;
    arena.device = t.device;
    arena.size = t.size;
    arena.alignment = std::max(internal::kMinArenaAlignment, t.alignment);
    Storage st;
    st.size = t.size;
    st.alignment = t.alignment;
    st.device = t.device;
    st.arena = static_cast<int32_t>(plan.arenas.size());
    plan.placements.push_back(Placement{static_cast<int32_t>(plan.storages.size()), 0});
    plan.arenas.push_back(arena);
    plan.storages.push_back(st);
  }
  plan.lower_bound = PeakLiveLowerBound(tensors);
  return plan;
}

}  // namespace keel::memory
