// compiler/ops/quantize_matmul.cc — integer matrix products: MatMulInteger
// (int32 result of (A - a_zp) x (B - b_zp)) and QLinearMatMul (its quantized
// form: requantized to y's type with a_scale * b_scale / y_scale and y_zp).
//
// MatMulInteger is an anchor with its own kernel: the shared GEMM accumulates
// in f32, which is exact only up to 2^24, while int8 products summed over a
// long K overflow that; this kernel accumulates in i32 (wrapping like the
// int32 arithmetic ONNX specifies) with a plain dot product per output
// element. Zero points: a scalar / 1-element tensor (per tensor); for A a 1-D
// vector of M entries (per row, i.e. shape [M, 1]) or an N-D tensor
// broadcastable to [..., M, 1]; for B a 1-D vector of N entries (per column)
// or an N-D tensor broadcastable to [..., 1, N].
//
// QLinearMatMul is a composite: MatMulInteger, then D = f64(C) * (a_scale *
// b_scale / y_scale) + y_zp rounded half-to-even and saturated (the ONNX
// reference's order: the zero point is added before rounding), through
// keel.QuantizeLinear with a unit scale.
#include <algorithm>

#include "compiler/codegen/lower_context.h"
#include "compiler/ops/expansion.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/quantize_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using ir::DType;
using ir::Value;

// numpy matmul shapes with the 1-D promotions, and the zero points' effective shapes.
struct IntMatMul {
  std::vector<int64_t> sa, sb;      // A, B promoted to rank >= 2
  bool va = false, vb = false;      // A / B were 1-D
  std::vector<int64_t> batch, full;  // full = batch + [m, n]
  std::vector<int64_t> out;          // full without the promoted dims
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> azp, bzp;    // effective shapes (broadcast against `full`)
  bool has_azp = false, has_bzp = false;
};

Result<IntMatMul> Dims(const ir::Node& node, size_t a, size_t b, size_t azp, size_t bzp) {
  IntMatMul d;
  const ir::TensorType &A = InputType(node, a), &B = InputType(node, b);
  d.sa = A.shape;
  d.sb = B.shape;
  if (d.sa.empty() || d.sb.empty()) return NodeError(node, "scalar operands are not allowed");
  d.va = d.sa.size() == 1;
  d.vb = d.sb.size() == 1;
  if (d.va) d.sa.insert(d.sa.begin(), 1);
  if (d.vb) d.sb.push_back(1);
  d.m = d.sa[d.sa.size() - 2];
  d.k = d.sa.back();
  d.n = d.sb.back();
  if (d.k != d.sb[d.sb.size() - 2]) return NodeError(node, "inner dimensions differ: " + A.ToString() + " x " + B.ToString());
  auto batch = BroadcastShapes({d.sa.begin(), d.sa.end() - 2}, {d.sb.begin(), d.sb.end() - 2});
  if (!batch.ok()) return NodeError(node, "batch dimensions: " + batch.status().message());
  d.batch = *batch;
  d.full = d.batch;
  d.full.push_back(d.m);
  d.full.push_back(d.n);
  d.out = d.batch;
  if (!d.va) d.out.push_back(d.m);
  if (!d.vb) d.out.push_back(d.n);
  for (int side = 0; side < 2; ++side) {
    const size_t i = side == 0 ? azp : bzp;
    if (!HasInput(node, i)) continue;
    const ir::TensorType& z = InputType(node, i);
    const ir::TensorType& x = side == 0 ? A : B;
    if (z.dtype != x.dtype) {
      return NodeError(node, std::string("zero point dtype ") + ir::DTypeName(z.dtype) + " differs from its operand's " +
                                 ir::DTypeName(x.dtype));
    }
    std::vector<int64_t> s = z.shape;
    int64_t count = 1;
    for (int64_t v : s) count *= v;
    if (count == 1) s.clear();
    if (side == 0 && s.size() == 1) s.push_back(1);  // per row of A
    auto bs = BroadcastShapes(d.full, s);
    if (!bs.ok() || *bs != d.full) {
      return NodeError(node, std::string(side == 0 ? "a" : "b") + "_zero_point " + z.ToString() +
                                 " does not fit the product " + ShapeString(d.full));
    }
    (side == 0 ? d.azp : d.bzp) = s;
    (side == 0 ? d.has_azp : d.has_bzp) = true;
  }
  return d;
}

