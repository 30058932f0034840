// compiler/ops/quantize.cc — linear (de)quantization: QuantizeLinear,
// DequantizeLinear and DynamicQuantizeLinear, for the integer quantized types
// (int8, uint8, int16, uint16; int32 as DequantizeLinear's input). float8,
// int4/uint4, int2/uint2 and float4 are refused naming the type.
//
// The ONNX ops are composites (expansion.h): their scale / zero point is a
// scalar (per tensor), a 1-D vector along `axis` (per axis) or a tensor of x's
// rank whose `axis` dimension has one entry per `block_size` run of x
// (blocked). The expansion makes them broadcastable to x — Reshape to
// [1,..,C,..,1] for per-axis, a Gather of each block's entry along `axis` for
// blocked — and hands the arithmetic to two internal elementwise ops that then
// fuse with their neighbours:
//   keel.QuantizeLinear(x, scale[, zp]; to)    y = saturate(rint(x / scale) + zp)
//   keel.DequantizeLinear(x, scale[, zp]; to)  y = (f32(x) - f32(zp)) * scale
// with round-half-to-even and saturation to the range of `to`, as the ONNX
// reference (onnx/reference/ops/op_quantize_linear.py) computes it: the zero
// point is added after rounding. The division is in f32 unless x, the scale or
// `precision` is wider (int32, f64), then in f64.
//
// DynamicQuantizeLinear expands into ReduceMin/ReduceMax (range widened to
// include 0), the uint8 scale and zero point, and keel.QuantizeLinear.
#include <algorithm>
#include <cmath>

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

constexpr int kQuantVersions[] = {10, 13, 19, 21, 23, 24, 25, 28};

std::vector<int> QuantVersions() { return {std::begin(kQuantVersions), std::end(kQuantVersions)}; }

// ONNX attribute `attr` holding a TensorProto data type code -> the IR dtype
// name (stored back); 0 or absent erases it. Unsupported types name the type.
Status NormalizeDTypeAttr(ir::Node& node, const std::string& attr) {
  if (!node.attrs().Has(attr)) return Status::Ok();
  KEEL_ASSIGN_OR_RETURN(int64_t code, node.attrs().GetInt(attr, 0));
  if (code == 0) {
    node.attrs().Erase(attr);
    return Status::Ok();
  }
  auto d = DTypeFromOnnx(code);
  if (!d.ok()) return NodeUnsupported(node, attr + " " + d.status().message());
  node.attrs().Set(attr, std::string(ir::DTypeName(*d)));
  return Status::Ok();
}

Result<DType> DTypeAttr(const ir::Node& node, const std::string& attr, DType def) {
  KEEL_ASSIGN_OR_RETURN(std::string name, node.attrs().GetString(attr, ""));
  if (name.empty()) return def;
  auto d = DTypeFromName(name);
  if (!d.ok()) return NodeError(node, "unknown " + attr + " '" + name + "'");
  return *d;
}

Status NormalizeQuant(ir::Node& node, int version) {
  if (version < 13) node.attrs().Erase("axis");
  if (version < 21) {
    node.attrs().Erase("block_size");
    node.attrs().Erase("output_dtype");
  }
  if (version < 23) node.attrs().Erase("precision");
  KEEL_RETURN_IF_ERROR(NormalizeDTypeAttr(node, "output_dtype"));
  return NormalizeDTypeAttr(node, "precision");
}

// Shared by both ops: axis made non-negative when a scale needs it.
Status CanonicalizeQuant(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
  bool per_tensor = true;
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!HasInput(node, i)) continue;
    const ir::TensorType& s = InputType(node, i);
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    per_tensor = per_tensor && n == 1 && s.shape.size() <= 1;
  }
  if (per_tensor) return Status::Ok();  // axis unused
  const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
  return CanonicalizeAxisAttr(node, "axis", 1, rank);
}

