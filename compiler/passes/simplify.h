// compiler/passes/simplify.h — local simplifications that need no arithmetic.
//
//  - Identity-like ops (registry trait: Identity, inference Dropout) are
//    removed: their users read the input directly. When the output is a graph output the producer's value takes the
//    output's name instead; an Identity that copies a graph input or constant to
//    a graph output is kept (lowering emits a copy).
//  - Reshape-like ops (registry trait: Reshape, Flatten, Squeeze, Unsqueeze)
//    whose input and output types are known become "keel.Reshape" {shape = static output shape}: a view of the
//    input (no kernel; lowering emits alloc_tensor on the input's storage).
//    Untyped ones are left for a later run (the default pipeline runs simplify
//    again after shape inference). So do transposes that move only size-1 axes.
#pragma once

#include "compiler/passes/pass.h"

namespace keel::passes {

class SimplifyPass : public Pass {
 public:
  std::string name() const override { return "simplify"; }
  std::string description() const override {
    return "remove Identity/Dropout; Reshape/Flatten/Squeeze/Unsqueeze become keel.Reshape views";
  }
  Status Run(ir::Graph& graph) override;
};

}  // namespace keel::passes