// The index into an operand of `shape` (right-aligned broadcast) at `idx`.
template <typename T>
std::vector<T> OperandIndex(const std::vector<int64_t>& shape, const std::vector<T>& idx, T zero) {
  std::vector<T> out(shape.size(), zero);
  const size_t off = idx.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) out[i] = shape[i] == 1 ? zero : idx[off + i];
  return out;
}

Status CheckIntOperands(const ir::Node& node, size_t a, size_t b) {
  for (size_t i : {a, b}) {
    const DType t = InputType(node, i).dtype;
    if (!IsQuantizedType(t)) {
      return NodeUnsupported(node, "input " + std::to_string(i) + " has dtype " + ir::DTypeName(t) +
                                       "; int8, uint8, int16 or uint16 expected");
    }
  }
  return Status::Ok();
}

// ---- MatMulInteger -------------------------------------------------------------------

Result<std::vector<ir::TensorType>> InferMatMulInteger(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 4));
  KEEL_RETURN_IF_ERROR(CheckIntOperands(node, 0, 1));
  KEEL_ASSIGN_OR_RETURN(IntMatMul d, Dims(node, 0, 1, 2, 3));
  KEEL_RETURN_IF_ERROR(CheckedElements(node, d.full).status());
  return One({DType::kI32, d.out});
}

// Index of the output (`out` dims) from the full [batch, m, n] index.
template <typename T>
std::vector<T> OutIndex(const IntMatMul& d, const std::vector<T>& full) {
  std::vector<T> o(full.begin(), full.end() - 2);
  if (!d.va) o.push_back(full[full.size() - 2]);
  if (!d.vb) o.push_back(full.back());
  return o;
}

Result<std::vector<ir::TensorDataPtr>> EvaluateMatMulInteger(const ir::Node& node,
                                                             const std::vector<ir::TensorDataPtr>& in,
                                                             const std::vector<ir::TensorType>& out_types) {
  KEEL_ASSIGN_OR_RETURN(IntMatMul d, Dims(node, 0, 1, 2, 3));
  std::shared_ptr<ir::TensorData> y = NewTensor(out_types[0]);
  const std::vector<int64_t> sta = Strides(d.sa), stb = Strides(d.sb), stz = Strides(d.azp), stw = Strides(d.bzp);
  auto offset = [](const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                   const std::vector<int64_t>& idx) {
    const std::vector<int64_t> i = OperandIndex<int64_t>(shape, idx, 0);
    int64_t o = 0;
    for (size_t j = 0; j < i.size(); ++j) o += i[j] * strides[j];
    return o;
  };
  const int64_t total = codegen::NumElements(d.full);
  const std::vector<int64_t> ost = Strides(out_types[0].shape);
  for (int64_t t = 0; t < total; ++t) {
    std::vector<int64_t> idx(d.full.size());
    for (size_t j = d.full.size(), r = static_cast<size_t>(t); j-- > 0;) {
      idx[j] = static_cast<int64_t>(r) % d.full[j];
      r /= static_cast<size_t>(d.full[j]);
    }
    const int64_t za = d.has_azp ? ElementAsInt(*in[2], offset(d.azp, stz, idx)) : 0;
    const int64_t zb = d.has_bzp ? ElementAsInt(*in[3], offset(d.bzp, stw, idx)) : 0;
    int64_t acc = 0;
    for (int64_t p = 0; p < d.k; ++p) {
      std::vector<int64_t> ia(idx.begin(), idx.end() - 2), ib = ia;
      ia.push_back(idx[idx.size() - 2]);
      ia.push_back(p);
      ib.push_back(p);
      ib.push_back(idx.back());
      acc += (ElementAsInt(*in[0], offset(d.sa, sta, ia)) - za) * (ElementAsInt(*in[1], offset(d.sb, stb, ib)) - zb);
    }
    const std::vector<int64_t> o = OutIndex(d, idx);
    int64_t flat = 0;
    for (size_t j = 0; j < o.size(); ++j) flat += o[j] * ost[j];
    StoreInt(*y, flat, static_cast<int32_t>(static_cast<uint32_t>(acc)));  // int32 wrap-around
  }
  return std::vector<ir::TensorDataPtr>{y};
}

