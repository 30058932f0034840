// compiler/ops/decoder_ops.cc — the small decoder building blocks of opsets
// 24-28: SwiGLU (28), TensorScatter (24) and CausalConvWithState (27).
//
//   SwiGLU             elementwise: Y = A * sigmoid(alpha * A) * B; A and B
//                      must have identical shapes (the spec applies no
//                      broadcasting).
//   TensorScatter      injective: the KV-cache update. Output position p on
//                      the sequence axis of batch b holds update[p - w[b]] when
//                      that step exists (circular mode: (p - w[b]) mod max),
//                      else the past cache's value. Expressed output-centric so
//                      it fuses into its consumer; write_indices are run-time
//                      data (a write past the cache in linear mode is dropped).
//   CausalConvWithState composite (expansion.h): padded = past_state (or k-1
//                      zeros) ++ input along time; a depthwise Conv (group = C,
//                      no padding) with the optional bias, optional SiLU; the
//                      new state is the last k-1 steps of `padded`. f16/bf16
//                      convolve in f32 (the Conv kernels are f32/f64).
#include "compiler/codegen/lower_context.h"
#include "compiler/ops/elementwise_support.h"
#include "compiler/ops/expansion.h"
#include "compiler/ops/movement_util.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using codegen::TensorFn;
using ir::Value;

// ---- SwiGLU --------------------------------------------------------------------

void AddSwiGLU(Registry& r) {
  ElementwiseSpec s;
  s.name = "SwiGLU";
  s.versions = {28};
  s.types = kFloatTypes;
  s.min_inputs = s.max_inputs = 2;
  s.canonicalize = [](ir::Node& node) -> Status {
    KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
    if (InputType(node, 0).shape != InputType(node, 1).shape) {
      return NodeError(node, "A " + InputType(node, 0).ToString() + " and B " + InputType(node, 1).ToString() +
                                 " must have identical shapes (SwiGLU does not broadcast)");
    }
    return Status::Ok();
  };
  s.scalar = [](const ScalarArgs& a) -> Result<Expr> {
    KEEL_ASSIGN_OR_RETURN(double alpha, a.node.attrs().GetFloat("alpha", 1.0));
    const Expr& x = a.operands[0];
    const Expr gate = x * codegen::Unary(codegen::UnaryOp::kSigmoid, x * ConstOf(alpha, x.type()));
    return gate * a.operands[1];
  };
  AddElementwise(r, std::move(s));
}

// ---- TensorScatter ---------------------------------------------------------------

enum ScatterInput { kPast, kUpdate, kWriteIndices };

Status CanonicalizeTensorScatter(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
  const int64_t rank = static_cast<int64_t>(InputType(node, kPast).shape.size());
  if (rank < 2) return NodeError(node, "past_cache must have rank >= 2, got " + InputType(node, kPast).ToString());
  KEEL_RETURN_IF_ERROR(CanonicalizeAxisAttr(node, "axis", -2, rank));
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", -2));
  if (axis == 0) return NodeError(node, "axis cannot be 0 (the batch dimension)");
  KEEL_ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("mode", "linear"));
  if (mode != "linear" && mode != "circular") return NodeError(node, "mode must be 'linear' or 'circular', got '" + mode + "'");
  node.attrs().Set("mode", mode);
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferTensorScatter(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
  const ir::TensorType& past = InputType(node, kPast);
  const ir::TensorType& upd = InputType(node, kUpdate);
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", -2));
  if (upd.dtype != past.dtype) return NodeError(node, "update and past_cache dtypes differ");
  bool ok = upd.shape.size() == past.shape.size();
  for (size_t d = 0; ok && d < past.shape.size(); ++d) {
    ok = static_cast<int64_t>(d) == axis ? upd.shape[d] <= past.shape[d] : upd.shape[d] == past.shape[d];
  }
  if (!ok) {
    return NodeError(node, "update " + upd.ToString() + " does not fit past_cache " + past.ToString() + " on axis " +
                               std::to_string(axis));
  }
  if (HasInput(node, kWriteIndices)) {
    KEEL_RETURN_IF_ERROR(CheckIndexDType(node, kWriteIndices));
    if (InputType(node, kWriteIndices).shape != std::vector<int64_t>{past.shape[0]}) {
      return NodeError(node, "write_indices " + InputType(node, kWriteIndices).ToString() + " must have shape [" +
                                 std::to_string(past.shape[0]) + "]");
    }
  }
  return One(past);
}

