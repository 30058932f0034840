// compiler/ops/movement_generate.cc — ops whose output is generated from
// constants and indices rather than moved from an input: ConstantOfShape,
// Range, EyeLike and OneHot (plus Shape's kernel lives in shape_ops.cc).
//
// ConstantOfShape's shape and Range's scalars must be compile-time constants
// (they decide the output shape); they stay inputs (read through
// ConstantInput) so that constant folding, which folds only nodes with
// constant inputs, removes these nodes. A kernel is generated only when the
// value is a graph output. OneHot's depth is lifted into an attribute; its
// indices and values are run-time tensors.
#include <cmath>

#include "compiler/ops/movement_util.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using codegen::TensorFn;

// Element 0 of `t` as an expression of dtype `dt` (integers exactly).
Expr ElementConst(const ir::TensorData& t, ir::DType dt) {
  if (codegen::IsFloat(t.type.dtype)) return TypedConst(ElementAsDouble(t, 0), dt);
  return codegen::Cast(codegen::IntConst(ElementAsInt(t, 0)), dt);
}

// ---- ConstantOfShape -------------------------------------------------------------------

Result<std::vector<ir::TensorType>> InferConstantOfShape(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(auto shape, node.attrs().GetInts("shape", {}));
  KEEL_RETURN_IF_ERROR(CheckShape(node, shape, "shape"));
  ir::DType dt = ir::DType::kF32;
  if (node.attrs().Has("value")) {
    KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr v, node.attrs().GetTensor("value"));
    if (v->type.NumElements() != 1) return NodeError(node, "value must hold one element, got " + v->type.ToString());
    dt = v->type.dtype;
  }
  return One({dt, shape});
}

Status DefineConstantOfShape(codegen::LowerContext& ctx, const ir::Node& node) {
  TensorFn fn;
  fn.type = node.output(0)->type();
  Expr value = TypedConst(0, fn.type.dtype);
  if (node.attrs().Has("value")) {
    KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr v, node.attrs().GetTensor("value"));
    value = ElementConst(*v, fn.type.dtype);
  }
  fn.at = [value](const std::vector<Expr>&) { return value; };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// ---- Range ---------------------------------------------------------------------------------

// Canonical: attributes keel.start/keel.limit/keel.delta (f64 or i64 by
// dtype); the constant inputs stay for constant folding but are not read.
Status CanonicalizeRange(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 3, 3));
  if (node.attrs().Has("keel.delta")) return Status::Ok();
  const ir::DType dt = InputType(node, 0).dtype;
  const char* names[3] = {"keel.start", "keel.limit", "keel.delta"};
  for (size_t i = 0; i < 3; ++i) {
    const ir::TensorData* c = ConstantInput(node, i);
    if (!c) return NeedsConstant(node, i, "Range's operands decide the output shape");
    if (c->type.NumElements() != 1) return NodeError(node, "input " + std::to_string(i) + " must be a scalar");
    if (c->type.dtype != dt) return NodeError(node, "start, limit and delta have different dtypes");
    if (codegen::IsFloat(dt)) {
      node.attrs().Set(names[i], ElementAsDouble(*c, 0));
    } else {
      node.attrs().Set(names[i], ElementAsInt(*c, 0));
    }
  }
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferRange(const ir::Node& node) {
  const ir::DType dt = InputType(node, 0).dtype;
  double n = 0;
  if (codegen::IsFloat(dt)) {
    KEEL_ASSIGN_OR_RETURN(double s, node.attrs().GetFloat("keel.start", 0));
    KEEL_ASSIGN_OR_RETURN(double l, node.attrs().GetFloat("keel.limit", 0));
    KEEL_ASSIGN_OR_RETURN(double d, node.attrs().GetFloat("keel.delta", 0));
    if (d == 0) return NodeError(node, "delta is 0");
    n = std::ceil((l - s) / d);
  } else {
    KEEL_ASSIGN_OR_RETURN(int64_t s, node.attrs().GetInt("keel.start", 0));
    KEEL_ASSIGN_OR_RETURN(int64_t l, node.attrs().GetInt("keel.limit", 0));
    KEEL_ASSIGN_OR_RETURN(int64_t d, node.attrs().GetInt("keel.delta", 0));
    if (d == 0) return NodeError(node, "delta is 0");
    n = std::ceil((static_cast<double>(l) - static_cast<double>(s)) / static_cast<double>(d));
  }
  if (!(n < static_cast<double>(kMaxElements))) return NodeError(node, "the range has more than 2^40 elements");
  return One({dt, {n > 0 ? static_cast<int64_t>(n) : 0}});
}

