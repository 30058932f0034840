// compiler/codegen/lower_softmax.cc — Softmax, LogSoftmax and Hardmax: one row
// per combination of the other dimensions, the row being one axis (opset >= 13)
// or, with the canonical attribute keel.flatten=1 (opsets < 13), every
// dimension from `axis` on. Softmax and LogSoftmax subtract the row's max
// before exponentiating; Hardmax marks the row's first maximum.
#include <functional>
#include <limits>
#include <vector>

#include "compiler/codegen/lower_ops.h"
#include "compiler/codegen/lower_rows.h"

namespace keel::codegen {
namespace {

// Longest row whose exponentials are kept in a local buffer (one exp per element).
constexpr int64_t kMaxBufferedRow = 4096;

// The CPU form of one row (L >= kRowLanes elements, `x(l)` its values in the
// accumulator type): the maximum and the sum of exponentials reduce over
// vector lanes (LaneReduce), so that every exp is vectorized. Softmax keeps
// the exponentials of rows up to kMaxBufferedRow in a local buffer and scales
// them; longer rows compute them again. Appends to *body; stats [max, sum] in
// local `st`.
void LaneRowSoftmax(LowerContext& ctx, SoftmaxKind kind, int64_t L, const std::function<Expr(const Expr&)>& x,
                    const std::function<Stmt(const Expr&, const Expr&)>& store, int st, DType acc_t,
                    std::vector<Stmt>* body) {
  KernelFunc& k = ctx.kernel();
  const bool buffered = kind == SoftmaxKind::kSoftmax && L <= kMaxBufferedRow;
  const int ebuf = buffered ? k.AddLocal("softmax_exp", acc_t, {L}) : -1;
  Expr mx = k.Load(st, {Expr(0)}), sm = k.Load(st, {Expr(1)});
  auto e = [&](const Expr& l) { return Unary(UnaryOp::kExp, x(l) - mx); };
  LaneReduce(ctx, L, BinaryOp::kMax, x, st, 0, acc_t, body);
  if (buffered) {
    LaneReduce(ctx, L, BinaryOp::kAdd, [&](const Expr& l) { return k.Load(ebuf, {l}); }, st, 1, acc_t, body,
               [&](const Expr& l) { return k.Store(ebuf, {l}, e(l)); });
  } else {
    LaneReduce(ctx, L, BinaryOp::kAdd, e, st, 1, acc_t, body);
  }
  Expr l = k.NewVar("l");
  if (kind == SoftmaxKind::kLogSoftmax) {
    body->push_back(k.Store(st, {Expr(1)}, Unary(UnaryOp::kLog, sm) + mx));
    body->push_back(For(l, 0, L, LoopKind::kVectorize, store(l, x(l) - sm)));
    return;
  }
  body->push_back(k.Store(st, {Expr(1)}, FloatConst(1, acc_t) / sm));
  body->push_back(For(l, 0, L, LoopKind::kVectorize, store(l, (buffered ? k.Load(ebuf, {l}) : e(l)) * sm)));
}

}  // namespace

Result<Stmt> LowerSoftmax(LowerContext& ctx, const ir::Node& node, SoftmaxKind kind, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  TensorFn X = *Xp;
  if (!IsFloat(X.type.dtype)) return Unsupported(NodeLabel(node) + ": " + node.op_type() + " on " + ir::DTypeName(X.type.dtype));
  const DType acc_t = AccType(X.type.dtype);
  const std::vector<int64_t>& s = X.type.shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", rank - 1));
  KEEL_ASSIGN_OR_RETURN(int64_t flatten, node.attrs().GetInt("keel.flatten", 0));
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return InvalidArgument(NodeLabel(node) + ": axis");
  const size_t ax = static_cast<size_t>(axis);
  const RowSpace rs = MakeRowSpaceRange(s, ax, flatten ? s.size() : ax + 1);
  const int64_t L = rs.len;
  int st = k.AddLocal("softmax_stats", acc_t, {2});  // [max, sum]
  Expr t = k.NewVar("t");
  Expr mx = k.Load(st, {Expr(0)}), sm = k.Load(st, {Expr(1)});
  Expr l1 = k.NewVar("l"), l2 = k.NewVar("l"), l3 = k.NewVar("l");
  auto x_at = [&](const Expr& l) { return Cast(X.at(rs.Index(t, l)), acc_t); };
  auto fc = [acc_t](double v) { return FloatConst(v, acc_t); };
  std::vector<Stmt> body;
  body.push_back(k.Store(st, {Expr(0)}, LowestValue(acc_t)));
  if (kind == SoftmaxKind::kHardmax) {
    int where = k.AddLocal("hardmax_index", DType::kI64, {1});
    Expr bi = k.Load(where, {Expr(0)}), x = x_at(l1), wins = x > mx;
    body.push_back(k.Store(where, {Expr(0)}, Expr(0)));
    // The index first: it compares with the max before this element (the first maximum wins).
    body.push_back(For(l1, 0, L, LoopKind::kSerial,
                       Block({k.Store(where, {Expr(0)}, Select(wins, l1, bi)), k.Store(st, {Expr(0)}, Select(wins, x, mx))})));
    body.push_back(For(l3, 0, L, LoopKind::kVectorize, store(rs.Index(t, l3), Select(Binary(BinaryOp::kEq, l3, bi), fc(1), fc(0)))));
    return RowLoop(ctx, t, rs, L, Block(std::move(body)));
  }
  if (ctx.options().lane_row_reductions && L >= kRowLanes && kind != SoftmaxKind::kHardmax) {
    LaneRowSoftmax(ctx, kind, L, x_at, [&](const Expr& l, const Expr& v) { return store(rs.Index(t, l), v); }, st,
                   acc_t, &body);
    return RowLoop(ctx, t, rs, L, Block(std::move(body)));
  }
  body.push_back(For(l1, 0, L, LoopKind::kSerial, k.Store(st, {Expr(0)}, Max(mx, x_at(l1)))));
  body.push_back(k.Store(st, {Expr(1)}, fc(0)));
  body.push_back(For(l2, 0, L, LoopKind::kSerial, k.Store(st, {Expr(1)}, sm + Unary(UnaryOp::kExp, x_at(l2) - mx))));
  if (kind == SoftmaxKind::kLogSoftmax) {
    body.push_back(k.Store(st, {Expr(1)}, Unary(UnaryOp::kLog, sm) + mx));
    body.push_back(For(l3, 0, L, LoopKind::kVectorize, store(rs.Index(t, l3), x_at(l3) - sm)));
  } else {
    body.push_back(k.Store(st, {Expr(1)}, fc(1) / sm));
    body.push_back(For(l3, 0, L, LoopKind::kVectorize, store(rs.Index(t, l3), Unary(UnaryOp::kExp, x_at(l3) - mx) * sm)));
  }
  return RowLoop(ctx, t, rs, L, Block(std::move(body)));
}

}  // namespace keel::codegen
