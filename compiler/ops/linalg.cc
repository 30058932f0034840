// compiler/ops/linalg.cc — Det (opsets 11, 22): the determinant of each
// [M, M] matrix of an input [..., M, M]; output [...].
//
// An anchor with its own kernel: per matrix (one parallel iteration), the
// matrix is copied into local scratch in f64 and reduced by Gaussian
// elimination with partial pivoting (the largest |a[r][c]| of the column
// becomes the pivot; each row swap flips the sign); the determinant is the
// signed product of the pivots. A zero pivot (the column is all zero below
// the diagonal) makes the determinant 0; its elimination step multiplies by 0
// instead of dividing by it, so no NaN appears. f64 keeps the f32 result
// accurate where LAPACK's f32 getrf (numpy's reference) is; the matrices are
// small (M <= kMaxDim) since the scratch lives in registers / on the stack.
// The evaluator is the same algorithm written plainly in double.
#include <cmath>

#include "compiler/codegen/lower_context.h"
#include "compiler/ops/lowering.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using codegen::LoopKind;
using codegen::Stmt;

constexpr int64_t kMaxDim = 64;

Result<std::vector<ir::TensorType>> InferDet(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  if (!IsFloatType(x.dtype)) return NodeUnsupported(node, std::string("Det on ") + ir::DTypeName(x.dtype));
  const size_t r = x.shape.size();
  if (r < 2 || x.shape[r - 1] != x.shape[r - 2]) {
    return NodeError(node, "input must be [..., M, M], got " + ShapeString(x.shape));
  }
  if (x.shape[r - 1] > kMaxDim) {
    return NodeUnsupported(node, "matrices larger than " + std::to_string(kMaxDim) + "x" + std::to_string(kMaxDim));
  }
  return One({x.dtype, std::vector<int64_t>(x.shape.begin(), x.shape.end() - 2)});
}

// Gaussian elimination with partial pivoting on a row-major m x m matrix.
double Determinant(std::vector<double> a, int64_t m) {
  auto at = [&](int64_t r, int64_t c) -> double& { return a[static_cast<size_t>(r * m + c)]; };
  double det = 1;
  for (int64_t c = 0; c < m; ++c) {
    int64_t piv = c;
    for (int64_t r = c + 1; r < m; ++r) {
      if (std::fabs(at(r, c)) > std::fabs(at(piv, c))) piv = r;
    }
    if (piv != c) {
      for (int64_t j = 0; j < m; ++j) std::swap(at(c, j), at(piv, j));
      det = -det;
    }
    const double p = at(c, c);
    det *= p;
    if (p == 0) return det * 0;  // keeps the sign of zero and NaN propagation simple
    for (int64_t r = c + 1; r < m; ++r) {
      const double f = at(r, c) / p;
      for (int64_t j = c + 1; j < m; ++j) at(r, j) -= f * at(c, j);
    }
  }
  return det;
}

Result<std::vector<ir::TensorDataPtr>> EvaluateDet(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                   const std::vector<ir::TensorType>& out_types) {
  (void)node;
  const ir::TensorData& x = *in[0];
  const int64_t m = x.type.shape.back();
  auto out = NewTensor(out_types[0]);
  const int64_t count = out_types[0].NumElements();
  for (int64_t b = 0; b < count; ++b) {
    std::vector<double> a(static_cast<size_t>(m * m));
    for (int64_t i = 0; i < m * m; ++i) a[static_cast<size_t>(i)] = ElementAsDouble(x, b * m * m + i);
    StoreDouble(*out, b, Determinant(std::move(a), m));
  }
  return std::vector<ir::TensorDataPtr>{out};
}

