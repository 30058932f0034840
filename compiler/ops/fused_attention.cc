// compiler/ops/fused_attention.cc — keel.Attention (see fused_attention.h).
#include "compiler/ops/fused_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/codegen/lower_context.h"
#include "compiler/ops/all_ops.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "serialization/library_ops.h"

namespace keel::ops {
namespace {

enum Input { kQ, kK, kV, kMask };

struct OperandAttr {
  const char* key;
  AttentionOperand FusedAttention::*field;
};
// The node's attributes are the library kernel's (serialization/library_ops.h
// "keel.attention"), so the CUDA back end copies them.
namespace lib = ser::library_ops;
constexpr OperandAttr kOperands[] = {{lib::attr::kQView, &FusedAttention::q},
                                     {lib::attr::kKView, &FusedAttention::k},
                                     {lib::attr::kVView, &FusedAttention::v},
                                     {lib::attr::kYView, &FusedAttention::y},
                                     {lib::attr::kMaskView, &FusedAttention::mask}};

std::vector<int64_t> Encode(const AttentionOperand& x) {
  std::vector<int64_t> v{x.offset};
  v.insert(v.end(), x.batch_strides.begin(), x.batch_strides.end());
  v.push_back(x.row);
  v.push_back(x.col);
  return v;
}

int64_t BatchOffset(const AttentionOperand& x, const std::vector<int64_t>& digits) {
  int64_t off = x.offset;
  for (size_t t = 0; t < digits.size(); ++t) off += digits[t] * x.batch_strides[t];
  return off;
}

// Whether Y's view places every element of a dense tensor exactly once: its
// factors sorted by stride nest from stride 1 up to the element count.
bool CoversDensely(const FusedAttention& a) {
  std::vector<std::pair<int64_t, int64_t>> f;  // (stride, extent), extent > 1
  for (size_t t = 0; t < a.batch.size(); ++t)
    if (a.batch[t] > 1) f.push_back({a.y.batch_strides[t], a.batch[t]});
  if (a.sq > 1) f.push_back({a.y.row, a.sq});
  if (a.dv > 1) f.push_back({a.y.col, a.dv});
  std::sort(f.begin(), f.end());
  int64_t next = 1;
  for (const auto& [stride, extent] : f) {
    if (stride != next) return false;
    next *= extent;
  }
  return a.y.offset == 0;
}

Result<std::vector<ir::TensorType>> InferFusedAttention(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 3, 4));
  KEEL_ASSIGN_OR_RETURN(FusedAttention a, ReadFusedAttention(node));
  const ir::DType t = InputType(node, kQ).dtype;
  if (!IsFloatType(t) || InputType(node, kK).dtype != t || InputType(node, kV).dtype != t) {
    return NodeError(node, "Q, K and V must have one floating type");
  }
  if (a.has_mask != HasInput(node, kMask)) return NodeError(node, "the mask input and attribute mask_view disagree");
  if (a.has_mask && InputType(node, kMask).dtype != t && InputType(node, kMask).dtype != ir::DType::kF32) {
    return NodeError(node, "the mask must be f32 or Q's type");
  }
  struct Check {
    const AttentionOperand* x;
    size_t input;
    int64_t rows, cols;
    const char* name;
  };
  std::vector<Check> checks = {{&a.q, kQ, a.sq, a.d, "Q"}, {&a.k, kK, a.sk, a.d, "K"}, {&a.v, kV, a.sk, a.dv, "V"}};
  if (a.has_mask) checks.push_back({&a.mask, kMask, a.sq, a.sk, "mask"});
  for (const Check& c : checks) {
    if (!ViewInBounds(a, *c.x, c.rows, c.cols, InputType(node, c.input).NumElements())) {
      return NodeError(node, std::string(c.name) + "'s view reads outside its input " +
                                 InputType(node, c.input).ToString());
    }
  }
  ir::TensorType out{t, a.out_shape};
  if (out.NumElements() != a.BatchCount() * a.sq * a.dv || !CoversDensely(a)) {
    return NodeError(node, "Y's view does not place each element of " + out.ToString() + " once");
  }
  return One(out);
}

