// compiler/memory/planning_support.cc — input validation, device grouping and the
// Plan builders shared by all strategies (see planning_support.h).
#include "compiler/memory/planning_support.h"

#include <algorithm>

namespace keel::memory::internal {

namespace {
std::string TensorName(const std::vector<TensorLifetime>& tensors, size_t i) {
  std::string s = "tensor " + std::to_string(i);
  if (!tensors[i].name.empty()) s += " ('" + tensors[i].name + "')";
  return s;
}
}  // namespace

Status ValidateLifetimes(const std::vector<TensorLifetime>& tensors) {
  if (tensors.size() > kMaxTensors) {
    return InvalidArgument("memory planner: " + std::to_string(tensors.size()) +
                           " tensors exceed the limit of " + std::to_string(kMaxTensors));
  }
  uint64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorLifetime& t = tensors[i];
    if (t.size > kMaxTotalBytes - total) {
      return InvalidArgument("memory planner: total tensor bytes exceed 2^60 at " +
                             TensorName(tensors, i));
    }
    total += t.size;
    if (!IsPowerOfTwo(t.alignment) || t.alignment > kMaxAlignment) {
      return InvalidArgument("memory planner: " + TensorName(tensors, i) + " has alignment " +
                             std::to_string(t.alignment) +
                             " (must be a power of two <= 2^24)");
    }
    if (t.first_use > t.last_use) {
      return InvalidArgument("memory planner: " + TensorName(tensors, i) + " has first_use " +
                             std::to_string(t.first_use) + " > last_use " +
                             std::to_string(t.last_use));
    }
    if (t.device != Device::kCpu && t.device != Device::kCuda) {
      return InvalidArgument("memory planner: " + TensorName(tensors, i) + " has an unknown device");
    }
    if (t.may_alias_with != -1) {
      const int32_t a = t.may_alias_with;
      if (a < 0 || static_cast<size_t>(a) >= tensors.size() || static_cast<size_t>(a) == i) {
        return InvalidArgument("memory planner: " + TensorName(tensors, i) +
                               " has may_alias_with " + std::to_string(a) + " out of range");
      }
      if (tensors[a].device != t.device || tensors[a].last_use != t.first_use) {
        return InvalidArgument("memory planner: " + TensorName(tensors, i) +
                               " may alias " + TensorName(tensors, a) +
                               " but that tensor is on another device or its last_use is not "
                               "this tensor's first_use");
      }
    }
  }
  return Status::Ok();
}

std::vector<DeviceGroup> GroupByDevice(const std::vector<TensorLifetime>& tensors) {
  std::vector<DeviceGroup> groups;
  for (Device d : {Device::kCpu, Device::kCuda}) {
    DeviceGroup g;
    g.device = d;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].device == d) g.tensors.push_back(static_cast<int32_t>(i));
    }
    if (!g.tensors.empty()) groups.push_back(std::move(g));
  }
  return groups;
}

Plan BuildOffsetPlan(const std::vector<TensorLifetime>& tensors,
                     const std::vector<DeviceGroup>& groups,
                     const std::vector<OffsetAssignment>& per_group) {
  Plan plan;
  plan.placements.resize(tensors.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const DeviceGroup& group = groups[g];
    uint64_t top = 0;
    uint32_t align = kMinArenaAlignment;
    const int32_t storage = static_cast<int32_t>(plan.storages.size());
    for (size_t i = 0; i < group.tensors.size(); ++i) {
      const TensorLifetime& t = tensors[group.tensors[i]];
      const uint64_t off = per_group[g].offsets[i];
      top = std::max(top, off + t.size);
      align = std::max(align, t.alignment);
      plan.placements[group.tensors[i]] = Placement{storage, off};
    }
    Arena arena;
    arena.device = group.device;
    arena.size = top;
    arena.alignment = align;
    Storage st;
    st.size = top;
    st.alignment = align;
    st.device = group.device;
    st.arena = static_cast<int32_t>(plan.arenas.size());
    st.offset = 0;
    plan.arenas.push_back(arena);
    plan.storages.push_back(st);
  }
  return plan;
}

