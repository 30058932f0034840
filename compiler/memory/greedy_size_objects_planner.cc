// compiler/memory/greedy_size_objects_planner.cc — greedy by size, shared objects.
#include "compiler/memory/greedy_size_objects_planner.h"

#include <algorithm>

#include "compiler/memory/object_timeline.h"

namespace keel::memory {

internal::ObjectAssignment GreedySizeObjectsPlanner::AssignObjects(
    const std::vector<TensorLifetime>& tensors, const std::vector<int32_t>& group) {
  const int32_t n = static_cast<int32_t>(group.size());
  auto T = [&](int32_t local) -> const TensorLifetime& { return tensors[group[local]]; };
  std::vector<int32_t> order(n);
  for (int32_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return T(a).size > T(b).size; });

  internal::ObjectAssignment out;
  out.object_of.assign(n, -1);
  std::vector<internal::ObjectTimeline> timelines;
  for (int32_t x : order) {
    const TensorLifetime& t = T(x);
    int32_t chosen = -1;
    int64_t chosen_distance = INT64_MAX;
    for (int32_t o = 0; o < static_cast<int32_t>(timelines.size()); ++o) {
      if (!timelines[o].IsFree(t.first_use, t.last_use)) continue;
      const int64_t d = timelines[o].Distance(t.first_use, t.last_use);
      if (chosen == -1 || d < chosen_distance) {
        chosen = o;
        chosen_distance = d;
      }
    }
    if (chosen == -1) {
      chosen = static_cast<int32_t>(timelines.size());
      timelines.emplace_back();
    }
    timelines[chosen].Add(t.first_use, t.last_use);
    out.object_of[x] = chosen;
  }
  out.num_objects = static_cast<int32_t>(timelines.size());
  return out;
}

Result<Plan> GreedySizeObjectsPlanner::MakePlan(const std::vector<TensorLifetime>& tensors,
                                                const PlanOptions& /*options*/) const {
  return internal::PlanSharedObjects(tensors, name(), &GreedySizeObjectsPlanner::AssignObjects, false);
}

}  // namespace keel::memory
