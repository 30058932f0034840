// compiler/ops/attention.cc — the transformer composites of opset 23+:
// Attention (23, 24, 25) and RotaryEmbedding (23).
//
// Both are composite ops (expansion.h): the ONNX spec defines them by a
// function body, and Keel expands them into the ops it already compiles well
// (MatMul on the library path, fused elementwise chains, Softmax), so their
// kernels and memory plan are the ones a decomposed exporter graph gets.
//
// Attention, as the spec's reference computes it:
//   3-D inputs [B, S, H*D] are split into heads ([B, H, S, D]); past_key/value
//   are prepended along the sequence (present_key/value); Q and K are each
//   scaled by sqrt(scale) (default scale 1/sqrt(D)); grouped-query attention
//   repeats each KV head q_heads/kv_heads times; scores = Q K^T, softcapped;
//   the additive bias combines attn_mask (bool: false -> -inf; padded with -inf
//   up to the total KV length), the bottom-right causal mask (query i attends
//   key j iff j <= i + offset, offset = past length, or nonpad_kv_seqlen[b] -
//   q_len), the sliding window (opset 25) and the nonpad_kv_seqlen padding; a
//   query row whose bias is all -inf attends nothing (its probabilities are 0).
#include <cmath>
#include <limits>

#include "compiler/ops/expansion.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using ir::Value;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

enum AttentionInput { kQ, kK, kV, kMask, kPastKey, kPastValue, kNonpad };
enum AttentionOutput { kY, kPresentKey, kPresentValue, kQkOutput };

// The shapes every part of the expansion needs, from the canonical node.
struct AttentionDims {
  bool rank3 = false;
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, past = 0, head = 0, v_head = 0;
  int64_t total() const { return past + kv_len; }
};

Result<AttentionDims> AttentionShape(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 3, 7));
  const auto& q = InputType(node, kQ).shape;
  const auto& k = InputType(node, kK).shape;
  const auto& v = InputType(node, kV).shape;
  AttentionDims d;
  if (q.size() != k.size() || q.size() != v.size() || (q.size() != 3 && q.size() != 4)) {
    return NodeError(node, "Q, K and V must all be 3-D or all 4-D, got " + ShapeString(q) + ", " + ShapeString(k) +
                               ", " + ShapeString(v));
  }
  KEEL_ASSIGN_OR_RETURN(int64_t qh, node.attrs().GetInt("q_num_heads", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t kvh, node.attrs().GetInt("kv_num_heads", 0));
  d.batch = q[0];
  if (q.size() == 3) {
    if (qh <= 0 || kvh <= 0) return NodeError(node, "3-D inputs need q_num_heads and kv_num_heads");
    if (q[2] % qh != 0 || k[2] % kvh != 0 || v[2] % kvh != 0) {
      return NodeError(node, "hidden sizes " + ShapeString({q[2], k[2], v[2]}) + " are not divisible by the head counts");
    }
    d.rank3 = true;
    d.q_heads = qh;
    d.kv_heads = kvh;
    d.q_len = q[1];
    d.kv_len = k[1];
    d.head = q[2] / qh;
    d.v_head = v[2] / kvh;
    if (k[2] / kvh != d.head) return NodeError(node, "Q and K head sizes differ");
    if (v[1] != k[1]) return NodeError(node, "K and V sequence lengths differ");
  } else {
    d.q_heads = q[1];
    d.kv_heads = k[1];
    d.q_len = q[2];
    d.kv_len = k[2];
    d.head = q[3];
    d.v_head = v[3];
    if (k[3] != q[3]) return NodeError(node, "Q and K head sizes differ (" + ShapeString(q) + ", " + ShapeString(k) + ")");
    if (v[1] != k[1] || v[2] != k[2]) return NodeError(node, "K " + ShapeString(k) + " and V " + ShapeString(v) + " differ");
  }
  if (k[0] != d.batch || v[0] != d.batch) return NodeError(node, "Q, K and V batch sizes differ");
  if (d.kv_heads <= 0 || d.q_heads % d.kv_heads != 0) {
    return NodeError(node, "q_num_heads " + std::to_string(d.q_heads) + " is not a multiple of kv_num_heads " +
                               std::to_string(d.kv_heads));
  }
  if (HasInput(node, kPastKey) != HasInput(node, kPastValue)) {
    return NodeError(node, "past_key and past_value must be given together");
  }
  if (HasInput(node, kPastKey)) {
    const auto& pk = InputType(node, kPastKey).shape;
    const auto& pv = InputType(node, kPastValue).shape;
    if (pk.size() != 4 || pv.size() != 4 || pk[0] != d.batch || pk[1] != d.kv_heads || pk[3] != d.head ||
        pv[0] != d.batch || pv[1] != d.kv_heads || pv[2] != pk[2] || pv[3] != d.v_head) {
      return NodeError(node, "past_key " + ShapeString(pk) + " / past_value " + ShapeString(pv) +
                                 " do not match [batch, kv_heads, past, head]");
    }
    d.past = pk[2];
  }
  if (HasInput(node, kNonpad)) {
    if (HasInput(node, kPastKey)) return NodeError(node, "nonpad_kv_seqlen cannot be combined with past_key");
    const ir::TensorType& t = InputType(node, kNonpad);
    if (t.shape != std::vector<int64_t>{d.batch} || IsFloatType(t.dtype)) {
      return NodeError(node, "nonpad_kv_seqlen must be an integer tensor of shape [batch], got " + ShapeString(t.shape));
    }
  }
  if (HasInput(node, kMask)) {
    const ir::TensorType& m = InputType(node, kMask);
    if (m.shape.empty() || m.shape.back() > d.total()) {
      return NodeError(node, "attn_mask " + ShapeString(m.shape) + " is longer than the KV sequence (" +
                                 std::to_string(d.total()) + ")");
    }
    if (m.dtype != ir::DType::kBool && m.dtype != InputType(node, kQ).dtype) {
      return NodeError(node, "attn_mask must be bool or Q's dtype");
    }
  }
  return d;
}