// A scale / zero point made broadcastable to x (per tensor, per axis or blocked).
Result<Value*> Broadcastable(Expander& b, Value* v, const std::vector<int64_t>& x_shape) {
  const ir::Node& node = b.node();
  const std::vector<int64_t>& s = v->type().shape;
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  if (s.empty()) return v;
  if (n == 1 && s.size() == 1) return b.Op("Reshape", {v, b.Ints({})});
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 1));
  KEEL_ASSIGN_OR_RETURN(int64_t block, node.attrs().GetInt("block_size", 0));
  const size_t ax = static_cast<size_t>(axis);
  if (block < 0) return NodeError(node, "block_size " + std::to_string(block) + " is negative");
  if (block == 0) {
    if (s.size() != 1 || s[0] != x_shape[ax]) {
      return NodeError(node, "per-axis scale/zero point " + ShapeString(s) + " does not match axis " +
                                 std::to_string(axis) + " of x " + ShapeString(x_shape));
    }
    std::vector<int64_t> shape(x_shape.size(), 1);
    shape[ax] = s[0];
    return b.Op("Reshape", {v, b.Ints(shape)});
  }
  // Blocked: same rank, same dims except `axis`, which has ceil(D / block) entries.
  bool ok = s.size() == x_shape.size();
  for (size_t d = 0; ok && d < s.size(); ++d) {
    ok = d == ax ? s[d] == (x_shape[d] + block - 1) / block : s[d] == x_shape[d];
  }
  if (!ok) {
    return NodeError(node, "blocked scale/zero point " + ShapeString(s) + " does not fit x " + ShapeString(x_shape) +
                               " with block_size " + std::to_string(block) + " on axis " + std::to_string(axis));
  }
  std::vector<int64_t> idx(static_cast<size_t>(x_shape[ax]));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i) / block;
  return b.Op("Gather", {v, b.Ints(idx)}, {{"axis", axis}});
}

// ---- QuantizeLinear -----------------------------------------------------------------

Result<DType> QuantizeOutputType(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(DType attr, DTypeAttr(node, "output_dtype", DType::kU8));
  if (HasInput(node, 2)) {
    const DType zp = InputType(node, 2).dtype;
    if (node.attrs().Has("output_dtype") && attr != zp) {
      return NodeError(node, std::string("output_dtype ") + ir::DTypeName(attr) + " differs from the zero point's " +
                                 ir::DTypeName(zp));
    }
    attr = zp;
  }
  if (!IsQuantizedType(attr)) {
    return NodeUnsupported(node, std::string("quantized type ") + ir::DTypeName(attr) +
                                     " is not supported (int8, uint8, int16, uint16)");
  }
  return attr;
}

Result<std::vector<ir::TensorType>> InferQuantize(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
  const ir::TensorType& x = InputType(node, 0);
  const DType xs = x.dtype, ss = InputType(node, 1).dtype;
  if (!(IsFloatType(xs) || xs == DType::kI32)) {
    return NodeUnsupported(node, std::string("x has dtype ") + ir::DTypeName(xs) + "; float or int32 expected");
  }
  if (!(IsFloatType(ss) || ss == DType::kI32)) {
    return NodeUnsupported(node, std::string("y_scale has dtype ") + ir::DTypeName(ss) + "; float or int32 expected");
  }
  KEEL_ASSIGN_OR_RETURN(DType out, QuantizeOutputType(node));
  return One({out, x.shape});
}

Result<std::vector<Value*>> ExpandQuantize(Expander& b, const ir::Node& node) {
  const std::vector<int64_t>& xs = InputType(node, 0).shape;
  KEEL_ASSIGN_OR_RETURN(DType out, QuantizeOutputType(node));
  KEEL_ASSIGN_OR_RETURN(Value* scale, Broadcastable(b, node.input(1), xs));
  std::vector<Value*> in = {node.input(0), scale};
  if (HasInput(node, 2)) {
    KEEL_ASSIGN_OR_RETURN(Value* zp, Broadcastable(b, node.input(2), xs));
    in.push_back(zp);
  }
  AttrList attrs = {{"to", std::string(ir::DTypeName(out))}};
  KEEL_ASSIGN_OR_RETURN(std::string precision, node.attrs().GetString("precision", ""));
  if (!precision.empty()) attrs.push_back({"precision", precision});
  KEEL_ASSIGN_OR_RETURN(Value* y, b.Op("keel.QuantizeLinear", in, attrs));
  return std::vector<Value*>{y};
}