Result<Stmt> LowerDet(codegen::LowerContext& ctx, const ir::Node& node, const codegen::StoreFn& store) {
  codegen::KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(const codegen::TensorFn* xp, ctx.Input(node, 0));
  const codegen::TensorFn X = *xp;
  const std::vector<int64_t>& shape = X.type.shape;
  const int64_t m = shape.back();
  const std::vector<int64_t> batch(shape.begin(), shape.end() - 2);
  const int64_t count = codegen::NumElements(batch);
  const ir::DType f64 = ir::DType::kF64;
  const int a = k.AddLocal("det_a", f64, {m, m});
  const int acc = k.AddLocal("det_acc", f64, {2});        // [det, pivot value]
  const int piv = k.AddLocal("det_pivot", ir::DType::kI64, {1});
  const int tmp = k.AddLocal("det_tmp", f64, {1});
  Expr t = k.NewVar("t"), i = k.NewVar("i"), j = k.NewVar("j"), c = k.NewVar("c"), r = k.NewVar("r");
  const std::vector<Expr> bidx = batch.empty() ? std::vector<Expr>{} : codegen::Delinearize(batch, t);
  auto A = [&](Expr row, Expr col) { return k.Load(a, {row, col}); };
  auto abs = [](Expr v) { return codegen::Unary(codegen::UnaryOp::kAbs, v); };

  std::vector<Expr> xi = bidx;
  xi.push_back(i);
  xi.push_back(j);
  Stmt copy = For(i, 0, m, LoopKind::kSerial,
                  For(j, 0, m, LoopKind::kSerial, k.Store(a, {i, j}, codegen::Cast(X.at(xi), f64))));

  Expr p = k.Load(piv, {Expr(0)}), pv = k.Load(acc, {Expr(1)}), det = k.Load(acc, {Expr(0)});
  Expr take = abs(A(r, c)) > pv;
  Stmt find = codegen::Block({
      k.Store(piv, {Expr(0)}, c),
      k.Store(acc, {Expr(1)}, abs(A(c, c))),
      For(r, c + 1, m, LoopKind::kSerial,
          codegen::Block({k.Store(piv, {Expr(0)}, codegen::Select(take, r, p)),
                          k.Store(acc, {Expr(1)}, codegen::Select(take, abs(A(r, c)), pv))})),
  });
  Stmt swap = For(j, 0, m, LoopKind::kSerial,
                  codegen::Block({k.Store(tmp, {Expr(0)}, A(c, j)), k.Store(a, {c, j}, A(p, j)),
                                  k.Store(a, {p, j}, k.Load(tmp, {Expr(0)}))}));
  Expr sign = codegen::Select(codegen::Binary(codegen::BinaryOp::kNe, p, c), codegen::FloatConst(-1, f64),
                              codegen::FloatConst(1, f64));
  Expr pivot = A(c, c);
  Expr zero = codegen::FloatConst(0, f64);
  Expr is_zero = codegen::Binary(codegen::BinaryOp::kEq, pivot, zero);
  // The factor of row r; 0 for a zero pivot (its column is all zero).
  Stmt factor = k.Store(tmp, {Expr(0)}, codegen::Select(is_zero, zero, A(r, c) / pivot));
  Stmt eliminate = For(r, c + 1, m, LoopKind::kSerial,
                       codegen::Block({factor, For(j, c + 1, m, LoopKind::kSerial,
                                                   k.Store(a, {r, j}, A(r, j) - k.Load(tmp, {Expr(0)}) * A(c, j)))}));
  Stmt column = codegen::Block({find, swap, k.Store(acc, {Expr(0)}, det * sign * pivot), eliminate});
  const ir::DType out_t = ComputeType(node.output(0)->type().dtype);
  Stmt body = codegen::Block({copy, k.Store(acc, {Expr(0)}, codegen::FloatConst(1, f64)),
                              For(c, 0, m, LoopKind::kSerial, column), store(bidx, codegen::Cast(det, out_t))});
  const bool par = count > 1 && count * m * m * m >= ctx.options().min_parallel_elements;
  return For(t, 0, count, par ? LoopKind::kParallel : LoopKind::kSerial, body);
}

}  // namespace

void RegisterLinalgOps(Registry& r) {
  OpDef def;
  def.name = "Det";
  def.versions = {11, 22};
  def.fusion = FusionClass::kAnchor;
  def.infer = InferDet;
  def.evaluate = EvaluateDet;
  def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
    return LowerDet(ctx, node, stores[0]);
  };
  r.Add(std::move(def));
}

}  // namespace keel::ops
