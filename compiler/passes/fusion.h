// compiler/passes/fusion.h — TVM-style operator fusion into "keel.Fused" nodes.
//
// After this pass every compute node of the graph is inside exactly one
// keel.Fused node; the only nodes left outside are views ("keel.Reshape") and
// ops fusion does not know (left untouched). Codegen implements kernels for
// exactly the body shapes below.
//
// Op classes: the registry's fusion class (compiler/ops/op_def.h): elementwise
// (Add, Relu, Clip, Cast, ...), injective (Transpose, Slice, Gather, Concat,
// ...), anchor (Conv, Gemm, MatMul, pools, reductions, Softmax, LayerNorm ...).
//
// First, views out of the way (rule -1): an elementwise node reading a
// keel.Reshape view (or chain of views) of an anchor's or elementwise node's
// single-use output is moved above the view (the view then follows it) when
// its other operands are tensors of the view's shape (read through views of
// the producer's shape) or single elements, unless it is a prologue (rule 0). A GEMM then takes the residual add behind a batch-first
// transformer's reshapes as its epilogue.
//
// Grouping (nodes visited in topological order; a node joins at most one group):
//   0. Prologues: a one-input elementwise node that changes the element type
//      and whose only use is an anchor with a generated kernel (no
//      vendor-library candidate: Softmax, LayerNorm, reductions, ...) joins that
//      anchor's group ahead of it, and the anchor's kernel reads through it
//      (mixed precision's widening Cast in front of an f32 Softmax or LayerNorm:
//      the kernel reads the half data itself). Likewise in front of an
//      injective node (rule 2): the model input's Cast to half and the
//      transpose or gather that first reads it are one kernel. Other producers
//      stay kernels of their own: an anchor may read its input several times,
//      and a plain buffer read keeps its kernel's fast paths. A prologue is not
//      also an epilogue of the chain before it.
//  0b. Sum prologues (the target's choice, PipelineOptions::sum_prologues: the
//      GPU): an elementwise node of two or more operands, all computed tensors
//      of its output's shape, whose only use is a row normalization's data
//      input (OpDef::reads_row_once), directly or through that input's rule-0
//      prologue, joins the normalization's group ahead of it. A post-norm transformer's
//      residual add then runs in the LayerNorm's kernel, which reads both rows
//      once, and the GEMM before it is a plain one (cuBLASLt's kernels that
//      also read C take longer than the row's second read).
//   1. An anchor starts a group (after its prologues). While the group's last output has exactly one
//      use, is not a graph output, and that user is an ungrouped elementwise
//      node, the user joins (a linear epilogue chain: bias add, relu, clip,
//      residual add, ...). Pattern "anchor+epilogue" when something joined,
//      "anchor" otherwise.
//   2. An injective node starts a group (after its prologues) and takes the
//      elementwise chain after it by the same rule. Pattern "injective".
//   3. An elementwise node (not yet grouped) starts a group and takes its
//      elementwise chain. Pattern "elementwise".
// An anchor's epilogue keeps the anchor's output shape (it is applied at the
// anchor's store); elementwise and injective chains may broadcast to larger
// shapes (their loop nest runs over the chain's output).
// A generated anchor's epilogue may change the element type (the narrowing Cast
// after an f32 Softmax or LayerNorm); a library candidate's may not (below),
// except a half GEMM/MatMul without a bias operand whose first epilogue node
// widens to f32 (cuBLASLt writes D in f32 from half A and B: bf16's f32
// residual stream, mixed_precision.h).
// Hence a body is a chain: [prologues + anchor | prologues + injective | elementwise]
// followed by zero or more elementwise nodes, each consuming the previous node's
// output (as any of its inputs) plus values from outside the group. A chain holds at most
// kMaxGroupNodes nodes (a longer one continues in a new group): a kernel's
// expressions, and the compile time and stack depth spent on them, stay
// bounded however long the model's chains are.
//
// The fused node:
//   inputs   every value the group reads from outside (graph inputs, constants —
//            weights, biases, scalars — and other nodes' outputs), in order of
//            first use in the chain; body().inputs() correspond 1:1.
//   outputs  exactly one: the chain's last value (keeps its name and type).
//   body     a Graph with clones of the chain's nodes (same op_type, name,
//            canonical attributes, types set on every value).
//   attrs    "keel.pattern" = "anchor" | "anchor+epilogue" | "elementwise" | "injective"
//            "keel.anchor"  = the anchor's op_type (or the injective op, or the
//                             first elementwise op)
//            "keel.ops"     = the body's op_types in order (strings)
// Requires typed values (run after shape-inference). Name: "<first node name>+<n>"
// for groups of n > 1 nodes, else the node's name.
#pragma once

#include "compiler/passes/pass.h"

namespace keel::passes {

// The node's fusion class from the op registry (compiler/ops); multi-output
// nodes and views are opaque (never grouped).
enum class OpClass { kElementwise, kInjective, kAnchor, kOpaque };

inline constexpr size_t kMaxGroupNodes = 32;
OpClass ClassifyOp(const ir::Node& node);

class FusionPass : public Pass {
 public:
  explicit FusionPass(bool fuse_anchors = true, bool sum_prologues = false)
      : fuse_anchors_(fuse_anchors), sum_prologues_(sum_prologues) {}
  std::string name() const override { return "fusion"; }
  std::string description() const override {
    return "group anchor+epilogue, injective and elementwise chains into keel.Fused nodes";
  }
  Status Run(ir::Graph& graph) override;

 private:
  bool fuse_anchors_;
  bool sum_prologues_;
};

}  // namespace keel::passes