// ---- DequantizeLinear ---------------------------------------------------------------

Result<std::vector<ir::TensorType>> InferDequantize(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
  const ir::TensorType& x = InputType(node, 0);
  if (!IsQuantizedType(x.dtype) && x.dtype != DType::kI32) {
    return NodeUnsupported(node, std::string("quantized type ") + ir::DTypeName(x.dtype) +
                                     " is not supported (int8, uint8, int16, uint16, int32)");
  }
  if (HasInput(node, 2) && InputType(node, 2).dtype != x.dtype) {
    return NodeError(node, std::string("zero point dtype ") + ir::DTypeName(InputType(node, 2).dtype) +
                               " differs from x's " + ir::DTypeName(x.dtype));
  }
  const DType s = InputType(node, 1).dtype;
  if (!IsFloatType(s)) return NodeUnsupported(node, std::string("x_scale has dtype ") + ir::DTypeName(s));
  KEEL_ASSIGN_OR_RETURN(DType out, DTypeAttr(node, "output_dtype", s));
  if (!IsFloatType(out)) return NodeError(node, std::string("output_dtype ") + ir::DTypeName(out) + " is not a float type");
  return One({out, x.shape});
}

Result<std::vector<Value*>> ExpandDequantize(Expander& b, const ir::Node& node) {
  const std::vector<int64_t>& xs = InputType(node, 0).shape;
  KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> t, InferDequantize(node));
  KEEL_ASSIGN_OR_RETURN(Value* scale, Broadcastable(b, node.input(1), xs));
  std::vector<Value*> in = {node.input(0), scale};
  if (HasInput(node, 2)) {
    KEEL_ASSIGN_OR_RETURN(Value* zp, Broadcastable(b, node.input(2), xs));
    in.push_back(zp);
  }
  KEEL_ASSIGN_OR_RETURN(Value* y, b.Op("keel.DequantizeLinear", in, {{"to", std::string(ir::DTypeName(t[0].dtype))}}));
  return std::vector<Value*>{y};
}

// ---- DynamicQuantizeLinear -------------------------------------------------------------

Result<std::vector<ir::TensorType>> InferDynamicQuantize(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  if (x.dtype != DType::kF32) return NodeUnsupported(node, std::string("x has dtype ") + ir::DTypeName(x.dtype) + "; f32 expected");
  std::vector<ir::TensorType> t = {{DType::kU8, x.shape}, {DType::kF32, {}}, {DType::kU8, {}}};
  t.resize(std::min(t.size(), node.outputs().size()));  // the importer drops unread trailing outputs
  return t;
}

// The ONNX reference: range [min(0, min x), max(0, max x)] over 255 steps
// (scale 1/255 when the range is empty), zero point rint(clip(-min / scale)).
Result<std::vector<Value*>> ExpandDynamicQuantize(Expander& b, const ir::Node& node) {
  Value* x = node.input(0);
  const DType f = DType::kF32;
  KEEL_ASSIGN_OR_RETURN(Value* mx, b.Op("ReduceMax", {x}, {{"keepdims", int64_t{0}}}));
  KEEL_ASSIGN_OR_RETURN(Value* mn, b.Op("ReduceMin", {x}, {{"keepdims", int64_t{0}}}));
  KEEL_ASSIGN_OR_RETURN(mx, b.Op("Max", {mx, b.Scalar(0, f)}));
  KEEL_ASSIGN_OR_RETURN(mn, b.Op("Min", {mn, b.Scalar(0, f)}));
  KEEL_ASSIGN_OR_RETURN(Value* same, b.Op("Equal", {mx, mn}));
  KEEL_ASSIGN_OR_RETURN(Value* range, b.Op("Sub", {mx, mn}));
  KEEL_ASSIGN_OR_RETURN(range, b.Op("Where", {same, b.Scalar(1, f), range}));
  KEEL_ASSIGN_OR_RETURN(Value* scale, b.Op("Div", {range, b.Scalar(255, f)}));
  KEEL_ASSIGN_OR_RETURN(Value* zp, b.Op("Div", {mn, scale}));
  KEEL_ASSIGN_OR_RETURN(zp, b.Op("Sub", {b.Scalar(0, f), zp}));
  KEEL_ASSIGN_OR_RETURN(zp, b.Op("Clip", {zp}, {{"min", 0.0}, {"max", 255.0}}));
  KEEL_ASSIGN_OR_RETURN(zp, b.Op("Round", {zp}));
  KEEL_ASSIGN_OR_RETURN(zp, b.Op("Cast", {zp}, {{"to", std::string("u8")}}));
  KEEL_ASSIGN_OR_RETURN(Value* y, b.Op("keel.QuantizeLinear", {x, scale, zp}, {{"to", std::string("u8")}}));
  std::vector<Value*> outs = {y, scale, zp};
  outs.resize(std::min(outs.size(), node.outputs().size()));
  return outs;
}

