// compiler/memory/tvm_planner.h — `tvm` / `tvm-packed`: TVM-style storage-token
// reuse (after TVM's GraphPlanMemory StorageAllocator).
//
// Walk the steps in order. At step s, first every tensor with first_use == s
// (ascending index) requests a token, then every tensor with last_use == s
// returns its token to the free list (so tensors live at the same step never
// share). A request for `size` bytes looks at the free tokens keyed by their
// current size, within TVM's match range of a factor 16:
//
//   free tokens by size:  ... [size/16 ......... size ......... size*16] ...
//                                   ◀── 2. else the largest    1. the smallest ──▶
//                                      below, grown to size      token >= size
//   3. no free token in range: a new token of `size` bytes.
//
// Each token becomes one shared object (storage, tensors at offset 0, size = the
// largest tensor it held). `tvm`: one arena per storage (one device allocation
// each, as TVM does); `tvm-packed`: the storages of a device laid end to end in
// one arena.
//
// Cost: O(n log n). Thread-safety: stateless. Errors: InvalidArgument for invalid
// lifetimes. In-place aliasing is not used.
#pragma once

#include "compiler/memory/planner.h"
#include "compiler/memory/planning_support.h"

namespace keel::memory {

class TvmPlanner final : public Planner {
 public:
  explicit TvmPlanner(bool pack_into_one_arena = false) : pack_(pack_into_one_arena) {}
  std::string name() const override { return pack_ ? "tvm-packed" : "tvm"; }
  Result<Plan> MakePlan(const std::vector<TensorLifetime>& tensors,
                        const PlanOptions& options) const override;

  // The token assignment for one device group (exposed for tests and `best`).
  static internal::ObjectAssignment AssignTokens(const std::vector<TensorLifetime>& tensors,
                                                 const std::vector<int32_t>& group);

 private:
  bool pack_;
};

}  // namespace keel::memory
