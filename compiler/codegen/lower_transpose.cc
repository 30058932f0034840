// compiler/codegen/lower_transpose.cc — TransposeInTiles (see the header): the
// permutation is first reduced to its fewest axes (input axes that stay
// neighbours in the output merge: NCHW -> NHWC is [N, C, HW] -> [N, HW, C]),
// so that a tile's rows run along the longest contiguous stretch.
#include "compiler/codegen/lower_transpose.h"

#include <algorithm>

namespace keel::codegen {
namespace {

struct Collapsed {
  std::vector<int64_t> in_shape;  // merged input axes, in input order
  std::vector<int64_t> perm;      // output axis k is merged input axis perm[k]
  std::vector<std::vector<int64_t>> out_parts;  // merged output axis k: the sizes of the output axes it holds
};

Collapsed Collapse(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& perm) {
  // Runs of output axes whose input axes are consecutive: each run is one axis.
  std::vector<std::pair<int64_t, int64_t>> runs;  // [first, last] input axis, in output order
  for (int64_t a : perm) {
    if (!runs.empty() && runs.back().second + 1 == a) runs.back().second = a;
    else runs.emplace_back(a, a);
  }
  std::vector<int64_t> order(runs.size());  // runs sorted by their first input axis
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
    return runs[static_cast<size_t>(x)].first < runs[static_cast<size_t>(y)].first;
  });
  Collapsed c;
  for (const auto& [first, last] : runs) {
    c.out_parts.emplace_back();
    for (int64_t a = first; a <= last; ++a) c.out_parts.back().push_back(in_shape[static_cast<size_t>(a)]);
  }
  c.perm.resize(runs.size());
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const auto& [first, last] = runs[static_cast<size_t>(order[pos])];
    int64_t extent = 1;
    for (int64_t a = first; a <= last; ++a) extent *= in_shape[static_cast<size_t>(a)];
    c.in_shape.push_back(extent);
    c.perm[static_cast<size_t>(order[pos])] = static_cast<int64_t>(pos);
  }
  return c;
}

}  // namespace

std::optional<Stmt> TransposeInTiles(LowerContext& ctx, int in_arg, int out_arg, const std::vector<int64_t>& in_shape,
                                     const std::vector<int64_t>& perm, const TransposeEpilogue& epilogue) {
  const int64_t tile = ctx.options().transpose_tile;
  if (tile < 2 || perm.empty()) return std::nullopt;
  const Collapsed c = Collapse(in_shape, perm);
  const size_t r = c.perm.size();
  const int64_t a_axis = c.perm[r - 1];  // the input axis that becomes the output's innermost
  if (a_axis == static_cast<int64_t>(r - 1)) return std::nullopt;
  const size_t b = static_cast<size_t>(std::find(c.perm.begin(), c.perm.end(), static_cast<int64_t>(r - 1)) - c.perm.begin());
  const int64_t A = c.in_shape[static_cast<size_t>(a_axis)], B = c.in_shape[r - 1];
  if (A < tile || B < tile) return std::nullopt;

  KernelFunc& k = ctx.kernel();
  std::vector<int64_t> out_shape(r);
  for (size_t i = 0; i < r; ++i) out_shape[i] = c.in_shape[static_cast<size_t>(c.perm[i])];
  const int in = k.AddArgView(in_arg, "in_tiles", c.in_shape);
  const int out = k.AddArgView(out_arg, "out_tiles", out_shape);
  // The output axes other than the two that trade places, and the B axis in tiles: the parallel iterations.
  std::vector<int64_t> outer_dims;
  for (size_t i = 0; i + 1 < r; ++i)
    if (i != b) outer_dims.push_back(out_shape[i]);
  const int64_t whole_b = B / tile, nb = (B + tile - 1) / tile;
  const int64_t tasks = NumElements(outer_dims) * nb;

  Expr t = k.NewVar("t");
  std::vector<Expr> outer = Delinearize(outer_dims, t / nb);
  Expr bt = t % nb;
  // out[outer.., b: bt * tile + j, .., last: a] = in[..] (the input index through the permutation).
  auto copy = [&](const Expr& j, const Expr& a) {
    std::vector<Expr> idx(r), in_idx(r);
    size_t o = 0;
    for (size_t i = 0; i + 1 < r; ++i) idx[i] = i == b ? bt * tile + j : outer[o++];
    idx[r - 1] = a;
    if (epilogue) {  // the output's own axes: each merged one delinearized
      std::vector<Expr> full;
      for (size_t i = 0; i < r; ++i) {
        if (c.out_parts[i].size() == 1) {
          full.push_back(idx[i]);
          continue;
        }
        for (const Expr& e : Delinearize(c.out_parts[i], idx[i])) full.push_back(e);
      }
      return k.Store(out_arg, full, Cast(epilogue(full), k.buffer(out_arg).dtype));
    }
    for (size_t i = 0; i < r; ++i) in_idx[static_cast<size_t>(c.perm[i])] = idx[i];
    return k.Store(out, idx, k.Load(in, in_idx));
  };
  std::vector<Stmt> whole;
  if (A / tile > 0) {
    Expr at = k.NewVar("at"), j = k.NewVar("j"), i = k.NewVar("i");
    whole.push_back(For(at, 0, A / tile, LoopKind::kSerial,
                        For(j, 0, tile, LoopKind::kUnroll, For(i, 0, tile, LoopKind::kLanes, copy(j, at * tile + i)))));
  }
  if (A % tile != 0) {  // the last channels: A % tile lanes (gathers) per pixel
    Expr j = k.NewVar("j"), i = k.NewVar("i");
    whole.push_back(For(j, 0, tile, LoopKind::kSerial,
                        For(i, 0, A % tile, LoopKind::kLanes, copy(j, Expr(A / tile * tile) + i))));
  }
  Stmt body = Block(std::move(whole));
  if (whole_b != nb) {  // the last B % tile pixels: the generic loop's form
    Expr j = k.NewVar("j"), a = k.NewVar("a");
    Stmt part = For(j, 0, B % tile, LoopKind::kSerial, For(a, 0, A, LoopKind::kVectorize, copy(j, a)));
    body = If(bt < whole_b, body, part);
  }
  const bool parallel = NumElements(in_shape) >= ctx.options().min_parallel_elements && tasks > 1;
  return For(t, 0, tasks, parallel ? LoopKind::kParallel : LoopKind::kSerial, body);
}

}  // namespace keel::codegen