Result<std::vector<ir::TensorDataPtr>> EvaluateFusedAttention(const ir::Node& node,
                                                              const std::vector<ir::TensorDataPtr>& in,
                                                              const std::vector<ir::TensorType>& out_types) {
  KEEL_ASSIGN_OR_RETURN(FusedAttention a, ReadFusedAttention(node));
  const std::vector<double> q = TensorToDoubles(*in[kQ]), k = TensorToDoubles(*in[kK]), v = TensorToDoubles(*in[kV]);
  std::vector<double> mask;
  if (a.has_mask) mask = TensorToDoubles(*in[kMask]);
  std::vector<double> y(static_cast<size_t>(out_types[0].NumElements()), 0.0);
  std::vector<double> s(static_cast<size_t>(a.sk));
  for (int64_t b = 0; b < a.BatchCount(); ++b) {
    const std::vector<int64_t> dg = codegen::DelinearizeConst(a.batch, b);
    const int64_t qo = BatchOffset(a.q, dg), ko = BatchOffset(a.k, dg), vo = BatchOffset(a.v, dg),
                  yo = BatchOffset(a.y, dg), mo = a.has_mask ? BatchOffset(a.mask, dg) : 0;
    for (int64_t i = 0; i < a.sq; ++i) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < a.sk; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < a.d; ++c) {
          dot += q[static_cast<size_t>(qo + i * a.q.row + c * a.q.col)] *
                 k[static_cast<size_t>(ko + j * a.k.row + c * a.k.col)];
        }
        double sj = a.scale * dot;
        if (a.has_mask) sj += mask[static_cast<size_t>(mo + i * a.mask.row + j * a.mask.col)];
        s[static_cast<size_t>(j)] = sj;
        mx = std::max(mx, sj);
      }
      double sum = 0;
      for (double& sj : s) {
        sj = std::exp(sj - mx);
        sum += sj;
      }
      for (int64_t e = 0; e < a.dv; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < a.sk; ++j) acc += s[static_cast<size_t>(j)] * v[static_cast<size_t>(vo + j * a.v.row + e * a.v.col)];
        y[static_cast<size_t>(yo + i * a.y.row + e * a.y.col)] = acc / sum;
      }
    }
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(out_types[0], y));
  return std::vector<ir::TensorDataPtr>{out};
}

}  // namespace

int64_t FusedAttention::BatchCount() const {
  int64_t n = 1;
  for (int64_t e : batch) n *= e;
  return n;
}

void SetFusedAttentionAttrs(ir::Node& node, const FusedAttention& a) {
  ir::Attributes& at = node.attrs();
  at.Set(lib::attr::kBatch, a.batch);
  at.Set(lib::attr::kDims, std::vector<int64_t>{a.sq, a.sk, a.d, a.dv});
  at.Set(lib::attr::kScale, a.scale);
  at.Set("shape", a.out_shape);
  for (const OperandAttr& o : kOperands) {
    if (o.field == &FusedAttention::mask && !a.has_mask) {
      at.Erase(o.key);
    } else {
      at.Set(o.key, Encode(a.*(o.field)));
    }
  }
}

Result<FusedAttention> ReadFusedAttention(const ir::Node& node) {
  const ir::Attributes& at = node.attrs();
  FusedAttention a;
  KEEL_ASSIGN_OR_RETURN(a.batch, at.GetInts(lib::attr::kBatch, {}));
  KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, at.GetInts(lib::attr::kDims, {}));
  KEEL_ASSIGN_OR_RETURN(a.scale, at.GetFloat(lib::attr::kScale, 1.0));
  KEEL_ASSIGN_OR_RETURN(a.out_shape, at.GetInts("shape", {}));
  if (dims.size() != 4) return NodeError(node, "attribute dims must be [sq, sk, d, dv]");
  a.sq = dims[0];
  a.sk = dims[1];
  a.d = dims[2];
  a.dv = dims[3];
  for (int64_t e : dims)
    if (e < 1) return NodeError(node, "attribute dims must be positive, got " + ShapeString(dims));
  for (int64_t e : a.batch)
    if (e < 1) return NodeError(node, "attribute batch must be positive, got " + ShapeString(a.batch));
  a.has_mask = at.Has(lib::attr::kMaskView);
  for (const OperandAttr& o : kOperands) {
    if (o.field == &FusedAttention::mask && !a.has_mask) continue;
    KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> v, at.GetInts(o.key, {}));
    if (v.size() != a.batch.size() + 3) {
      return NodeError(node, std::string("attribute ") + o.key + " needs " + std::to_string(a.batch.size() + 3) +
                                 " values (offset, one stride per batch digit, row, column)");
    }
    AttentionOperand& x = a.*(o.field);
    x.offset = v.front();
    x.batch_strides.assign(v.begin() + 1, v.end() - 2);
    x.row = v[v.size() - 2];
    x.col = v.back();
  }
  return a;
}

bool ViewInBounds(const FusedAttention& a, const AttentionOperand& x, int64_t rows, int64_t cols, int64_t elements) {
  int64_t lo = x.offset, hi = x.offset;
  auto span = [&](int64_t extent, int64_t stride) {
    (stride < 0 ? lo : hi) += (extent - 1) * stride;
  };
  for (size_t t = 0; t < a.batch.size(); ++t) span(a.batch[t], x.batch_strides[t]);
  span(rows, x.row);
  span(cols, x.col);
  return lo >= 0 && hi < elements;
}

void RegisterFusedAttentionOps(Registry& r) {
  OpDef def;
  def.name = kFusedAttentionOp;
  def.domain = "keel";
  def.fusion = FusionClass::kAnchor;
  def.library = LibraryCall::kAttention;
  def.half = HalfPolicy::kHalf;  // formed after mixed precision, on the types it chose
  def.infer = InferFusedAttention;
  def.evaluate = EvaluateFusedAttention;
  r.Add(std::move(def));
}

}  // namespace keel::ops