// output[i] = start + i * delta, computed in double (float types) or i64 and
// rounded once (the precise form of stash_type=1).
Status DefineRange(codegen::LowerContext& ctx, const ir::Node& node) {
  TensorFn fn;
  fn.type = node.output(0)->type();
  const ir::DType dt = fn.type.dtype;
  if (codegen::IsFloat(dt)) {
    KEEL_ASSIGN_OR_RETURN(double s, node.attrs().GetFloat("keel.start", 0));
    KEEL_ASSIGN_OR_RETURN(double d, node.attrs().GetFloat("keel.delta", 0));
    fn.at = [s, d, dt](const std::vector<Expr>& idx) {
      Expr i = codegen::Cast(idx[0], ir::DType::kF64);
      return codegen::Cast(codegen::FloatConst(s, ir::DType::kF64) + i * codegen::FloatConst(d, ir::DType::kF64), dt);
    };
  } else {
    KEEL_ASSIGN_OR_RETURN(int64_t s, node.attrs().GetInt("keel.start", 0));
    KEEL_ASSIGN_OR_RETURN(int64_t d, node.attrs().GetInt("keel.delta", 0));
    fn.at = [s, d, dt](const std::vector<Expr>& idx) { return codegen::Cast(Expr(s) + idx[0] * d, dt); };
  }
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// ---- EyeLike -----------------------------------------------------------------------------------

Result<std::vector<ir::TensorType>> InferEyeLike(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  if (x.shape.size() != 2) return NodeError(node, "input " + x.ToString() + " is not 2-D");
  ir::DType dt = x.dtype;
  if (node.attrs().Has("dtype")) {
    KEEL_ASSIGN_OR_RETURN(int64_t code, node.attrs().GetInt("dtype", 1));
    auto d = DTypeFromOnnx(code);
    if (!d.ok()) return NodeUnsupported(node, d.status().message());
    dt = *d;
  }
  return One({dt, x.shape});
}

Status DefineEyeLike(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(int64_t k, node.attrs().GetInt("k", 0));
  TensorFn fn;
  fn.type = node.output(0)->type();
  const ir::DType dt = fn.type.dtype;
  fn.at = [k, dt](const std::vector<Expr>& idx) {
    return codegen::Select(Eq(idx[1] - idx[0], Expr(k)), TypedConst(1, dt), TypedConst(0, dt));
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// ---- OneHot --------------------------------------------------------------------------------------
// Canonical: inputs indices, values ([off, on]); attributes depth, axis (non-negative).

Status CanonicalizeOneHot(ir::Node& node) {
  if (node.attrs().Has("depth") && node.inputs().size() == 2) return Status::Ok();  // canonical already
  KEEL_RETURN_IF_ERROR(CheckArity(node, 3, 3));
  if (const ir::TensorData* d = ConstantInput(node, 1)) {
    if (d->type.NumElements() != 1) return NodeError(node, "depth must hold one value");
    // Depth may be any numeric type; a float depth is truncated.
    node.attrs().Set("depth", static_cast<int64_t>(ElementAsDouble(*d, 0)));
    ir::Value* values = node.input(2);
    node.SetInputs({node.input(0), values});
  } else {
    return NeedsConstant(node, 1, "the depth decides the output shape");
  }
  const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
  return CanonicalizeAxisAttr(node, "axis", -1, rank + 1);
}

Result<std::vector<ir::TensorType>> InferOneHot(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
  const ir::TensorType& ind = InputType(node, 0);
  const ir::TensorType& values = InputType(node, 1);
  if (values.NumElements() != 2) return NodeError(node, "values must hold 2 elements, got " + values.ToString());
  KEEL_ASSIGN_OR_RETURN(int64_t depth, node.attrs().GetInt("depth", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  if (depth < 0) return NodeError(node, "depth " + std::to_string(depth) + " is negative");
  if (axis < 0 || axis > static_cast<int64_t>(ind.shape.size())) return NodeError(node, "axis is out of range");
  std::vector<int64_t> out = ind.shape;
  out.insert(out.begin() + axis, depth);
  KEEL_RETURN_IF_ERROR(CheckedElements(node, out).status());
  return One({values.dtype, out});
}

Status DefineOneHot(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* ind, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* values, ctx.Input(node, 1));
  KEEL_ASSIGN_OR_RETURN(int64_t depth, node.attrs().GetInt("depth", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  TensorFn fn;
  fn.type = node.output(0)->type();
  const ir::DType dt = fn.type.dtype;
  fn.at = [ind, values, depth, axis, dt](const std::vector<Expr>& idx) {
    std::vector<Expr> ii(idx.begin(), idx.begin() + axis);
    ii.insert(ii.end(), idx.begin() + axis + 1, idx.end());
    Expr g = codegen::Cast(ind->at(ii), ir::DType::kI64);  // floats truncate toward zero
    g = codegen::Select(g < 0, g + depth, g);               // out-of-range indices match nothing
    const size_t vr = values->type.shape.size();
    std::vector<Expr> v0(vr, Expr(0)), v1(vr, Expr(0));
    if (vr > 0) v1[vr - 1] = Expr(1);
    return codegen::Cast(codegen::Select(Eq(g, idx[static_cast<size_t>(axis)]), values->at(v1), values->at(v0)), dt);
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

}  // namespace

void RegisterMovementGenerateOps(Registry& r) {
  {
    OpDef def = InjectiveOp("ConstantOfShape", {9, 20, 21, 23, 24, 25});
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
      if (const ir::TensorData* c = ConstantInput(node, 0)) {
        KEEL_ASSIGN_OR_RETURN(auto shape, ReadInts(*c));
        node.attrs().Set("shape", shape);
      } else if (!node.attrs().Has("shape")) {
        return NeedsConstant(node, 0, "the shape decides the output shape");
      }
      return Status::Ok();
    };
    def.infer = InferConstantOfShape;
    def.injective = DefineConstantOfShape;
    r.Add(std::move(def));
  }
  {
    OpDef def = InjectiveOp("Range", {11, 27});
    KeepF32(def, "values computed from start and step");
    def.canonicalize = CanonicalizeRange;
    def.infer = InferRange;
    def.injective = DefineRange;
    r.Add(std::move(def));
  }
  {
    OpDef def = InjectiveOp("EyeLike", {9, 22});
    def.value_independent = true;
    def.infer = InferEyeLike;
    def.injective = DefineEyeLike;
    // Folded from the input's type alone (the interpreter would want its data).
    def.evaluate = [](const ir::Node& node, const std::vector<ir::TensorDataPtr>&,
                      const std::vector<ir::TensorType>& out) -> Result<std::vector<ir::TensorDataPtr>> {
      KEEL_ASSIGN_OR_RETURN(int64_t k, node.attrs().GetInt("k", 0));
      auto t = NewTensor(out[0]);
      const int64_t rows = out[0].shape[0], cols = out[0].shape[1];
      for (int64_t i = 0; i < rows; ++i) {
        if (i + k >= 0 && i + k < cols) StoreInt(*t, i * cols + i + k, 1);
      }
      return std::vector<ir::TensorDataPtr>{t};
    };
    r.Add(std::move(def));
  }
  {
    OpDef def = InjectiveOp("OneHot", {9, 11, 28});
    def.canonicalize = CanonicalizeOneHot;
    def.infer = InferOneHot;
    def.injective = DefineOneHot;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
