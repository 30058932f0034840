// compiler/ops/linear_attention.cc — LinearAttention (27): the recurrent
// attention of linear-attention / DeltaNet models, a composite (expansion.h).
//
// Q [B, T, Hq*dk], K [B, T, Hkv*dk], V [B, T, Hkv*dv]; a state S [B, Hkv, dk,
// dv] (past_state, or zeros) is updated once per time step:
//   linear       S = S + k v^T
//   gated        S = exp(g) * S + k v^T              (g per head or per key dim)
//   delta        S = S + k (beta * (v - S^T k))^T
//   gated_delta  S = exp(g) * S, then the delta update on the decayed S
// and o_t = scale * q_t^T S (query head h reads KV head h / (Hq/Hkv)). The
// output is [B, T, Hq*dv]; present_state the final S in past_state's dtype (or
// the query's when there is none).
//
// The delta rules make the recurrence non-linear in S, so the expansion unrolls
// it over the (static) T steps: per step a few small MatMuls and elementwise ops
// on [B, Hkv, ...] tensors, in f32 like the reference (f16/bf16 are widened).
// Unrolling bounds the graph: more than kMaxSteps steps are refused.
// chunk_size is a tuning hint of the spec with no effect on the result.
#include <cmath>

#include "compiler/ops/expansion.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using ir::Value;

constexpr int64_t kMaxSteps = 256;

enum LinearAttentionInput { kQuery, kKey, kValue, kPastState, kDecay, kBeta };

struct LinearDims {
  int64_t batch = 0, steps = 0, q_heads = 0, kv_heads = 0, dk = 0, dv = 0;
  bool gated = false, delta = false, per_dim_decay = false;
};

Result<LinearDims> LinearShape(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 3, 6));
  LinearDims d;
  KEEL_ASSIGN_OR_RETURN(std::string rule, node.attrs().GetString("update_rule", "gated_delta"));
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") {
    return NodeError(node, "update_rule must be linear, gated, delta or gated_delta, got '" + rule + "'");
  }
  d.gated = rule == "gated" || rule == "gated_delta";
  d.delta = rule == "delta" || rule == "gated_delta";
  if (d.gated != HasInput(node, kDecay)) {
    return NodeError(node, "update_rule '" + rule + (d.gated ? "' requires" : "' forbids") + " the decay input");
  }
  if (d.delta != HasInput(node, kBeta)) {
    return NodeError(node, "update_rule '" + rule + (d.delta ? "' requires" : "' forbids") + " the beta input");
  }
  KEEL_ASSIGN_OR_RETURN(d.q_heads, node.attrs().GetInt("q_num_heads", 0));
  KEEL_ASSIGN_OR_RETURN(d.kv_heads, node.attrs().GetInt("kv_num_heads", 0));
  if (d.q_heads <= 0 || d.kv_heads <= 0 || d.q_heads % d.kv_heads != 0) {
    return NodeError(node, "q_num_heads " + std::to_string(d.q_heads) + " must be a positive multiple of kv_num_heads " +
                               std::to_string(d.kv_heads));
  }
  const ir::TensorType& q = InputType(node, kQuery);
  const ir::TensorType& k = InputType(node, kKey);
  const ir::TensorType& v = InputType(node, kValue);
  if (q.shape.size() != 3 || k.shape.size() != 3 || v.shape.size() != 3) {
    return NodeError(node, "query, key and value must be [B, T, heads*D]");
  }
  if (k.dtype != q.dtype || v.dtype != q.dtype) return NodeError(node, "query, key and value dtypes differ");
  d.batch = q.shape[0];
  d.steps = q.shape[1];
  if (k.shape[0] != d.batch || v.shape[0] != d.batch || k.shape[1] != d.steps || v.shape[1] != d.steps) {
    return NodeError(node, "query " + q.ToString() + ", key " + k.ToString() + " and value " + v.ToString() +
                               " differ in batch or sequence length");
  }
  if (q.shape[2] % d.q_heads != 0 || v.shape[2] % d.kv_heads != 0) {
    return NodeError(node, "hidden sizes are not divisible by the head counts");
  }
  d.dk = q.shape[2] / d.q_heads;
  d.dv = v.shape[2] / d.kv_heads;
  if (k.shape[2] != d.kv_heads * d.dk) return NodeError(node, "key " + k.ToString() + " does not have kv_num_heads * d_k columns");
  const std::vector<int64_t> state{d.batch, d.kv_heads, d.dk, d.dv};
  if (HasInput(node, kPastState) && InputType(node, kPastState).shape != state) {
    return NodeError(node, "past_state " + InputType(node, kPastState).ToString() + " must be " + ShapeString(state));
  }
  if (HasInput(node, kDecay)) {
    const ir::TensorType& g = InputType(node, kDecay);
    if (g.shape.size() != 3 || g.shape[0] != d.batch || g.shape[1] != d.steps ||
        (g.shape[2] != d.kv_heads && g.shape[2] != d.kv_heads * d.dk) || g.dtype != q.dtype) {
      return NodeError(node, "decay " + g.ToString() + " must be [B, T, kv_num_heads] or [B, T, kv_num_heads * d_k]");
    }
    d.per_dim_decay = g.shape[2] != d.kv_heads;
  }
  if (HasInput(node, kBeta)) {
    const ir::TensorType& b = InputType(node, kBeta);
    if (b.shape.size() != 3 || b.shape[0] != d.batch || b.shape[1] != d.steps ||
        (b.shape[2] != d.kv_heads && b.shape[2] != 1) || b.dtype != q.dtype) {
      return NodeError(node, "beta " + b.ToString() + " must be [B, T, kv_num_heads] or [B, T, 1]");
    }
  }
  return d;
}

