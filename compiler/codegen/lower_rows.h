// compiler/codegen/lower_rows.h — the row view shared by the reduction-like
// lowerings (Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax, CumSum, TopK;
// internal to compiler/codegen).
//
// A tensor of `shape` is split into kept dimensions and reduced dimensions (any
// subset, not necessarily contiguous). Each combination of kept indices is one
// row (the parallel iteration `t`); the reduced dimensions, flattened, are the
// row's elements `r`. Index(t, r) rebuilds the full index, so the same row can
// be read from the input and written to an output of another extent along a
// single reduced axis (TopK's k, CumSum) as long as that output is indexed
// with an `r` in its own range.
//
// Accumulators: AccType is the type the lowerings compute in (f16/bf16 widen to
// f32, f64 stays f64, integers keep their type so wrap-around matches the
// stored type, bool counts as u8).
#pragma once

#include <functional>
#include <vector>

#include "compiler/codegen/lower_context.h"

namespace keel::codegen {

struct RowSpace {
  std::vector<int64_t> shape;
  std::vector<bool> reduced;                 // per dimension of `shape`
  std::vector<int64_t> kept_dims, row_dims;  // extents of the kept / reduced dimensions, in order
  int64_t rows = 1;                          // product of kept_dims
  int64_t len = 1;                           // product of row_dims

  // The full index of element r of row t.
  std::vector<Expr> Index(const Expr& t, const Expr& r) const;
  // The index of row t's output: reduced dimensions are 0 (keepdims) or dropped.
  std::vector<Expr> OutIndex(const Expr& t, bool keepdims) const;
};

// `axes` non-negative and < rank (duplicates are harmless).
RowSpace MakeRowSpace(const std::vector<int64_t>& shape, const std::vector<int64_t>& axes);
// Dimensions [begin, end) reduced.
RowSpace MakeRowSpaceRange(const std::vector<int64_t>& shape, size_t begin, size_t end);

// Lanes of a CPU row reduction's partial results (a multiple of every CPU
// vector width); rows shorter than this keep the scalar loops.
constexpr int64_t kRowLanes = 16;

// The CPU form of a row reduction (LowerOptions::lane_row_reductions): appends
// to *body the statements that leave in local `st`[slot] the fold with `op`
// (kAdd or kMax) of f(l) over l in [0, len), len >= kRowLanes: kRowLanes
// partial results, one per vector lane, over the chunks of kRowLanes (one
// vector statement each), then the lanes folded in order and the tail elements
// after them. `pre(l)`, when given, runs in the same loops before f(l) is read
// (Softmax stores each exponential there and sums what it stored). The order of
// the additions differs from a scalar loop's: rounding differences only.
void LaneReduce(LowerContext& ctx, int64_t len, BinaryOp op, const std::function<Expr(const Expr&)>& f, int st,
                int slot, DType acc, std::vector<Stmt>* body,
                const std::function<Stmt(const Expr&)>& pre = nullptr);

// The loop over the rows of `space` around `body` (which uses `t`): parallel
// when there are several rows and enough work (`work_per_row` elements each).
Stmt RowLoop(LowerContext& ctx, const Expr& t, const RowSpace& space, int64_t work_per_row, Stmt body);

DType AccType(DType dtype);
// Lowest / highest value of an accumulator type (-inf / +inf for floats).
Expr LowestValue(DType acc);
Expr HighestValue(DType acc);

}  // namespace keel::codegen
