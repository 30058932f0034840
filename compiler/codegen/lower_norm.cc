// compiler/codegen/lower_norm.cc — normalization kernels: the shared row
// normalization (RowNormSpec, lower_ops.h) and LRN's channel window.
#include <algorithm>

#include "compiler/codegen/lower_ops.h"

namespace keel::codegen {

Result<Stmt> LowerRowNorm(LowerContext& ctx, const RowNormSpec& spec) {
  KernelFunc& k = ctx.kernel();
  if (spec.reduced.size() != spec.shape.size() || !spec.x || !spec.inv || !spec.element) {
    return Internal("LowerRowNorm: incomplete spec");
  }
  std::vector<int64_t> kept, reduced;
  for (size_t d = 0; d < spec.shape.size(); ++d) (spec.reduced[d] ? reduced : kept).push_back(spec.shape[d]);
  const int64_t O = NumElements(kept), D = NumElements(reduced);
  const DType ct = spec.compute;
  // [mean, sum, inv]: promoted to registers, so the row loops vectorize.
  const int st = k.AddLocal("norm_stats", ct, {3});
  Expr t = k.NewVar("t");
  const std::vector<Expr> ko = Delinearize(kept, t);
  // The iteration index of element r of the current row (r = 0 gives the row's index).
  auto it_at = [&](Expr r) {
    const std::vector<Expr> ro = Delinearize(reduced, std::move(r));
    std::vector<Expr> it;
    size_t ki = 0, ri = 0;
    for (size_t d = 0; d < spec.shape.size(); ++d) it.push_back(spec.reduced[d] ? ro[ri++] : ko[ki++]);
    return it;
  };
  const Expr mean = spec.center ? k.Load(st, {Expr(0)}) : FloatConst(0, ct);
  const Expr sum = k.Load(st, {Expr(1)}), inv = k.Load(st, {Expr(2)});
  const double count = static_cast<double>(std::max<int64_t>(D, 1));
  std::vector<Stmt> body;
  if (spec.center) {
    Expr r = k.NewVar("r");
    body.push_back(k.Store(st, {Expr(0)}, FloatConst(0, ct)));
    body.push_back(For(r, 0, D, LoopKind::kSerial, k.Store(st, {Expr(0)}, mean + spec.x(it_at(r)))));
    body.push_back(k.Store(st, {Expr(0)}, mean / FloatConst(count, ct)));
  }
  {
    Expr r = k.NewVar("r");
    Expr d = spec.x(it_at(r)) - mean;
    Expr term = spec.abs_sum ? Unary(UnaryOp::kAbs, d) : d * d;
    body.push_back(k.Store(st, {Expr(1)}, FloatConst(0, ct)));
    body.push_back(For(r, 0, D, LoopKind::kSerial, k.Store(st, {Expr(1)}, sum + term)));
  }
  body.push_back(k.Store(st, {Expr(2)}, spec.inv(mean, sum, count)));
  if (spec.row) body.push_back(spec.row(it_at(Expr(0)), mean, sum, inv));
  {
    Expr r = k.NewVar("r");
    std::vector<Expr> it = it_at(r);
    body.push_back(For(r, 0, D, LoopKind::kVectorize, spec.element(it, spec.x(it), mean, inv)));
  }
  const bool par = O > 1 && O * D >= ctx.options().min_parallel_elements;
  return For(t, 0, O, par ? LoopKind::kParallel : LoopKind::kSerial, Block(std::move(body)));
}

Result<Stmt> LowerLrn(LowerContext& ctx, const ir::Node& node, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  const TensorFn X = *Xp;
  if (!IsFloat(X.type.dtype)) return Unsupported(NodeLabel(node) + ": LRN on " + ir::DTypeName(X.type.dtype));
  const std::vector<int64_t>& s = X.type.shape;
  if (s.size() < 3) return InvalidArgument(NodeLabel(node) + ": input rank must be >= 3");
  KEEL_ASSIGN_OR_RETURN(int64_t size, node.attrs().GetInt("size", 1));
  KEEL_ASSIGN_OR_RETURN(double alpha, node.attrs().GetFloat("alpha", 1e-4));
  KEEL_ASSIGN_OR_RETURN(double beta, node.attrs().GetFloat("beta", 0.75));
  KEEL_ASSIGN_OR_RETURN(double bias, node.attrs().GetFloat("bias", 1.0));
  if (size < 1) return InvalidArgument(NodeLabel(node) + ": size must be >= 1");
  const DType ct = X.type.dtype == DType::kF64 ? DType::kF64 : DType::kF32;
  const int64_t C = s[1], lo = (size - 1) / 2;
  // Window offsets j in [0, size) that can land inside [0, C) for some channel.
  const int64_t j_begin = std::max<int64_t>(0, lo - (C - 1)), j_end = std::min(size, lo + C);
  auto square_at = [&](const std::vector<Expr>& idx, Expr j) {
    Expr c = idx[1] - lo + j;
    std::vector<Expr> at = idx;
    at[1] = Clamp(c, 0, C - 1);
    Expr v = Cast(X.at(at), ct);
    return Select((c >= 0) && (c < C), v * v, FloatConst(0, ct));
  };
  auto finish = [&](const std::vector<Expr>& idx, Expr sq) {
    Expr den = Binary(BinaryOp::kPow, FloatConst(bias, ct) + FloatConst(alpha / static_cast<double>(size), ct) * sq,
                      FloatConst(beta, ct));
    return store(idx, Cast(X.at(idx), ct) / den);
  };
  if (j_end - j_begin <= 16) {
    // Small windows (every real model's): the sum is one expression, the row loop vectorizes.
    return LoopNest(ctx, s, [&](const std::vector<Expr>& idx) {
      Expr sq = FloatConst(0, ct);
      for (int64_t j = j_begin; j < j_end; ++j) sq = sq + square_at(idx, Expr(j));
      return finish(idx, sq);
    });
  }
  const int acc = k.AddLocal("lrn_acc", ct, {1});
  Expr a = k.Load(acc, {Expr(0)});
  Expr e = k.NewVar("e"), j = k.NewVar("j");
  const std::vector<Expr> idx = Delinearize(s, e);
  Stmt body = Block({k.Store(acc, {Expr(0)}, FloatConst(0, ct)),
                     For(j, j_begin, j_end, LoopKind::kSerial, k.Store(acc, {Expr(0)}, a + square_at(idx, j))),
                     finish(idx, a)});
  const int64_t n = NumElements(s);
  return For(e, 0, n, n >= ctx.options().min_parallel_elements ? LoopKind::kParallel : LoopKind::kSerial, body);
}

}  // namespace keel::codegen
