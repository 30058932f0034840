// compiler/codegen/lower_elementwise.cc — elementwise and injective ops as index
// functions (TensorFns): nothing is materialized, a chain of them becomes one
// expression evaluated inside whatever loop nest stores the result.
#include <cmath>
#include <limits>
#include <set>

#include "compiler/codegen/lower_ops.h"

namespace keel::codegen {
namespace {

const std::set<std::string>& ElementwiseOps() {
  static const std::set<std::string> ops = {
      "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Relu", "Clip", "Sigmoid", "Erf", "Tanh", "Sqrt",
      "Exp", "Log", "Neg", "Abs", "Reciprocal", "Cast", "Identity", "Dropout", "Where", "Floor", "Ceil",
      "LeakyRelu", "HardSigmoid", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Not"};
  return ops;
}
const std::set<std::string>& MovementOps() {
  static const std::set<std::string> ops = {"Transpose", "Reshape", "keel.Reshape", "Flatten", "Squeeze",
                                            "Unsqueeze", "Expand", "Slice", "Gather", "Concat"};
  return ops;
}

// Scalar value of a constant input, if it is one.
bool ConstantScalar(const ir::Value* v, double* out) {
  if (!v || !v->is_constant()) return false;
  const ir::TensorData& d = *v->constant();
  if (d.type.NumElements() != 1) return false;
  switch (d.type.dtype) {
    case DType::kF32: *out = d.data<float>()[0]; return true;
    case DType::kF64: *out = d.data<double>()[0]; return true;
    case DType::kI64: *out = static_cast<double>(d.data<int64_t>()[0]); return true;
    case DType::kI32: *out = d.data<int32_t>()[0]; return true;
    default: return false;
  }
}

Expr ApplyBinary(const std::string& op, Expr a, Expr b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return a / b;
  if (op == "Pow") return Binary(BinaryOp::kPow, a, b);
  if (op == "Max") return Max(a, b);
  if (op == "Min") return Min(a, b);
  if (op == "Equal") return Binary(BinaryOp::kEq, a, b);
  if (op == "Less") return a < b;
  if (op == "Greater") return a > b;
  if (op == "LessOrEqual") return a <= b;
  if (op == "GreaterOrEqual") return a >= b;
  if (op == "And") return a && b;
  return a || b;  // Or
}

Status DefineElementwise(LowerContext& ctx, const ir::Node& node) {
  const std::string& op = node.op_type();
  const ir::Value* out = node.output(0);
  const ir::TensorType out_t = out->type();
  const ir::Attributes& attrs = node.attrs();
  std::vector<TensorFn> ins;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    if (!node.input(i)) { ins.push_back({}); continue; }
    KEEL_ASSIGN_OR_RETURN(const TensorFn* fn, ctx.Input(node, i));
    ins.push_back(*fn);
  }
  if (ins.empty() || !ins[0].at) return InvalidArgument(NodeLabel(node) + ": missing input");
  if (op == "Dropout" && node.outputs().size() > 1 && node.output(1) && !node.output(1)->uses().empty())
    return Unsupported(NodeLabel(node) + ": Dropout mask output");
  const std::vector<int64_t> oshape = out_t.shape;
  // Operand i read at output index idx, broadcast, converted to `dt`.
  auto read = [ins, oshape](size_t i, const std::vector<Expr>& idx) {
    return ins[i].at(BroadcastIndex(oshape, ins[i].type.shape, idx));
  };
  TensorFn fn;
  fn.type = out_t;
  DType dt = out_t.dtype;

  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Max" || op == "Min" ||
      op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" ||
      op == "And" || op == "Or") {
    for (const TensorFn& f : ins)
      if (!f.at) return InvalidArgument(NodeLabel(node) + ": missing operand");
    DType compute = ins[0].type.dtype;
    double p = 0;
    if (op == "Pow" && ConstantScalar(node.input(1), &p) && (p == 2.0 || p == 1.0 || p == 0.5 || p == 3.0)) {
      fn.at = [read, p, dt](const std::vector<Expr>& idx) {
        Expr x = Cast(read(0, idx), dt);
        if (p == 1.0) return x;
        if (p == 0.5) return Unary(UnaryOp::kSqrt, x);
        return p == 2.0 ? x * x : x * x * x;
      };
    } else {
      size_t n = ins.size();
      fn.at = [read, op, compute, n](const std::vector<Expr>& idx) {
        Expr acc = Cast(read(0, idx), compute);
        for (size_t i = 1; i < n; ++i) acc = ApplyBinary(op, acc, Cast(read(i, idx), compute));
        return acc;
      };
    }
  } else if (op == "Where") {
    if (ins.size() != 3) return InvalidArgument(NodeLabel(node) + ": Where needs 3 inputs");
    fn.at = [read, dt](const std::vector<Expr>& idx) {
      return Select(Cast(read(0, idx), DType::kBool), Cast(read(1, idx), dt), Cast(read(2, idx), dt));
    };
  } else if (op == "Clip") {
    KEEL_ASSIGN_OR_RETURN(double lo, attrs.GetFloat("min", -std::numeric_limits<double>::infinity()));
    KEEL_ASSIGN_OR_RETURN(double hi, attrs.GetFloat("max", std::numeric_limits<double>::infinity()));
    bool dyn_lo = ins.size() > 1 && ins[1].at, dyn_hi = ins.size() > 2 && ins[2].at;
    fn.at = [read, ins, lo, hi, dyn_lo, dyn_hi, dt](const std::vector<Expr>& idx) {
      Expr x = Cast(read(0, idx), dt);
      Expr l = dyn_lo ? Cast(ins[1].at(std::vector<Expr>(ins[1].type.shape.size(), Expr(0))), dt)
                      : (std::isinf(lo) ? Expr() : FloatConst(lo, dt));
      Expr h = dyn_hi ? Cast(ins[2].at(std::vector<Expr>(ins[2].type.shape.size(), Expr(0))), dt)
                      : (std::isinf(hi) ? Expr() : FloatConst(hi, dt));
      if (!l.is_null()) x = Max(x, l);
      if (!h.is_null()) x = Min(x, h);
      return x;
    };
    if (!IsFloat(dt)) return Unsupported(NodeLabel(node) + ": integer Clip");
  } else {
    if (IsFloat(dt) || op == "Cast" || op == "Identity" || op == "Dropout" || op == "Not" || op == "Neg" || op == "Abs") {
    } else {
      return Unsupported(NodeLabel(node) + ": " + op + " on " + ir::DTypeName(dt));
    }
    KEEL_ASSIGN_OR_RETURN(double alpha, attrs.GetFloat("alpha", op == "LeakyRelu" ? 0.01 : 0.2));
    KEEL_ASSIGN_OR_RETURN(double beta, attrs.GetFloat("beta", 0.5));
    fn.at = [read, op, dt, alpha, beta](const std::vector<Expr>& idx) -> Expr {
      Expr x = Cast(read(0, idx), dt);
      if (op == "Relu") return Max(x, FloatConst(0, dt));
      if (op == "Sigmoid") return Unary(UnaryOp::kSigmoid, x);
      if (op == "Erf") return Unary(UnaryOp::kErf, x);
      if (op == "Tanh") return Unary(UnaryOp::kTanh, x);
      if (op == "Sqrt") return Unary(UnaryOp::kSqrt, x);
      if (op == "Exp") return Unary(UnaryOp::kExp, x);
      if (op == "Log") return Unary(UnaryOp::kLog, x);
      if (op == "Neg") return -x;
      if (op == "Abs") return Unary(UnaryOp::kAbs, x);
      if (op == "Floor") return Unary(UnaryOp::kFloor, x);
      if (op == "Ceil") return Unary(UnaryOp::kCeil, x);
      if (op == "Not") return Unary(UnaryOp::kNot, x);
      if (op == "Reciprocal") return FloatConst(1, dt) / x;
      if (op == "LeakyRelu") return Select(x > FloatConst(0, dt), x, x * FloatConst(alpha, dt));
      if (op == "HardSigmoid")
        return Min(Max(x * FloatConst(alpha, dt) + FloatConst(beta, dt), FloatConst(0, dt)), FloatConst(1, dt));
      return x;  // Cast, Identity, Dropout (inference)
    };
  }
  ctx.Define(out, std::move(fn));
  return Status::Ok();
}

// A reshape: same elements, row-major order. When the shapes agree after
// dropping 1-sized dims, indices map one to one (no div/mod).
IndexFn ReshapeFn(const TensorFn& in, const std::vector<int64_t>& out_shape) {
  std::vector<int64_t> in_shape = in.type.shape;
  std::vector<size_t> in_nz, out_nz;
  for (size_t i = 0; i < in_shape.size(); ++i) if (in_shape[i] != 1) in_nz.push_back(i);
  for (size_t i = 0; i < out_shape.size(); ++i) if (out_shape[i] != 1) out_nz.push_back(i);
  bool direct = in_nz.size() == out_nz.size();
  for (size_t i = 0; direct && i < in_nz.size(); ++i) direct = in_shape[in_nz[i]] == out_shape[out_nz[i]];
  IndexFn at = in.at;
  if (direct) {
    return [at, in_nz, out_nz, n = in_shape.size()](const std::vector<Expr>& idx) {
      std::vector<Expr> r(n, Expr(0));
      for (size_t i = 0; i < in_nz.size(); ++i) r[in_nz[i]] = idx[out_nz[i]];
      return at(r);
    };
  }
  return [at, in_shape, out_shape](const std::vector<Expr>& idx) {
    return at(Delinearize(in_shape, Linearize(out_shape, idx)));
  };
}

Status DefineMovement(LowerContext& ctx, const ir::Node& node) {
  const std::string& op = node.op_type();
  const ir::Attributes& attrs = node.attrs();
  const ir::Value* out = node.output(0);
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in0p, ctx.Input(node, 0));
  TensorFn in = *in0p;
  TensorFn fn;
  fn.type = out->type();
  const std::vector<int64_t> oshape = fn.type.shape;
  const std::vector<int64_t> ishape = in.type.shape;
  IndexFn at = in.at;
  if (op == "Transpose") {
    KEEL_ASSIGN_OR_RETURN(auto perm, attrs.GetInts("perm", {}));
    if (perm.size() != ishape.size()) return InvalidArgument(NodeLabel(node) + ": perm rank mismatch");
    fn.at = [at, perm](const std::vector<Expr>& idx) {
      std::vector<Expr> r(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) r[static_cast<size_t>(perm[i])] = idx[i];
      return at(r);
    };
  } else if (op == "Reshape" || op == "keel.Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
    if (NumElements(ishape) != NumElements(oshape)) return InvalidArgument(NodeLabel(node) + ": element count changes");
    fn.at = ReshapeFn(in, oshape);
  } else if (op == "Expand") {
    fn.at = [at, ishape, oshape](const std::vector<Expr>& idx) { return at(BroadcastIndex(oshape, ishape, idx)); };
  } else if (op == "Slice") {
    KEEL_ASSIGN_OR_RETURN(auto starts, attrs.GetInts("starts", {}));
    KEEL_ASSIGN_OR_RETURN(auto axes, attrs.GetInts("axes", {}));
    KEEL_ASSIGN_OR_RETURN(auto steps, attrs.GetInts("steps", {}));
    if (node.inputs().size() > 1 || axes.size() != starts.size() || steps.size() != starts.size())
      return Unsupported(NodeLabel(node) + ": Slice with non-constant parameters");
    std::vector<int64_t> start(ishape.size(), 0), step(ishape.size(), 1);
    for (size_t i = 0; i < axes.size(); ++i) {
      if (axes[i] < 0 || axes[i] >= static_cast<int64_t>(ishape.size())) return InvalidArgument(NodeLabel(node) + ": axis");
      start[static_cast<size_t>(axes[i])] = starts[i];
      step[static_cast<size_t>(axes[i])] = steps[i];
    }
    fn.at = [at, start, step, ishape](const std::vector<Expr>& idx) {
      std::vector<Expr> r(idx.size());
      for (size_t i = 0; i < idx.size(); ++i) r[i] = Clamp(start[i] + idx[i] * step[i], 0, ishape[i] - 1);
      return at(r);
    };
  } else if (op == "Gather") {
    KEEL_ASSIGN_OR_RETURN(const TensorFn* ind_p, ctx.Input(node, 1));
    TensorFn ind = *ind_p;
    KEEL_ASSIGN_OR_RETURN(int64_t axis, attrs.GetInt("axis", 0));
    if (axis < 0 || axis >= static_cast<int64_t>(ishape.size())) return InvalidArgument(NodeLabel(node) + ": axis");
    if (IsFloat(ind.type.dtype)) return InvalidArgument(NodeLabel(node) + ": float indices");
    size_t r = ind.type.shape.size();
    int64_t dim = ishape[static_cast<size_t>(axis)];
    fn.at = [at, ind, axis, r, dim](const std::vector<Expr>& idx) {
      std::vector<Expr> ii(idx.begin() + axis, idx.begin() + axis + static_cast<int64_t>(r));
      Expr g = Cast(ind.at(ii), DType::kI64);
      // Negative indices count from the end; out-of-range ones are clamped (never read out of bounds).
      g = Clamp(Select(g < 0, g + dim, g), 0, dim - 1);
      std::vector<Expr> src(idx.begin(), idx.begin() + axis);
      src.push_back(g);
      src.insert(src.end(), idx.begin() + axis + static_cast<int64_t>(r), idx.end());
      return at(src);
    };
  } else if (op == "Concat") {
    KEEL_ASSIGN_OR_RETURN(int64_t axis, attrs.GetInt("axis", 0));
    std::vector<TensorFn> parts;
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      KEEL_ASSIGN_OR_RETURN(const TensorFn* p, ctx.Input(node, i));
      parts.push_back(*p);
    }
    size_t ax = static_cast<size_t>(axis);
    if (ax >= oshape.size()) return InvalidArgument(NodeLabel(node) + ": axis");
    DType dt = fn.type.dtype;
    fn.at = [parts, ax, dt](const std::vector<Expr>& idx) {
      // Select chain from the last part down; every read is clamped in bounds.
      std::vector<int64_t> offsets;
      int64_t off = 0;
      for (const TensorFn& p : parts) { offsets.push_back(off); off += p.type.shape[ax]; }
      Expr result;
      for (size_t i = parts.size(); i-- > 0;) {
        int64_t d = parts[i].type.shape[ax];
        if (d == 0) continue;
        std::vector<Expr> pi = idx;
        pi[ax] = Clamp(idx[ax] - offsets[i], 0, d - 1);
        Expr v = Cast(parts[i].at(pi), dt);
        result = result.is_null() ? v : Select(idx[ax] < offsets[i] + d, v, result);
      }
      return result;
    };
  }
  ctx.Define(out, std::move(fn));
  return Status::Ok();
}

}  // namespace

bool IsElementwiseOp(const std::string& op) { return ElementwiseOps().count(op) != 0; }
bool IsInjectiveOp(const std::string& op) { return IsElementwiseOp(op) || MovementOps().count(op) != 0; }

Status DefineInjective(LowerContext& ctx, const ir::Node& node) {
  if (!node.output(0) || !node.output(0)->has_type()) return InvalidArgument(NodeLabel(node) + ": untyped output");
  if (!IsSupportedKernelDType(node.output(0)->type().dtype))
    return Unsupported(NodeLabel(node) + ": dtype " + ir::DTypeName(node.output(0)->type().dtype));
  if (IsElementwiseOp(node.op_type())) return DefineElementwise(ctx, node);
  if (MovementOps().count(node.op_type())) return DefineMovement(ctx, node);
  return Unsupported(NodeLabel(node) + ": not an injective op");
}

}  // namespace keel::codegen
