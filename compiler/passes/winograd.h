// compiler/passes/winograd.h — puts the convolutions the target runs faster as
// Winograd F(m, 3) in Winograd form (ops/winograd.h): the weight initializer is
// replaced by its transform U = G g G^T, computed once here at compile time
// (so the kernel reads U and never transforms weights at run time), and the
// node is marked keel.winograd = m.
//
// Candidates are plain Conv nodes with WinogradApplies (3x3, stride 1,
// dilation 1, group 1, f32, constant weight, any pads); the target's predicate
// picks m (0: leave the node). A weight shared by several convolutions is
// transformed once per m. The node's type is unchanged (checked). With no
// predicate (every CUDA build) the pass changes nothing. It needs typed,
// canonical nodes; it runs after channels-last and before fusion, and is
// deterministic (the new constants are named after the weight).
//
// Errors: Internal when a rewritten node's type rule disagrees with its old type.
// Thread-safety: one graph at a time per pass object.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "compiler/passes/pass.h"

namespace keel::passes {

// The output tile side m (2 or 4) for a candidate Conv, or 0 to keep it as is.
using WinogradPredicate = std::function<int64_t(const ir::Node& conv)>;

class WinogradPass : public Pass {
 public:
  explicit WinogradPass(WinogradPredicate tile) : tile_(std::move(tile)) {}
  std::string name() const override { return "winograd"; }
  std::string description() const override {
    return "transform 3x3 stride-1 convolution weights for Winograd F(m,3) where the target prefers it";
  }
  Status Run(ir::Graph& graph) override;

 private:
  WinogradPredicate tile_;
};

}  // namespace keel::passes
