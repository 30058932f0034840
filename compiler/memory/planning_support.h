// compiler/memory/planning_support.h — shared plumbing for the planners.
//
// Every strategy plans each device separately (tensors on distinct devices never
// share memory) and then writes the same Plan form. This file holds the pieces all
// of them need so that each strategy file only contains its algorithm:
//   - ValidateLifetimes: the input contract (checked before any planning);
//   - GroupByDevice: tensor indices per device, in a deterministic order;
//   - BuildOffsetPlan / BuildSharedObjectPlan: per-device results → Plan;
//   - PlanSharedObjects: the whole MakePlan of a shared-object strategy;
//   - GroupDeadline: how the search strategies split their time among devices.
//
// Inside one device group a tensor is named by its *local* index (its position in
// DeviceGroup::tensors); results are vectors parallel to that list.
//
// Thread-safety: free functions without state. Errors: ValidateLifetimes (and
// PlanSharedObjects, which calls it) returns InvalidArgument naming the tensor;
// the builders cannot fail on validated input.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/memory/planner.h"

namespace keel::memory::internal {

// Input limits (checked by ValidateLifetimes). They keep every byte sum the
// planners compute (sizes plus alignment padding) far from uint64 overflow.
inline constexpr uint64_t kMaxTotalBytes = uint64_t{1} << 60;
inline constexpr uint32_t kMaxAlignment = uint32_t{1} << 24;
inline constexpr size_t kMaxTensors = size_t{1} << 26;
// Arenas are aligned to at least this (matches Arena's default).
inline constexpr uint32_t kMinArenaAlignment = 256;

inline bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
// `alignment` must be a power of two; `v` small enough not to overflow (inputs are
// bounded by kMaxTotalBytes, so planner arithmetic never comes near).
inline uint64_t AlignUp(uint64_t v, uint64_t alignment) {
  return (v + alignment - 1) & ~(alignment - 1);
}

// The input contract:
//   - at most kMaxTensors tensors, total size at most kMaxTotalBytes;
//   - alignment a power of two in [1, kMaxAlignment];
//   - first_use <= last_use;
//   - may_alias_with is -1 or another tensor's index on the same device whose
//     last_use equals this tensor's first_use.
Status ValidateLifetimes(const std::vector<TensorLifetime>& tensors);

struct DeviceGroup {
  Device device = Device::kCpu;
  std::vector<int32_t> tensors;  // global indices, ascending
};
// Groups in Device enum order; only devices that have tensors appear.
std::vector<DeviceGroup> GroupByDevice(const std::vector<TensorLifetime>& tensors);

// Offset form for one group: offsets[i] for local tensor i within one arena.
struct OffsetAssignment {
  std::vector<uint64_t> offsets;
};
// One arena + one storage per group, sized to the highest tensor end; arena
// alignment = max(kMinArenaAlignment, largest tensor alignment). Sets
// plan.placements/storages/arenas; strategy and bounds are the caller's.
Plan BuildOffsetPlan(const std::vector<TensorLifetime>& tensors,
                     const std::vector<DeviceGroup>& groups,
                     const std::vector<OffsetAssignment>& per_group);

// Shared-object form for one group: object_of[i] is local tensor i's object,
// objects numbered 0..num_objects-1 (numbering order = storage order).
struct ObjectAssignment {
  std::vector<int32_t> object_of;
  int32_t num_objects = 0;
};
// One storage per object (size = largest tensor in it, alignment = largest tensor
// alignment); every tensor at offset 0 of its object. pack_into_one_arena=false:
// one arena per storage (one device allocation each); true: one arena per device
// with the storages laid end to end at aligned offsets.
Plan BuildSharedObjectPlan(const std::vector<TensorLifetime>& tensors,
                           const std::vector<DeviceGroup>& groups,
                           const std::vector<ObjectAssignment>& per_group,
                           bool pack_into_one_arena);

// A shared-object strategy's algorithm: objects for one device group (global
// indices into `tensors`, ascending); the result is parallel to `group`.
using AssignObjectsFn = ObjectAssignment (*)(const std::vector<TensorLifetime>& tensors,
                                             const std::vector<int32_t>& group);
// ValidateLifetimes, then `assign` on each device group, then
// BuildSharedObjectPlan; the plan is named `strategy` and carries the
// positional-maximum lower bound. Errors: those of ValidateLifetimes.
Result<Plan> PlanSharedObjects(const std::vector<TensorLifetime>& tensors, const std::string& strategy,
                               AssignObjectsFn assign, bool pack_into_one_arena);

// The clock of the time-limited (search) strategies.
using SearchClock = std::chrono::steady_clock;
// Deadline of device group `g` of `num_groups` for a search that started at
// `start` with `limit_seconds` in all (negative counts as 0): an even share of
// the time left for this and the remaining groups, so a group that finishes
// early leaves its time to the next ones.
SearchClock::time_point GroupDeadline(SearchClock::time_point start, double limit_seconds, size_t g,
                                      size_t num_groups);

// Sorted, de-duplicated first_use values of the given tensors. The live set at any
// step is a subset of the live set at the largest first_use <= that step, so the
// per-step quantities (live bytes, profiles) only need these steps.
std::vector<int32_t> FirstUseSteps(const std::vector<TensorLifetime>& tensors,
                                   const std::vector<int32_t>& indices);

// Number of device allocations a plan makes: arenas plus dynamic storages.
size_t AllocationCount(const Plan& plan);

}  // namespace keel::memory::internal
