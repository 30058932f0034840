// compiler/codegen/lower_reduce.cc — row reductions: the Reduce* family (any
// axes, keepdims) and ArgMax/ArgMin (the normalizations are in lower_norm.cc). Each output row is
// one parallel iteration (lower_rows.h); running values live in small local
// buffers that LLVM promotes to registers, so the reduction loops vectorize
// (reassociation is allowed).
#include <functional>
#include <limits>
#include <optional>

#include "compiler/codegen/lower_ops.h"
#include "compiler/codegen/lower_rows.h"

namespace keel::codegen {
namespace {

// How each Reduce* op maps, combines and finishes its elements. `x` is the
// element already converted to the accumulator type.
enum class Combine { kAdd, kMul, kMax, kMin };
struct ReduceRecipe {
  Combine combine = Combine::kAdd;
  bool two_pass = false;  // ReduceLogSumExp: a max pass first (exp never overflows)
  std::function<Expr(Expr x, Expr shift)> map;  // per element
  std::function<Expr(Expr acc, Expr shift, int64_t count)> finish;
};

Result<ReduceRecipe> RecipeFor(ReduceKind kind, DType acc) {
  ReduceRecipe r;
  auto same = [](Expr x, Expr) { return x; };
  auto keep = [](Expr a, Expr, int64_t) { return a; };
  r.map = same;
  r.finish = keep;
  switch (kind) {
    case ReduceKind::kSum: return r;
    case ReduceKind::kMean:
      r.finish = [acc](Expr a, Expr, int64_t n) {
        // numpy: the mean of nothing is NaN.
        return n == 0 ? FloatConst(std::numeric_limits<double>::quiet_NaN(), acc)
                      : a / FloatConst(static_cast<double>(n), acc);
      };
      return r;
    case ReduceKind::kMax:
    case ReduceKind::kMin:
      r.combine = kind == ReduceKind::kMax ? Combine::kMax : Combine::kMin;
      return r;
    case ReduceKind::kProd:
      r.combine = Combine::kMul;
      return r;
    case ReduceKind::kL1:
      r.map = [acc](Expr x, Expr) { return IsUnsigned(acc) ? x : Unary(UnaryOp::kAbs, x); };
      return r;
    case ReduceKind::kSumSquare:
    case ReduceKind::kL2:
      r.map = [](Expr x, Expr) { return x * x; };
      if (kind == ReduceKind::kL2) r.finish = [](Expr a, Expr, int64_t) { return Unary(UnaryOp::kSqrt, a); };
      return r;
    case ReduceKind::kLogSum:
      r.finish = [](Expr a, Expr, int64_t) { return Unary(UnaryOp::kLog, a); };
      return r;
    case ReduceKind::kLogSumExp:
      r.two_pass = true;
      r.map = [](Expr x, Expr shift) { return Unary(UnaryOp::kExp, x - shift); };
      r.finish = [](Expr a, Expr shift, int64_t) { return Unary(UnaryOp::kLog, a) + shift; };
      return r;
  }
  return Internal("unknown reduction kind");
}

Expr CombineExpr(Combine c, Expr a, Expr x) {
  switch (c) {
    case Combine::kAdd: return a + x;
    case Combine::kMul: return a * x;
    case Combine::kMax: return Max(a, x);
    case Combine::kMin: return Min(a, x);
  }
  return a;
}

Expr Identity(Combine c, DType acc) {
  switch (c) {
    case Combine::kAdd: return IsFloat(acc) ? FloatConst(0, acc) : IntConst(0, acc);
    case Combine::kMul: return IsFloat(acc) ? FloatConst(1, acc) : IntConst(1, acc);
    case Combine::kMax: return LowestValue(acc);
    case Combine::kMin: return HighestValue(acc);
  }
  return Expr();
}

// Reduce* whose input keeps its innermost axis (a channels-last global mean:
// MnasNet's mean over H and W of [1, 7, 7, 1280]), as columns: kRowLanes
// neighbouring outputs per parallel iteration, each a lane of one vector
// accumulator, folded over the reduced elements with unit-stride vector loads.
// The row form folds each output alone over elements kept-innermost-extent
// apart (one scalar load each: 0.0175 ms for MnasNet's mean, 62,720 elements,
// at one thread). The last block of lanes overlaps the one before it where
// kRowLanes does not divide the extent (its outputs are computed twice, the
// same way). Nullopt where the form does not apply.
std::optional<Stmt> ColumnReduce(LowerContext& ctx, const TensorFn& X, const std::vector<int64_t>& axes, bool keep,
                                 const ReduceRecipe& recipe, DType acc_t, const StoreFn& store) {
  const std::vector<int64_t>& s = X.type.shape;
  const size_t rank = s.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  if (!ctx.options().lane_row_reductions || recipe.two_pass || acc_t != DType::kF32 || rank < 2 ||
      reduced[rank - 1] || s[rank - 1] < kRowLanes)
    return std::nullopt;
  std::vector<int64_t> outer_dims, row_dims;
  for (size_t d = 0; d + 1 < rank; ++d) (reduced[d] ? row_dims : outer_dims).push_back(s[d]);
  if (row_dims.empty()) return std::nullopt;
  const int64_t C = s[rank - 1], blocks = (C + kRowLanes - 1) / kRowLanes;
  const int64_t outer = NumElements(outer_dims), len = NumElements(row_dims);
  KernelFunc& k = ctx.kernel();
  int acc = k.AddLocal("reduce_cols", acc_t, {kRowLanes});
  Expr t = k.NewVar("t"), r = k.NewVar("r");
  Expr c0 = Min((t % blocks) * kRowLanes, Expr(C - kRowLanes));
  std::vector<Expr> outer_idx = Delinearize(outer_dims, t / blocks), row_idx = Delinearize(row_dims, r);
  auto index = [&](const Expr& c, bool output) {
    std::vector<Expr> idx;
    size_t o = 0, q = 0;
    for (size_t d = 0; d + 1 < rank; ++d) {
      if (!reduced[d]) idx.push_back(outer_idx[o++]);
      else if (!output) idx.push_back(row_idx[q++]);
      else if (keep) idx.push_back(Expr(0));
    }
    idx.push_back(c);
    return idx;
  };
  Expr j0 = k.NewVar("j"), j1 = k.NewVar("j"), j2 = k.NewVar("j");
  Expr x = Cast(X.at(index(c0 + j1, false)), acc_t);
  Expr a1 = k.Load(acc, {j1});
  Stmt body = Block({
      For(j0, 0, kRowLanes, LoopKind::kLanes, k.Store(acc, {j0}, Identity(recipe.combine, acc_t))),
      For(r, 0, len, LoopKind::kSerial,
          For(j1, 0, kRowLanes, LoopKind::kLanes,
              k.Store(acc, {j1}, CombineExpr(recipe.combine, a1, recipe.map(x, FloatConst(0, acc_t)))))),
      For(j2, 0, kRowLanes, LoopKind::kLanes,
          store(index(c0 + j2, true), recipe.finish(k.Load(acc, {j2}), FloatConst(0, acc_t), len))),
  });
  const int64_t tasks = outer * blocks;
  const bool par = tasks > 1 && outer * C * len >= ctx.options().min_parallel_elements;
  return For(t, 0, tasks, par ? LoopKind::kParallel : LoopKind::kSerial, body);
}

}  // namespace

// Reduce* over any axes: one row per output element, the reduced elements
// folded into a one-slot local (a second slot holds LogSumExp's max).
Result<Stmt> LowerReduce(LowerContext& ctx, const ir::Node& node, ReduceKind kind, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  TensorFn X = *Xp;
  if (node.inputs().size() > 1 && node.input(1)) return Unsupported(NodeLabel(node) + ": non-constant axes");
  const DType acc_t = AccType(X.type.dtype);
  KEEL_ASSIGN_OR_RETURN(ReduceRecipe recipe, RecipeFor(kind, acc_t));
  const bool float_math = recipe.two_pass || kind == ReduceKind::kMean || kind == ReduceKind::kL2 || kind == ReduceKind::kLogSum;
  if (!IsFloat(acc_t) && float_math)
    return Unsupported(NodeLabel(node) + ": " + node.op_type() + " on " + ir::DTypeName(X.type.dtype));
  const std::vector<int64_t>& s = X.type.shape;
  std::vector<int64_t> all(s.size());
  for (size_t i = 0; i < s.size(); ++i) all[i] = static_cast<int64_t>(i);
  KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", all));
  KEEL_ASSIGN_OR_RETURN(int64_t keep, node.attrs().GetInt("keepdims", 1));
  for (int64_t& a : axes) {
    if (a < 0) a += static_cast<int64_t>(s.size());
    if (a < 0 || a >= static_cast<int64_t>(s.size())) return InvalidArgument(NodeLabel(node) + ": axis");
  }
  if (std::optional<Stmt> columns = ColumnReduce(ctx, X, axes, keep != 0, recipe, acc_t, store)) return *columns;
  const RowSpace rs = MakeRowSpace(s, axes);
  int acc = k.AddLocal("reduce_acc", acc_t, {recipe.two_pass ? 2 : 1});  // [acc, max]
  Expr t = k.NewVar("t"), rr = k.NewVar("rr");
  Expr a = k.Load(acc, {Expr(0)});
  Expr x = Cast(X.at(rs.Index(t, rr)), acc_t);
  std::vector<Stmt> body;
  Expr shift = IsFloat(acc_t) ? FloatConst(0, acc_t) : IntConst(0, acc_t);
  if (recipe.two_pass) {
    Expr m = k.Load(acc, {Expr(1)}), r0 = k.NewVar("rr");
    Expr x0 = Cast(X.at(rs.Index(t, r0)), acc_t);
    body.push_back(k.Store(acc, {Expr(1)}, LowestValue(acc_t)));
    body.push_back(For(r0, 0, rs.len, LoopKind::kSerial, k.Store(acc, {Expr(1)}, Max(m, x0))));
    // An infinite (or empty-set) max would turn exp(x - max) into NaN: shift by 0 then.
    const double inf = std::numeric_limits<double>::infinity();
    shift = Select((m > FloatConst(-inf, acc_t)) && (m < FloatConst(inf, acc_t)), m, FloatConst(0, acc_t));
  }
  body.push_back(k.Store(acc, {Expr(0)}, Identity(recipe.combine, acc_t)));
  body.push_back(For(rr, 0, rs.len, LoopKind::kSerial, k.Store(acc, {Expr(0)}, CombineExpr(recipe.combine, a, recipe.map(x, shift)))));
  body.push_back(store(rs.OutIndex(t, keep != 0), recipe.finish(a, shift, rs.len)));
  return RowLoop(ctx, t, rs, rs.len, Block(std::move(body)));
}

// ArgMax / ArgMin along one axis: the running best value and its index; the
// first (or, with select_last_index, the last) of equal values wins.
Result<Stmt> LowerArgReduce(LowerContext& ctx, const ir::Node& node, bool is_max, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  TensorFn X = *Xp;
  const DType acc_t = AccType(X.type.dtype);
  const std::vector<int64_t>& s = X.type.shape;
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t keep, node.attrs().GetInt("keepdims", 1));
  KEEL_ASSIGN_OR_RETURN(int64_t last, node.attrs().GetInt("select_last_index", 0));
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return InvalidArgument(NodeLabel(node) + ": axis");
  const RowSpace rs = MakeRowSpace(s, {axis});
  int best = k.AddLocal("arg_best", acc_t, {1});
  int where = k.AddLocal("arg_index", DType::kI64, {1});
  Expr t = k.NewVar("t"), l = k.NewVar("l");
  Expr bv = k.Load(best, {Expr(0)}), bi = k.Load(where, {Expr(0)});
  Expr x = Cast(X.at(rs.Index(t, l)), acc_t);
  Expr wins = is_max ? (last ? x >= bv : x > bv) : (last ? x <= bv : x < bv);
  Stmt body = Block({
      k.Store(best, {Expr(0)}, is_max ? LowestValue(acc_t) : HighestValue(acc_t)),
      k.Store(where, {Expr(0)}, Expr(0)),
      // The index first: it compares with the best value before this element.
      For(l, 0, rs.len, LoopKind::kSerial,
          Block({k.Store(where, {Expr(0)}, Select(wins, l, bi)), k.Store(best, {Expr(0)}, Select(wins, x, bv))})),
      store(rs.OutIndex(t, keep != 0), bi),
  });
  return RowLoop(ctx, t, rs, rs.len, body);
}

}  // namespace keel::codegen
