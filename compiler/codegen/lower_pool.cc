// compiler/codegen/lower_pool.cc — MaxPool, AveragePool (2-D, NCHW; pads,
// strides, dilations, ceil_mode, count_include_pad) and GlobalAveragePool.
// Pools are memory-bound and small next to convolutions: a direct kernel,
// parallel over output rows; interior columns run as vector chunks (kLanes),
// border columns with clamped-and-guarded window reads.
#include <algorithm>
#include <limits>

#include "compiler/codegen/lower_ops.h"

namespace keel::codegen {

Result<Stmt> LowerPool(LowerContext& ctx, const ir::Node& node, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  const ir::Attributes& at = node.attrs();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  TensorFn X = *Xp;
  const std::vector<int64_t>& xs = X.type.shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  if (xs.size() != 4 || os.size() != 4) return Unsupported(NodeLabel(node) + ": only 2-D pooling is supported");
  if (!IsFloat(X.type.dtype)) return Unsupported(NodeLabel(node) + ": pooling on " + ir::DTypeName(X.type.dtype));
  KEEL_ASSIGN_OR_RETURN(auto kernel, at.GetInts("kernel_shape", {}));
  KEEL_ASSIGN_OR_RETURN(auto strides, at.GetInts("strides", {1, 1}));
  KEEL_ASSIGN_OR_RETURN(auto pads, at.GetInts("pads", {0, 0, 0, 0}));
  KEEL_ASSIGN_OR_RETURN(auto dil, at.GetInts("dilations", {1, 1}));
  KEEL_ASSIGN_OR_RETURN(int64_t cip, at.GetInt("count_include_pad", 0));
  if (kernel.size() != 2 || strides.size() != 2 || pads.size() != 4 || dil.size() != 2)
    return InvalidArgument(NodeLabel(node) + ": malformed window attributes");
  const bool is_max = node.op_type() == "MaxPool";
  const int64_t H = xs[2], W = xs[3], OH = os[2], OW = os[3], C = xs[1];
  const int64_t KH = kernel[0], KW = kernel[1], sh = strides[0], sw = strides[1], dh = dil[0], dw = dil[1];
  const int64_t rows = xs[0] * C * OH;
  Expr r = k.NewVar("r");
  Expr b = r / (C * OH), c = (r / OH) % C, oh = r % OH;
  const double init = is_max ? -std::numeric_limits<double>::infinity() : 0.0;

  // Scalar columns [from, to): clamped-and-guarded window reads.
  auto scalar_cols = [&](int64_t from, int64_t to) -> Stmt {
    int acc = k.AddLocal("pool_acc", DType::kF32, {2});  // [value, count]
    Expr ow = k.NewVar("ow"), kh = k.NewVar("kh"), kw = k.NewVar("kw");
    Expr ih = oh * sh - pads[0] + kh * dh, iw = ow * sw - pads[1] + kw * dw;
    Expr inside = (ih >= 0) && (ih < H) && (iw >= 0) && (iw < W);
    Expr x = Cast(X.at({b, c, Clamp(ih, 0, H - 1), Clamp(iw, 0, W - 1)}), DType::kF32);
    Expr value = k.Load(acc, {Expr(0)}), count = k.Load(acc, {Expr(1)});
    Stmt update;
    if (is_max) {
      update = k.Store(acc, {Expr(0)}, Select(inside, Max(value, x), value));
    } else {
      // count_include_pad counts padded positions, never positions past the pads (ceil_mode overhang).
      Expr counted = cip ? (ih < H + pads[2]) && (iw < W + pads[3]) : inside;
      update = Block({k.Store(acc, {Expr(0)}, value + Select(inside, x, FloatConst(0))),
                      k.Store(acc, {Expr(1)}, count + Select(counted, FloatConst(1), FloatConst(0)))});
    }
    Stmt window = For(kh, 0, KH, LoopKind::kSerial, For(kw, 0, KW, LoopKind::kSerial, update));
    Expr result = is_max ? value : value / Max(count, FloatConst(1));
    Stmt per_out = Block({k.Store(acc, {Expr(0)}, FloatConst(init)), k.Store(acc, {Expr(1)}, FloatConst(0)), window,
                          store({b, c, oh, ow}, result)});
    return For(ow, from, to, LoopKind::kSerial, per_out);
  };

  // Interior columns [ilo, ihi) (every kw tap inside [0, W)) as L-lane vector
  // chunks, the last one overlapping its predecessor; rows outside the input
  // are skipped per kh, and an average's divisor is uniform over the chunk.
  // The overlapping last chunk stores some columns twice, so the output must
  // not alias an input (in-place reuse is only granted to elementwise groups).
  const int64_t ilo = std::clamp<int64_t>((pads[1] + sw - 1) / sw, 0, OW);
  const int64_t ihi = std::clamp<int64_t>(W - 1 + pads[1] - (KW - 1) * dw >= 0
                                              ? (W - 1 + pads[1] - (KW - 1) * dw) / sw + 1 : 0, ilo, OW);
  int64_t L = 16;
  while (L > 4 && ihi - ilo < L) L /= 2;
  std::vector<Stmt> body;
  if (ihi - ilo >= L) {
    int acc = k.AddLocal("pool_vacc", DType::kF32, {L});
    int cnt = k.AddLocal("pool_cnt", DType::kF32, {1});
    Expr q = k.NewVar("q"), kh = k.NewVar("kh");
    Expr ow0 = Min(q * L + ilo, ihi - L);
    Expr ih = oh * sh - pads[0] + kh * dh;
    Expr n = k.Load(cnt, {Expr(0)});
    std::vector<Stmt> taps;
    for (int64_t kw = 0; kw < KW; ++kw) {
      Expr j = k.NewVar("j");
      Expr x = Cast(X.at({b, c, ih, (ow0 + j) * sw + (kw * dw - pads[1])}), DType::kF32);
      Expr a = k.Load(acc, {j});
      taps.push_back(For(j, 0, L, LoopKind::kLanes, k.Store(acc, {j}, is_max ? Max(a, x) : a + x)));
    }
    Expr row_ok = (ih >= 0) && (ih < H);
    Expr counted = cip ? (ih < H + pads[2]) : row_ok;
    Expr j0 = k.NewVar("j"), j1 = k.NewVar("j");
    Expr result = is_max ? k.Load(acc, {j1}) : k.Load(acc, {j1}) / Max(n, FloatConst(1));
    Stmt chunk = Block({
        For(j0, 0, L, LoopKind::kLanes, k.Store(acc, {j0}, FloatConst(init))),
        k.Store(cnt, {Expr(0)}, FloatConst(0)),
        For(kh, 0, KH, LoopKind::kSerial,
            Block({If(row_ok, Block(std::move(taps))),
                   k.Store(cnt, {Expr(0)}, n + Select(counted, FloatConst(static_cast<double>(KW)), FloatConst(0)))})),
        For(j1, 0, L, LoopKind::kLanes, store({b, c, oh, ow0 + j1}, result)),
    });
    body.push_back(For(q, 0, (ihi - ilo + L - 1) / L, LoopKind::kSerial, chunk));
    if (ilo > 0) body.push_back(scalar_cols(0, ilo));
    if (ihi < OW) body.push_back(scalar_cols(ihi, OW));
  } else {
    body.push_back(scalar_cols(0, OW));
  }
  bool par = rows > 1 && rows * OW >= ctx.options().min_parallel_elements / 4;
  return For(r, 0, rows, par ? LoopKind::kParallel : LoopKind::kSerial, Block(std::move(body)));
}

Result<Stmt> LowerGlobalAveragePool(LowerContext& ctx, const ir::Node& node, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  TensorFn X = *Xp;
  const std::vector<int64_t>& xs = X.type.shape;
  if (xs.size() < 3) return InvalidArgument(NodeLabel(node) + ": input rank < 3");
  if (!IsFloat(X.type.dtype)) return Unsupported(NodeLabel(node) + ": pooling on " + ir::DTypeName(X.type.dtype));
  std::vector<int64_t> spatial(xs.begin() + 2, xs.end());
  const int64_t S = NumElements(spatial), BC = xs[0] * xs[1];
  int acc = k.AddLocal("gap_acc", DType::kF32, {1});
  Expr r = k.NewVar("r"), s = k.NewVar("s");
  Expr x;
  if (X.buffer >= 0) {
    int view = k.AddArgView(k.buffer(X.buffer).arg_index, "x_flat", {BC, S});
    x = k.Load(view, {r, s});
  } else {
    std::vector<Expr> idx = {r / xs[1], r % xs[1]};
    for (const Expr& e : Delinearize(spatial, s)) idx.push_back(e);
    x = X.at(idx);
  }
  std::vector<Expr> out_idx = {r / xs[1], r % xs[1]};
  for (size_t i = 0; i < spatial.size(); ++i) out_idx.push_back(Expr(0));
  Expr sum = k.Load(acc, {Expr(0)});
  Stmt body = Block({k.Store(acc, {Expr(0)}, FloatConst(0)),
                     For(s, 0, S, LoopKind::kSerial, k.Store(acc, {Expr(0)}, sum + Cast(x, DType::kF32))),
                     store(out_idx, sum / FloatConst(static_cast<double>(S)))});
  bool par = BC > 1 && BC * S >= ctx.options().min_parallel_elements;
  return For(r, 0, BC, par ? LoopKind::kParallel : LoopKind::kSerial, body);
}

}  // namespace keel::codegen
