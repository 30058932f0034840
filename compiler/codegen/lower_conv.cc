// compiler/codegen/lower_conv.cc — 2-D convolution (NCHW, OIHW weights) with
// groups, strides, pads and dilations.
//   * one input channel per group (depthwise, channel multiplier >= 1): a direct
//     kernel, parallel over output rows; the interior columns (no padding
//     reads) run as vector chunks (kLanes) accumulating all taps in registers,
//     the border columns as scalar code with guarded reads;
//   * otherwise: implicit GEMM per (image, group): M = output channels of the
//     group, N = OH*OW, K = Cin/group*KH*KW, with im2col done while packing B
//     (see lower_gemm.cc), so no separate column buffer is materialized.
// Bias (input 2) is added before the fused epilogue.
#include <algorithm>
#include <cstring>

#include "compiler/codegen/lower_ops.h"

namespace keel::codegen {
namespace {

struct ConvParams {
  int64_t B, C, H, W, Co, OH, OW, KH, KW, sh, sw, pt, pl, dh, dw, groups, Cg, Mg;
};

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// One output row (b, co, oh) per parallel iteration. Columns whose whole
// window is inside the input (for every kw) run as L-lane vector chunks (the
// last chunk overlaps the previous one rather than leaving a scalar tail):
// per kh (rows outside the input skipped as a whole), one vector FMA per kw
// with unit- or small-stride loads, then the epilogue as vector stores. The
// few border columns run a scalar loop with guarded (clamped + selected) reads.
// The overlapping last chunk stores some columns twice, so the output must not
// alias an input (in-place buffer reuse is only granted to elementwise groups).
Stmt DirectConv(LowerContext& ctx, const ConvParams& c, const TensorFn& X, const TensorFn& Wt, const TensorFn* bias,
                const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  Expr r = k.NewVar("r");
  Expr b = r / (c.Co * c.OH), co = (r / c.OH) % c.Co, oh = r % c.OH;
  Expr ci = c.Mg == 1 ? co : co / c.Mg;  // input channel of this output channel
  auto bias_of = [&]() { return bias ? Cast(bias->at({co}), DType::kF32) : FloatConst(0); };
  // Interior columns [ilo, ihi): every tap's input column is in [0, W).
  const int64_t ilo = std::clamp<int64_t>(FloorDiv(c.pl + c.sw - 1, c.sw), 0, c.OW);
  const int64_t ihi = std::clamp<int64_t>(FloorDiv(c.W - 1 + c.pl - (c.KW - 1) * c.dw, c.sw) + 1, ilo, c.OW);
  int64_t L = 16;
  while (L > 4 && ihi - ilo < L) L /= 2;
  const bool vec = ihi - ilo >= L;
  std::vector<Stmt> body;
  int64_t scalar_lo = 0, scalar_hi = c.OW;  // columns [scalar_lo, ilo) and [ihi, scalar_hi) are scalar
  if (vec) {
    const int64_t Q = (ihi - ilo + L - 1) / L;
    int acc = k.AddLocal("dw_acc", DType::kF32, {L});
    Expr q = k.NewVar("q");
    Expr ow0 = Min(q * L + ilo, ihi - L);
    std::vector<Stmt> chunk;
    {
      Expr j = k.NewVar("j");
      chunk.push_back(For(j, 0, L, LoopKind::kLanes, k.Store(acc, {j}, bias_of())));
    }
    Expr kh = k.NewVar("kh");
    Expr ih = oh * c.sh - c.pt + kh * c.dh;
    std::vector<Stmt> taps;
    for (int64_t kw = 0; kw < c.KW; ++kw) {
      Expr j = k.NewVar("j");
      Expr x = Cast(X.at({b, ci, ih, (ow0 + j) * c.sw + (kw * c.dw - c.pl)}), DType::kF32);
      Expr w = Cast(Wt.at({co, Expr(0), kh, Expr(kw)}), DType::kF32);
      taps.push_back(For(j, 0, L, LoopKind::kLanes, k.Store(acc, {j}, k.Load(acc, {j}) + x * w)));
    }
    chunk.push_back(For(kh, 0, c.KH, LoopKind::kSerial, If((ih >= 0) && (ih < c.H), Block(std::move(taps)))));
    {
      Expr j = k.NewVar("j");
      chunk.push_back(For(j, 0, L, LoopKind::kLanes, store({b, co, oh, ow0 + j}, k.Load(acc, {j}))));
    }
    body.push_back(For(q, 0, Q, LoopKind::kSerial, Block(std::move(chunk))));
  } else {
    scalar_lo = 0;
    scalar_hi = c.OW;
  }
  // Scalar columns: all of them without vector chunks, else the borders.
  auto scalar_cols = [&](int64_t from, int64_t to) -> Stmt {
    if (from >= to) return nullptr;
    int sum = k.AddLocal("dw_sum", DType::kF32, {1});
    Expr ow = k.NewVar("ow"), kh = k.NewVar("kh"), kw = k.NewVar("kw");
    Expr ih = oh * c.sh - c.pt + kh * c.dh, iw = ow * c.sw - c.pl + kw * c.dw;
    Expr inside = (ih >= 0) && (ih < c.H) && (iw >= 0) && (iw < c.W);
    Expr x = Cast(X.at({b, ci, Clamp(ih, 0, c.H - 1), Clamp(iw, 0, c.W - 1)}), DType::kF32);
    Expr w = Cast(Wt.at({co, Expr(0), kh, kw}), DType::kF32);
    Expr s = k.Load(sum, {Expr(0)});
    return For(ow, from, to, LoopKind::kSerial,
               Block({k.Store(sum, {Expr(0)}, bias_of()),
                      For(kh, 0, c.KH, LoopKind::kSerial,
                          For(kw, 0, c.KW, LoopKind::kSerial,
                              k.Store(sum, {Expr(0)}, s + Select(inside, x, FloatConst(0)) * w))),
                      store({b, co, oh, ow}, s)}));
  };
  if (vec) {
    if (Stmt s1 = scalar_cols(0, ilo)) body.push_back(s1);
    if (Stmt s2 = scalar_cols(ihi, c.OW)) body.push_back(s2);
  } else {
    body.push_back(scalar_cols(scalar_lo, scalar_hi));
  }
  int64_t rows = c.B * c.Co * c.OH;
  bool par = rows > 1 && rows * c.OW * c.KH * c.KW >= ctx.options().min_parallel_elements;
  return For(r, 0, rows, par ? LoopKind::kParallel : LoopKind::kSerial, Block(std::move(body)));
}

}  // namespace

Result<Stmt> LowerConv(LowerContext& ctx, const ir::Node& node, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  const ir::Attributes& at = node.attrs();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Wp, ctx.Input(node, 1));
  const TensorFn* bias = nullptr;
  if (node.input(2)) { KEEL_ASSIGN_OR_RETURN(bias, ctx.Input(node, 2)); }
  TensorFn X = *Xp, Wt = *Wp;
  if (X.type.shape.size() != 4 || Wt.type.shape.size() != 4)
    return Unsupported(NodeLabel(node) + ": only 2-D convolution (rank-4 input) is supported");
  if (X.type.dtype != DType::kF32 || Wt.type.dtype != DType::kF32)
    return Unsupported(NodeLabel(node) + ": Conv on " + ir::DTypeName(X.type.dtype));
  KEEL_ASSIGN_OR_RETURN(auto strides, at.GetInts("strides", {1, 1}));
  KEEL_ASSIGN_OR_RETURN(auto pads, at.GetInts("pads", {0, 0, 0, 0}));
  KEEL_ASSIGN_OR_RETURN(auto dil, at.GetInts("dilations", {1, 1}));
  KEEL_ASSIGN_OR_RETURN(int64_t groups, at.GetInt("group", 1));
  if (strides.size() != 2 || pads.size() != 4 || dil.size() != 2 || groups <= 0)
    return InvalidArgument(NodeLabel(node) + ": malformed strides/pads/dilations/group");
  const std::vector<int64_t>& xs = X.type.shape;
  const std::vector<int64_t>& ws = Wt.type.shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  ConvParams c{xs[0], xs[1], xs[2], xs[3], ws[0], os[2], os[3], ws[2], ws[3], strides[0], strides[1],
               pads[0], pads[1], dil[0], dil[1], groups, xs[1] / groups, ws[0] / groups};
  if (c.C % groups != 0 || c.Co % groups != 0 || ws[1] != c.Cg || os.size() != 4 || os[1] != c.Co)
    return InvalidArgument(NodeLabel(node) + ": inconsistent channels/groups");

