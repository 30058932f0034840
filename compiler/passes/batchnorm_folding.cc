// compiler/passes/batchnorm_folding.cc — BatchNormalization folding (see batchnorm_folding.h).
#include "compiler/passes/batchnorm_folding.h"

#include <cmath>

#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::passes {
namespace {

std::vector<double> ConstValues(const ir::Node& n, size_t i) { return ops::TensorToDoubles(*n.input(i)->constant()); }

// Inference BN on f32 data with constant per-channel parameters; the others stay
// and compile as the op's own kernel (compiler/ops/normalization_batch.cc).
Result<bool> Foldable(const ir::Node& bn) {
  KEEL_ASSIGN_OR_RETURN(int64_t training, bn.attrs().GetInt("training_mode", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t spatial, bn.attrs().GetInt("spatial", 1));
  if (training != 0 || spatial == 0 || bn.outputs().size() != 1 || bn.inputs().size() != 5) return false;
  const ir::Value* x = bn.input(0);
  if (!x || !x->has_type() || x->type().dtype != ir::DType::kF32) return false;
  for (size_t i = 1; i < 5; ++i) {
    if (!bn.input(i) || !bn.input(i)->is_constant()) return false;
  }
  return true;
}

bool SingleUse(const ir::Graph& g, const ir::Value* v) { return v->uses().size() == 1 && !g.IsGraphOutput(v); }

Status FoldOne(ir::Graph& g, ir::Node* bn) {
  ir::Value* x = bn->input(0);
  if (!x || !x->has_type() || x->type().shape.size() < 2) {
    return InvalidArgument(ir::NodeDescription(*bn) + ": input must be typed with rank >= 2");
  }
  KEEL_ASSIGN_OR_RETURN(bool foldable, Foldable(*bn));
  if (!foldable) return Status::Ok();
  KEEL_ASSIGN_OR_RETURN(double eps, bn->attrs().GetFloat("epsilon", 1e-5));
  const std::vector<double> gamma = ConstValues(*bn, 1), beta = ConstValues(*bn, 2), mean = ConstValues(*bn, 3),
                            var = ConstValues(*bn, 4);
  const size_t c = static_cast<size_t>(x->type().shape[1]);
  if (gamma.size() != c || beta.size() != c || mean.size() != c || var.size() != c) {
    return InvalidArgument(ir::NodeDescription(*bn) + ": parameters do not have " + std::to_string(c) + " elements");
  }
  std::vector<double> s(c), t(c);
  for (size_t i = 0; i < c; ++i) {
    s[i] = gamma[i] / std::sqrt(var[i] + eps);
    t[i] = beta[i] - mean[i] * s[i];
  }
  ir::Value* y = bn->output(0);
  ir::Node* producer = x->producer();
  if (producer && SingleUse(g, x) && x->type().dtype == ir::DType::kF32) {
    const ops::OpDef* def = ops::FindOp(*producer);
    bool folded = false;
    if (def && def->fold_scale_shift) {
      KEEL_ASSIGN_OR_RETURN(folded, def->fold_scale_shift(g, *producer, s, t));
    }
    if (folded) {
      std::string name = y->name();
      bool was_output = g.IsGraphOutput(y);
      g.ReplaceAllUsesWith(y, x);
      KEEL_RETURN_IF_ERROR(g.RemoveNode(bn));
      if (was_output) x->set_name(name);
      return Status::Ok();
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
    if (n->op_type() == "BatchNormalization") KEEL_RETURN_IF_ERROR(FoldOne(graph, n));
  }
  graph.RemoveDeadValues();
  return Status::Ok();
}

}  // namespace keel::passes