Status DefineTensorScatter(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* past, ctx.Input(node, kPast));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* upd, ctx.Input(node, kUpdate));
  const TensorFn* wi = nullptr;
  if (HasInput(node, kWriteIndices)) {
    KEEL_ASSIGN_OR_RETURN(wi, ctx.Input(node, kWriteIndices));
  }
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", -2));
  KEEL_ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("mode", "linear"));
  const size_t ax = static_cast<size_t>(axis);
  const int64_t max_len = past->type.shape[ax];
  const int64_t seq = upd->type.shape[ax];
  const bool circular = mode == "circular";
  TensorFn fn;
  fn.type = node.output(0)->type();
  fn.at = [past, upd, wi, ax, max_len, seq, circular](const std::vector<Expr>& idx) {
    if (seq == 0) return past->at(idx);
    Expr w = wi ? codegen::Cast(wi->at({idx[0]}), ir::DType::kI64) : Expr(0);
    // The update step written at cache position p: p = w + s (mod max_len when circular).
    Expr s = idx[ax] - w;
    if (circular) s = (s % max_len + max_len) % max_len;
    std::vector<Expr> src = idx;
    src[ax] = codegen::Clamp(s, 0, seq - 1);
    const Expr written = s >= Expr(0) && s < Expr(seq);
    return codegen::Select(written, upd->at(src), past->at(idx));
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// ---- CausalConvWithState ---------------------------------------------------------------

enum CausalInput { kX, kWeight, kBias, kPastState };

Result<std::vector<ir::TensorType>> InferCausalConv(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 4));
  const ir::TensorType& x = InputType(node, kX);
  const ir::TensorType& w = InputType(node, kWeight);
  if (!IsFloatType(x.dtype)) return NodeUnsupported(node, std::string("CausalConvWithState on ") + ir::DTypeName(x.dtype));
  if (x.shape.size() != 3) return NodeError(node, "input must be [batch, channels, length], got " + x.ToString());
  const int64_t b = x.shape[0], c = x.shape[1];
  if (w.shape.size() != 3 || w.shape[0] != c || w.shape[1] != 1 || w.shape[2] < 1 || w.dtype != x.dtype) {
    return NodeError(node, "weight " + w.ToString() + " must be [" + std::to_string(c) + ", 1, k] of the input's dtype");
  }
  const int64_t k = w.shape[2];
  if (HasInput(node, kBias) && (InputType(node, kBias).shape != std::vector<int64_t>{c} ||
                                InputType(node, kBias).dtype != x.dtype)) {
    return NodeError(node, "bias " + InputType(node, kBias).ToString() + " must be [" + std::to_string(c) + "]");
  }
  const std::vector<int64_t> state{b, c, k - 1};
  if (HasInput(node, kPastState) &&
      (InputType(node, kPastState).shape != state || InputType(node, kPastState).dtype != x.dtype)) {
    return NodeError(node, "past_state " + InputType(node, kPastState).ToString() + " must be " + ShapeString(state));
  }
  KEEL_ASSIGN_OR_RETURN(std::string act, node.attrs().GetString("activation", "none"));
  if (act != "none" && act != "silu" && act != "swish") {
    return NodeError(node, "activation must be 'none', 'silu' or 'swish', got '" + act + "'");
  }
  std::vector<ir::TensorType> out{x, {x.dtype, state}};
  out.resize(node.outputs().size());
  return out;
}

Result<std::vector<Value*>> ExpandCausalConv(Expander& b, const ir::Node& node) {
  Value* x = node.input(kX);
  const ir::DType t = x->type().dtype;
  const int64_t c = x->type().shape[1];
  const int64_t k = node.input(kWeight)->type().shape[2];
  Value* padded = x;
  if (HasInput(node, kPastState)) {
    if (k > 1) {
      KEEL_ASSIGN_OR_RETURN(padded, b.Op("Concat", {node.input(kPastState), x}, {{"axis", int64_t{2}}}));
    }
  } else if (k > 1) {
    KEEL_ASSIGN_OR_RETURN(padded, b.Op("Pad", {x, b.Ints({0, 0, k - 1, 0, 0, 0})}));
  }
  const int64_t total = padded->type().shape[2];
  KEEL_ASSIGN_OR_RETURN(Value* state,
                        b.Op("Slice", {padded, b.Ints({total - (k - 1)}), b.Ints({total}), b.Ints({2}), b.Ints({1})}));

  // The convolution runs in f32 for the half types (the Conv kernels' dtypes).
  const bool widen = t == ir::DType::kF16 || t == ir::DType::kBF16;
  auto wide = [&](Value* v) -> Result<Value*> {
    if (!widen) return v;
    return b.Op("Cast", {v}, {{"to", std::string("f32")}});
  };
  std::vector<Value*> conv_in;
  KEEL_ASSIGN_OR_RETURN(Value* xp, wide(padded));
  KEEL_ASSIGN_OR_RETURN(Value* w, wide(node.input(kWeight)));
  conv_in = {xp, w};
  if (HasInput(node, kBias)) {
    KEEL_ASSIGN_OR_RETURN(Value* bias, wide(node.input(kBias)));
    conv_in.push_back(bias);
  }
  KEEL_ASSIGN_OR_RETURN(Value* y, b.Op("Conv", conv_in, {{"group", c}}));
  KEEL_ASSIGN_OR_RETURN(std::string act, node.attrs().GetString("activation", "none"));
  if (act == "silu" || act == "swish") {
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Swish", {y}));
  }
  if (widen) {
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Cast", {y}, {{"to", std::string(ir::DTypeName(t))}}));
  }
  std::vector<Value*> outs{y, state};
  outs.resize(node.outputs().size());
  return outs;
}

}  // namespace

void RegisterDecoderOps(Registry& r) {
  AddSwiGLU(r);
  {
    OpDef def;
    def.name = "TensorScatter";
    def.versions = {24};
    def.fusion = FusionClass::kInjective;
    def.canonicalize = CanonicalizeTensorScatter;
    def.infer = InferTensorScatter;
    def.injective = DefineTensorScatter;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "CausalConvWithState";
    def.versions = {27};
    def.removed_by = "shape-inference (expansion)";
    def.infer = InferCausalConv;
    def.expand = ExpandCausalConv;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
