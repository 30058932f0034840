// compiler/passes/simplify.cc — Identity/Dropout removal and view conversion (see simplify.h).
#include "compiler/passes/simplify.h"

#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/semantics.h"
#include "compiler/passes/constant_folding.h"

namespace keel::passes {
namespace {

// ONNX reshape-like ops (the internal view itself is keel.Reshape).
bool IsViewOp(const ops::OpDef* def) { return def && def->reshape_like && def->domain != "keel"; }

// Removes a pass-through node (output == input 0). Returns false when it must stay.
// Its other outputs (Dropout's mask) do not depend on the input's values: they
// become constants, evaluated on a zero input of the input's type.
Result<bool> Bypass(ir::Graph& graph, ir::Node* n, const ops::OpDef& def) {
  ir::Value* in = n->input(0);
  ir::Value* out = n->output(0);
  bool secondary_used = false;
  for (size_t i = 1; i < n->outputs().size(); ++i) {
    secondary_used = secondary_used || !n->output(i)->uses().empty() || graph.IsGraphOutput(n->output(i));
  }
  if (secondary_used) {
    if (!in->has_type()) return false;
    std::vector<ir::TensorDataPtr> args(n->inputs().size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (ir::Value* v = n->input(i)) args[i] = v->is_constant() ? v->constant() : ops::NewTensor(v->type());
    }
    KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorDataPtr> outs, ops::EvaluateNode(*n, args));
    for (size_t i = 1; i < n->outputs().size(); ++i) ReplaceWithConstant(graph, n, n->output(i), outs[i]);
  }
  if (graph.IsGraphOutput(out)) {
    bool input_is_plain = in->producer() != nullptr && !graph.IsGraphOutput(in);
    if (!input_is_plain) {
      // A copy is needed: an Identity (which has a kernel) does it, whatever op
      // this was; an identity-like op with a kernel of its own is that copy.
      if (def.fusion != ops::FusionClass::kNone) return false;
      ir::Node* copy = graph.InsertNodeBefore(n, "Identity", n->name(), {in}, 1);
      if (out->has_type()) copy->output(0)->set_type(out->type());
      const std::string name = out->name();
      graph.ReplaceAllUsesWith(out, copy->output(0));
      KEEL_RETURN_IF_ERROR(graph.RemoveNode(n));
      copy->output(0)->set_name(name);
      return true;
    }
    in->set_name(out->name());
  }
  graph.ReplaceAllUsesWith(out, in);
  KEEL_RETURN_IF_ERROR(graph.RemoveNode(n));
  return true;
}

// A transpose (OpDef::permutes_axes) that moves only size-1 axes keeps every
// element at its offset: a reshape. (Batch-first exports transpose [S, 1, E]
// to [1, S, E] at batch 1.)
bool MovesOnlyUnitAxes(const ir::Node& n, const ops::OpDef* def) {
  if (def == nullptr || !def->permutes_axes || !n.input(0) || !n.input(0)->has_type()) return false;
  auto perm = n.attrs().GetInts("perm", {});
  if (!perm.ok()) return false;
  const std::vector<int64_t>& shape = n.input(0)->type().shape;
  if (perm->size() != shape.size()) return false;
  int64_t last = -1;
  for (int64_t p : *perm) {
    if (p < 0 || p >= static_cast<int64_t>(shape.size())) return false;
    if (shape[static_cast<size_t>(p)] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

}  // namespace

Status SimplifyPass::Run(ir::Graph& graph) {
  for (ir::Node* n : graph.nodes()) {
    const ops::OpDef* def = ops::FindOp(*n);
    if (def && def->identity_like && n->input(0)) {
      // Its other operands must be valid first (Dropout's training_mode must be
      // a constant false): canonicalize once they are typed, else wait for the
      // run after shape inference.
      if (n->inputs().size() > 1) {
        bool typed = true;
        for (ir::Value* in : n->inputs()) typed = typed && (!in || in->has_type());
        if (!typed) continue;
        KEEL_RETURN_IF_ERROR(ops::CanonicalizeNode(*n));
      }
      KEEL_ASSIGN_OR_RETURN(bool removed, Bypass(graph, n, *def));
      (void)removed;
      continue;
    }
    if ((IsViewOp(def) || MovesOnlyUnitAxes(*n, def)) && n->input(0) && n->input(0)->has_type() && n->output(0)->has_type() &&
        !n->input(0)->is_constant()) {
      ir::Value* out = n->output(0);
      ir::Node* view = graph.InsertNodeBefore(n, "keel.Reshape", n->name(), {n->input(0)}, 1);
      view->attrs().Set("shape", out->type().shape);
      view->output(0)->set_type(out->type());
      std::string name = out->name();
      graph.ReplaceAllUsesWith(out, view->output(0));
      KEEL_RETURN_IF_ERROR(graph.RemoveNode(n));
      view->output(0)->set_name(name);
    }
  }
  return Status::Ok();
}

}  // namespace keel::passes
