// compiler/memory/greedy_size_planner.h — `greedy-size`: offsets in one arena per
// device, "Greedy by Size for offset calculation" (Pisarchyk & Lee 2020, as used
// by TFLite's GPU delegate).
//
// Two placement orders are run per device and the smaller arena is kept (ties:
// the first):
//   1. by size, largest first (ties: lower index) — the paper's order;
//   2. by first use (ties: larger first, then lower index) — the order in which
//      the program allocates, i.e. an offline best-fit allocator.
// Why both: by-size puts big short-lived tensors (a convolution's im2col
// workspace, live for one step) at offset 0 first; a long-lived activation that
// overlaps several of them is then pushed above the tallest one, although the
// peak-live bound leaves room for it below. On the zoo's CPU lifetimes (im2col
// workspaces) by-size ends 4-8% above the peak-live bound on resnet18,
// squeezenet1_1 and tiny_bert, by-first-use reaches the bound; on the CUDA
// lifetimes (no workspaces) by-size reaches the bound and by-first-use does not
// (up to 15% above). Neither order dominates on random lifetimes either, and both
// cost the same, so planning costs 2x the single-order greedy.
//
// Each tensor is placed against the already-placed tensors whose lifetimes
// intersect its own, scanned in offset order; the gaps between them (and above
// the highest) are candidates:
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
// unless that would raise the arena's top more than the gap choice would
// (AliasRule::kUnlessTopGrows, used with the by-size order), and, in the
// by-first-use order, unless the gap choice is lower (kUnlessHigher). Why the
// second rule: in first-use order the partner (the input dying at this step) is
// always placed already, often high up; reusing its slot when a lower gap fits
// keeps the tensor high, in the way of the next step's large tensors (tiny_bert's
// GELU output over its input, then the next MatMul's im2col-sized workspace:
// 1.70x the peak-live bound instead of 1.00x). On random lifetimes with in-place
// pairs the pair of rules gives the lowest mean of the two orders' minimum.
//
// The overlapping tensors come from an IntervalIndex (segment tree over steps), so
// a tensor costs O(log T + k log k) for k overlapping neighbours: 100k tensors
// with short lifetimes plan in well under a second, both orders (bench/memory).
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

  // Offsets for one device group (local order = group order): the better of the
  // two orders above. Lifetimes must be valid (ValidateLifetimes). Used by
  // `exact` for its incumbent.
  static internal::OffsetAssignment AssignOffsets(const std::vector<TensorLifetime>& tensors,
                                                  const std::vector<int32_t>& group, GapFit fit);

  // The greedy placement with a caller-chosen order: `order` is a permutation of
  // the local indices 0..group.size()-1 (unchecked). Used by the search planners.
  enum class AliasRule : uint8_t { kUnlessTopGrows, kUnlessHigher };
  static internal::OffsetAssignment AssignOffsetsInOrder(const std::vector<TensorLifetime>& tensors,
                                                         const std::vector<int32_t>& group, GapFit fit,
                                                         const std::vector<int32_t>& order,
                                                         AliasRule alias_rule = AliasRule::kUnlessTopGrows);
  enum class PlacementOrder : uint8_t { kSize, kFirstUse };
  static std::vector<int32_t> OrderOf(const std::vector<TensorLifetime>& tensors,
                                      const std::vector<int32_t>& group, PlacementOrder order);
  // Highest tensor end of an assignment for `group` (its arena size).
  static uint64_t Top(const std::vector<TensorLifetime>& tensors, const std::vector<int32_t>& group,
                      const internal::OffsetAssignment& assignment);

 private:
  GapFit fit_;
};

}  // namespace keel::memory
