// compiler/passes/batchnorm_folding.cc — BatchNormalization folding (see batchnorm_folding.h).
#include "compiler/passes/batchnorm_folding.h"

#include <cmath>

#include "compiler/ops/reference.h"

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

ir::Value* F32Const(ir::Graph& g, const std::string& name, std::vector<int64_t> shape, const std::vector<double>& v) {
  std::vector<float> f(v.begin(), v.end());
  return g.AddConstant(name, ops::MakeTensorF32(std::move(shape), f));
}

Result<bool> FoldIntoConv(ir::Graph& g, ir::Node* conv, const std::vector<double>& s,
                          const std::vector<double>& t) {
  ir::Value* w = conv->input(1);
  if (!w || !w->is_constant() || w->type().dtype != ir::DType::kF32) return false;
  if (conv->input(2) && !conv->input(2)->is_constant()) return false;
  std::vector<double> wv = ops::TensorToDoubles(*w->constant());
  int64_t oc = w->type().shape[0];
  if (static_cast<int64_t>(s.size()) != oc) return false;
  int64_t per = static_cast<int64_t>(wv.size()) / oc;
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t i = 0; i < per; ++i) wv[static_cast<size_t>(o * per + i)] *= s[static_cast<size_t>(o)];
  }
  std::vector<double> bv(static_cast<size_t>(oc), 0.0);
  if (conv->input(2)) {
    bv = ops::TensorToDoubles(*conv->input(2)->constant());
  }
  for (int64_t o = 0; o < oc; ++o) {
    size_t ou = static_cast<size_t>(o);
    bv[ou] = bv[ou] * s[ou] + t[ou];
  }
  std::vector<ir::Value*> inputs = {conv->input(0), F32Const(g, w->name() + "/bn_folded", w->type().shape, wv),
                                    F32Const(g, conv->name() + "/bn_bias", {oc}, bv)};
  conv->SetInputs(inputs);
  return true;
}

Result<bool> FoldIntoGemm(ir::Graph& g, ir::Node* gemm, const std::vector<double>& s,
                          const std::vector<double>& t) {
  ir::Value* b = gemm->input(1);
  if (!b || !b->is_constant() || b->type().dtype != ir::DType::kF32) return false;
  ir::Value* c = gemm->input(2);
  if (c && !c->is_constant()) return false;
  const int64_t n = gemm->output(0)->type().shape[1];
  if (static_cast<int64_t>(s.size()) != n) return false;
  KEEL_ASSIGN_OR_RETURN(double alpha, gemm->attrs().GetFloat("alpha", 1.0));
  KEEL_ASSIGN_OR_RETURN(double beta, gemm->attrs().GetFloat("beta", 1.0));
  KEEL_ASSIGN_OR_RETURN(int64_t tb, gemm->attrs().GetInt("transB", 0));
  std::vector<double> cv(static_cast<size_t>(n), 0.0);
  if (c) {
    const auto& cs = c->type().shape;
    bool row_broadcast = cs.empty() || (cs.size() == 1) || (cs.size() == 2 && cs[0] == 1);
    if (!row_broadcast) return false;
    std::vector<double> raw = ops::TensorToDoubles(*c->constant());
    for (int64_t j = 0; j < n; ++j) cv[static_cast<size_t>(j)] = raw.size() == 1 ? raw[0] : raw[static_cast<size_t>(j)];
  }
  std::vector<double> bv = ops::TensorToDoubles(*b->constant());
  int64_t k = static_cast<int64_t>(bv.size()) / n;
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t p = 0; p < k; ++p) {
      size_t idx = static_cast<size_t>(tb ? j * k + p : p * n + j);
      bv[idx] *= s[static_cast<size_t>(j)];
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    size_t ju = static_cast<size_t>(j);
    cv[ju] = beta * cv[ju] * s[ju] + t[ju];
  }
  (void)alpha;  // alpha scales A*B; scaling B's columns commutes with it
  std::vector<ir::Value*> inputs = {gemm->input(0), F32Const(g, b->name() + "/bn_folded", b->type().shape, bv),
                                    F32Const(g, gemm->name() + "/bn_bias", {n}, cv)};
  gemm->SetInputs(inputs);
  gemm->attrs().Set("beta", 1.0);
  return true;
}

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
    bool folded = false;
    if (producer->op_type() == "Conv") {
      KEEL_ASSIGN_OR_RETURN(folded, FoldIntoConv(g, producer, s, t));
    } else if (producer->op_type() == "Gemm") {
      KEEL_ASSIGN_OR_RETURN(folded, FoldIntoGemm(g, producer, s, t));
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
  ir::Value* sv = F32Const(g, bn->name() + "/bn_scale", shape, s);
  ir::Value* tv = F32Const(g, bn->name() + "/bn_shift", shape, t);
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
