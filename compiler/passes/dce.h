// compiler/passes/dce.h — dead-code elimination.
//
// Removes every node none of whose outputs is used by another node or is a graph
// output (iterating to a fixed point, last node first), then every value left
// without producer, uses or graph role (dead constants: weights folded away).
// Fused bodies are cleaned as well. Never fails on a valid graph.
#pragma once

#include "compiler/passes/pass.h"

namespace keel::passes {

class DcePass : public Pass {
 public:
  std::string name() const override { return "dce"; }
  std::string description() const override { return "remove nodes and constants whose results are unused"; }
  Status Run(ir::Graph& graph) override;
};

// Helper for other passes: the same cleanup, callable directly.
Status EliminateDeadCode(ir::Graph& graph);

}  // namespace keel::passes
