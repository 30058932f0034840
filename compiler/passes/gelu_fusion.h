// compiler/passes/gelu_fusion.h — the erf form of GELU as one Gelu node.
//
// Exporters spell GELU (ONNX opsets before 20, PyTorch's nn.GELU, BERT's gelu)
// as five elementwise nodes: x / sqrt(2) (or x * 1/sqrt(2)), Erf, + 1, and the
// product with x and 0.5 in any of its associations. The pass replaces each
// such subgraph whose intermediates have no other use by Gelu(x) with
// approximate = "none": the same function, one node, which a back end can
// place where it knows the activation (cuBLASLt's GELU epilogue on CUDA) and
// which the mixed-precision pass can reason about. The constants must match
// to within 1e-5 relative; anything else is left as it is. Deterministic
// (nodes in graph order); never fails on a valid graph.
#pragma once

#include "compiler/passes/pass.h"

namespace keel::passes {

class GeluFusionPass : public Pass {
 public:
  std::string name() const override { return "gelu-fusion"; }
  std::string description() const override { return "the erf form of GELU (x * 0.5 * (1 + erf(x / sqrt 2))) as one Gelu"; }
  Status Run(ir::Graph& graph) override;
};

}  // namespace keel::passes
