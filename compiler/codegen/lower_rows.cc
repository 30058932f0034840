// compiler/codegen/lower_rows.cc — see lower_rows.h.
#include "compiler/codegen/lower_rows.h"

#include <limits>

namespace keel::codegen {

std::vector<Expr> RowSpace::Index(const Expr& t, const Expr& r) const {
  std::vector<Expr> kept = Delinearize(kept_dims, t), row = Delinearize(row_dims, r);
  std::vector<Expr> idx;
  size_t ki = 0, ri = 0;
  for (size_t d = 0; d < shape.size(); ++d) idx.push_back(reduced[d] ? row[ri++] : kept[ki++]);
  return idx;
}

std::vector<Expr> RowSpace::OutIndex(const Expr& t, bool keepdims) const {
  std::vector<Expr> kept = Delinearize(kept_dims, t);
  std::vector<Expr> idx;
  size_t ki = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) {
      idx.push_back(kept[ki++]);
    } else if (keepdims) {
      idx.push_back(Expr(0));
    }
  }
  return idx;
}

RowSpace MakeRowSpace(const std::vector<int64_t>& shape, const std::vector<int64_t>& axes) {
  RowSpace s;
  s.shape = shape;
  s.reduced.assign(shape.size(), false);
  for (int64_t a : axes)
    if (a >= 0 && a < static_cast<int64_t>(shape.size())) s.reduced[static_cast<size_t>(a)] = true;
  for (size_t d = 0; d < shape.size(); ++d) (s.reduced[d] ? s.row_dims : s.kept_dims).push_back(shape[d]);
  s.rows = NumElements(s.kept_dims);
  s.len = NumElements(s.row_dims);
  return s;
}

RowSpace MakeRowSpaceRange(const std::vector<int64_t>& shape, size_t begin, size_t end) {
  std::vector<int64_t> axes;
  for (size_t d = begin; d < end && d < shape.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  return MakeRowSpace(shape, axes);
}

void LaneReduce(LowerContext& ctx, int64_t len, BinaryOp op, const std::function<Expr(const Expr&)>& f, int st,
                int slot, DType acc, std::vector<Stmt>* body, const std::function<Stmt(const Expr&)>& pre) {
  KernelFunc& k = ctx.kernel();
  const int64_t P = kRowLanes, chunks = len / P;
  const int part = k.AddLocal("row_lanes", acc, {P});
  auto lane = [&](const Expr& j) { return k.Load(part, {j}); };
  auto step = [&](const Expr& l, Stmt s) { return pre ? Block({pre(l), std::move(s)}) : s; };
  Expr j = k.NewVar("j"), c = k.NewVar("c"), j2 = k.NewVar("j"), j3 = k.NewVar("j"), l = k.NewVar("l");
  body->push_back(For(j, 0, P, LoopKind::kLanes, step(j, k.Store(part, {j}, f(j)))));
  body->push_back(For(c, 1, chunks, LoopKind::kNoVectorize,
                      For(j2, 0, P, LoopKind::kLanes,
                          step(c * P + j2, k.Store(part, {j2}, Binary(op, lane(j2), f(c * P + j2)))))));
  Expr s = k.Load(st, {Expr(slot)});
  body->push_back(k.Store(st, {Expr(slot)}, lane(Expr(0))));
  body->push_back(For(j3, 1, P, LoopKind::kSerial, k.Store(st, {Expr(slot)}, Binary(op, s, lane(j3)))));
  body->push_back(For(l, chunks * P, len, LoopKind::kSerial, step(l, k.Store(st, {Expr(slot)}, Binary(op, s, f(l))))));
}

Stmt RowLoop(LowerContext& ctx, const Expr& t, const RowSpace& space, int64_t work_per_row, Stmt body) {
  const bool par = space.rows > 1 && space.rows * work_per_row >= ctx.options().min_parallel_elements;
  return For(t, 0, space.rows, par ? LoopKind::kParallel : LoopKind::kSerial, std::move(body));
}

DType AccType(DType dtype) {
  if (dtype == DType::kF16 || dtype == DType::kBF16) return DType::kF32;
  if (dtype == DType::kBool) return DType::kU8;
  return dtype;
}

namespace {

// Bounds of an integer type as the bit pattern an IntConst of that type holds.
int64_t IntBound(DType t, bool highest) {
  const int bits = static_cast<int>(keel::DataTypeSize(t)) * 8;
  if (IsUnsigned(t)) {
    if (!highest) return 0;
    return bits >= 64 ? int64_t{-1} : static_cast<int64_t>((uint64_t{1} << bits) - 1);
  }
  if (bits >= 64) return highest ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  const int64_t h = (int64_t{1} << (bits - 1)) - 1;
  return highest ? h : -h - 1;
}

}  // namespace

Expr LowestValue(DType acc) {
  if (IsFloat(acc)) return FloatConst(-std::numeric_limits<double>::infinity(), acc);
  return IntConst(IntBound(acc, false), acc);
}

Expr HighestValue(DType acc) {
  if (IsFloat(acc)) return FloatConst(std::numeric_limits<double>::infinity(), acc);
  return IntConst(IntBound(acc, true), acc);
}

}  // namespace keel::codegen