Plan BuildSharedObjectPlan(const std::vector<TensorLifetime>& tensors,
                           const std::vector<DeviceGroup>& groups,
                           const std::vector<ObjectAssignment>& per_group,
                           bool pack_into_one_arena) {
  Plan plan;
  plan.placements.resize(tensors.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const DeviceGroup& group = groups[g];
    const ObjectAssignment& assign = per_group[g];
    const int32_t first_storage = static_cast<int32_t>(plan.storages.size());
    std::vector<Storage> objects(assign.num_objects);
    for (Storage& s : objects) {
      s.size = 0;
      s.alignment = 1;
      s.device = group.device;
    }
    for (size_t i = 0; i < group.tensors.size(); ++i) {
      const TensorLifetime& t = tensors[group.tensors[i]];
      Storage& s = objects[assign.object_of[i]];
      s.size = std::max(s.size, t.size);
      s.alignment = std::max(s.alignment, t.alignment);
      plan.placements[group.tensors[i]] = Placement{first_storage + assign.object_of[i], 0};
    }
    if (pack_into_one_arena) {
      Arena arena;
      arena.device = group.device;
      arena.alignment = kMinArenaAlignment;
      uint64_t top = 0;
      for (Storage& s : objects) {
        s.offset = AlignUp(top, s.alignment);
        s.arena = static_cast<int32_t>(plan.arenas.size());
        top = s.offset + s.size;
        arena.alignment = std::max(arena.alignment, s.alignment);
      }
      arena.size = top;
      plan.arenas.push_back(arena);
    } else {
      for (Storage& s : objects) {
        Arena arena;
        arena.device = group.device;
        arena.size = s.size;
        arena.alignment = std::max(kMinArenaAlignment, s.alignment);
        s.arena = static_cast<int32_t>(plan.arenas.size());
        s.offset = 0;
        plan.arenas.push_back(arena);
      }
    }
    plan.storages.insert(plan.storages.end(), objects.begin(), objects.end());
  }
  return plan;
}

Result<Plan> PlanSharedObjects(const std::vector<TensorLifetime>& tensors, const std::string& strategy,
                               AssignObjectsFn assign, bool pack_into_one_arena) {
  KEEL_RETURN_IF_ERROR(ValidateLifetimes(tensors));
  const std::vector<DeviceGroup> groups = GroupByDevice(tensors);
  std::vector<ObjectAssignment> per_group;
  per_group.reserve(groups.size());
  for (const DeviceGroup& g : groups) per_group.push_back(assign(tensors, g.tensors));
  Plan plan = BuildSharedObjectPlan(tensors, groups, per_group, pack_into_one_arena);
  plan.strategy = strategy;
  plan.lower_bound = PositionalMaxLowerBound(tensors);
  return plan;
}

SearchClock::time_point GroupDeadline(SearchClock::time_point start, double limit_seconds, size_t g,
                                      size_t num_groups) {
  const double limit = std::max(0.0, limit_seconds);
  const double elapsed = std::chrono::duration<double>(SearchClock::now() - start).count();
  const double share = std::max(0.0, limit - elapsed) / static_cast<double>(num_groups - g);
  return SearchClock::now() +
         std::chrono::duration_cast<SearchClock::duration>(std::chrono::duration<double>(share));
}

std::vector<int32_t> FirstUseSteps(const std::vector<TensorLifetime>& tensors,
                                   const std::vector<int32_t>& indices) {
  std::vector<int32_t> steps;
  steps.reserve(indices.size());
  for (int32_t i : indices) steps.push_back(tensors[i].first_use);
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

size_t AllocationCount(const Plan& plan) {
  size_t n = plan.arenas.size();
  for (const Storage& s : plan.storages) {
    if (s.arena == -1) ++n;
  }
  return n;
}

}  // namespace keel::memory::internal
