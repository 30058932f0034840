// compiler/codegen/lower_scan.cc — ops that walk one axis in order: CumSum /
// CumProd (running sum or product, exclusive / reverse) and TopK (the k first elements of the
// axis in (value, index) order). One row per combination of the other
// dimensions (lower_rows.h).
#include <algorithm>

#include "compiler/codegen/lower_ops.h"
#include "compiler/codegen/lower_rows.h"

namespace keel::codegen {
namespace {

Result<size_t> AxisAttr(const ir::Node& node, const std::vector<int64_t>& shape) {
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", -1));
  if (axis < 0) axis += static_cast<int64_t>(shape.size());
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) return InvalidArgument(NodeLabel(node) + ": axis");
  return static_cast<size_t>(axis);
}

// The running sum or product along the axis (exclusive: the value before
// combining the element).
Result<Stmt> LowerCumulative(LowerContext& ctx, const ir::Node& node, const StoreFn& store, bool product) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  TensorFn X = *Xp;
  if (node.inputs().size() > 1 && node.input(1)) return Unsupported(NodeLabel(node) + ": non-constant axis");
  const DType acc_t = AccType(X.type.dtype);
  KEEL_ASSIGN_OR_RETURN(size_t axis, AxisAttr(node, X.type.shape));
  KEEL_ASSIGN_OR_RETURN(int64_t exclusive, node.attrs().GetInt("exclusive", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t reverse, node.attrs().GetInt("reverse", 0));
  const RowSpace rs = MakeRowSpace(X.type.shape, {static_cast<int64_t>(axis)});
  int acc = k.AddLocal(product ? "cumprod_acc" : "cumsum_acc", acc_t, {1});
  Expr t = k.NewVar("t"), l = k.NewVar("l");
  Expr j = reverse ? Expr(rs.len - 1) - l : l;
  std::vector<Expr> idx = rs.Index(t, j);
  Expr a = k.Load(acc, {Expr(0)});
  Expr x = Cast(X.at(idx), acc_t);
  Stmt add = k.Store(acc, {Expr(0)}, product ? a * x : a + x);
  Stmt out = store(idx, a);
  Stmt body = Block({
      k.Store(acc, {Expr(0)}, IsFloat(acc_t) ? FloatConst(product ? 1 : 0, acc_t) : IntConst(product ? 1 : 0, acc_t)),
      For(l, 0, rs.len, LoopKind::kSerial, exclusive ? Block({out, add}) : Block({add, out})),
  });
  return RowLoop(ctx, t, rs, rs.len, body);
}

}  // namespace

Result<Stmt> LowerCumSum(LowerContext& ctx, const ir::Node& node, const StoreFn& store) {
  return LowerCumulative(ctx, node, store, false);
}

Result<Stmt> LowerCumProd(LowerContext& ctx, const ir::Node& node, const StoreFn& store) {
  return LowerCumulative(ctx, node, store, true);
}

// Selection, k passes over the row: pass j takes the best element that comes
// after pass j-1's in the order (value descending for largest=1, ascending
// otherwise; equal values by ascending index, as the ONNX spec asks). O(k * n)
// per row, no scratch memory, and the output is always sorted.
Result<Stmt> LowerTopK(LowerContext& ctx, const ir::Node& node, const std::vector<StoreFn>& stores) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  TensorFn X = *Xp;
  if (node.inputs().size() > 1 && node.input(1)) return Unsupported(NodeLabel(node) + ": non-constant k");
  const DType acc_t = AccType(X.type.dtype);
  KEEL_ASSIGN_OR_RETURN(size_t axis, AxisAttr(node, X.type.shape));
  KEEL_ASSIGN_OR_RETURN(int64_t kk, node.attrs().GetInt("k", -1));
  KEEL_ASSIGN_OR_RETURN(int64_t largest, node.attrs().GetInt("largest", 1));
  const RowSpace rs = MakeRowSpace(X.type.shape, {static_cast<int64_t>(axis)});
  if (kk < 0 || kk > rs.len) return InvalidArgument(NodeLabel(node) + ": k");
  int val = k.AddLocal("topk_value", acc_t, {2});  // [previous, best]
  int pos = k.AddLocal("topk_index", DType::kI64, {2});
  Expr pv = k.Load(val, {Expr(0)}), bv = k.Load(val, {Expr(1)});
  Expr pi = k.Load(pos, {Expr(0)}), bi = k.Load(pos, {Expr(1)});
  Expr t = k.NewVar("t"), j = k.NewVar("j"), l = k.NewVar("l");
  Expr x = Cast(X.at(rs.Index(t, l)), acc_t);
  Expr same = Binary(BinaryOp::kEq, x, pv) && (l > pi);
  Expr after = (largest ? x < pv : x > pv) || same;
  // The scan is in ascending index order, so strictly better keeps the first of equals.
  Expr better = (bi < Expr(0)) || (largest ? x > bv : x < bv);
  Expr take = after && better;
  std::vector<Expr> out_idx = rs.Index(t, j);
  std::vector<Stmt> emit = {stores[0](out_idx, bv)};
  if (stores.size() > 1) emit.push_back(stores[1](out_idx, bi));
  emit.push_back(k.Store(val, {Expr(0)}, bv));
  emit.push_back(k.Store(pos, {Expr(0)}, bi));
  Stmt pass = Block({
      k.Store(pos, {Expr(1)}, Expr(-1)),
      k.Store(val, {Expr(1)}, largest ? LowestValue(acc_t) : HighestValue(acc_t)),
      For(l, 0, rs.len, LoopKind::kSerial,
          Block({k.Store(pos, {Expr(1)}, Select(take, l, bi)), k.Store(val, {Expr(1)}, Select(take, x, bv))})),
      Block(std::move(emit)),
  });
  Stmt body = Block({
      k.Store(val, {Expr(0)}, largest ? HighestValue(acc_t) : LowestValue(acc_t)),
      k.Store(pos, {Expr(0)}, Expr(-1)),
      For(j, 0, kk, LoopKind::kSerial, pass),
  });
  return RowLoop(ctx, t, rs, rs.len * std::max<int64_t>(kk, 1), body);
}

}  // namespace keel::codegen
