// compiler/memory/offset_search_planner.h — `greedy-size-search`: the greedy
// offset placement of greedy-size, searched over placement orders.
//
// Greedy-by-size is one order; the arena it reaches depends only on the order in
// which tensors are placed (each goes into the best-fitting gap among the placed
// tensors that overlap it in time). This planner keeps that placement and
// searches orders, per device:
//
//   seeds      by size, by first use (greedy-size's two, with its in-place
//              rules), by area (size × steps live, the "breadth" of a tensor), by
//              steps live then size, by last use (latest first: first-use order
//              on the reversed program); the smallest arena is the incumbent.
//   moves      alternately
//              (a) critical move: a tensor whose end defines the arena top is
//                  moved to a random earlier position of the incumbent order
//                  (it then gets first pick of the gaps); accepted when the
//                  arena does not grow (plateaus are walked);
//              (b) restart: the by-size order with multiplicative noise on the
//                  sizes (key = log2 size + uniform(-1, 1)); accepted when the
//                  arena shrinks.
//   stop       at the peak-live bound of the device (proven optimal: Plan::
//              optimal is set), after kPlacementBudget tensor placements, or at
//              PlanOptions::time_limit_seconds (split evenly between devices).
//
// Determinism: the random numbers come from std::mt19937 with a fixed seed (its
// sequence is specified by the standard) and are turned into integers with
// modulo only, so the same input gives the same plan on every platform — unless
// the time limit cuts the search first (then the plan depends on machine speed;
// the default budget stays far below the default limit on zoo-sized graphs).
// The result is never worse than greedy-size's (its orders are seeds).
//
// Cost: one placement is greedy-size's O(n (log T + k log k)); the budget bounds
// the placements, so small graphs get up to kMaxIterations orders and large ones
// at least kMinIterations.
//
// Thread-safety: stateless. Errors: InvalidArgument for invalid lifetimes.
#pragma once

#include "compiler/memory/planner.h"

namespace keel::memory {

class OffsetSearchPlanner final : public Planner {
 public:
  static constexpr uint64_t kPlacementBudget = 1'000'000;  // tensor placements per device
  static constexpr int32_t kMaxIterations = 2000;
  static constexpr int32_t kMinIterations = 8;

  std::string name() const override { return "greedy-size-search"; }
  Result<Plan> MakePlan(const std::vector<TensorLifetime>& tensors,
                        const PlanOptions& options) const override;
};

}  // namespace keel::memory
