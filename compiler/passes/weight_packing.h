// compiler/passes/weight_packing.h — reorders the constant weights of the
// convolutions the target runs as a blocked GEMM into the micro-kernel's
// row-panel layout (ops/packed_weight.h, codegen/gemm_panels.h), once, at
// compile time: the kernel then reads each register tile's weights as one
// contiguous stream instead of MR rows far apart, and packs nothing at run
// time. The new constant is stored in the executable instead of the old one
// (same size: the layout has no padding).
//
// Candidates are Conv nodes with PackedWeightApplies (a constant weight and a
// GEMM kernel: the implicit GEMM, or the Winograd form whose U it packs); the
// target's predicate gives the rows per panel (its register tile height for
// that GEMM), 0 to leave the node. A weight shared by several convolutions is
// packed once per row count. With no predicate (every CUDA build) the pass
// changes nothing. It runs after winograd and before fusion; deterministic
// (the new constants are named after the weight).
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

class WeightPackingPass : public Pass {
 public:
  explicit WeightPackingPass(WeightPackingPredicate rows) : rows_(std::move(rows)) {}
  std::string name() const override { return "weight-packing"; }
  std::string description() const override {
    return "reorder constant convolution weights into the GEMM micro-kernel's row panels where the target asks";
  }
  Status Run(ir::Graph& graph) override;

 private:
  WeightPackingPredicate rows_;
};

}  // namespace keel::passes
