// compiler/passes/shape_inference.cc — shape inference (see shape_inference.h).
#include "compiler/passes/shape_inference.h"

#include "compiler/ops/expansion.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/semantics.h"
#include "compiler/passes/constant_folding.h"
#include "compiler/passes/control_flow.h"

namespace keel::passes {
namespace {

// Results up to this size are folded during inference: shape tensors, and the
// small float scalars (scales, window sizes) that exporters compute from them
// and that later ops need as constants.
constexpr int64_t kInlineFoldBytes = 4096;

// Canonicalizes and types one node whose inputs are typed, then folds or
// expands it; control flow is inlined (its clones go through this step too).
Status InferNode(ir::Graph& graph, ir::Node* n) {
  for (size_t i = 0; i < n->inputs().size(); ++i) {
    ir::Value* in = n->input(i);
    if (in && !in->has_type()) {
      return InvalidArgument(ir::NodeDescription(*n) + ": input " + std::to_string(i) + " ('" + in->name() +
                             "') has no type");
    }
  }
  if (n->body()) {
    ir::Graph& body = *n->body();
    if (body.inputs().size() != n->inputs().size()) {
      return InvalidArgument(ir::NodeDescription(*n) + ": body arity differs from the node's");
    }
    for (size_t i = 0; i < n->inputs().size(); ++i) body.inputs()[i]->set_type(n->input(i)->type());
    Status s = InferShapes(body);
    if (!s.ok()) return s.WithContext("in body of " + ir::NodeDescription(*n));
  }
  if (IsControlFlow(*n)) return LowerControlFlow(graph, n, InferNode);
  KEEL_RETURN_IF_ERROR(ops::CanonicalizeNode(*n));
  KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> out_types, ops::InferNodeTypes(*n));
  if (out_types.size() != n->outputs().size()) {
    return Internal(ir::NodeDescription(*n) + ": type rule gave " + std::to_string(out_types.size()) +
                    " outputs for " + std::to_string(n->outputs().size()));
  }
  bool small = true;
  for (size_t i = 0; i < out_types.size(); ++i) {
    n->output(i)->set_type(out_types[i]);
    small = small && out_types[i].ByteSize() <= kInlineFoldBytes;
  }
  const ops::OpDef* def = ops::FindOp(*n);
  if (def && def->expand) {  // a composite op becomes the (typed) ops that define it
    return ops::ExpandNode(graph, n);
  }
  if (small || (def && def->value_independent)) {
    KEEL_ASSIGN_OR_RETURN(bool folded, TryFoldNode(graph, n, kInlineFoldBytes));
    (void)folded;
  }
  return Status::Ok();
}

}  // namespace

Status InferShapes(ir::Graph& graph) {
  for (ir::Node* n : graph.nodes()) KEEL_RETURN_IF_ERROR(InferNode(graph, n));
  for (ir::Value* out : graph.outputs()) {
    if (!out->has_type()) return InvalidArgument("graph output '" + out->name() + "' has no type");
  }
  return Status::Ok();
}

Status ShapeInferencePass::Run(ir::Graph& graph) {
  KEEL_RETURN_IF_ERROR(InferShapes(graph));
  graph.RemoveDeadValues();
  return Status::Ok();
}

}  // namespace keel::passes
