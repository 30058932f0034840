// compiler/passes/attention_fusion.h — finds scaled dot-product attention in
// the graph and replaces it by one keel.Attention node (ops/fused_attention.h)
// where the target runs that op.
//
// The pattern (each intermediate value with one use and not a graph output):
//   S  = MatMul(Q', K')                       Q' [.., sq, d], K' [.., d, sk]
//   S  = Cast(S) to f32                       optional (mixed precision's)
//   S  = S * c  or  S / c                     optional, c a constant scalar
//   S  = S + M                                optional additive mask, M
//                                             broadcastable to S
//   P  = Softmax(S) over the last axis
//   P  = Cast(P)                              optional, back to the V type
//   O  = MatMul(P, V')                        V' [.., sk, dv]
//   O' = Transpose(O)                         optional, O's only use
// Q', K', V' and M are followed back through the ops with a strided view
// (Transpose, Slice, reshapes: op_def.h's strided_view hook) and, for Q' and
// K', scalar constant Mul/Div (folded into the scale), as far as the views
// compose (ops/strided_view.h); the node reads the tensors found there. So the
// heads' split ([S, B, 3*H*D] -> slices -> [S, B*H, D] -> transposes) and the
// merge back cost no kernels; those nodes become dead and are removed here.
// When the tensor Q, K and V come from is a projection of a transposed input
// (row-wise ops — a MatMul by a 2-D weight, a bias Add, a Cast — over
// Transpose(x) keeping the last axis, as batch-first PyTorch exports), the
// projection is rebuilt on x and the transpose moved behind it, into the views.
// Symmetrically, when O' is merged by reshapes, projected by row-wise ops and
// then transposed keeping the last axis (the output projection of the same
// exports, transposed back to batch-first before the residual add), the node
// writes its rows in the transposed order, the row-wise ops are rebuilt on them
// and the transpose becomes a view.
//
// The target's predicate decides (element type, head widths its kernel takes);
// without one the pass changes nothing (the CPU). Runs after mixed precision
// (it sees the storage types) and before fusion. Deterministic: nodes are
// visited in graph order.
//
// Thread-safety: one graph at a time per pass object.
#pragma once

#include <functional>
#include <utility>

#include "compiler/ops/fused_attention.h"
#include "compiler/passes/pass.h"

namespace keel::passes {

// Whether the target runs `a` with Q/K/V/Y of type `t` and a mask of type
// `mask` (meaningful when a.has_mask).
using AttentionPredicate = std::function<bool(const ops::FusedAttention& a, ir::DType t, ir::DType mask)>;

class AttentionFusionPass : public Pass {
 public:
  explicit AttentionFusionPass(AttentionPredicate accepts) : accepts_(std::move(accepts)) {}
  std::string name() const override { return "attention-fusion"; }
  std::string description() const override {
    return "replace MatMul-Softmax-MatMul attention by one keel.Attention reading strided views";
  }
  Status Run(ir::Graph& graph) override;

 private:
  AttentionPredicate accepts_;
};

}  // namespace keel::passes
