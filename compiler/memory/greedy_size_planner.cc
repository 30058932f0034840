// compiler/memory/greedy_size_planner.cc — greedy by size, offset form (see header).
#include "compiler/memory/greedy_size_planner.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "compiler/memory/interval_index.h"

namespace keel::memory {

std::vector<int32_t> GreedySizePlanner::OrderOf(const std::vector<TensorLifetime>& tensors,
                                                const std::vector<int32_t>& group,
                                                PlacementOrder order) {
  const int32_t n = static_cast<int32_t>(group.size());
  auto T = [&](int32_t local) -> const TensorLifetime& { return tensors[group[local]]; };
  std::vector<int32_t> out(n);
  for (int32_t i = 0; i < n; ++i) out[i] = i;
  if (order == PlacementOrder::kSize) {
    std::stable_sort(out.begin(), out.end(),
                     [&](int32_t a, int32_t b) { return T(a).size > T(b).size; });
  } else {
    std::stable_sort(out.begin(), out.end(), [&](int32_t a, int32_t b) {
      if (T(a).first_use != T(b).first_use) return T(a).first_use < T(b).first_use;
      return T(a).size > T(b).size;
    });
  }
  return out;
}

uint64_t GreedySizePlanner::Top(const std::vector<TensorLifetime>& tensors,
                                const std::vector<int32_t>& group,
                                const internal::OffsetAssignment& assignment) {
  uint64_t top = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    top = std::max(top, assignment.offsets[i] + tensors[group[i]].size);
  }
  return top;
}

internal::OffsetAssignment GreedySizePlanner::AssignOffsets(
    const std::vector<TensorLifetime>& tensors, const std::vector<int32_t>& group, GapFit fit) {
  internal::OffsetAssignment by_size = AssignOffsetsInOrder(
      tensors, group, fit, OrderOf(tensors, group, PlacementOrder::kSize), AliasRule::kUnlessTopGrows);
  internal::OffsetAssignment by_first_use = AssignOffsetsInOrder(
      tensors, group, fit, OrderOf(tensors, group, PlacementOrder::kFirstUse), AliasRule::kUnlessHigher);
  // Ties keep the paper's order.
  return Top(tensors, group, by_first_use) < Top(tensors, group, by_size) ? std::move(by_first_use)
                                                                         : std::move(by_size);
}

internal::OffsetAssignment GreedySizePlanner::AssignOffsetsInOrder(
    const std::vector<TensorLifetime>& tensors, const std::vector<int32_t>& group, GapFit fit,
    const std::vector<int32_t>& order, AliasRule alias_rule) {
  const int32_t n = static_cast<int32_t>(group.size());
  auto T = [&](int32_t local) -> const TensorLifetime& { return tensors[group[local]]; };

  // Alias partners by local index (both directions).
  std::unordered_map<int32_t, int32_t> local_of;
  std::vector<std::vector<int32_t>> partners(n);
  bool any_alias = false;
  for (int32_t i = 0; i < n; ++i) any_alias |= T(i).may_alias_with >= 0;
  if (any_alias) {
    for (int32_t i = 0; i < n; ++i) local_of.emplace(group[i], i);
    for (int32_t i = 0; i < n; ++i) {
      if (T(i).may_alias_with < 0) continue;
      auto it = local_of.find(T(i).may_alias_with);
      if (it == local_of.end()) continue;
      partners[i].push_back(it->second);
      partners[it->second].push_back(i);
    }
  }

  std::vector<int32_t> steps;
  steps.reserve(2 * static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    steps.push_back(T(i).first_use);
    steps.push_back(T(i).last_use);
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  internal::IntervalIndex index(std::move(steps), n);

  internal::OffsetAssignment out;
  out.offsets.assign(n, 0);
  std::vector<char> placed(n, 0);
  std::vector<int32_t> overlapping;
  uint64_t top = 0;  // highest end placed so far
  for (int32_t x : order) {
    const TensorLifetime& t = T(x);
    overlapping.clear();
    index.Query(t.first_use, t.last_use, &overlapping);
    std::sort(overlapping.begin(), overlapping.end(), [&](int32_t a, int32_t b) {
      return std::pair(out.offsets[a], a) < std::pair(out.offsets[b], b);
    });
    uint64_t prev_end = 0;
    uint64_t best = 0;
    uint64_t best_gap = std::numeric_limits<uint64_t>::max();
    bool found = false;
    for (int32_t y : overlapping) {
      const uint64_t y_size = T(y).size;
      if (y_size == 0) continue;
      const uint64_t y_off = out.offsets[y];
      const uint64_t candidate = internal::AlignUp(prev_end, t.alignment);
      if (candidate <= y_off && y_off - candidate >= t.size) {
        const uint64_t gap = y_off - candidate;
        if (gap < best_gap) {
          best_gap = gap;
          best = candidate;
          found = true;
          if (fit == GapFit::kFirstFit) break;
        }
      }
      prev_end = std::max(prev_end, y_off + y_size);
    }
    if (!found) best = internal::AlignUp(prev_end, t.alignment);

    // In-place: reuse a placed partner's offset when it is free for t and costs no
    // more arena than the gap choice (kUnlessHigher: and is not above the gap).
    for (int32_t p : partners[x]) {
      if (!placed[p]) continue;
      const uint64_t off = out.offsets[p];
      if (off % t.alignment != 0) continue;
      if (off + t.size > std::max(top, best + t.size)) continue;
      if (alias_rule == AliasRule::kUnlessHigher && off > best) continue;
      bool free = true;
      for (int32_t y : overlapping) {
        if (T(y).size == 0 || t.size == 0) continue;
        const bool same_start_partner =
            out.offsets[y] == off &&
            std::find(partners[x].begin(), partners[x].end(), y) != partners[x].end();
        if (same_start_partner) continue;
        if (out.offsets[y] < off + t.size && off < out.offsets[y] + T(y).size) {
          free = false;
          break;
        }
      }
      if (free) {
        best = off;
        break;
      }
    }

    out.offsets[x] = best;
    placed[x] = 1;
    top = std::max(top, best + t.size);
    index.Insert(x, t.first_use, t.last_use);
  }
  return out;
}

Result<Plan> GreedySizePlanner::MakePlan(const std::vector<TensorLifetime>& tensors,
                                         const PlanOptions& /*options*/) const {
  KEEL_RETURN_IF_ERROR(internal::ValidateLifetimes(tensors));
  const std::vector<internal::DeviceGroup> groups = internal::GroupByDevice(tensors);
  std::vector<internal::OffsetAssignment> per_group;
  for (const internal::DeviceGroup& g : groups) {
    per_group.push_back(AssignOffsets(tensors, g.tensors, fit_));
  }
  Plan plan = internal::BuildOffsetPlan(tensors, groups, per_group);
  plan.strategy = name();
  plan.lower_bound = PeakLiveLowerBound(tensors);
  return plan;
}

}  // namespace keel::memory
