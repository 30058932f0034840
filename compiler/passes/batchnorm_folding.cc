// compiler/passes/batchnorm_folding.cc — BatchNormalization folding (see batchnorm_folding.h).
#include "compiler/passes/batchnorm_folding.h"

#include <optional>

#include "compiler/ops/op_util.h"
#include "compiler/ops/registry.h"

namespace keel::passes {
namespace {

bool SingleUse(const ir::Graph& g, const ir::Value* v) { return v->uses().size() == 1 && !g.IsGraphOutput(v); }

// Replaces `bn` (y = s*x + t per channel) by folding s and t into x's producer
// when it can absorb them, else by a Mul and an Add with [C,1,...,1] constants.
Status FoldOne(ir::Graph& g, ir::Node* bn, const std::vector<double>& s, const std::vector<double>& t) {
  ir::Value* x = bn->input(0);
  const size_t c = s.size();
  ir::Value* y = bn->output(0);
  ir::Node* producer = x->producer();
  if (producer && SingleUse(g, x) && x->type().dtype == ir::DType::kF32) {
    const ops::OpDef* def = ops::FindOp(*producer);
    bool folded = false;
    if (def && def->fold_scale_shift) {
      KEEL_ASSIGN_OR_RETURN(folded, def->fold_scale_shift(g, *producer, s, t));
    }
    if (folded) {
      return g.ReplaceNodeWith(bn, x);
    }
  }
  // Scale + shift with [C,1,...,1] constants.
  std::vector<int64_t> shape(x->type().shape.size() - 1, 1);
  shape[0] = static_cast<int64_t>(c);
  ir::Value* sv = ops::AddF32Constant(g, bn->name() + "/bn_scale", shape, s);
  ir::Value* tv = ops::AddF32Constant(g, bn->name() + "/bn_shift", shape, t);
  ir::Node* mul = g.InsertNodeBefore(bn, "Mul", bn->name() + "/scale", {x, sv}, 1);
  mul->output(0)->set_type(x->type());
  ir::Node* add = g.InsertNodeBefore(bn, "Add", bn->name() + "/shift", {mul->output(0), tv}, 1);
  add->output(0)->set_type(y->type());
  std::string name = y->name();
  g.ReplaceAllUsesWith(y, add->output(0));
  KEEL_RETURN_IF_ERROR(g.RemoveNode(bn));
  add->output(0)->set_name(name);
  return Status::Ok();
}

}  // namespace

Status BatchNormFoldingPass::Run(ir::Graph& graph) {
  for (ir::Node* n : graph.nodes()) {
    const ops::OpDef* def = ops::FindOp(*n);
    if (def == nullptr || !def->as_scale_shift) continue;
    KEEL_ASSIGN_OR_RETURN(std::optional<ops::ScaleShift> st, def->as_scale_shift(*n));
    if (st) KEEL_RETURN_IF_ERROR(FoldOne(graph, n, st->s, st->t));
  }
  graph.RemoveDeadValues();
  return Status::Ok();
}

}  // namespace keel::passes
