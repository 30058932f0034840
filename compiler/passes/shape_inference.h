// compiler/passes/shape_inference.h — static shapes and dtypes for every value.
//
// Walks the nodes in order: canonicalizes each one (ops::CanonicalizeNode: lifts
// constant shape-like inputs into attributes, fills defaults, normalizes axes),
// infers its output types (ops::InferNodeTypes) and sets them. To resolve shape
// computations (tiny_bert's Shape → Gather → Unsqueeze → Concat → Reshape), a
// Shape of a static value becomes a constant and an integer-valued node whose
// inputs are all constants is folded on the spot (small results only), so that
// the consumer sees a constant shape. Fused bodies are inferred recursively.
//
// Errors (InvalidArgument/Unsupported) name the node and the mismatch, e.g.
// "Add 'add_3': shapes [2,3] and [4] do not broadcast", "MatMul 'mm': inner
// dimensions differ", "Concat 'cat': input 1 has rank 2, input 0 has rank 3",
// "Reshape 'r': the shape input must be a compile-time constant".
#pragma once

#include "compiler/passes/pass.h"

namespace keel::passes {

class ShapeInferencePass : public Pass {
 public:
  std::string name() const override { return "shape-inference"; }
  std::string description() const override {
    return "canonicalize nodes and infer static shapes/dtypes (folds integer shape chains)";
  }
  Status Run(ir::Graph& graph) override;
};

// The same, callable directly (used for fused bodies and by other passes).
Status InferShapes(ir::Graph& graph);

}  // namespace keel::passes
