// compiler/ops/normalization_misc.cc — LRN (a window across channels),
// MeanVarianceNormalization (over `axes`) and LpNormalization (p = 1 or 2
// along one axis).
//
//   LRN   y = x / (bias + alpha / size * Σ x[c']²)^beta, c' in
//         [c - floor((size-1)/2), c + ceil((size-1)/2)] ∩ [0, C).
//   MVN   y = (x - mean) / (sqrt(var) + 1e-9), mean/var over `axes` (default
//         [0, 2, 3]); the epsilon is added to the deviation as in ONNX's
//         function body.
//   LpN   y = x / ||x||_p along `axis`, and 0 where the norm is 0 (ONNX 1.17+
//         reference semantics; no NaN from 0/0).
// MVN and LpNormalization lower to codegen::LowerRowNorm, LRN to LowerLrn.
#include <cmath>

#include "compiler/ops/normalization.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using codegen::FloatConst;

Result<std::vector<ir::TensorType>> InferFloatUnary(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  KEEL_RETURN_IF_ERROR(CheckOutputs(node, 1, "the op has 1 output"));
  const ir::DType d = InputType(node, 0).dtype;
  if (!IsFloatType(d)) return NodeUnsupported(node, node.op_type() + " on " + ir::DTypeName(d));
  return One(InputType(node, 0));
}

// ---- LRN -------------------------------------------------------------------------------

Result<std::vector<ir::TensorDataPtr>> EvaluateLrn(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                   const std::vector<ir::TensorType>& out_types) {
  const std::vector<int64_t>& xs = in[0]->type.shape;
  KEEL_ASSIGN_OR_RETURN(int64_t size, node.attrs().GetInt("size", 1));
  KEEL_ASSIGN_OR_RETURN(double alpha, node.attrs().GetFloat("alpha", 1e-4));
  KEEL_ASSIGN_OR_RETURN(double beta, node.attrs().GetFloat("beta", 0.75));
  KEEL_ASSIGN_OR_RETURN(double bias, node.attrs().GetFloat("bias", 1.0));
  int64_t inner = 1;
  for (size_t d = 2; d < xs.size(); ++d) inner *= xs[d];
  const int64_t c = xs[1], lo = (size - 1) / 2, hi = size - 1 - lo;
  const std::vector<double> x = TensorToDoubles(*in[0]);
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    const int64_t ch = (i / inner) % c, base = i - ch * inner;
    double sq = 0;
    for (int64_t k = std::max<int64_t>(0, ch - lo); k <= std::min(c - 1, ch + hi); ++k) {
      const double v = x[static_cast<size_t>(base + k * inner)];
      sq += v * v;
    }
    y[static_cast<size_t>(i)] = x[static_cast<size_t>(i)] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta);
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(out_types[0], y));
  return std::vector<ir::TensorDataPtr>{out};
}

// ---- MeanVarianceNormalization and LpNormalization ---------------------------------------

// The dims each op reduces: MVN's `axes`, LpNormalization's `axis`.
Result<std::vector<bool>> ReducedDims(const ir::Node& node) {
  const size_t rank = InputType(node, 0).shape.size();
  std::vector<bool> reduced(rank, false);
  if (node.op_type() == "LpNormalization") {
    KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", -1));
    if (axis < 0 || axis >= static_cast<int64_t>(rank)) return NodeError(node, "axis out of range");
    reduced[static_cast<size_t>(axis)] = true;
    return reduced;
  }
  KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", {}));
  for (int64_t a : axes) {
    if (a < 0 || a >= static_cast<int64_t>(rank)) return NodeError(node, "axis out of range");
    reduced[static_cast<size_t>(a)] = true;
  }
  return reduced;
}

Result<std::vector<ir::TensorDataPtr>> EvaluateRowNormOp(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                         const std::vector<ir::TensorType>& out_types) {
  const bool lp = node.op_type() == "LpNormalization";
  KEEL_ASSIGN_OR_RETURN(int64_t p, node.attrs().GetInt("p", 2));
  KEEL_ASSIGN_OR_RETURN(std::vector<bool> reduced, ReducedDims(node));
  int64_t rows = 0;
  const auto row_of = RowOfKeptDims(in[0]->type.shape, reduced, &rows);
  const std::vector<double> x = TensorToDoubles(*in[0]);
  const RowStatistics st = ComputeRowStatistics(x, rows, row_of);
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    const size_t r = static_cast<size_t>(row_of(i)), iu = static_cast<size_t>(i);
    if (lp) {
      const double norm = p == 1 ? st.sum_abs[r] : std::sqrt(st.sum_sq[r]);
      y[iu] = norm == 0 ? 0.0 : x[iu] / norm;
    } else {
      y[iu] = (x[iu] - st.mean[r]) / (std::sqrt(st.var[r]) + 1e-9);
    }
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(out_types[0], y));
  return std::vector<ir::TensorDataPtr>{out};
}

