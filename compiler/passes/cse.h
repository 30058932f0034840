// compiler/passes/cse.h — common-subexpression elimination.
//
// Two nodes are the same computation when they have the same op_type, the same
// input Values (by identity, in order) and equal attributes (tensor attributes
// compared by content). The later one's outputs are replaced by the earlier
// one's and it is removed. Constants with identical dtype, shape and bytes are
// merged first, so that expressions over duplicated constants also match.
// Nodes with bodies (keel.Fused) are never merged. Deterministic: keys are built
// from value ids and printed attributes, never from pointers.
#pragma once

#include "compiler/passes/pass.h"

namespace keel::passes {

class CsePass : public Pass {
 public:
  std::string name() const override { return "cse"; }
  std::string description() const override { return "merge identical computations and identical constants"; }
  Status Run(ir::Graph& graph) override;
};

}  // namespace keel::passes