Result<std::vector<ir::TensorType>> InferLinearAttention(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(LinearDims d, LinearShape(node));
  const ir::DType t = InputType(node, kQuery).dtype;
  if (!IsFloatType(t)) return NodeUnsupported(node, std::string("LinearAttention on ") + ir::DTypeName(t));
  if (HasInput(node, kPastState) && !IsFloatType(InputType(node, kPastState).dtype)) {
    return NodeError(node, "past_state must be a floating-point tensor");
  }
  if (d.steps == 0) return NodeUnsupported(node, "an empty sequence (T = 0)");
  if (d.steps > kMaxSteps) {
    return NodeUnsupported(node, "sequence length " + std::to_string(d.steps) + " (the recurrence is unrolled; at most " +
                                     std::to_string(kMaxSteps) + " steps)");
  }
  const ir::DType st = HasInput(node, kPastState) ? InputType(node, kPastState).dtype : t;
  std::vector<ir::TensorType> out{{t, {d.batch, d.steps, d.q_heads * d.dv}}, {st, {d.batch, d.kv_heads, d.dk, d.dv}}};
  out.resize(node.outputs().size());
  return out;
}

Result<std::vector<Value*>> ExpandLinearAttention(Expander& b, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(LinearDims d, LinearShape(node));
  const ir::DType t = InputType(node, kQuery).dtype;
  const int64_t B = d.batch, T = d.steps, Hkv = d.kv_heads, G = d.q_heads / d.kv_heads;
  auto f32 = [&](Value* v) -> Result<Value*> {
    if (v->type().dtype == ir::DType::kF32) return v;
    return b.Op("Cast", {v}, {{"to", std::string("f32")}});
  };
  auto reshape = [&](Value* v, std::vector<int64_t> shape) { return b.Op("Reshape", {v, b.Ints(shape)}); };
  auto transpose = [&](Value* v, std::vector<int64_t> perm) { return b.Op("Transpose", {v}, {{"perm", perm}}); };
  // Step `i` of `v` along `axis`, reshaped to `shape`.
  auto step = [&](Value* v, int64_t axis, int64_t i, std::vector<int64_t> shape) -> Result<Value*> {
    KEEL_ASSIGN_OR_RETURN(Value* s, b.Op("Slice", {v, b.Ints({i}), b.Ints({i + 1}), b.Ints({axis}), b.Ints({1})}));
    return reshape(s, std::move(shape));
  };

  // Q [B, Hkv, G, T, dk] scaled once; K [B, Hkv, T, dk]; V [B, Hkv, T, dv].
  KEEL_ASSIGN_OR_RETURN(double scale, node.attrs().GetFloat("scale", 0.0));
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(d.dk));
  KEEL_ASSIGN_OR_RETURN(Value* q, f32(node.input(kQuery)));
  KEEL_ASSIGN_OR_RETURN(q, reshape(q, {B, T, Hkv, G, d.dk}));
  KEEL_ASSIGN_OR_RETURN(q, transpose(q, {0, 2, 3, 1, 4}));
  KEEL_ASSIGN_OR_RETURN(q, b.Op("Mul", {q, b.Scalar(scale, ir::DType::kF32)}));
  KEEL_ASSIGN_OR_RETURN(Value* k, f32(node.input(kKey)));
  KEEL_ASSIGN_OR_RETURN(k, reshape(k, {B, T, Hkv, d.dk}));
  KEEL_ASSIGN_OR_RETURN(k, transpose(k, {0, 2, 1, 3}));
  KEEL_ASSIGN_OR_RETURN(Value* v, f32(node.input(kValue)));
  KEEL_ASSIGN_OR_RETURN(v, reshape(v, {B, T, Hkv, d.dv}));
  KEEL_ASSIGN_OR_RETURN(v, transpose(v, {0, 2, 1, 3}));
  // exp(decay) as [B, Hkv, T, dk] (per key dim) or [B, Hkv, T] (per head).
  Value* decay = nullptr;
  if (d.gated) {
    KEEL_ASSIGN_OR_RETURN(decay, f32(node.input(kDecay)));
    KEEL_ASSIGN_OR_RETURN(decay, b.Op("Exp", {decay}));
    if (d.per_dim_decay) {
      KEEL_ASSIGN_OR_RETURN(decay, reshape(decay, {B, T, Hkv, d.dk}));
      KEEL_ASSIGN_OR_RETURN(decay, transpose(decay, {0, 2, 1, 3}));
    } else {
      KEEL_ASSIGN_OR_RETURN(decay, transpose(decay, {0, 2, 1}));
    }
  }
  // beta as [B, Hb, T] (Hb = Hkv or 1).
  Value* beta = nullptr;
  int64_t beta_heads = 0;
  if (d.delta) {
    beta_heads = InputType(node, kBeta).shape[2];
    KEEL_ASSIGN_OR_RETURN(beta, f32(node.input(kBeta)));
    KEEL_ASSIGN_OR_RETURN(beta, transpose(beta, {0, 2, 1}));
  }

  Value* s = nullptr;
  if (HasInput(node, kPastState)) {
    KEEL_ASSIGN_OR_RETURN(s, f32(node.input(kPastState)));
  } else {
    s = b.Const(NewTensor({ir::DType::kF32, {B, Hkv, d.dk, d.dv}}));  // zero-filled
  }
  std::vector<Value*> outs;
  for (int64_t i = 0; i < T; ++i) {
    if (d.gated) {
      KEEL_ASSIGN_OR_RETURN(Value* g, d.per_dim_decay ? step(decay, 2, i, {B, Hkv, d.dk, 1})
                                                      : step(decay, 2, i, {B, Hkv, 1, 1}));
      KEEL_ASSIGN_OR_RETURN(s, b.Op("Mul", {s, g}));
    }
    KEEL_ASSIGN_OR_RETURN(Value* k_row, step(k, 2, i, {B, Hkv, 1, d.dk}));
    KEEL_ASSIGN_OR_RETURN(Value* k_col, reshape(k_row, {B, Hkv, d.dk, 1}));
    KEEL_ASSIGN_OR_RETURN(Value* v_row, step(v, 2, i, {B, Hkv, 1, d.dv}));
    if (d.delta) {
      KEEL_ASSIGN_OR_RETURN(Value* retrieved, b.Op("MatMul", {k_row, s}));  // S^T k as a row
      KEEL_ASSIGN_OR_RETURN(Value* diff, b.Op("Sub", {v_row, retrieved}));
      KEEL_ASSIGN_OR_RETURN(Value* bt, step(beta, 2, i, {B, beta_heads, 1, 1}));
      KEEL_ASSIGN_OR_RETURN(v_row, b.Op("Mul", {diff, bt}));
    }
    KEEL_ASSIGN_OR_RETURN(Value* outer, b.Op("Mul", {k_col, v_row}));
    KEEL_ASSIGN_OR_RETURN(s, b.Op("Add", {s, outer}));
    KEEL_ASSIGN_OR_RETURN(Value* q_t, step(q, 3, i, {B, Hkv, G, d.dk}));
    KEEL_ASSIGN_OR_RETURN(Value* o, b.Op("MatMul", {q_t, s}));  // [B, Hkv, G, dv]
    KEEL_ASSIGN_OR_RETURN(o, reshape(o, {B, Hkv, G, 1, d.dv}));
    outs.push_back(o);
  }
  Value* y = outs.front();
  if (outs.size() > 1) {
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Concat", outs, {{"axis", int64_t{3}}}));
  }
  // [B, Hkv, G, T, dv] -> [B, T, Hq * dv]: query head h = hkv * G + g.
  KEEL_ASSIGN_OR_RETURN(y, transpose(y, {0, 3, 1, 2, 4}));
  KEEL_ASSIGN_OR_RETURN(y, reshape(y, {B, T, d.q_heads * d.dv}));
  if (t != ir::DType::kF32) {
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Cast", {y}, {{"to", std::string(ir::DTypeName(t))}}));
  }
  const ir::DType st = HasInput(node, kPastState) ? InputType(node, kPastState).dtype : t;
  if (st != ir::DType::kF32) {
    KEEL_ASSIGN_OR_RETURN(s, b.Op("Cast", {s}, {{"to", std::string(ir::DTypeName(st))}}));
  } else if (s == node.input(kPastState)) {
    KEEL_ASSIGN_OR_RETURN(s, b.Op("Identity", {s}));
  }
  std::vector<Value*> result{y, s};
  result.resize(node.outputs().size());
  return result;
}

}  // namespace

void RegisterLinearAttentionOps(Registry& r) {
  OpDef def;
  def.name = "LinearAttention";
  def.versions = {27};
  def.removed_by = "shape-inference (expansion)";
  def.infer = InferLinearAttention;
  def.expand = ExpandLinearAttention;
  r.Add(std::move(def));
}

}  // namespace keel::ops