  if (c.Cg == 1) return DirectConv(ctx, c, X, Wt, bias, store);

  // Implicit GEMM.
  const int64_t KK = c.KH * c.KW, Kdim = c.Cg * KK, N = c.OH * c.OW;
  Expr bi = c.B > 1 ? k.NewVar("img") : Expr(0);
  Expr gi = groups > 1 ? k.NewVar("grp") : Expr(0);
  GemmOperands g;
  g.m = c.Mg; g.n = N; g.k = Kdim;
  Stmt pad_copy;  // fills the padded input image before the GEMM (im2col path)
  KernelFunc* kp = &k;
  if (Wt.buffer >= 0) {
    int wview = k.AddArgView(k.buffer(Wt.buffer).arg_index, "w_rows", {c.Co, Kdim});
    g.a = [kp, wview, gi, c](Expr m, Expr kk) { return kp->Load(wview, {gi * c.Mg + m, kk}); };
  } else {
    IndexFn w_at = Wt.at;
    g.a = [w_at, gi, c, KK](Expr m, Expr kk) {
      return w_at({gi * c.Mg + m, kk / KK, (kk % KK) / c.KW, kk % c.KW});
    };
  }
  bool pointwise = c.KH == 1 && c.KW == 1 && c.sh == 1 && c.sw == 1 && c.pt == 0 && c.pl == 0 &&
                   c.OH == c.H && c.OW == c.W;
  if (pointwise && X.buffer >= 0) {
    int xview = k.AddArgView(k.buffer(X.buffer).arg_index, "x_cols", {c.B, c.C, c.H * c.W});
    g.b = [kp, xview, bi, gi, c](Expr kk, Expr n) { return kp->Load(xview, {bi, gi * c.Cg + kk, n}); };
  } else {
    // im2col while packing, with no bounds checks: the group's input channels
    // are first copied into a zero-padded workspace image (with NR elements of
    // slack on both ends), so every window read is in bounds. Column n's window
    // origin offset comes from a baked table.
    //   * stride <= 4: a full panel of NR columns covers a few runs of
    //     consecutive output columns (one per output row it touches); each run
    //     is one vector load (stride 1) or masked load + shuffle (stride 2..4)
    //     and lanes pick their run (baked per-panel run bounds/offsets): no
    //     gathers. Lanes outside a run read neighbouring (slack) elements,
    //     never used.
    //   * otherwise (and for the tail panel): one gather through the table;
    //     without padding and with X a plain argument, straight from X.
    const int64_t NR = std::max<int64_t>(1, ctx.options().gemm_nr);
    const int64_t Nfull = N / NR;
    const int64_t Hp = std::max(c.H + c.pt, (c.OH - 1) * c.sh + (c.KH - 1) * c.dh + 1);
    const int64_t Wp = std::max(c.W + c.pl, (c.OW - 1) * c.sw + (c.KW - 1) * c.dw + 1);
    const bool runs = c.sw <= 4 && Nfull > 0;
    const bool direct = !runs && X.buffer >= 0 && c.pt == 0 && c.pl == 0 && Hp == c.H && Wp == c.W;
    const int64_t Hs = direct ? c.H : Hp, Ws = direct ? c.W : Wp;  // source image dims
    const int64_t slack = NR * c.sw;                                // lanes outside a run read up to this far
    const int64_t lead = direct ? 0 : slack;                        // slack before the image
    int src = -1;
    if (direct) {
      src = k.AddArgView(k.buffer(X.buffer).arg_index, "x_flat", {c.B * c.C * c.H * c.W});
    } else {
      src = k.AddWorkspace("conv_xpad", DType::kF32, {lead + c.Cg * Hp * Wp + slack});
      Expr r = k.NewVar("r"), w = k.NewVar("w"), w2 = k.NewVar("w"), w3 = k.NewVar("w"), w4 = k.NewVar("w");
      Expr ch = r / Hp, h = r % Hp - c.pt;
      Expr row0 = r * Wp + lead;
      Stmt copy = Block({
          For(w, 0, c.pl, LoopKind::kSerial, k.Store(src, {row0 + w}, FloatConst(0))),
          For(w2, 0, c.W, LoopKind::kVectorize,
              k.Store(src, {row0 + c.pl + w2}, Cast(X.at({bi, gi * c.Cg + ch, h, w2}), DType::kF32))),
          For(w3, c.pl + c.W, Wp, LoopKind::kSerial, k.Store(src, {row0 + w3}, FloatConst(0))),
      });
      Stmt zero = For(w4, 0, Wp, LoopKind::kVectorize, k.Store(src, {row0 + w4}, FloatConst(0)));
      const int64_t rows = c.Cg * Hp;
      bool par = rows > 1 && rows * Wp >= ctx.options().min_parallel_elements;
      pad_copy = For(r, 0, rows, par ? LoopKind::kParallel : LoopKind::kSerial, If((h >= 0) && (h < c.H), copy, zero));
    }
    auto put32 = [](std::vector<uint8_t>& v, int64_t i, int64_t x) {
      int32_t x32 = static_cast<int32_t>(x);
      std::memcpy(&v[static_cast<size_t>(i) * 4], &x32, 4);
    };
    auto origin = [&](int64_t n) { return lead + (n / c.OW) * c.sh * Ws + (n % c.OW) * c.sw; };
    std::vector<uint8_t> off(static_cast<size_t>(N) * 4);
    for (int64_t n = 0; n < N; ++n) put32(off, n, origin(n));
    int ob = k.AddConstant("conv_off", DType::kI32, {N}, std::move(off));
    // Offset of (channel, kh, kw) of row kk in the source image (b, group folded in for direct reads).
    auto coff = [bi, gi, c, KK, Hs, Ws, direct](Expr kk) {
      Expr ci = kk / KK, kh = (kk % KK) / c.KW, kw = kk % c.KW;
      Expr ch = direct ? (bi * c.C + gi * c.Cg + ci) : ci;
      return ch * (Hs * Ws) + kh * (c.dh * Ws) + kw * c.dw;
    };
    g.b = [kp, src, ob, coff](Expr kk, Expr n) {
      return kp->Load(src, {coff(kk) + Cast(kp->Load(ob, {n}), DType::kI64)});
    };
    if (runs) {
      // Runs per full panel: a panel touches at most S output rows.
      int64_t S = 1;
      for (int64_t p = 0; p < Nfull; ++p) S = std::max(S, (p * NR + NR - 1) / c.OW - (p * NR) / c.OW + 1);
      // base[p][s]: lane j of run s reads base + j * sw; end[p][s]: first lane after run s.
      std::vector<uint8_t> base(static_cast<size_t>(Nfull * S) * 4), end(static_cast<size_t>(Nfull * S) * 4);
      for (int64_t p = 0; p < Nfull; ++p) {
        int64_t s = 0, j = 0;
        while (j < NR) {
          const int64_t n = p * NR + j;
          const int64_t len = std::min(NR - j, c.OW - n % c.OW);
          put32(base, p * S + s, origin(n) - j * c.sw);
          put32(end, p * S + s, j + len);
          j += len;
          ++s;
        }
        for (; s < S; ++s) { put32(base, p * S + s, origin(p * NR)); put32(end, p * S + s, NR); }
      }
      int bb = k.AddConstant("conv_run_base", DType::kI32, {Nfull, S}, std::move(base));
      int eb = k.AddConstant("conv_run_end", DType::kI32, {Nfull, S}, std::move(end));
      const int64_t sw = c.sw;
      g.b_fast = [kp, src, coff, bb, eb, S, sw](Expr kk, Expr p, Expr j) {
        Expr v;
        for (int64_t s = S; s-- > 0;) {
          Expr x = kp->Load(src, {coff(kk) + Cast(kp->Load(bb, {p, Expr(s)}), DType::kI64) + j * sw});
          v = v.is_null() ? x : Select(j < Cast(kp->Load(eb, {p, Expr(s)}), DType::kI64), x, v);
        }
        return v;
      };
    }
  }
  TensorFn bfn = bias ? *bias : TensorFn{};
  g.store = [store, bfn, bi, gi, c](Expr m, Expr n, Expr acc) {
    Expr co = gi * c.Mg + m;
    Expr v = bfn.at ? acc + Cast(bfn.at({co}), DType::kF32) : acc;
    return store({bi, co, n / c.OW, n % c.OW}, v);
  };
  KEEL_ASSIGN_OR_RETURN(Stmt body, BuildBlockedGemm(ctx, g, "conv"));
  if (pad_copy) body = Block({pad_copy, body});
  if (groups > 1) body = For(gi, 0, groups, LoopKind::kSerial, body);
  if (c.B > 1) body = For(bi, 0, c.B, LoopKind::kSerial, body);
  return body;
}

}  // namespace keel::codegen
