// compiler/memory/lns_planner.cc — `lns`: construction, then the
// large-neighbourhood search, per device group (see the header).
#include "compiler/memory/lns_planner.h"

#include <algorithm>

#include "compiler/memory/greedy_size_planner.h"
#include "compiler/memory/large_neighbourhood_search.h"
#include "compiler/memory/lower_bounds.h"
#include "compiler/memory/planning_support.h"

namespace keel::memory {

Result<Plan> LnsPlanner::MakePlan(const std::vector<TensorLifetime>& tensors, const PlanOptions& options) const {
  KEEL_RETURN_IF_ERROR(internal::ValidateLifetimes(tensors));
  const internal::SearchClock::time_point start = internal::SearchClock::now();
  const std::vector<internal::DeviceGroup> groups = internal::GroupByDevice(tensors);
  std::vector<internal::OffsetAssignment> per_group;
  uint64_t nodes_left = options.node_budget != 0 ? options.node_budget : kDefaultNodeBudget;
  bool all_optimal = true, stopped_by_time_limit = false;
  uint64_t bound_sum = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::vector<int32_t>& group = groups[g].tensors;
    const uint64_t bound = internal::GroupPeakLive(tensors, group);
    bound_sum += bound;
    internal::OffsetAssignment greedy = GreedySizePlanner::AssignOffsets(tensors, group, GapFit::kBestFit);
    internal::OffsetAssignment first_fit = GreedySizePlanner::AssignOffsets(tensors, group, GapFit::kFirstFit);
    if (GreedySizePlanner::Top(tensors, group, first_fit) < GreedySizePlanner::Top(tensors, group, greedy)) {
      greedy = std::move(first_fit);
    }
    const uint64_t greedy_top = GreedySizePlanner::Top(tensors, group, greedy);

    std::vector<int32_t> nonempty;  // positions in `group`
    std::vector<internal::PackingItem> items;
    bool has_alias_pairs = false;
    for (size_t i = 0; i < group.size(); ++i) {
      const TensorLifetime& t = tensors[group[i]];
      if (t.size == 0) continue;
      nonempty.push_back(static_cast<int32_t>(i));
      items.push_back(internal::ItemOf(t));
      has_alias_pairs = has_alias_pairs || t.may_alias_with >= 0;
    }
    internal::OverlapGraph graph;
    internal::OffsetAssignment chosen = std::move(greedy);
    uint64_t chosen_top = greedy_top;
    if (!items.empty() && greedy_top > bound && internal::BuildOverlapGraph(items, &graph)) {
      std::vector<uint64_t> layout = internal::ConstructLayout(items, graph);
      uint64_t layout_top = 0;
      for (size_t k = 0; k < items.size(); ++k) layout_top = std::max(layout_top, layout[k] + items[k].size);
      if (!has_alias_pairs && greedy_top < layout_top) {  // greedy-size's layout shares nothing: a valid start
        for (size_t k = 0; k < items.size(); ++k) layout[k] = chosen.offsets[nonempty[k]];
      }
      internal::LnsLimits limits;
      limits.deadline = internal::GroupDeadline(start, options.time_limit_seconds, g, groups.size());
      limits.max_nodes = nodes_left;
      internal::LnsResult improved = internal::ImproveLayout(items, graph, std::move(layout), bound, limits);
      nodes_left -= std::min(nodes_left, improved.nodes);
      stopped_by_time_limit = stopped_by_time_limit || improved.stopped_by_deadline;
      if (improved.top < chosen_top) {
        chosen.offsets.assign(group.size(), 0);  // zero-size tensors at 0
        for (size_t k = 0; k < nonempty.size(); ++k) chosen.offsets[nonempty[k]] = improved.offsets[k];
        chosen_top = improved.top;
      }
    }
    all_optimal = all_optimal && chosen_top <= bound;
    per_group.push_back(std::move(chosen));
  }
  Plan plan = internal::BuildOffsetPlan(tensors, groups, per_group);
  plan.strategy = name();
  plan.optimal = all_optimal;
  plan.lower_bound = bound_sum;
  plan.stopped_by_time_limit = stopped_by_time_limit;
  return plan;
}

}  // namespace keel::memory
