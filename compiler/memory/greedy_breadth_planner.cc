// compiler/memory/greedy_breadth_planner.cc — greedy by breadth, shared objects.
#include "compiler/memory/greedy_breadth_planner.h"

#include <algorithm>

#include "compiler/memory/interval_index.h"
#include "compiler/memory/object_timeline.h"

namespace keel::memory {

internal::ObjectAssignment GreedyBreadthPlanner::AssignObjects(
    const std::vector<TensorLifetime>& tensors, const std::vector<int32_t>& group) {
  const int32_t n = static_cast<int32_t>(group.size());
  auto T = [&](int32_t local) -> const TensorLifetime& { return tensors[group[local]]; };

  const std::vector<int32_t> ops = internal::FirstUseSteps(tensors, group);
  std::vector<int64_t> delta(ops.size() + 1, 0);
  std::vector<int32_t> steps;
  for (int32_t i = 0; i < n; ++i) {
    const size_t a = std::lower_bound(ops.begin(), ops.end(), T(i).first_use) - ops.begin();
    const size_t b = std::upper_bound(ops.begin(), ops.end(), T(i).last_use) - ops.begin();
    delta[a] += static_cast<int64_t>(T(i).size);
    delta[b] -= static_cast<int64_t>(T(i).size);
    steps.push_back(T(i).first_use);
    steps.push_back(T(i).last_use);
  }
  std::vector<uint64_t> breadth(ops.size());
  int64_t live = 0;
  for (size_t k = 0; k < ops.size(); ++k) {
    live += delta[k];
    breadth[k] = static_cast<uint64_t>(live);
  }
  std::vector<size_t> op_order(ops.size());
  for (size_t k = 0; k < ops.size(); ++k) op_order[k] = k;
  std::stable_sort(op_order.begin(), op_order.end(),
                   [&](size_t a, size_t b) { return breadth[a] > breadth[b]; });

  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  internal::IntervalIndex index(std::move(steps), n);
  for (int32_t i = 0; i < n; ++i) index.Insert(i, T(i).first_use, T(i).last_use);

  internal::ObjectAssignment out;
  out.object_of.assign(n, -1);
  std::vector<uint64_t> object_size;
  std::vector<internal::ObjectTimeline> timelines;
  std::vector<int32_t> profile;
  for (size_t k : op_order) {
    profile.clear();
    index.Query(ops[k], ops[k], &profile);
    profile.erase(std::remove_if(profile.begin(), profile.end(),
                                 [&](int32_t i) { return out.object_of[i] != -1; }),
                  profile.end());
    std::sort(profile.begin(), profile.end(), [&](int32_t a, int32_t b) {
      return std::pair(T(b).size, a) < std::pair(T(a).size, b);  // size desc, index asc
    });
    for (int32_t x : profile) {
      const TensorLifetime& t = T(x);
      int32_t best_fit = -1, largest = -1;
      for (int32_t o = 0; o < static_cast<int32_t>(object_size.size()); ++o) {
        if (!timelines[o].IsFree(t.first_use, t.last_use)) continue;
        if (object_size[o] >= t.size) {
          if (best_fit == -1 || object_size[o] < object_size[best_fit]) best_fit = o;
        } else if (largest == -1 || object_size[o] > object_size[largest]) {
          largest = o;
        }
      }
      int32_t chosen = best_fit != -1 ? best_fit : largest;
      if (chosen == -1) {
        chosen = static_cast<int32_t>(object_size.size());
        object_size.push_back(0);
        timelines.emplace_back();
      }
      object_size[chosen] = std::max(object_size[chosen], t.size);
      timelines[chosen].Add(t.first_use, t.last_use);
      out.object_of[x] = chosen;
    }
  }
  out.num_objects = static_cast<int32_t>(object_size.size());
  return out;
}

Result<Plan> GreedyBreadthPlanner::MakePlan(const std::vector<TensorLifetime>& tensors,
                                            const PlanOptions& /*options*/) const {
  return internal::PlanSharedObjects(tensors, name(), &GreedyBreadthPlanner::AssignObjects, false);
}

}  // namespace keel::memory
