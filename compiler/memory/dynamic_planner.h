// compiler/memory/dynamic_planner.h — `dynamic`: allocate at run time.
//
// Every tensor gets its own storage with arena == -1: the VM allocates it before
// its first use and frees it after its last use, like an eager framework. Nothing
// is reserved at load time; TotalBytes() counts Σ sizes (what a plan without reuse
// would reserve), while the actual run-time peak depends on the allocator.
//
//   step:  0    1    2    3
//   t0    alloc ──── free
//   t1         alloc ───── free
//
// Thread-safety: stateless. Errors: InvalidArgument for invalid lifetimes.
#pragma once

#include "compiler/memory/planner.h"

namespace keel::memory {

class DynamicPlanner final : public Planner {
 public:
  std::string name() const override { return "dynamic"; }
  Result<Plan> MakePlan(const std::vector<TensorLifetime>& tensors,
                        const PlanOptions& options) const override;
};

}  // namespace keel::memory
