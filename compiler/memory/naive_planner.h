// compiler/memory/naive_planner.h — `naive`: no reuse at all.
//
// Every tensor gets its own storage in its own arena (one device allocation per
// tensor, made at load time). Total bytes = Σ sizes; the baseline every other
// strategy is compared with, and trivially correct.
//
//   t0 ████        arena 0
//   t1   ██████    arena 1
//   t2       ███   arena 2
//
// Thread-safety: stateless. Errors: InvalidArgument for invalid lifetimes.
#pragma once

#include "compiler/memory/planner.h"

namespace keel::memory {

class NaivePlanner final : public Planner {
 public:
  std::string name() const override { return "naive"; }
  Result<Plan> MakePlan(const std::vector<TensorLifetime>& tensors,
                        const PlanOptions& options) const override;
};

}  // namespace keel::memory
