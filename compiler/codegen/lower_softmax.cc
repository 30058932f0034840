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

// Lanes of the partial maxima and sums (a multiple of every CPU vector width).
constexpr int64_t kRowLanes = 16;
// Longest row whose exponentials are kept in a local buffer (one exp per element).
constexpr int64_t kMaxBufferedRow = 4096;

// The CPU form of one row (L >= kRowLanes elements, `x(l)` its values in the
// accumulator type): the maximum and the sum of exponentials as kRowLanes
// partial results, one per vector lane (the chunks of kRowLanes, then the tail
// elements into lanes 0.., then the lanes folded), so that every exp is
// vectorized. Softmax keeps the exponentials of rows up to kMaxBufferedRow in
// a local buffer and scales them; longer rows compute them again. The sum's
// order differs from the scalar loop's (lanes, then lanes folded): rounding
// differences only. Appends to *body; stats [max, sum] in local `st`.
void LaneRowSoftmax(LowerContext& ctx, SoftmaxKind kind, int64_t L, const std::function<Expr(const Expr&)>& x,
                    const std::function<Stmt(const Expr&, const Expr&)>& store, int st, DType acc_t,
                    std::vector<Stmt>* body) {
  KernelFunc& k = ctx.kernel();
  const int64_t P = kRowLanes, chunks = L / P;
  int part = k.AddLocal("softmax_lanes", acc_t, {P});
  const bool buffered = kind == SoftmaxKind::kSoftmax && L <= kMaxBufferedRow;
  int ebuf = buffered ? k.AddLocal("softmax_exp", acc_t, {L}) : -1;
  Expr mx = k.Load(st, {Expr(0)}), sm = k.Load(st, {Expr(1)});
  auto lane = [&](const Expr& j) { return k.Load(part, {j}); };
  // Folds the lanes (and the tail elements) into st[slot] with `op`.
  auto fold = [&](int slot, const std::function<Expr(Expr, Expr)>& op, const std::function<Expr(const Expr&)>& tail) {
    Expr j = k.NewVar("j"), l = k.NewVar("l");
    Expr s = k.Load(st, {Expr(slot)});
    body->push_back(k.Store(st, {Expr(slot)}, lane(Expr(0))));
    body->push_back(For(j, 1, P, LoopKind::kSerial, k.Store(st, {Expr(slot)}, op(s, lane(j)))));
    body->push_back(For(l, chunks * P, L, LoopKind::kSerial, k.Store(st, {Expr(slot)}, op(s, tail(l)))));
  };
  // 1. The maximum.
  {
    Expr j = k.NewVar("j"), c = k.NewVar("c"), j2 = k.NewVar("j");
    body->push_back(For(j, 0, P, LoopKind::kLanes, k.Store(part, {j}, x(j))));
    body->push_back(For(c, 1, chunks, LoopKind::kNoVectorize,
                        For(j2, 0, P, LoopKind::kLanes, k.Store(part, {j2}, Max(lane(j2), x(c * P + j2))))));
    fold(0, [](Expr a, Expr b) { return Max(a, b); }, x);
  }
  // 2. The exponentials' sum (each exponential kept when buffered).
  auto e = [&](const Expr& l) { return Unary(UnaryOp::kExp, x(l) - mx); };
  {
    Expr j = k.NewVar("j"), c = k.NewVar("c"), j2 = k.NewVar("j");
    body->push_back(For(j, 0, P, LoopKind::kLanes, k.Store(part, {j}, FloatConst(0, acc_t))));
    Expr l = c * P + j2;
    Stmt acc = k.Store(part, {j2}, lane(j2) + (buffered ? k.Load(ebuf, {l}) : e(l)));
    Stmt step = buffered ? Block({k.Store(ebuf, {l}, e(l)), acc}) : acc;
    body->push_back(For(c, 0, chunks, LoopKind::kNoVectorize, For(j2, 0, P, LoopKind::kLanes, step)));
    fold(1, [](Expr a, Expr b) { return a + b; }, e);
  }
  // 3. The outputs.
  Expr l3 = k.NewVar("l");
  if (kind == SoftmaxKind::kLogSoftmax) {
    body->push_back(k.Store(st, {Expr(1)}, Unary(UnaryOp::kLog, sm) + mx));
    body->push_back(For(l3, 0, L, LoopKind::kVectorize, store(l3, x(l3) - sm)));
    return;
  }
  body->push_back(k.Store(st, {Expr(1)}, FloatConst(1, acc_t) / sm));
  if (buffered) {
    // The tail's exponentials were summed but not kept.
    Expr l = k.NewVar("l");
    body->push_back(For(l, chunks * P, L, LoopKind::kSerial, k.Store(ebuf, {l}, e(l))));
  }
  Expr v = buffered ? k.Load(ebuf, {l3}) : e(l3);
  body->push_back(For(l3, 0, L, LoopKind::kVectorize, store(l3, v * sm)));
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