Result<codegen::Stmt> LowerMatMulInteger(codegen::LowerContext& ctx, const ir::Node& node,
                                         const std::vector<codegen::StoreFn>& stores) {
  codegen::KernelFunc& kf = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(IntMatMul d, Dims(node, 0, 1, 2, 3));
  std::vector<const codegen::TensorFn*> fn(4, nullptr);
  for (size_t i = 0; i < 4; ++i) {
    if (!HasInput(node, i)) continue;
    KEEL_ASSIGN_OR_RETURN(fn[i], ctx.Input(node, i));
  }
  const DType i32 = DType::kI32;
  Expr t = kf.NewVar("t"), p = kf.NewVar("p");
  const std::vector<Expr> idx = codegen::Delinearize(d.full, t);
  // Reads at the promoted shapes, then the promoted dims dropped again.
  auto read = [&](size_t i, const std::vector<int64_t>& shape, std::vector<Expr> at, bool drop_front, bool drop_back) {
    std::vector<Expr> ix = OperandIndex<Expr>(shape, at, Expr(0));
    if (drop_front) ix.erase(ix.begin());
    if (drop_back) ix.pop_back();
    return codegen::Cast(fn[i]->at(ix), i32);
  };
  std::vector<Expr> ia(idx.begin(), idx.end() - 2), ib = ia;
  ia.push_back(idx[idx.size() - 2]);
  ia.push_back(p);
  ib.push_back(p);
  ib.push_back(idx.back());
  Expr a = read(0, d.sa, ia, d.va, false), b = read(1, d.sb, ib, false, d.vb);
  const bool azp_row = HasInput(node, 2) && InputType(node, 2).shape.size() == 1 && d.azp.size() == 2;
  // A 1-element zero point (effective shape []) is read at zeros of its own rank.
  auto zero_point = [&](size_t i, const std::vector<int64_t>& shape, bool drop_back) {
    if (!shape.empty()) return read(i, shape, idx, false, drop_back);
    return codegen::Cast(fn[i]->at(std::vector<Expr>(InputType(node, i).shape.size(), Expr(0))), i32);
  };
  if (d.has_azp) a = a - zero_point(2, d.azp, azp_row);
  if (d.has_bzp) b = b - zero_point(3, d.bzp, false);
  int acc = kf.AddLocal("mmi_acc", i32, {1});
  Expr cur = kf.Load(acc, {Expr(0)});
  codegen::Stmt body = codegen::Block({
      kf.Store(acc, {Expr(0)}, codegen::IntConst(0, i32)),
      codegen::For(p, 0, d.k, codegen::LoopKind::kSerial, kf.Store(acc, {Expr(0)}, cur + a * b)),
      stores[0](OutIndex(d, idx), cur),
  });
  const int64_t total = codegen::NumElements(d.full);
  const bool parallel = total > 1 && total * std::max<int64_t>(d.k, 1) >= ctx.options().min_parallel_elements;
  return codegen::For(t, 0, total, parallel ? codegen::LoopKind::kParallel : codegen::LoopKind::kSerial, body);
}

// ---- QLinearMatMul -------------------------------------------------------------------