// ---- the internal elementwise ops ----------------------------------------------------------

Result<std::vector<ir::TensorType>> InferInternal(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
  KEEL_ASSIGN_OR_RETURN(DType to, DTypeAttr(node, "to", DType::kU8));
  std::vector<int64_t> shape;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    if (!HasInput(node, i)) continue;
    auto s = BroadcastShapes(shape, InputType(node, i).shape);
    if (!s.ok()) return NodeError(node, s.status().message());
    shape = *s;
  }
  return One({to, shape});
}

bool Wide(DType t) { return t == DType::kF64 || !codegen::IsFloat(t); }

Result<Expr> QuantizeScalar(const ScalarArgs& a) {
  KEEL_ASSIGN_OR_RETURN(DType precision, DTypeAttr(a.node, "precision", DType::kF32));
  const DType c = Wide(a.operands[0].type()) || Wide(a.operands[1].type()) || precision == DType::kF64 ? DType::kF64
                                                                                                       : DType::kF32;
  Expr q = codegen::Unary(codegen::UnaryOp::kRound,
                          codegen::Cast(a.operands[0], c) / codegen::Cast(a.operands[1], c));
  if (a.operands.size() > 2 && !a.operands[2].is_null()) q = q + codegen::Cast(a.operands[2], c);
  const QuantRange r = RangeOf(a.out);
  q = codegen::Min(codegen::Max(q, codegen::FloatConst(static_cast<double>(r.lo), c)),
                   codegen::FloatConst(static_cast<double>(r.hi), c));
  return codegen::Cast(q, a.out);
}

Result<Expr> DequantizeScalar(const ScalarArgs& a) {
  const DType c = a.operands[1].type() == DType::kF64 ? DType::kF64 : DType::kF32;
  // The reference converts x to f32 first (exact for 8/16-bit values).
  Expr dx = codegen::Cast(a.operands[0], DType::kF32);
  if (a.operands.size() > 2 && !a.operands[2].is_null()) dx = dx - codegen::Cast(a.operands[2], DType::kF32);
  return codegen::Cast(dx, c) * codegen::Cast(a.operands[1], c);
}

}  // namespace

void RegisterQuantizeOps(Registry& r) {
  {
    OpDef def;
    def.name = "QuantizeLinear";
    def.versions = QuantVersions();
    def.removed_by = "shape-inference (expansion)";
    def.normalize = NormalizeQuant;
    def.canonicalize = CanonicalizeQuant;
    def.infer = InferQuantize;
    def.expand = ExpandQuantize;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "DequantizeLinear";
    def.versions = QuantVersions();
    def.removed_by = "shape-inference (expansion)";
    def.normalize = NormalizeQuant;
    def.canonicalize = CanonicalizeQuant;
    def.infer = InferDequantize;
    def.expand = ExpandDequantize;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "DynamicQuantizeLinear";
    def.versions = {11};
    def.removed_by = "shape-inference (expansion)";
    def.infer = InferDynamicQuantize;
    def.expand = ExpandDynamicQuantize;
    r.Add(std::move(def));
  }
  for (bool quantize : {true, false}) {
    OpDef def;
    def.name = quantize ? "keel.QuantizeLinear" : "keel.DequantizeLinear";
    def.domain = "keel";
    def.fusion = FusionClass::kElementwise;
    def.infer = InferInternal;
    def.scalar = quantize ? ScalarFn(QuantizeScalar) : ScalarFn(DequantizeScalar);
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