Result<std::vector<ir::TensorType>> InferAttention(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(AttentionDims d, AttentionShape(node));
  const ir::DType t = InputType(node, kQ).dtype;
  if (!IsFloatType(t)) return NodeUnsupported(node, std::string("Attention on ") + ir::DTypeName(t));
  std::vector<ir::TensorType> out;
  out.push_back({t, d.rank3 ? std::vector<int64_t>{d.batch, d.q_len, d.q_heads * d.v_head}
                            : std::vector<int64_t>{d.batch, d.q_heads, d.q_len, d.v_head}});
  out.push_back({t, {d.batch, d.kv_heads, d.total(), d.head}});
  out.push_back({t, {d.batch, d.kv_heads, d.total(), d.v_head}});
  out.push_back({t, {d.batch, d.q_heads, d.q_len, d.total()}});
  out.resize(node.outputs().size());
  return out;
}

// [B, S, H*D] -> [B, H, S, D].
Result<Value*> SplitHeads(Expander& b, Value* x, int64_t heads) {
  const auto& s = x->type().shape;
  KEEL_ASSIGN_OR_RETURN(Value* r, b.Op("Reshape", {x, b.Ints({s[0], s[1], heads, s[2] / heads})}));
  return b.Op("Transpose", {r}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
}

// 0 where `allowed`, -inf elsewhere, in dtype `t`.
Result<Value*> BiasFrom(Expander& b, Value* allowed, ir::DType t) {
  return b.Op("Where", {allowed, b.Scalar(0, t), b.Scalar(kNegInf, t)});
}

// The causal / sliding-window constraint for query i, key j and frontier
// offset o: j <= i + o (causal); i + o - j <= left and j - (i + o) <= right
// (window, a negative bound is unbounded).
struct Frontier {
  bool causal = false;
  int64_t left = -1, right = -1;
  bool any() const { return causal || left >= 0 || right >= 0; }
  bool Allowed(int64_t i, int64_t j, int64_t o) const {
    const int64_t diff = i + o - j;
    return !(causal && diff < 0) && !(left >= 0 && diff > left) && !(right >= 0 && -diff > right);
  }
};

// The frontier's bias, [Sq, Kv] with a static offset or [B, 1, Sq, Kv] with
// offset[b] = nonpad[b] - Sq computed at run time.
Result<Value*> FrontierBias(Expander& b, const ir::Node& node, const AttentionDims& d, const Frontier& f, ir::DType t) {
  const int64_t sq = d.q_len, kv = d.total();
  if (!HasInput(node, kNonpad)) {
    std::shared_ptr<ir::TensorData> bias = NewTensor({t, {sq, kv}});
    for (int64_t i = 0; i < sq; ++i) {
      for (int64_t j = 0; j < kv; ++j) StoreDouble(*bias, i * kv + j, f.Allowed(i, j, d.past) ? 0.0 : kNegInf);
    }
    return b.Const(bias);
  }
  // a = j - i (constant); o = nonpad - Sq per batch: causal a <= o; window
  // o - a <= left and a - o <= right.
  std::vector<int64_t> a(static_cast<size_t>(sq * kv));
  for (int64_t i = 0; i < sq; ++i) {
    for (int64_t j = 0; j < kv; ++j) a[static_cast<size_t>(i * kv + j)] = j - i;
  }
  Value* av = b.Const(MakeTensorI64({1, 1, sq, kv}, a));
  KEEL_ASSIGN_OR_RETURN(Value* n64, b.Op("Cast", {node.input(kNonpad)}, {{"to", std::string("i64")}}));
  KEEL_ASSIGN_OR_RETURN(Value* o, b.Op("Sub", {n64, b.Ints({sq})}));
  KEEL_ASSIGN_OR_RETURN(o, b.Op("Reshape", {o, b.Ints({d.batch, 1, 1, 1})}));
  Value* allowed = nullptr;
  auto conjoin = [&](Value* c) -> Status {
    if (!allowed) {
      allowed = c;
      return Status::Ok();
    }
    KEEL_ASSIGN_OR_RETURN(allowed, b.Op("And", {allowed, c}));
    return Status::Ok();
  };
  if (f.causal) {
    KEEL_ASSIGN_OR_RETURN(Value* c, b.Op("LessOrEqual", {av, o}));
    KEEL_RETURN_IF_ERROR(conjoin(c));
  }
  if (f.left >= 0) {
    KEEL_ASSIGN_OR_RETURN(Value* lo, b.Op("Sub", {o, b.Ints({f.left})}));
    KEEL_ASSIGN_OR_RETURN(Value* c, b.Op("GreaterOrEqual", {av, lo}));
    KEEL_RETURN_IF_ERROR(conjoin(c));
  }
  if (f.right >= 0) {
    KEEL_ASSIGN_OR_RETURN(Value* hi, b.Op("Add", {o, b.Ints({f.right})}));
    KEEL_ASSIGN_OR_RETURN(Value* c, b.Op("LessOrEqual", {av, hi}));
    KEEL_RETURN_IF_ERROR(conjoin(c));
  }
  return BiasFrom(b, allowed, t);
}

// attn_mask as an additive bias of dtype t, padded with -inf to Kv keys.
Result<Value*> MaskBias(Expander& b, const ir::Node& node, const AttentionDims& d, ir::DType t) {
  Value* m = node.input(kMask);
  if (m->type().dtype == ir::DType::kBool) {
    KEEL_ASSIGN_OR_RETURN(m, BiasFrom(b, m, t));
  }
  std::vector<int64_t> shape = m->type().shape;
  const int64_t missing = d.total() - shape.back();
  if (missing > 0) {
    shape.back() = missing;
    std::shared_ptr<ir::TensorData> pad = NewTensor({t, shape});
    for (int64_t i = 0; i < pad->type.NumElements(); ++i) StoreDouble(*pad, i, kNegInf);
    KEEL_ASSIGN_OR_RETURN(m, b.Op("Concat", {m, b.Const(pad)}, {{"axis", int64_t(shape.size()) - 1}}));
  }
  return m;
}

Result<std::vector<Value*>> ExpandAttention(Expander& b, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(AttentionDims d, AttentionShape(node));
  const ir::DType t = InputType(node, kQ).dtype;
  const ir::Attributes& at = node.attrs();
  Value* q = node.input(kQ);
  Value* k = node.input(kK);
  Value* v = node.input(kV);
  if (d.rank3) {
    KEEL_ASSIGN_OR_RETURN(q, SplitHeads(b, q, d.q_heads));
    KEEL_ASSIGN_OR_RETURN(k, SplitHeads(b, k, d.kv_heads));
    KEEL_ASSIGN_OR_RETURN(v, SplitHeads(b, v, d.kv_heads));
  }
  if (HasInput(node, kPastKey)) {
    KEEL_ASSIGN_OR_RETURN(k, b.Op("Concat", {node.input(kPastKey), k}, {{"axis", int64_t{2}}}));
    KEEL_ASSIGN_OR_RETURN(v, b.Op("Concat", {node.input(kPastValue), v}, {{"axis", int64_t{2}}}));
  }
  Value* present_k = k;
  Value* present_v = v;

  // Q and K each scaled by sqrt(scale), rounded to the input type as the spec does.
  KEEL_ASSIGN_OR_RETURN(double scale, at.GetFloat("scale", 1.0 / std::sqrt(static_cast<double>(d.head))));
  Value* root = b.Scalar(std::sqrt(scale), t);
  KEEL_ASSIGN_OR_RETURN(Value* qs, b.Op("Mul", {q, root}));
  KEEL_ASSIGN_OR_RETURN(Value* ks, b.Op("Mul", {k, root}));
  if (d.kv_heads != d.q_heads) {  // grouped-query attention: KV head h / (Hq/Hkv) serves query head h
    std::vector<int64_t> heads;
    for (int64_t h = 0; h < d.q_heads; ++h) heads.push_back(h / (d.q_heads / d.kv_heads));
    KEEL_ASSIGN_OR_RETURN(ks, b.Op("Gather", {ks, b.Ints(heads)}, {{"axis", int64_t{1}}}));
    KEEL_ASSIGN_OR_RETURN(v, b.Op("Gather", {v, b.Ints(heads)}, {{"axis", int64_t{1}}}));
  }
  KEEL_ASSIGN_OR_RETURN(Value* kt, b.Op("Transpose", {ks}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}}));
  KEEL_ASSIGN_OR_RETURN(Value* scores, b.Op("MatMul", {qs, kt}));
  KEEL_ASSIGN_OR_RETURN(double softcap, at.GetFloat("softcap", 0.0));
  if (softcap > 0) {
    KEEL_ASSIGN_OR_RETURN(Value* s, b.Op("Div", {scores, b.Scalar(softcap, t)}));
    KEEL_ASSIGN_OR_RETURN(s, b.Op("Tanh", {s}));
    KEEL_ASSIGN_OR_RETURN(scores, b.Op("Mul", {s, b.Scalar(softcap, t)}));
  }

  // The additive bias and whether some query row may be fully masked.
  Frontier f;
  KEEL_ASSIGN_OR_RETURN(int64_t causal, at.GetInt("is_causal", 0));
  f.causal = causal != 0;
  KEEL_ASSIGN_OR_RETURN(f.left, at.GetInt("left_window_size", -1));
  KEEL_ASSIGN_OR_RETURN(f.right, at.GetInt("right_window_size", -1));
  if (f.left < -1 || f.right < -1) return NodeError(node, "window sizes must be -1 or non-negative");
  Value* bias = nullptr;
  auto add_bias = [&](Value* term) -> Status {
    if (!bias) {
      bias = term;
      return Status::Ok();
    }
    KEEL_ASSIGN_OR_RETURN(bias, b.Op("Add", {bias, term}));
    return Status::Ok();
  };
  if (HasInput(node, kMask)) {
    KEEL_ASSIGN_OR_RETURN(Value* m, MaskBias(b, node, d, t));
    KEEL_RETURN_IF_ERROR(add_bias(m));
  }
  if (f.any()) {
    KEEL_ASSIGN_OR_RETURN(Value* fb, FrontierBias(b, node, d, f, t));
    KEEL_RETURN_IF_ERROR(add_bias(fb));
  }
  if (HasInput(node, kNonpad)) {
    std::vector<int64_t> keys(static_cast<size_t>(d.total()));
    for (size_t j = 0; j < keys.size(); ++j) keys[j] = static_cast<int64_t>(j);
    KEEL_ASSIGN_OR_RETURN(Value* n64, b.Op("Cast", {node.input(kNonpad)}, {{"to", std::string("i64")}}));
    KEEL_ASSIGN_OR_RETURN(Value* lens, b.Op("Reshape", {n64, b.Ints({d.batch, 1, 1, 1})}));
    KEEL_ASSIGN_OR_RETURN(Value* valid, b.Op("Less", {b.Const(MakeTensorI64({1, 1, 1, d.total()}, keys)), lens}));
    KEEL_ASSIGN_OR_RETURN(Value* pb, BiasFrom(b, valid, t));
    KEEL_RETURN_IF_ERROR(add_bias(pb));
  }
  // Only a frontier with a static offset is known at compile time: then rows
  // are fully masked only if the constant says so.
  bool may_mask_rows = bias != nullptr;
  if (bias && !HasInput(node, kMask) && !HasInput(node, kNonpad)) {
    may_mask_rows = false;
    for (int64_t i = 0; i < d.q_len && !may_mask_rows; ++i) {
      bool any = false;
      for (int64_t j = 0; j < d.total() && !any; ++j) any = f.Allowed(i, j, d.past);
      may_mask_rows = !any;
    }
  }

  Value* qk_plain = scores;
  Value* logits = scores;
  if (bias) {
    KEEL_ASSIGN_OR_RETURN(logits, b.Op("Add", {scores, bias}));
  }
  Value* probs = logits;
  KEEL_ASSIGN_OR_RETURN(int64_t precision, at.GetInt("softmax_precision", 0));
  ir::DType softmax_type = t;
  if (precision != 0) {
    KEEL_ASSIGN_OR_RETURN(softmax_type, DTypeFromOnnx(precision));
  }
  if (!IsFloatType(softmax_type)) return NodeError(node, "softmax_precision must be a floating-point type");
  if (softmax_type != t) {
    KEEL_ASSIGN_OR_RETURN(probs, b.Op("Cast", {probs}, {{"to", std::string(ir::DTypeName(softmax_type))}}));
  }
  KEEL_ASSIGN_OR_RETURN(probs, b.Op("Softmax", {probs}, {{"axis", int64_t{3}}}));
  if (may_mask_rows) {
    // A row whose bias is all -inf attends nothing: probabilities 0 (not NaN).
    KEEL_ASSIGN_OR_RETURN(Value* row_max, b.Op("ReduceMax", {bias}, {{"axes", std::vector<int64_t>{
                                                                          int64_t(bias->type().shape.size()) - 1}},
                                                                      {"keepdims", int64_t{1}}}));
    KEEL_ASSIGN_OR_RETURN(Value* none, b.Op("Equal", {row_max, b.Scalar(kNegInf, t)}));
    KEEL_ASSIGN_OR_RETURN(probs, b.Op("Where", {none, b.Scalar(0, softmax_type), probs}));
  }
  if (softmax_type != t) {
    KEEL_ASSIGN_OR_RETURN(probs, b.Op("Cast", {probs}, {{"to", std::string(ir::DTypeName(t))}}));
  }
  KEEL_ASSIGN_OR_RETURN(Value* y, b.Op("MatMul", {probs, v}));
  if (d.rank3) {
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Transpose", {y}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}));
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Reshape", {y, b.Ints({d.batch, d.q_len, d.q_heads * d.v_head})}));
  }

  // qk_matmul_output as the spec's reference defines the modes: 0 and 1 the
  // (softcapped) scores, 2 the scores plus bias, 3 the probabilities.
  KEEL_ASSIGN_OR_RETURN(int64_t mode, at.GetInt("qk_matmul_output_mode", 0));
  Value* qk = qk_plain;
  if (mode == 2) qk = logits;
  if (mode == 3) qk = probs;
  if (mode < 0 || mode > 3) return NodeError(node, "qk_matmul_output_mode must be 0..3, got " + std::to_string(mode));
  std::vector<Value*> outs{y, present_k, present_v, qk};
  outs.resize(node.outputs().size());
  return outs;
}

