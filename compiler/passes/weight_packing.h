// compiler/passes/weight_packing.h — reorders the constant weights of the
// products the target runs as a blocked GEMM into the GEMM's panel layouts
// (ops/packed_weight.h, codegen/gemm_panels.h), once, at compile time:
//   * convolutions: the weight is the GEMM's A, put in the micro-kernel's row
//     panels: the kernel then reads each register tile's weights as one
//     contiguous stream instead of MR rows far apart (same size: no padding);
//   * MatMul and Gemm with a constant B: B is put in the column panels the
//     GEMM would otherwise pack at run time (padded to whole panels), so the
//     kernel reads it in place and packs nothing.
// The new constant is stored in the executable instead of the old one.
//
// Candidates are Conv nodes with PackedWeightApplies (a constant weight and a
// GEMM kernel: the implicit GEMM, or the Winograd form whose U it packs); the
// target's predicate gives the rows per panel (its register tile height for
// that GEMM), 0 to leave the node. A weight shared by several convolutions is
// packed once per row count. MatMul/Gemm candidates (PackedColumnsApplies)
// take the columns predicate's panel width (0 to leave the node); a B shared
// by several products is packed once per width. With no predicates (every
// CUDA build) the pass changes nothing. It runs after winograd and before
// fusion; deterministic (the new constants are named after the weight).
//
// Errors: what packing returns for a malformed weight. Thread-safety: one graph
// at a time per pass object.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "compiler/ops/packed_weight.h"
#include "compiler/passes/pass.h"

namespace keel::passes {

// The rows per panel for a candidate Conv whose weight is `matrices`, or 0 to keep it as is.
using WeightPackingPredicate = std::function<int64_t(const ir::Node& conv, const ops::WeightMatrices& matrices)>;
// The columns per panel for a candidate MatMul/Gemm whose constant B is `b`, or 0 to keep it as is.
using BPanelPredicate = std::function<int64_t(const ir::Node& product, const ops::BMatrix& b)>;

class WeightPackingPass : public Pass {
 public:
  explicit WeightPackingPass(WeightPackingPredicate rows, BPanelPredicate columns = {})
      : rows_(std::move(rows)), columns_(std::move(columns)) {}
  std::string name() const override { return "weight-packing"; }
  std::string description() const override {
    return "reorder constant convolution weights and MatMul/Gemm B operands into the GEMM's panels where the target asks";
  }
  Status Run(ir::Graph& graph) override;

 private:
  Status PackConvolutions(ir::Graph& graph);
  Status PackProducts(ir::Graph& graph);

  WeightPackingPredicate rows_;
  BPanelPredicate columns_;
};

}  // namespace keel::passes
