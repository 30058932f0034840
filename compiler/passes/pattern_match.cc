// compiler/passes/pattern_match.cc — see pattern_match.h.
#include "compiler/passes/pattern_match.h"

#include <cmath>

#include "compiler/ops/channels_last.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::passes {

const ops::OpDef* DefOf(const ir::Node* n) { return n ? ops::FindOp(*n) : nullptr; }

ops::EpilogueRole EpilogueRoleOf(const ir::Node* n) {
  const ops::OpDef* d = DefOf(n);
  return d ? d->epilogue : ops::EpilogueRole::kNone;
}

std::optional<double> ConstScalar(const ir::Value* v) {
  if (!v || !v->is_constant() || v->constant()->type.NumElements() != 1) return std::nullopt;
  const ir::TensorData& t = *v->constant();
  if (!IsFloatType(t.type.dtype)) return std::nullopt;
  const double s = ops::ElementAsDouble(t, 0);  // any float type (f16 after mixed precision)
  if (!std::isfinite(s)) return std::nullopt;
  return s;
}

bool ConstantWeightConv(const ir::Node& conv, ops::LibraryCall call) {
  const ops::OpDef* def = DefOf(&conv);
  if (def == nullptr || def->library != call || conv.inputs().size() < 2 ||
      conv.outputs().size() != 1 || conv.attrs().Has(ops::kChannelsLastAttr)) {
    return false;
  }
  const ir::Value* x = conv.input(0);
  const ir::Value* w = conv.input(1);
  if (!x || !w || !x->has_type() || !w->is_constant() || !conv.output(0)->has_type()) return false;
  const ir::TensorType& wt = w->constant()->type;
  const Result<int64_t> group = conv.attrs().GetInt("group", 1);
  return x->type().dtype == ir::DType::kF32 && wt.dtype == ir::DType::kF32 &&
         wt.shape.size() == x->type().shape.size() && group.ok() && *group == 1;
}

Status ReplaceWithRewrite(ir::Graph& graph, ir::Node* n, ir::Value* out, const std::string& form) {
  if (!(out->type() == n->output(0)->type())) {
    return Internal(ir::NodeDescription(*n) + ": " + form + " form has type " + out->type().ToString() +
                    ", expected " + n->output(0)->type().ToString());
  }
  return graph.ReplaceNodeWith(n, out);  // a graph output keeps its name
}

bool SoleUse(const ir::Graph& g, const ir::Value* v) { return v->uses().size() == 1 && !g.IsGraphOutput(v); }

std::optional<std::pair<ir::Value*, double>> ScalarScale(const ir::Node* n) {
  if (!n || n->inputs().size() != 2 || n->outputs().size() != 1 || !n->output(0)->has_type()) return std::nullopt;
  const ir::TensorType& out = n->output(0)->type();
  auto operand = [&](size_t i) -> ir::Value* {
    ir::Value* x = n->input(i);
    return x && x->has_type() && x->type() == out ? x : nullptr;
  };
  if (EpilogueRoleOf(n) == ops::EpilogueRole::kMul) {
    for (size_t side = 0; side < 2; ++side) {
      std::optional<double> c = ConstScalar(n->input(1 - side));
      if (ir::Value* x = operand(side); x && c) return std::make_pair(x, *c);
    }
  }
  if (EpilogueRoleOf(n) == ops::EpilogueRole::kDiv) {
    std::optional<double> c = ConstScalar(n->input(1));
    if (ir::Value* x = operand(0); x && c && *c != 0.0) return std::make_pair(x, 1.0 / *c);
  }
  return std::nullopt;
}

}  // namespace keel::passes
