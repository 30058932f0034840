// compiler/codegen/lower_conv_nhwc.cc — the CPU kernels of channels-last (NHWC)
// pointwise and depthwise convolutions (see lower_conv_nhwc.h).
//
// Why: in NCHW a pointwise convolution's GEMM splits the pixels between
// threads while a depthwise kernel splits the channels, so at 2 threads every
// such layer reads about half its input from the other core's cache
// (docs/MEASUREMENTS.md, "Two threads: where the time goes"). In NHWC both
// split the same rows of pixels, and a pixel's channels are contiguous.
//
// How (both read the channels-last buffers directly: TensorFn::
// channels_last_buffer; the stores go through the node's channels-last store,
// which runs the fused epilogue):
//   * pointwise: one GEMM over every image, rows = the B*H*W pixels (A is X
//     viewed [pixels, C], read in place inside the micro-kernel), columns = the
//     output channels (B = W^T: the weight packed at compile time in row panels
//     of NR rows is W^T's column panels, read in place; otherwise packed at run
//     time), K = C; the tasks keep row blocks outermost (GemmOperands::
//     rows_outer), so each thread writes the pixels the next layer reads on it.
//   * depthwise (one input channel per group, multiplier 1, 2-D): one output
//     row (image, oh) per parallel iteration; per output pixel, the channels in
//     vector chunks of up to 16 lanes (the last chunk overlapping the one before
//     it), every tap an unit-stride load of the input pixel's channels times
//     the tap's weights (packed at compile time as [KH*KW][C], the row-panel
//     layout of the [C, KH*KW] weight with C rows per panel, so they are
//     unit-stride too), summed in registers. Output pixels whose whole window
//     is inside the input take no guards; the others read each tap through a
//     clamped index and a select.
#include <algorithm>

#include "compiler/codegen/lower_conv_nhwc.h"

#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/channels_last.h"

