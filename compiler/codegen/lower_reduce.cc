// compiler/codegen/lower_reduce.cc — row reductions: Softmax (single axis),
// ReduceMean / ReduceSum / ReduceMax (any axes, keepdims); the normalizations
// are in lower_norm.cc. Each output row is one parallel
// iteration; running values live in small local buffers that LLVM promotes to
// registers, so the reduction loops vectorize (reassociation is allowed).
#include <limits>
#include <set>

#include "compiler/codegen/lower_ops.h"

namespace keel::codegen {
namespace {

std::vector<int64_t> Sub(const std::vector<int64_t>& s, size_t from, size_t to) {
  return std::vector<int64_t>(s.begin() + static_cast<int64_t>(from), s.begin() + static_cast<int64_t>(to));
}

std::vector<Expr> Concat3(const std::vector<Expr>& a, std::vector<Expr> b, const std::vector<Expr>& c) {
  std::vector<Expr> r = a;
  r.insert(r.end(), b.begin(), b.end());
  r.insert(r.end(), c.begin(), c.end());
  return r;
}

}  // namespace

Result<Stmt> LowerSoftmax(LowerContext& ctx, const ir::Node& node, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  TensorFn X = *Xp;
  if (X.type.dtype != DType::kF32) return Unsupported(NodeLabel(node) + ": Softmax on " + ir::DTypeName(X.type.dtype));
  const std::vector<int64_t>& s = X.type.shape;
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", static_cast<int64_t>(s.size()) - 1));
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return InvalidArgument(NodeLabel(node) + ": axis");
  size_t ax = static_cast<size_t>(axis);
  std::vector<int64_t> outer = Sub(s, 0, ax), inner = Sub(s, ax + 1, s.size());
  const int64_t L = s[ax], O = NumElements(outer), I = NumElements(inner);
  int st = k.AddLocal("softmax_stats", DType::kF32, {2});  // [max, 1/sum]
  Expr t = k.NewVar("t");
  std::vector<Expr> oi = Delinearize(outer, t / I), ii = Delinearize(inner, t % I);
  auto x_at = [&](Expr l) { return X.at(Concat3(oi, {l}, ii)); };
  Expr mx = k.Load(st, {Expr(0)}), sm = k.Load(st, {Expr(1)});
  Expr l1 = k.NewVar("l"), l2 = k.NewVar("l"), l3 = k.NewVar("l");
  Stmt body = Block({
      k.Store(st, {Expr(0)}, FloatConst(-std::numeric_limits<double>::infinity())),
      For(l1, 0, L, LoopKind::kSerial, k.Store(st, {Expr(0)}, Max(mx, x_at(l1)))),
      k.Store(st, {Expr(1)}, FloatConst(0)),
      For(l2, 0, L, LoopKind::kSerial, k.Store(st, {Expr(1)}, sm + Unary(UnaryOp::kExp, x_at(l2) - mx))),
      k.Store(st, {Expr(1)}, FloatConst(1) / sm),
      For(l3, 0, L, LoopKind::kVectorize, store(Concat3(oi, {l3}, ii), Unary(UnaryOp::kExp, x_at(l3) - mx) * sm)),
  });
  bool par = O * I > 1 && O * I * L >= ctx.options().min_parallel_elements;
  return For(t, 0, O * I, par ? LoopKind::kParallel : LoopKind::kSerial, body);
}

Result<Stmt> LowerReduce(LowerContext& ctx, const ir::Node& node, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  const std::string& op = node.op_type();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  TensorFn X = *Xp;
  if (!IsFloat(X.type.dtype)) return Unsupported(NodeLabel(node) + ": " + op + " on " + ir::DTypeName(X.type.dtype));
  if (node.inputs().size() > 1 && node.input(1)) return Unsupported(NodeLabel(node) + ": non-constant axes");
  const std::vector<int64_t>& s = X.type.shape;
  std::vector<int64_t> all(s.size());
  for (size_t i = 0; i < s.size(); ++i) all[i] = static_cast<int64_t>(i);
  KEEL_ASSIGN_OR_RETURN(auto axes_v, node.attrs().GetInts("axes", all));
  KEEL_ASSIGN_OR_RETURN(int64_t keep, node.attrs().GetInt("keepdims", 1));
  std::set<size_t> axes;
  for (int64_t a : axes_v) {
    int64_t n = a < 0 ? a + static_cast<int64_t>(s.size()) : a;
    if (n < 0 || n >= static_cast<int64_t>(s.size())) return InvalidArgument(NodeLabel(node) + ": axis");
    axes.insert(static_cast<size_t>(n));
  }
  std::vector<int64_t> kept, reduced;
  for (size_t i = 0; i < s.size(); ++i) (axes.count(i) ? reduced : kept).push_back(s[i]);
  const int64_t O = NumElements(kept), R = NumElements(reduced);
  int acc = k.AddLocal("reduce_acc", DType::kF32, {1});
  Expr t = k.NewVar("t"), rr = k.NewVar("rr");
  std::vector<Expr> ko = Delinearize(kept, t), ro = Delinearize(reduced, rr);
  std::vector<Expr> in_idx, out_idx;
  size_t ki = 0, ri = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (axes.count(i)) {
      in_idx.push_back(ro[ri++]);
      if (keep) out_idx.push_back(Expr(0));
    } else {
      in_idx.push_back(ko[ki]);
      out_idx.push_back(ko[ki++]);
    }
  }
  Expr a = k.Load(acc, {Expr(0)});
  Expr x = Cast(X.at(in_idx), DType::kF32);
  bool is_max = op == "ReduceMax";
  Stmt body = Block({
      k.Store(acc, {Expr(0)}, FloatConst(is_max ? -std::numeric_limits<double>::infinity() : 0.0)),
      For(rr, 0, R, LoopKind::kSerial, k.Store(acc, {Expr(0)}, is_max ? Max(a, x) : a + x)),
      store(out_idx, op == "ReduceMean" ? a / FloatConst(static_cast<double>(std::max<int64_t>(R, 1))) : a),
  });
  bool par = O > 1 && O * R >= ctx.options().min_parallel_elements;
  return For(t, 0, O, par ? LoopKind::kParallel : LoopKind::kSerial, body);
}

}  // namespace keel::codegen