enum QInput : size_t { kA, kAScale, kAZp, kB, kBScale, kBZp, kYScale, kYZp };

Result<DType> QLinearOutType(const ir::Node& node) {
  const DType t = HasInput(node, kYZp) ? InputType(node, kYZp).dtype : InputType(node, kA).dtype;
  if (!IsQuantizedType(t)) return NodeUnsupported(node, std::string("output dtype ") + ir::DTypeName(t));
  return t;
}

Result<std::vector<ir::TensorType>> InferQLinearMatMul(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 7, 8));
  for (size_t i : {kAScale, kBScale, kYScale}) {
    if (!HasInput(node, i)) return NodeError(node, "input " + std::to_string(i) + " (a scale) is missing");
    if (!IsFloatType(InputType(node, i).dtype)) {
      return NodeUnsupported(node, "scale input " + std::to_string(i) + " has dtype " +
                                       ir::DTypeName(InputType(node, i).dtype));
    }
  }
  KEEL_RETURN_IF_ERROR(CheckIntOperands(node, kA, kB));
  KEEL_ASSIGN_OR_RETURN(IntMatMul d, Dims(node, kA, kB, kAZp, kBZp));
  KEEL_ASSIGN_OR_RETURN(DType out, QLinearOutType(node));
  return One({out, d.out});
}

// A per-row scale of A ([M]) as [M, 1]; other scales broadcast as they are.
Result<Value*> RowScale(Expander& b, Value* s) {
  const std::vector<int64_t>& shape = s->type().shape;
  if (shape.size() != 1 || shape[0] == 1) return s;
  return b.Op("Reshape", {s, b.Ints({shape[0], 1})});
}

Result<std::vector<Value*>> ExpandQLinearMatMul(Expander& b, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(DType out, QLinearOutType(node));
  auto in = [&](size_t i) { return HasInput(node, i) ? node.input(i) : nullptr; };
  KEEL_ASSIGN_OR_RETURN(Value* c, b.Op("MatMulInteger", {in(kA), in(kB), in(kAZp), in(kBZp)}));
  KEEL_ASSIGN_OR_RETURN(Value* as, RowScale(b, node.input(kAScale)));
  const DType f64 = DType::kF64;
  KEEL_ASSIGN_OR_RETURN(Value* mult, b.Op("Mul", {as, node.input(kBScale)}));
  KEEL_ASSIGN_OR_RETURN(mult, b.Op("Div", {mult, node.input(kYScale)}));
  KEEL_ASSIGN_OR_RETURN(mult, b.Op("Cast", {mult}, {{"to", std::string("f64")}}));
  KEEL_ASSIGN_OR_RETURN(Value* y, b.Op("Cast", {c}, {{"to", std::string("f64")}}));
  KEEL_ASSIGN_OR_RETURN(y, b.Op("Mul", {y, mult}));
  if (HasInput(node, kYZp)) {
    KEEL_ASSIGN_OR_RETURN(Value* zp, b.Op("Cast", {node.input(kYZp)}, {{"to", std::string("f64")}}));
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Add", {y, zp}));
  }
  KEEL_ASSIGN_OR_RETURN(y, b.Op("keel.QuantizeLinear", {y, b.Scalar(1.0, f64)}, {{"to", std::string(ir::DTypeName(out))}}));
  return std::vector<Value*>{y};
}

}  // namespace

void RegisterQuantizeMatMulOps(Registry& r) {
  {
    OpDef def;
    def.name = "MatMulInteger";
    def.versions = {10};
    def.fusion = FusionClass::kAnchor;
    def.infer = InferMatMulInteger;
    def.evaluate = EvaluateMatMulInteger;
    def.kernel = LowerMatMulInteger;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "QLinearMatMul";
    def.versions = {10, 21};
    def.removed_by = "shape-inference (expansion)";
    def.infer = InferQLinearMatMul;
    def.expand = ExpandQLinearMatMul;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
