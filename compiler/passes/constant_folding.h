// compiler/passes/constant_folding.h — evaluate nodes whose inputs are all constants.
//
// Every node (not keel.Fused) whose non-null inputs are all constants is
// evaluated with the reference evaluator (compiler/ops/semantics.h) and its
// outputs replaced by constants — shape chains (Shape/Gather/Unsqueeze/Concat/
// Reshape/Cast/Slice/Squeeze), arithmetic on small constants, transposed weights.
// Ops whose value depends only on input types (the registry's
// value_independent: Shape, Size) fold as soon as their inputs are typed.
//
// Size cap: a result larger than `max_bytes` is folded only when it does not
// duplicate weights, i.e. when it is no bigger than the constant inputs that
// become dead by folding (inputs used by this node only). A folded graph output
// keeps its name: an Identity copies the constant into it (the executable's
// outputs are computed buffers).
//
// Requires canonical, typed nodes (run shape-inference first). Errors from the
// evaluator name the node.
#pragma once

#include <cstdint>

#include "compiler/passes/pass.h"

namespace keel::passes {

class ConstantFoldingPass : public Pass {
 public:
  explicit ConstantFoldingPass(int64_t max_bytes = 64 * 1024) : max_bytes_(max_bytes) {}
  std::string name() const override { return "constant-folding"; }
  std::string description() const override {
    return "evaluate nodes with constant inputs (size-capped), Shape of static values";
  }
  Status Run(ir::Graph& graph) override;

 private:
  int64_t max_bytes_;
};

// Folds one node if allowed by the cap; returns whether it was folded. Used by
// shape-inference for integer shape computations. `max_bytes` as above.
Result<bool> TryFoldNode(ir::Graph& graph, ir::Node* node, int64_t max_bytes);

// Replaces every use of `value` (produced by `producer`) with a constant holding
// `data`. When `value` is a graph output, an Identity inserted before
// `producer` copies the constant into a value of the same name.
void ReplaceWithConstant(ir::Graph& graph, ir::Node* producer, ir::Value* value, ir::TensorDataPtr data);

}  // namespace keel::passes
