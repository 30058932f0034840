// compiler/memory/greedy_size_planner.h — `greedy-size`: offsets in one arena per
// device, "Greedy by Size for offset calculation" (Pisarchyk & Lee 2020, as used
// by TFLite's GPU delegate).
//
// Tensors are taken by size, largest first (ties: lower index). Each is placed
// against the already-placed tensors whose lifetimes intersect its own, scanned in
// offset order; the gaps between them (and above the highest) are candidates:
//
//   bytes ▲
//         │   ┌──────┐            ← placed, lifetime overlaps t
//         │   └──────┘   gap g2 (too small for t)
//         │ ┌────┐
//         │ └────┘       gap g1 ≥ size(t): candidate
//         │ ┌──────────┐
//         └─┴──────────┴────▶ steps
//
//   best fit (the paper, `greedy-size`): the smallest gap that fits;
//   first fit (`greedy-size-first-fit`): the lowest gap that fits;
//   no gap fits: right above the highest overlapping tensor.
// Offsets are rounded up to the tensor's alignment inside the gap.
//
// In-place reuse: if a tensor's alias partner (its may_alias_with, or a tensor
// aliasing it) is already placed at an offset aligned for it, and the tensor fits
// there without touching any other overlapping tensor, it takes that offset —
// unless that would raise the arena's top more than the gap choice would.
//
// The overlapping tensors come from an IntervalIndex (segment tree over steps), so
// a tensor costs O(log T + k log k) for k overlapping neighbours: 100k tensors
// with short lifetimes plan in well under a second (bench/memory).
//
// Thread-safety: stateless. Errors: InvalidArgument for invalid lifetimes.
#pragma once

#include "compiler/memory/planner.h"
#include "compiler/memory/planning_support.h"

namespace keel::memory {

enum class GapFit : uint8_t { kBestFit, kFirstFit };

class GreedySizePlanner final : public Planner {
 public:
  explicit GreedySizePlanner(GapFit fit = GapFit::kBestFit) : fit_(fit) {}
  std::string name() const override {
    return fit_ == GapFit::kBestFit ? "greedy-size" : "greedy-size-first-fit";
  }
  Result<Plan> MakePlan(const std::vector<TensorLifetime>& tensors,
                        const PlanOptions& options) const override;

  // Offsets for one device group (local order = group order). Lifetimes must be
  // valid (ValidateLifetimes). Used by `exact` for its incumbent.
  static internal::OffsetAssignment AssignOffsets(const std::vector<TensorLifetime>& tensors,
                                                  const std::vector<int32_t>& group, GapFit fit);

 private:
  GapFit fit_;
};

}  // namespace keel::memory
