// compiler/passes/verify.h — the final structural check of a compiled graph.
//
// Graph::Verify(require_types=true) plus the post-pipeline invariants lowering
// relies on: every node input/output has a static type, no op without a kernel
// (kNone: Dropout, ...) remains, keel.Fused nodes have bodies whose types match the node's.
// Errors name the node; the pass never mutates the graph.
#pragma once

#include "compiler/passes/pass.h"

namespace keel::passes {

class VerifyPass : public Pass {
 public:
  std::string name() const override { return "verify"; }
  std::string description() const override { return "check graph structure, types and post-pipeline invariants"; }
  Status Run(ir::Graph& graph) override;
};

}  // namespace keel::passes