// ---- RotaryEmbedding ------------------------------------------------------------------

Result<std::vector<ir::TensorType>> InferRotary(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 3, 4));
  const ir::TensorType& x = InputType(node, 0);
  if (x.shape.size() != 3 && x.shape.size() != 4) return NodeError(node, "input must be 3-D or 4-D, got " + ShapeString(x.shape));
  if (!IsFloatType(x.dtype)) return NodeUnsupported(node, std::string("RotaryEmbedding on ") + ir::DTypeName(x.dtype));
  return One(x);
}

Result<std::vector<Value*>> ExpandRotary(Expander& b, const ir::Node& node) {
  Value* x = node.input(0);
  const std::vector<int64_t> shape = x->type().shape;
  KEEL_ASSIGN_OR_RETURN(int64_t heads, node.attrs().GetInt("num_heads", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t rot, node.attrs().GetInt("rotary_embedding_dim", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t interleaved, node.attrs().GetInt("interleaved", 0));
  // Work in [B, S, H, D].
  if (shape.size() == 4) {
    KEEL_ASSIGN_OR_RETURN(x, b.Op("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}));
  } else {
    if (heads <= 0 || shape[2] % heads != 0) return NodeError(node, "3-D input needs num_heads dividing the hidden size");
    KEEL_ASSIGN_OR_RETURN(x, b.Op("Reshape", {x, b.Ints({shape[0], shape[1], heads, shape[2] / heads})}));
  }
  const std::vector<int64_t> s = x->type().shape;  // [B, S, H, D]
  const int64_t head = s[3];
  if (rot == 0) rot = head;
  if (rot <= 0 || rot > head || rot % 2 != 0) {
    return NodeError(node, "rotary_embedding_dim " + std::to_string(rot) + " must be even and at most the head size " +
                               std::to_string(head));
  }
  const int64_t half = rot / 2;
  Value* cos = node.input(1);
  Value* sin = node.input(2);
  if (HasInput(node, 3)) {
    KEEL_ASSIGN_OR_RETURN(cos, b.Op("Gather", {cos, node.input(3)}, {{"axis", int64_t{0}}}));
    KEEL_ASSIGN_OR_RETURN(sin, b.Op("Gather", {sin, node.input(3)}, {{"axis", int64_t{0}}}));
  }
  const std::vector<int64_t> cs = cos->type().shape;
  if (cs.size() != 3 || cs.back() != half || sin->type().shape != cs || cs[0] != s[0] || cs[1] != s[1]) {
    return NodeError(node, "cos/sin caches " + ShapeString(cs) + " do not match [batch, sequence, " +
                               std::to_string(half) + "]");
  }
  KEEL_ASSIGN_OR_RETURN(cos, b.Op("Unsqueeze", {cos}, {{"axes", std::vector<int64_t>{2}}}));
  KEEL_ASSIGN_OR_RETURN(sin, b.Op("Unsqueeze", {sin}, {{"axes", std::vector<int64_t>{2}}}));
  auto slice = [&](Value* v, int64_t start, int64_t end, int64_t step) {
    return b.Op("Slice", {v, b.Ints({start}), b.Ints({end}), b.Ints({3}), b.Ints({step})});
  };
  Value *x1, *x2;
  if (interleaved) {
    KEEL_ASSIGN_OR_RETURN(x1, slice(x, 0, rot, 2));
    KEEL_ASSIGN_OR_RETURN(x2, slice(x, 1, rot, 2));
  } else {
    KEEL_ASSIGN_OR_RETURN(x1, slice(x, 0, half, 1));
    KEEL_ASSIGN_OR_RETURN(x2, slice(x, half, rot, 1));
  }
  KEEL_ASSIGN_OR_RETURN(Value* c1, b.Op("Mul", {cos, x1}));
  KEEL_ASSIGN_OR_RETURN(Value* s2, b.Op("Mul", {sin, x2}));
  KEEL_ASSIGN_OR_RETURN(Value* real, b.Op("Sub", {c1, s2}));
  KEEL_ASSIGN_OR_RETURN(Value* s1, b.Op("Mul", {sin, x1}));
  KEEL_ASSIGN_OR_RETURN(Value* c2, b.Op("Mul", {cos, x2}));
  KEEL_ASSIGN_OR_RETURN(Value* imag, b.Op("Add", {s1, c2}));
  Value* rotated;
  if (interleaved) {
    KEEL_ASSIGN_OR_RETURN(Value* r4, b.Op("Unsqueeze", {real}, {{"axes", std::vector<int64_t>{4}}}));
    KEEL_ASSIGN_OR_RETURN(Value* i4, b.Op("Unsqueeze", {imag}, {{"axes", std::vector<int64_t>{4}}}));
    KEEL_ASSIGN_OR_RETURN(Value* pairs, b.Op("Concat", {r4, i4}, {{"axis", int64_t{4}}}));
    KEEL_ASSIGN_OR_RETURN(rotated, b.Op("Reshape", {pairs, b.Ints({s[0], s[1], s[2], rot})}));
  } else {
    KEEL_ASSIGN_OR_RETURN(rotated, b.Op("Concat", {real, imag}, {{"axis", int64_t{3}}}));
  }
  if (rot < head) {
    KEEL_ASSIGN_OR_RETURN(Value* rest, slice(x, rot, head, 1));
    KEEL_ASSIGN_OR_RETURN(rotated, b.Op("Concat", {rotated, rest}, {{"axis", int64_t{3}}}));
  }
  Value* y;
  if (shape.size() == 4) {
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Transpose", {rotated}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}));
  } else {
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Reshape", {rotated, b.Ints(shape)}));
  }
  return std::vector<Value*>{y};
}

}  // namespace

void RegisterAttentionOps(Registry& r) {
  {
    OpDef def;
    def.name = "Attention";
    def.versions = {23, 24, 25};
    def.removed_by = "shape-inference (expansion)";
    def.infer = InferAttention;
    def.expand = ExpandAttention;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "RotaryEmbedding";
    def.versions = {23};
    def.removed_by = "shape-inference (expansion)";
    def.infer = InferRotary;
    def.expand = ExpandRotary;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