namespace keel::codegen {
namespace {

constexpr int64_t kLanes = 16;  // channels per vector chunk (one zmm, two ymm)

// `per(c)` for every channel c in [0, C): vector chunks of up to kLanes lanes,
// the last one overlapping the one before it (`per` must be idempotent), or a
// scalar loop below 4 channels.
Stmt ChannelChunks(KernelFunc& k, int64_t C, const std::function<Stmt(Expr)>& per) {
  int64_t L = kLanes;
  while (L > 4 && C < L) L /= 2;
  Expr i = k.NewVar("ci");
  if (C < L) return For(i, 0, C, LoopKind::kSerial, per(i));
  Expr q = k.NewVar("cq");
  Expr first = Min(q * L, Expr(C - L));
  return For(q, 0, (C + L - 1) / L, LoopKind::kSerial, For(i, 0, L, LoopKind::kLanes, per(first + i)));
}

Result<Stmt> PointwiseNhwc(LowerContext& ctx, const ConvGeom& c, const TensorFn& X, const TensorFn& Wt,
                           const TensorFn* bias, int64_t packed_rows, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KernelFunc* kp = &k;
  const int64_t P = NumElements(c.out), NR = GemmPanelWidth(ctx.options());
  GemmOperands g;
  g.m = c.B * P; g.n = c.Co; g.k = c.C;
  g.rows_outer = true;
  int xview = k.AddArgView(k.buffer(X.channels_last_buffer).arg_index, "x_nhwc", {c.B * P, c.C});
  g.a = [kp, xview](Expr m, Expr ci) { return kp->Load(xview, {m, ci}); };
  if (packed_rows > 0) {
    if (packed_rows != NhwcPackedRows(ctx.options(), NhwcConv::kPointwise, c.Co) || Wt.channels_last_buffer < 0)
      return InvalidArgument("channels-last pointwise convolution: the weight must be in row panels of " +
                             std::to_string(NR) + " rows");
    g.b_packed = k.AddArgView(k.buffer(Wt.channels_last_buffer).arg_index, "w_columns", {c.Co * c.C});
  } else if (Wt.channels_last_buffer >= 0) {
    int wview = k.AddArgView(k.buffer(Wt.channels_last_buffer).arg_index, "w_rows", {c.Co, c.C});
    g.b = [kp, wview](Expr ci, Expr co) { return kp->Load(wview, {co, ci}); };
  } else {
    IndexFn w_at = Wt.at;
    g.b = [w_at](Expr ci, Expr co) { return w_at({co, ci, Expr(0), Expr(0)}); };
  }
  TensorFn bfn = bias ? *bias : TensorFn{};
  const std::vector<int64_t> out = c.out;
  g.store = [store, bfn, out, P](Expr m, Expr n, Expr acc) {
    Expr v = bfn.at ? acc + Cast(bfn.at({n}), DType::kF32) : acc;
    std::vector<Expr> idx{m / P, n};
    for (const Expr& e : Delinearize(out, m % P)) idx.push_back(e);
    return store(idx, v);
  };
  return BuildBlockedGemm(ctx, g, "conv_nhwc");
}

Result<Stmt> DepthwiseNhwc(LowerContext& ctx, const ConvGeom& c, const TensorFn& X, const TensorFn& Wt,
                           const TensorFn* bias, int64_t packed_rows, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KernelFunc* kp = &k;
  const int64_t C = c.Co, H = c.in[0], W = c.in[1], OH = c.out[0], OW = c.out[1], KH = c.k[0], KW = c.k[1];
  const int64_t sh = c.s[0], sw = c.s[1], dh = c.d[0], dw = c.d[1], ph = c.pb[0], pw = c.pb[1];
  if (packed_rows > 0 && (packed_rows != C || Wt.channels_last_buffer < 0))
    return InvalidArgument("channels-last depthwise convolution: the weight must be packed as [KH*KW][C]");
  int xflat = k.AddArgView(k.buffer(X.channels_last_buffer).arg_index, "x_nhwc", {c.B * H * W * C});
  int wflat = packed_rows > 0 ? k.AddArgView(k.buffer(Wt.channels_last_buffer).arg_index, "w_taps", {KH * KW * C}) : -1;
  IndexFn w_at = Wt.at;
  auto weight = [&](int64_t kh, int64_t kw, Expr ch) {
    return wflat >= 0 ? kp->Load(wflat, {Expr((kh * KW + kw) * C) + ch})
                      : Cast(w_at({ch, Expr(0), Expr(kh), Expr(kw)}), DType::kF32);
  };
  Expr r = k.NewVar("row");
  Expr bi = c.B > 1 ? r / OH : Expr(0), oh = c.B > 1 ? r % OH : r;
  // One output pixel's channels; `guarded`: taps outside the input read zero.
  auto pixel = [&](bool guarded, Expr ow) {
    return ChannelChunks(k, C, [&](Expr ch) {
      Expr acc = bias ? Cast(bias->at({ch}), DType::kF32) : Expr();
      for (int64_t kh = 0; kh < KH; ++kh) {
        for (int64_t kw = 0; kw < KW; ++kw) {
          Expr ih = oh * sh + (kh * dh - ph), iw = ow * sw + (kw * dw - pw);
          Expr x;
          if (guarded) {
            Expr ok = (ih >= 0) && (ih < H) && (iw >= 0) && (iw < W);
            Expr at = ((bi * H + Clamp(ih, 0, H - 1)) * W + Clamp(iw, 0, W - 1)) * C + ch;
            x = Select(ok, kp->Load(xflat, {at}), FloatConst(0));
          } else {
            x = kp->Load(xflat, {((bi * H + ih) * W + iw) * C + ch});
          }
          Expr term = x * weight(kh, kw, ch);
          acc = acc.is_null() ? term : acc + term;
        }
      }
      return store({bi, ch, oh, ow}, acc);
    });
  };
  // Columns whose every tap is inside the input: [ow_lo, ow_hi); rows likewise [oh_lo, oh_hi).
  auto inside = [](int64_t pad, int64_t s, int64_t span, int64_t in, int64_t out, int64_t* lo, int64_t* hi) {
    *lo = std::min(out, (pad + s - 1) / s);
    const int64_t last = in - 1 + pad - span;  // o * s <= last
    *hi = last < 0 ? *lo : std::max(*lo, std::min(out, last / s + 1));
  };
  int64_t ow_lo, ow_hi, oh_lo, oh_hi;
  inside(pw, sw, (KW - 1) * dw, W, OW, &ow_lo, &ow_hi);
  inside(ph, sh, (KH - 1) * dh, H, OH, &oh_lo, &oh_hi);
  auto columns = [&](int64_t lo, int64_t hi, bool guarded) {
    Expr ow = k.NewVar("ow");
    return For(ow, lo, hi, LoopKind::kSerial, pixel(guarded, ow));
  };
  Stmt all_guarded = columns(0, OW, true);
  Stmt body = all_guarded;
  if (ow_hi > ow_lo && oh_hi > oh_lo) {
    Stmt interior_row = Block({columns(0, ow_lo, true), columns(ow_lo, ow_hi, false), columns(ow_hi, OW, true)});
    body = If((oh >= oh_lo) && (oh < oh_hi), interior_row, all_guarded);
  }
  const int64_t rows = c.B * OH;
  const bool par = rows > 1 && rows * OW * C >= ctx.options().min_parallel_elements;
  return For(r, 0, rows, par ? LoopKind::kParallel : LoopKind::kSerial, body);
}

}  // namespace

NhwcConv NhwcConvForm(const ConvGeom& c) {
  if (c.sp() != 2) return NhwcConv::kNone;
  bool pointwise = c.groups == 1;
  for (size_t d = 0; d < 2; ++d) pointwise = pointwise && c.k[d] == 1 && c.s[d] == 1 && c.pb[d] == 0 && c.out[d] == c.in[d];
  if (pointwise) return NhwcConv::kPointwise;
  if (c.Cg == 1 && c.Mg == 1) return NhwcConv::kDepthwise;
  return NhwcConv::kNone;
}

NhwcConv NhwcConvFormOf(const ir::Node& conv) {
  if (conv.op_type() != "Conv" || conv.outputs().size() != 1 || conv.inputs().size() < 2) return NhwcConv::kNone;
  const ir::Value *x = conv.input(0), *w = conv.input(1), *y = conv.output(0);
  if (!x || !w || !x->has_type() || !w->has_type() || !y->has_type()) return NhwcConv::kNone;
  if (x->type().dtype != DType::kF32 || w->type().dtype != DType::kF32) return NhwcConv::kNone;
  std::vector<int64_t> xs = x->type().shape, ws = w->type().shape, ys = y->type().shape;
  if (xs.size() != 4 || ws.size() != 4 || ys.size() != 4) return NhwcConv::kNone;
  if (ops::IsChannelsLast(conv)) {
    const std::vector<int64_t> first = ops::ToChannelsFirstPerm(4);
    xs = ops::PermuteShape(xs, first); ws = ops::PermuteShape(ws, first); ys = ops::PermuteShape(ys, first);
  }
  const ir::Attributes& at = conv.attrs();
  auto s = at.GetInts("strides", {1, 1});
  auto pads = at.GetInts("pads", {0, 0, 0, 0});
  auto d = at.GetInts("dilations", {1, 1});
  auto group = at.GetInt("group", 1);
  if (!s.ok() || !pads.ok() || !d.ok() || !group.ok() || s->size() != 2 || pads->size() != 4 || d->size() != 2 ||
      *group <= 0 || xs[1] % *group != 0 || ys[1] % *group != 0)
    return NhwcConv::kNone;
  ConvGeom c;
  c.B = xs[0]; c.C = xs[1]; c.Co = ys[1]; c.groups = *group;
  c.Cg = c.C / c.groups; c.Mg = c.Co / c.groups;
  c.in = {xs[2], xs[3]}; c.out = {ys[2], ys[3]}; c.k = {ws[2], ws[3]};
  c.s = *s; c.d = *d; c.pb = {(*pads)[0], (*pads)[1]};
  return NhwcConvForm(c);
}

int64_t NhwcPackedRows(const LowerOptions& options, NhwcConv form, int64_t co) {
  const int64_t nr = GemmPanelWidth(options);
  if (form == NhwcConv::kPointwise) return co % nr == 0 ? nr : 0;
  return form == NhwcConv::kDepthwise ? co : 0;
}

Result<Stmt> LowerConvNhwc(LowerContext& ctx, const ConvGeom& c, const TensorFn& X, const TensorFn& Wt,
                           const TensorFn* bias, int64_t packed_rows, const StoreFn& store) {
  if (X.channels_last_buffer < 0 || X.type.dtype != DType::kF32 || Wt.type.dtype != DType::kF32)
    return InvalidArgument("channels-last convolution kernel: X must be an f32 buffer in NHWC order");
  switch (NhwcConvForm(c)) {
    case NhwcConv::kPointwise: return PointwiseNhwc(ctx, c, X, Wt, bias, packed_rows, store);
    case NhwcConv::kDepthwise: return DepthwiseNhwc(ctx, c, X, Wt, bias, packed_rows, store);
    case NhwcConv::kNone: break;
  }
  return InvalidArgument("channels-last convolution kernel: neither pointwise nor depthwise");
}

}  // namespace keel::codegen