Result<codegen::Stmt> LowerRowNormOp(codegen::LowerContext& ctx, const ir::Node& node,
                                     const std::vector<codegen::StoreFn>& stores) {
  const bool lp = node.op_type() == "LpNormalization";
  KEEL_ASSIGN_OR_RETURN(int64_t p, node.attrs().GetInt("p", 2));
  codegen::RowNormSpec spec;
  spec.shape = InputType(node, 0).shape;
  KEEL_ASSIGN_OR_RETURN(spec.reduced, ReducedDims(node));
  spec.compute = NormComputeType(InputType(node, 0).dtype);
  const codegen::DType ct = spec.compute;
  KEEL_ASSIGN_OR_RETURN(spec.x, InputAs(ctx, node, 0, ct));
  spec.center = !lp;
  spec.abs_sum = lp && p == 1;
  spec.inv = [lp, p, ct](Expr, Expr sum, double count) {
    if (!lp) return FloatConst(1, ct) / (codegen::Unary(codegen::UnaryOp::kSqrt, sum / FloatConst(count, ct)) + FloatConst(1e-9, ct));
    Expr norm = p == 1 ? sum : codegen::Unary(codegen::UnaryOp::kSqrt, sum);
    // A zero norm gives 0 (not 0/0): divide by 1 there and multiply by 0.
    Expr zero = codegen::Binary(codegen::BinaryOp::kEq, norm, FloatConst(0, ct));
    return codegen::Select(zero, FloatConst(0, ct), FloatConst(1, ct) / codegen::Select(zero, FloatConst(1, ct), norm));
  };
  const codegen::StoreFn y = stores[0];
  spec.element = [y](const std::vector<Expr>& it, Expr x, Expr mean, Expr inv) { return y(it, (x - mean) * inv); };
  return codegen::LowerRowNorm(ctx, spec);
}

}  // namespace

void RegisterNormalizationMiscOps(Registry& r) {
  {
    OpDef def;
    def.name = "LRN";
    KeepF32(def, "sums of squares over neighbouring channels");
    def.versions = {1, 13};
    def.fusion = FusionClass::kAnchor;
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_ASSIGN_OR_RETURN(int64_t size, node.attrs().GetInt("size", 0));
      if (size < 1) return NodeError(node, "attribute size must be >= 1, got " + std::to_string(size));
      KEEL_ASSIGN_OR_RETURN(double alpha, node.attrs().GetFloat("alpha", 1e-4));
      KEEL_ASSIGN_OR_RETURN(double beta, node.attrs().GetFloat("beta", 0.75));
      KEEL_ASSIGN_OR_RETURN(double bias, node.attrs().GetFloat("bias", 1.0));
      node.attrs().Set("alpha", alpha);
      node.attrs().Set("beta", beta);
      node.attrs().Set("bias", bias);
      return Status::Ok();
    };
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_ASSIGN_OR_RETURN(auto types, InferFloatUnary(node));
      if (types[0].shape.size() < 3) return NodeError(node, "input rank must be >= 3, got " + types[0].ToString());
      return types;
    };
    def.evaluate = EvaluateLrn;
    def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
      return codegen::LowerLrn(ctx, node, stores[0]);
    };
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "MeanVarianceNormalization";
    KeepF32(def, "mean and variance over the normalized axes");
    def.versions = {9, 13};
    def.fusion = FusionClass::kAnchor;
    def.canonicalize = [](ir::Node& node) -> Status {
      if (!node.attrs().Has("axes")) node.attrs().Set("axes", std::vector<int64_t>{0, 2, 3});
      return CanonicalizeAxesAttr(node, "axes", static_cast<int64_t>(InputType(node, 0).shape.size()), true);
    };
    def.infer = InferFloatUnary;
    def.evaluate = EvaluateRowNormOp;
    def.kernel = LowerRowNormOp;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "LpNormalization";
    KeepF32(def, "norm over the normalized axis");
    def.versions = {1, 22};
    def.fusion = FusionClass::kAnchor;
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_RETURN_IF_ERROR(CanonicalizeAxisAttr(node, "axis", -1, static_cast<int64_t>(InputType(node, 0).shape.size())));
      KEEL_ASSIGN_OR_RETURN(int64_t p, node.attrs().GetInt("p", 2));
      if (p != 1 && p != 2) return NodeError(node, "p must be 1 or 2, got " + std::to_string(p));
      node.attrs().Set("p", p);
      return Status::Ok();
    };
    def.infer = InferFloatUnary;
    def.evaluate = EvaluateRowNormOp;
    def.kernel = LowerRowNormOp;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
