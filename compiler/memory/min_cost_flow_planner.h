// compiler/memory/min_cost_flow_planner.h — `min-cost-flow`: shared objects from a
// min-cost flow on the reuse graph (Pisarchyk & Lee 2020, "Min-cost flow" section).
//
// Every tensor j needs an object, either a new one (cost size_j) or the object of
// a tensor i that died before j was born (cost = growth, max(0, size_j − size_i)).
// Each tensor hands its object to at most one successor. As a flow network:
//
//              0  ┌──▶ L_i ──max(0, s_j − s_i)──┐        (edge only when
//   source ───────┤                              ▼          last_i < first_j)
//                 └──────────── s_j ──────────▶ R_j ──0──▶ sink
//
// all capacities 1; a min-cost flow saturating every R_j (successive shortest
// paths, Dijkstra with potentials) gives chains of tensors = shared objects, each
// sized to its largest tensor. The cost over-estimates an object whose sizes go
// up, down, up (the paper's model); the object sizes we emit are exact.
//
// Bounding it (the paper's all-pairs graph has O(n^2) edges and n augmentations):
//   - tensors are processed in first_use order in blocks of kBlock; a block's L
//     side holds the objects built so far (as their tails: object size, last_use)
//     plus the block's own tensors, its R side the block's tensors;
//   - each R_j gets edges from only kCandidates L nodes among those that died
//     before first_j: half the most recent deaths (chain-like reuse), half the
//     best size fits (least growth, then least waste).
// A block costs O(kBlock · kBlock · kCandidates · log) plus a scan of the tails,
// so the whole is about linear in n. With n <= kBlock and n <= kCandidates/2 this
// is exactly the paper's formulation.
//
// Measured (bench/memory, network-like lifetimes): the paper's cost charges an
// in-block predecessor at its own size, not its object's, so "big, small, big"
// chains look expensive and objects multiply; larger blocks made plans *worse*
// (1k tensors: block 16 → 1.25× peak, 32 → 1.44×, 128 → 1.38×, 1024 → 3.3×;
// 10k: 16 → 1.44×, 1024 → 4.1×), while small blocks re-anchor tails at true
// object sizes. kBlock = 16; the greedy shared-object strategies usually beat it
// (~1.05×), and `best` picks among them.
//
// Thread-safety: stateless. Errors: InvalidArgument for invalid lifetimes.
#pragma once

#include "compiler/memory/planner.h"
#include "compiler/memory/planning_support.h"

namespace keel::memory {

class MinCostFlowPlanner final : public Planner {
 public:
  static constexpr int32_t kBlock = 16;
  static constexpr int32_t kCandidates = 16;

  std::string name() const override { return "min-cost-flow"; }
  Result<Plan> MakePlan(const std::vector<TensorLifetime>& tensors,
                        const PlanOptions& options) const override;

  static internal::ObjectAssignment AssignObjects(const std::vector<TensorLifetime>& tensors,
                                                  const std::vector<int32_t>& group);
};

}  // namespace keel::memory
