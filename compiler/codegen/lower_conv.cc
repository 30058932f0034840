// compiler/codegen/lower_conv.cc — convolutions over any number of spatial
// dims (N, C, spatial...; weights O, I/group, kernel...) with groups, strides,
// pads and dilations, and transposed convolutions.
//   * one input channel per group (depthwise, channel multiplier >= 1): a direct
//     kernel, parallel over output rows (image, channel, every output spatial
//     dim but the last; in 2-D, blocks of a few rows sharing each input row's
//     vector loads); the window's leading dims are serial loops, skipped
//     as a whole outside the input; the interior columns of the last dim (no
//     padding reads) run as vector chunks (kLanes) accumulating all taps in
//     registers, the border columns as scalar code (unrolled column by column
//     over the taps known to be inside, or a guarded loop for wide borders);
//     2-D ones on small images (output width up to
//     LowerOptions::depthwise_plane_width) take the plane kernel instead
//     (lower_depthwise_plane.cc: one padded, stride-phased plane per iteration);
//     on a GPU (LowerOptions::gpu_direct_conv) a parallel iteration is a short
//     run of outputs in one row, flat over the output in its memory order
//     (channels innermost for a channels-last node);
//   * otherwise: implicit GEMM per (image, group): M = output channels of the
//     group, N = prod(output spatial), K = Cin/group * prod(kernel), with im2col
//     done while packing B (see lower_gemm.cc) from a zero-padded copy of the
//     group's input (or the input itself), so no column buffer is materialized.
//   * ConvTranspose is the same implicit GEMM: a stride-1 convolution with the
//     flipped, transposed weights over the input scattered (stride apart) into
//     a zero image with (kernel-1)*dilation - pad border.
// Bias (input 2) is added before the fused epilogue.
#include <algorithm>
#include <climits>
#include <cstring>

#include "compiler/codegen/lower_ops.h"

namespace keel::codegen {
namespace {

// Null stands for "true" so that 1-D windows need no leading-dim guards.
Expr And(const Expr& a, const Expr& b) { return a.is_null() ? b : b.is_null() ? a : a && b; }

// Spatial vectors have one entry per spatial dim; `in` is the input's extent.
struct ConvGeom {
  int64_t B = 1, C = 1, Co = 1, groups = 1, Cg = 1, Mg = 1;
  std::vector<int64_t> in, out, k, s, pb, d;
  size_t sp() const { return in.size(); }
};

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// One output row (b, co, leading output coords) per parallel iteration (a
// 2-D convolution with vector chunks: a block of LowerOptions::depthwise_rows
// rows, whose chunks share each loaded input row). Columns
// (last spatial dim) whose whole window is inside the input (for every kw) run
// as L-lane vector chunks (the last chunk overlaps the previous one rather
// than leaving a scalar tail): per leading window position (positions outside
// the input skipped as a whole), one vector FMA per kw with unit- or
// small-stride loads, then the epilogue as vector stores. The few border
// columns run as unrolled scalar code (border_col), wide borders as a scalar
// loop with guarded (clamped + selected) reads.
// The overlapping last chunk stores some columns twice, so the output must not
// alias an input (in-place buffer reuse is only granted to elementwise groups).
Stmt DirectConv(LowerContext& ctx, const ConvGeom& c, const TensorFn& X, const TensorFn& Wt, const TensorFn* bias,
                const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  const size_t sp = c.sp(), last = sp - 1;
  const int64_t W = c.in[last], OW = c.out[last], KW = c.k[last], sw = c.s[last], dw = c.d[last], pl = c.pb[last];
  // Interior columns [ilo, ihi): every tap's input column is in [0, W).
  const int64_t ilo = std::clamp<int64_t>(FloorDiv(pl + sw - 1, sw), 0, OW);
  const int64_t ihi = std::clamp<int64_t>(FloorDiv(W - 1 + pl - (KW - 1) * dw, sw) + 1, ilo, OW);
  int64_t L = 16;
  while (L > 4 && ihi - ilo < L) L /= 2;
  const bool vec = ihi - ilo >= L;
  // A 2-D convolution with vector chunks computes R neighbouring output rows
  // per iteration (the last block overlaps the previous one when R does not
  // divide the height): each input row is loaded once per chunk for all the
  // output rows that read it (a 3x3 stride-1 window: (R + 2) row loads instead
  // of 3R). Stride 1 only: with a row stride of 2 the blocked kernel measured
  // slower than one row per iteration (MobileNetV2's 96-channel 112 -> 56
  // layer, bench/codegen: its strided loads and R accumulators outgrow the
  // registers), while at stride 1 four rows took 0.6x the time of one.
  const bool blocked = sp == 2 && vec && c.s[0] == 1;
  const int64_t R = blocked ? std::clamp<int64_t>(ctx.options().depthwise_rows, 1, c.out[0]) : 1;
  std::vector<int64_t> row_dims{c.B, c.Co};
  row_dims.insert(row_dims.end(), c.out.begin(), c.out.end() - 1);
  if (R > 1) row_dims.back() = (c.out[0] + R - 1) / R;
  const int64_t rows = NumElements(row_dims);
  Expr r = k.NewVar("r");
  const std::vector<Expr> rix = Delinearize(row_dims, r);
  Expr b = rix[0], co = rix[1];
  Expr ci = c.Mg == 1 ? co : co / c.Mg;  // input channel of this output channel
  auto bias_of = [&]() { return bias ? Cast(bias->at({co}), DType::kF32) : FloatConst(0); };
  // The leading output coordinates of the row the scalar code computes: with
  // R > 1, row rr (a serial loop) of the block starting at oh0.
  Expr oh0, rr;
  std::vector<Expr> lead_out(rix.begin() + 2, rix.end());
  if (R > 1) {
    oh0 = Min(rix[2] * R, c.out[0] - R);
    rr = k.NewVar("rr");
    lead_out[0] = oh0 + rr;
  }
  struct Lead {
    std::vector<Expr> vars, coords;
    Expr ok;
  };
  auto make_lead = [&]() {
    Lead l;
    for (size_t d = 0; d < last; ++d) {
      Expr kd = k.NewVar("k" + std::to_string(d));
      Expr id = lead_out[d] * c.s[d] - c.pb[d] + kd * c.d[d];
      l.vars.push_back(kd);
      l.coords.push_back(id);
      l.ok = And(l.ok, (id >= 0) && (id < c.in[d]));
    }
    return l;
  };
  auto wrap_lead = [&](const Lead& l, Stmt body) {
    for (size_t d = last; d-- > 0;) body = For(l.vars[d], 0, c.k[d], LoopKind::kSerial, body);
    return body;
  };
  auto out_index = [&](const Expr& ow) {
    std::vector<Expr> idx{b, co};
    for (size_t d = 0; d < last; ++d) idx.push_back(lead_out[d]);
    idx.push_back(ow);
    return idx;
  };
  std::vector<Stmt> body;
  if (vec && R > 1) {
    // Per chunk: R rows of accumulators; per input row t of the block's
    // window (skipped as a whole outside the input) and tap column kw, one
    // vector load feeding an FMA for each output row that reads row t.
    const int64_t KH = c.k[0], sh = c.s[0], dh = c.d[0], ph = c.pb[0], H = c.in[0];
    const int64_t Q = (ihi - ilo + L - 1) / L, T = (R - 1) * sh + (KH - 1) * dh + 1;
    int acc = k.AddLocal("dw_acc", DType::kF32, {R * L});
    int xl = k.AddLocal("dw_x", DType::kF32, {L});
    Expr q = k.NewVar("q");
    Expr ow0 = Min(q * L + ilo, ihi - L);
    std::vector<Stmt> chunk;
    for (int64_t i = 0; i < R; ++i) {
      Expr j = k.NewVar("j");
      chunk.push_back(For(j, 0, L, LoopKind::kLanes, k.Store(acc, {i * L + j}, bias_of())));
    }
    for (int64_t t = 0; t < T; ++t) {
      std::vector<std::pair<int64_t, int64_t>> uses;  // (output row i, kernel row kh) reading input row t
      for (int64_t i = 0; i < R; ++i) {
        const int64_t e = t - i * sh;
        if (e >= 0 && e % dh == 0 && e / dh < KH) uses.emplace_back(i, e / dh);
      }
      if (uses.empty()) continue;
      Expr ih = oh0 * sh + (t - ph);
      std::vector<Stmt> taps;
      for (int64_t kw = 0; kw < KW; ++kw) {
        Expr j = k.NewVar("j");
        std::vector<Stmt> lane{k.Store(xl, {j}, Cast(X.at({b, ci, ih, (ow0 + j) * sw + (kw * dw - pl)}), DType::kF32))};
        for (const auto& [i, kh] : uses) {
          Expr w = Cast(Wt.at({co, Expr(0), Expr(kh), Expr(kw)}), DType::kF32);
          lane.push_back(k.Store(acc, {i * L + j}, k.Load(acc, {i * L + j}) + k.Load(xl, {j}) * w));
        }
        taps.push_back(For(j, 0, L, LoopKind::kLanes, Block(std::move(lane))));
      }
      chunk.push_back(If((ih >= 0) && (ih < H), Block(std::move(taps))));
    }
    for (int64_t i = 0; i < R; ++i) {
      Expr j = k.NewVar("j");
      chunk.push_back(For(j, 0, L, LoopKind::kLanes, store({b, co, oh0 + i, ow0 + j}, k.Load(acc, {i * L + j}))));
    }
    body.push_back(For(q, 0, Q, LoopKind::kSerial, Block(std::move(chunk))));
  } else if (vec) {
    const Lead l = make_lead();
    const int64_t Q = (ihi - ilo + L - 1) / L;
    int acc = k.AddLocal("dw_acc", DType::kF32, {L});
    Expr q = k.NewVar("q");
    Expr ow0 = Min(q * L + ilo, ihi - L);
    std::vector<Stmt> chunk;
    {
      Expr j = k.NewVar("j");
      chunk.push_back(For(j, 0, L, LoopKind::kLanes, k.Store(acc, {j}, bias_of())));
    }
    std::vector<Stmt> taps;
    for (int64_t kw = 0; kw < KW; ++kw) {
      Expr j = k.NewVar("j");
      std::vector<Expr> xi{b, ci}, wi{co, Expr(0)};
      for (size_t d = 0; d < last; ++d) { xi.push_back(l.coords[d]); wi.push_back(l.vars[d]); }
      xi.push_back((ow0 + j) * sw + (kw * dw - pl));
      wi.push_back(Expr(kw));
      Expr x = Cast(X.at(xi), DType::kF32);
      Expr w = Cast(Wt.at(wi), DType::kF32);
      taps.push_back(For(j, 0, L, LoopKind::kLanes, k.Store(acc, {j}, k.Load(acc, {j}) + x * w)));
    }
    Stmt tap_block = l.ok.is_null() ? Block(std::move(taps)) : If(l.ok, Block(std::move(taps)));
    chunk.push_back(wrap_lead(l, tap_block));
    {
      Expr j = k.NewVar("j");
      chunk.push_back(For(j, 0, L, LoopKind::kLanes, store(out_index(ow0 + j), k.Load(acc, {j}))));
    }
    body.push_back(For(q, 0, Q, LoopKind::kSerial, Block(std::move(chunk))));
  }
  // Scalar columns: all of them without vector chunks, else the borders.
  auto scalar_cols = [&](int64_t from, int64_t to) -> Stmt {
    if (from >= to) return nullptr;
    const Lead l = make_lead();
    int sum = k.AddLocal("dw_sum", DType::kF32, {1});
    Expr ow = k.NewVar("ow"), kw = k.NewVar("kw");
    Expr iw = ow * sw - pl + kw * dw;
    Expr inside = And(l.ok, (iw >= 0) && (iw < W));
    std::vector<Expr> xi{b, ci}, wi{co, Expr(0)};
    for (size_t d = 0; d < last; ++d) {
      xi.push_back(Clamp(l.coords[d], 0, c.in[d] - 1));
      wi.push_back(l.vars[d]);
    }
    xi.push_back(Clamp(iw, 0, W - 1));
    wi.push_back(kw);
    Expr x = Cast(X.at(xi), DType::kF32);
    Expr w = Cast(Wt.at(wi), DType::kF32);
    Expr s = k.Load(sum, {Expr(0)});
    Stmt taps = wrap_lead(l, For(kw, 0, KW, LoopKind::kSerial,
                                 k.Store(sum, {Expr(0)}, s + Select(inside, x, FloatConst(0)) * w)));
    return For(ow, from, to, LoopKind::kSerial,
               Block({k.Store(sum, {Expr(0)}, bias_of()), taps, store(out_index(ow), s)}));
  };
  // One border column beside vector chunks: which of its taps fall inside the
  // input is known at compile time, so its taps are unrolled with no clamps or
  // selects (the guarded loop of scalar_cols cost as much as a row's vector
  // chunks in MobileNet's depthwise layers).
  auto border_col = [&](int64_t ow) -> Stmt {
    const Lead l = make_lead();
    int sum = k.AddLocal("dw_sum", DType::kF32, {1});
    Expr s = k.Load(sum, {Expr(0)});
    std::vector<Stmt> taps;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t iw = ow * sw - pl + kw * dw;
      if (iw < 0 || iw >= W) continue;
      std::vector<Expr> xi{b, ci}, wi{co, Expr(0)};
      for (size_t d = 0; d < last; ++d) { xi.push_back(l.coords[d]); wi.push_back(l.vars[d]); }
      xi.push_back(Expr(iw));
      wi.push_back(Expr(kw));
      taps.push_back(k.Store(sum, {Expr(0)}, s + Cast(X.at(xi), DType::kF32) * Cast(Wt.at(wi), DType::kF32)));
    }
    Stmt tap_block = l.ok.is_null() ? Block(std::move(taps)) : If(l.ok, Block(std::move(taps)));
    return Block({k.Store(sum, {Expr(0)}, bias_of()), wrap_lead(l, tap_block), store(out_index(Expr(ow)), s)});
  };
  constexpr int64_t kMaxBorderColumns = 4;  // per side; wider borders keep the loop
  auto borders = [&](int64_t from, int64_t to) {
    if (to - from > kMaxBorderColumns) {
      if (Stmt s = scalar_cols(from, to)) body.push_back(s);
      return;
    }
    for (int64_t ow = from; ow < to; ++ow) body.push_back(border_col(ow));
  };
  if (vec && R > 1) {
    // The border columns row by row: the block's rows in a serial loop.
    std::vector<Stmt> chunks = std::move(body);
    body.clear();
    borders(0, ilo);
    borders(ihi, OW);
    if (!body.empty()) chunks.push_back(For(rr, 0, R, LoopKind::kSerial, Block(std::move(body))));
    body = std::move(chunks);
  } else if (vec) {
    borders(0, ilo);
    borders(ihi, OW);
  } else {
    body.push_back(scalar_cols(0, OW));
  }
  bool par = rows > 1 && rows * R * OW * NumElements(c.k) >= ctx.options().min_parallel_elements;
  return For(r, 0, rows, par ? LoopKind::kParallel : LoopKind::kSerial, Block(std::move(body)));
}

// The index (dims' order: N, C, then the rest) of flat iteration `it` over
// `dims` laid out in the output's memory order: as given for NCHW, channels
// innermost for a channels-last node (neighbouring GPU threads then write
// neighbouring elements).
std::vector<Expr> MemoryOrderIndex(LowerContext& ctx, const std::vector<int64_t>& dims, const Expr& it) {
  const bool cl = ctx.channels_last_output();
  std::vector<size_t> order{0};
  if (!cl) order.push_back(1);
  for (size_t d = 2; d < dims.size(); ++d) order.push_back(d);
  if (cl) order.push_back(1);
  std::vector<int64_t> laid_out;
  for (size_t a : order) laid_out.push_back(dims[a]);
  const std::vector<Expr> flat = Delinearize(laid_out, it);
  std::vector<Expr> ix(dims.size());
  for (size_t i = 0; i < order.size(); ++i) ix[order[i]] = flat[i];
  return ix;
}

// The GPU form (LowerOptions::gpu_direct_conv): each parallel iteration computes
// a run of V neighbouring outputs along the last dim for one (image, channel,
// leading output coords), so each input row it reads is loaded once into
// registers (V * stride + taps - 1 values) and feeds V * taps FMAs (one output
// per thread would spend most of its instructions on addressing). The flat
// iteration index follows the output's memory order: run-of-columns innermost
// for NCHW (a warp's threads read neighbouring columns), channels innermost
// for a channels-last node (neighbouring channels). The window's leading dims
// are serial loops skipped as a whole outside the input; columns outside the
// input read clamped and select zero; the last run stores only columns < OW.
Stmt GpuDirectConv(LowerContext& ctx, const ConvGeom& c, const TensorFn& X, const TensorFn& Wt, const TensorFn* bias,
                   const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  const size_t sp = c.sp(), last = sp - 1;
  const int64_t W = c.in[last], OW = c.out[last], KW = c.k[last], sw = c.s[last], dw = c.d[last], pl = c.pb[last];
  const int64_t V = std::min<int64_t>(OW, sw == 1 ? 8 : 4);
  const int64_t runs = (OW + V - 1) / V;
  const int64_t T = (V - 1) * sw + (KW - 1) * dw + 1;  // input columns one run reads
  // Iteration dims (N, C, leading output coords, run) and the order they are laid out in.
  std::vector<int64_t> dims{c.B, c.Co};
  dims.insert(dims.end(), c.out.begin(), c.out.end() - 1);
  dims.push_back(runs);
  Expr it = k.NewVar("it");
  const std::vector<Expr> ix = MemoryOrderIndex(ctx, dims, it);
  Expr b = ix[0], co = ix[1], ow0 = ix.back() * V;
  Expr ci = c.Mg == 1 ? co : co / c.Mg;
  const int acc = k.AddLocal("dw_acc", DType::kF32, {V});
  const int row = k.AddLocal("dw_row", DType::kF32, {T});
  std::vector<Stmt> body;
  Expr init = bias ? Cast(bias->at({co}), DType::kF32) : FloatConst(0);
  {
    Expr j = k.NewVar("j");
    body.push_back(For(j, 0, V, LoopKind::kUnroll, k.Store(acc, {j}, init)));
  }
  std::vector<Expr> kvars;
  Expr lead_ok;
  std::vector<Expr> xi{b, ci}, wi{co, Expr(0)};
  for (size_t d = 0; d < last; ++d) {
    kvars.push_back(k.NewVar("k" + std::to_string(d)));
    Expr id = ix[2 + d] * c.s[d] - c.pb[d] + kvars[d] * c.d[d];
    lead_ok = And(lead_ok, (id >= 0) && (id < c.in[d]));
    xi.push_back(id);
    wi.push_back(kvars[d]);
  }
  std::vector<Stmt> taps;
  {  // The input row this run reads, zero outside [0, W).
    Expr t = k.NewVar("t");
    Expr iw = ow0 * sw - pl + t;
    std::vector<Expr> xt = xi;
    xt.push_back(Clamp(iw, 0, W - 1));
    Expr inside = (iw >= 0) && (iw < W);
    taps.push_back(For(t, 0, T, LoopKind::kUnroll,
                       k.Store(row, {t}, Select(inside, Cast(X.at(xt), DType::kF32), FloatConst(0)))));
  }
  {
    Expr kw = k.NewVar("kw"), j = k.NewVar("j");
    std::vector<Expr> wk = wi;
    wk.push_back(kw);
    Expr w = Cast(Wt.at(wk), DType::kF32);
    Stmt fma = k.Store(acc, {j}, k.Load(acc, {j}) + k.Load(row, {j * sw + kw * dw}) * w);
    taps.push_back(For(kw, 0, KW, LoopKind::kUnroll, For(j, 0, V, LoopKind::kUnroll, fma)));
  }
  Stmt window = Block(std::move(taps));
  if (!lead_ok.is_null()) window = If(lead_ok, window);
  for (size_t d = last; d-- > 0;) window = For(kvars[d], 0, c.k[d], LoopKind::kSerial, window);
  body.push_back(window);
  {
    Expr j = k.NewVar("j");
    std::vector<Expr> oi{b, co};
    for (size_t d = 0; d < last; ++d) oi.push_back(ix[2 + d]);
    oi.push_back(ow0 + j);
    Stmt st = store(oi, k.Load(acc, {j}));
    if (OW % V != 0) st = If(ow0 + j < OW, st);
    body.push_back(For(j, 0, V, LoopKind::kUnroll, st));
  }
  return For(it, 0, NumElements(dims), LoopKind::kParallel, Block(std::move(body)));
}

// The implicit GEMM of a convolution over an "image": per (image bi, group
// gi), C[m, n] = sum_kk A(m, kk) * B(kk, n) with B read from the group's image
// at window (n) + tap (kk). `c` is the convolution over the image (c.in is
// unused: `P` gives the image's extent, `c.pb` is already part of it).
//   fill: fills the workspace image `src` (P per spatial dim, `lead` elements of
//         slack first); null when the image is X itself (`direct`).
struct ImageConv {
  ConvGeom c;
  std::vector<int64_t> P;
  bool direct = false;  // B read straight from X (no padding, P == in)
  std::function<Expr(Expr m, Expr kk, Expr gi)> a;
  // > 0: the weight is in the row-panel layout (gemm_panels.h), each group's
  // [Mg, K] matrix packed with this many rows per panel; a_panel(offset, gi)
  // reads element `offset` of group gi's packed matrix (a is then unused).
  int64_t a_panel_rows = 0;
  std::function<Expr(Expr offset, Expr gi)> a_panel;
  std::function<Stmt(int src, int64_t lead, Expr bi, Expr gi)> fill;
};

Result<Stmt> ImplicitGemmConv(LowerContext& ctx, const ImageConv& ic, const TensorFn& X, const TensorFn* bias,
                              const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  const ConvGeom& c = ic.c;
  const size_t sp = c.sp(), last = sp - 1;
  const int64_t KK = NumElements(c.k), Kdim = c.Cg * KK, N = NumElements(c.out);
  Expr bi = c.B > 1 ? k.NewVar("img") : Expr(0);
  Expr gi = c.groups > 1 ? k.NewVar("grp") : Expr(0);
  GemmOperands g;
  g.m = c.Mg; g.n = N; g.k = Kdim;
  KernelFunc* kp = &k;
  if (ic.a_panel_rows > 0) {
    auto a_panel = ic.a_panel;
    g.a_panel_rows = ic.a_panel_rows;
    g.a_panel = [a_panel, gi](Expr offset) { return a_panel(offset, gi); };
  } else {
    auto a = ic.a;
    g.a = [a, gi](Expr m, Expr kk) { return a(m, kk, gi); };
  }
  Stmt pad_copy;
  bool pointwise = ic.direct && KK == 1;
  for (size_t d = 0; d < sp; ++d) pointwise = pointwise && c.s[d] == 1 && c.out[d] == ic.P[d];
  if (pointwise && X.buffer >= 0) {
    const int64_t S = NumElements(ic.P);
    int xview = k.AddArgView(k.buffer(X.buffer).arg_index, "x_cols", {c.B, c.C, S});
    g.b = [kp, xview, bi, gi, c](Expr kk, Expr n) { return kp->Load(xview, {bi, gi * c.Cg + kk, n}); };
  } else {
    // im2col while packing, with no bounds checks: the group's input channels
    // are first copied into a zero-padded workspace image (with NR elements of
    // slack on both ends), so every window read is in bounds. Column n's window
    // origin offset comes from a baked table.
    //   * last-dim stride <= 4: a full panel of NR columns covers a few runs of
    //     consecutive output columns (one per output row it touches); each run
    //     is one vector load (stride 1) or masked load + shuffle (stride 2..4)
    //     and lanes pick their run (baked per-panel run bounds/offsets): no
    //     gathers. Lanes outside a run read neighbouring (slack) elements,
    //     never used.
    //   * otherwise (and for the tail panel): one gather through the table;
    //     without padding and with X a plain argument, straight from X.
    const int64_t NR = std::max<int64_t>(1, ctx.options().gemm_nr);
    const int64_t Nfull = N / NR;
    const int64_t OW = c.out[last], sw = c.s[last];
    const bool runs = sw <= 4 && Nfull > 0;
    const bool direct = !runs && ic.direct && X.buffer >= 0;
    const int64_t slack = NR * sw;           // lanes outside a run read up to this far
    const int64_t lead = direct ? 0 : slack;  // slack before the image
    const int64_t img = NumElements(ic.P);
    std::vector<int64_t> st(sp, 1);  // image strides
    for (size_t d = last; d-- > 0;) st[d] = st[d + 1] * ic.P[d + 1];
    int src = -1;
    if (direct) {
      src = k.AddArgView(k.buffer(X.buffer).arg_index, "x_flat", {c.B * c.C * img});
    } else {
      src = k.AddWorkspace("conv_xpad", DType::kF32, {lead + c.Cg * img + slack});
      pad_copy = ic.fill(src, lead, bi, gi);
    }
    auto put32 = [](std::vector<uint8_t>& v, int64_t i, int64_t x) {
      int32_t x32 = static_cast<int32_t>(x);
      std::memcpy(&v[static_cast<size_t>(i) * 4], &x32, 4);
    };
    auto origin = [&](int64_t n) {
      int64_t off = lead;
      for (size_t d = sp; d-- > 0;) {
        off += (n % c.out[d]) * c.s[d] * st[d];
        n /= c.out[d];
      }
      return off;
    };
    std::vector<uint8_t> off(static_cast<size_t>(N) * 4);
    for (int64_t n = 0; n < N; ++n) put32(off, n, origin(n));
    int ob = k.AddConstant("conv_off", DType::kI32, {N}, std::move(off));
    // Offset of (channel, kernel position) of row kk in the source image (b, group folded in for direct reads):
    // a baked table of the per-row part, so the packing loop does one load per row instead of the
    // divisions that split kk into channel and kernel position (they cost as much as the packing).
    auto row_offset = [&](int64_t kk) {
      int64_t o = (kk / KK) * img, rem = kk % KK;
      for (size_t d = sp; d-- > 0;) {
        o += (rem % c.k[d]) * c.d[d] * st[d];
        rem /= c.k[d];
      }
      return o;
    };
    const bool table = row_offset(Kdim - 1) <= INT32_MAX;
    int rb = -1;
    if (table) {
      std::vector<uint8_t> rows(static_cast<size_t>(Kdim) * 4);
      for (int64_t kk = 0; kk < Kdim; ++kk) put32(rows, kk, row_offset(kk));
      rb = k.AddConstant("conv_row_off", DType::kI32, {Kdim}, std::move(rows));
    }
    auto coff = [kp, rb, table, bi, gi, c, KK, img, st, direct](Expr kk) {
      if (table) {
        Expr o = Cast(kp->Load(rb, {kk}), DType::kI64);
        return direct ? (bi * c.C + gi * c.Cg) * img + o : o;
      }
      Expr ci = kk / KK;
      Expr ch = direct ? (bi * c.C + gi * c.Cg + ci) : ci;
      Expr o = ch * img;
      const std::vector<Expr> kpos = Delinearize(c.k, kk % KK);
      for (size_t d = 0; d < c.sp(); ++d) o = o + kpos[d] * (c.d[d] * st[d]);
      return o;
    };
    g.b = [kp, src, ob, coff](Expr kk, Expr n) {
      return kp->Load(src, {coff(kk) + Cast(kp->Load(ob, {n}), DType::kI64)});
    };
    if (runs) {
      // Runs per full panel: a panel touches at most S output rows.
      int64_t S = 1;
      for (int64_t p = 0; p < Nfull; ++p) S = std::max(S, (p * NR + NR - 1) / OW - (p * NR) / OW + 1);
      // base[p][s]: lane j of run s reads base + j * sw; end[p][s]: first lane after run s.
      std::vector<uint8_t> base(static_cast<size_t>(Nfull * S) * 4), end(static_cast<size_t>(Nfull * S) * 4);
      for (int64_t p = 0; p < Nfull; ++p) {
        int64_t s = 0, j = 0;
        while (j < NR) {
          const int64_t n = p * NR + j;
          const int64_t len = std::min(NR - j, OW - n % OW);
          put32(base, p * S + s, origin(n) - j * sw);
          put32(end, p * S + s, j + len);
          j += len;
          ++s;
        }
        for (; s < S; ++s) { put32(base, p * S + s, origin(p * NR)); put32(end, p * S + s, NR); }
      }
      int bb = k.AddConstant("conv_run_base", DType::kI32, {Nfull, S}, std::move(base));
      int eb = k.AddConstant("conv_run_end", DType::kI32, {Nfull, S}, std::move(end));
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
    std::vector<Expr> idx{bi, co};
    for (const Expr& e : Delinearize(c.out, n)) idx.push_back(e);
    return store(idx, v);
  };
  KEEL_ASSIGN_OR_RETURN(Stmt body, BuildBlockedGemm(ctx, g, "conv"));
  if (pad_copy) body = Block({pad_copy, body});
  if (c.groups > 1) body = For(gi, 0, c.groups, LoopKind::kSerial, body);
  if (c.B > 1) body = For(bi, 0, c.B, LoopKind::kSerial, body);
  return body;
}

// Window attributes of a canonical Conv/ConvTranspose node into `c`.
Status ReadWindow(const ir::Node& node, size_t sp, ConvGeom& c, std::vector<int64_t>& pads) {
  const ir::Attributes& at = node.attrs();
  KEEL_ASSIGN_OR_RETURN(c.s, at.GetInts("strides", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(pads, at.GetInts("pads", std::vector<int64_t>(2 * sp, 0)));
  KEEL_ASSIGN_OR_RETURN(c.d, at.GetInts("dilations", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(c.groups, at.GetInt("group", 1));
  if (c.s.size() != sp || pads.size() != 2 * sp || c.d.size() != sp || c.groups <= 0)
    return InvalidArgument(NodeLabel(node) + ": malformed strides/pads/dilations/group");
  c.pb.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(sp));
  return Status::Ok();
}

// X, W and the optional bias of a convolution node, checked: one rank >= 3
// for input, weight and output; f32 data, or f16/bf16 read widened to f32
// (the kernels accumulate in f32; f64 would lose precision).
struct ConvOperands {
  TensorFn x, w;
  const TensorFn* bias = nullptr;
};

Result<ConvOperands> ReadConvOperands(LowerContext& ctx, const ir::Node& node, const char* op) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* x, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* w, ctx.Input(node, 1));
  ConvOperands in{*x, *w};
  if (node.input(2)) {
    KEEL_ASSIGN_OR_RETURN(in.bias, ctx.Input(node, 2));
  }
  const size_t rank = in.x.type.shape.size();
  if (rank < 3 || in.w.type.shape.size() != rank || node.output(0)->type().shape.size() != rank)
    return InvalidArgument(NodeLabel(node) + ": convolution needs input, weight and output of one rank >= 3");
  auto widened = [](DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; };
  if (!widened(in.x.type.dtype) || !widened(in.w.type.dtype))
    return Unsupported(NodeLabel(node) + ": " + op + " on " + ir::DTypeName(in.x.type.dtype));
  return in;
}

}  // namespace

Result<Stmt> LowerConv(LowerContext& ctx, const ir::Node& node, int64_t packed_rows, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(ConvOperands in, ReadConvOperands(ctx, node, "Conv"));
  TensorFn X = in.x, Wt = in.w;
  const TensorFn* bias = in.bias;
  const std::vector<int64_t>& xs = X.type.shape;
  const std::vector<int64_t>& ws = Wt.type.shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const size_t sp = xs.size() - 2;
  ConvGeom c;
  std::vector<int64_t> pads;
  KEEL_RETURN_IF_ERROR(ReadWindow(node, sp, c, pads));
  c.B = xs[0]; c.C = xs[1]; c.Co = ws[0];
  c.Cg = c.C / c.groups; c.Mg = c.Co / c.groups;
  c.in.assign(xs.begin() + 2, xs.end());
  c.out.assign(os.begin() + 2, os.end());
  c.k.assign(ws.begin() + 2, ws.end());
  if (c.C % c.groups != 0 || c.Co % c.groups != 0 || ws[1] != c.Cg || os[1] != c.Co)
    return InvalidArgument(NodeLabel(node) + ": inconsistent channels/groups");

  if (c.Cg == 1) {
    if (packed_rows > 0) return InvalidArgument(NodeLabel(node) + ": a depthwise convolution's weight cannot be panel-packed");
    if (sp == 2) {
      DepthwiseGeom2D g;
      g.B = c.B; g.Co = c.Co; g.Mg = c.Mg;
      g.H = c.in[0]; g.W = c.in[1]; g.OH = c.out[0]; g.OW = c.out[1]; g.KH = c.k[0]; g.KW = c.k[1];
      g.sh = c.s[0]; g.sw = c.s[1]; g.dh = c.d[0]; g.dw = c.d[1]; g.ph = c.pb[0]; g.pw = c.pb[1];
      if (DepthwisePlaneApplies(ctx.options(), g)) return LowerDepthwisePlane(ctx, g, X, Wt, bias, store);
    }
    return ctx.options().gpu_direct_conv ? GpuDirectConv(ctx, c, X, Wt, bias, store)
                                         : DirectConv(ctx, c, X, Wt, bias, store);
  }

  ImageConv ic;
  ic.c = c;
  const int64_t KK = NumElements(c.k);
  // The padded image: large enough for every window (ceil/asymmetric pads included).
  ic.P.resize(sp);
  ic.direct = X.buffer >= 0;
  for (size_t d = 0; d < sp; ++d) {
    ic.P[d] = std::max(c.in[d] + c.pb[d], (c.out[d] - 1) * c.s[d] + (c.k[d] - 1) * c.d[d] + 1);
    ic.direct = ic.direct && c.pb[d] == 0 && ic.P[d] == c.in[d];
  }
  KernelFunc* kp = &k;
  if (packed_rows > 0) {
    // Each group's [Mg, Cg * KK] matrix in row panels: flat offsets into the weight.
    const int64_t group_elems = c.Mg * c.Cg * KK;
    ic.a_panel_rows = packed_rows;
    if (Wt.buffer >= 0) {
      int wflat = k.AddArgView(k.buffer(Wt.buffer).arg_index, "w_panels", {c.Co * c.Cg * KK});
      ic.a_panel = [kp, wflat, group_elems](Expr offset, Expr gi) { return kp->Load(wflat, {gi * group_elems + offset}); };
    } else {
      IndexFn w_at = Wt.at;
      const std::vector<int64_t> ws_copy = ws;
      ic.a_panel = [w_at, ws_copy, group_elems](Expr offset, Expr gi) {
        return w_at(Delinearize(ws_copy, gi * group_elems + offset));
      };
    }
  } else if (Wt.buffer >= 0) {
    int wview = k.AddArgView(k.buffer(Wt.buffer).arg_index, "w_rows", {c.Co, c.Cg * KK});
    ic.a = [kp, wview, c](Expr m, Expr kk, Expr gi) { return kp->Load(wview, {gi * c.Mg + m, kk}); };
  } else {
    IndexFn w_at = Wt.at;
    ic.a = [w_at, c, KK](Expr m, Expr kk, Expr gi) {
      std::vector<Expr> idx{gi * c.Mg + m, kk / KK};
      for (const Expr& e : Delinearize(c.k, kk % KK)) idx.push_back(e);
      return w_at(idx);
    };
  }
  // Rows of the image (channel, leading coords): copied with zero borders, or zero outside the input.
  const std::vector<int64_t> P = ic.P;
  ic.fill = [kp, &ctx, c, P, X](int src, int64_t lead, Expr bi, Expr gi) -> Stmt {
    KernelFunc& k = *kp;
    const size_t sp = c.sp(), last = sp - 1;
    const int64_t Wp = P[last], W = c.in[last], pl = c.pb[last];
    std::vector<int64_t> row_dims{c.Cg};
    row_dims.insert(row_dims.end(), P.begin(), P.end() - 1);
    const int64_t rows = NumElements(row_dims);
    Expr r = k.NewVar("r"), w = k.NewVar("w"), w2 = k.NewVar("w"), w3 = k.NewVar("w"), w4 = k.NewVar("w");
    const std::vector<Expr> rix = Delinearize(row_dims, r);
    std::vector<Expr> xi{bi, gi * c.Cg + rix[0]};
    Expr ok;
    for (size_t d = 0; d < last; ++d) {
      Expr h = rix[1 + d] - c.pb[d];
      xi.push_back(h);
      ok = And(ok, (h >= 0) && (h < c.in[d]));
    }
    xi.push_back(w2);
    Expr row0 = r * Wp + lead;
    Stmt copy = Block({
        For(w, 0, pl, LoopKind::kSerial, k.Store(src, {row0 + w}, FloatConst(0))),
        For(w2, 0, W, LoopKind::kVectorize, k.Store(src, {row0 + pl + w2}, Cast(X.at(xi), DType::kF32))),
        For(w3, pl + W, Wp, LoopKind::kSerial, k.Store(src, {row0 + w3}, FloatConst(0))),
    });
    Stmt zero = For(w4, 0, Wp, LoopKind::kVectorize, k.Store(src, {row0 + w4}, FloatConst(0)));
    bool par = rows > 1 && rows * Wp >= ctx.options().min_parallel_elements;
    return For(r, 0, rows, par ? LoopKind::kParallel : LoopKind::kSerial, ok.is_null() ? copy : If(ok, copy, zero));
  };
  return ImplicitGemmConv(ctx, ic, X, bias, store);
}

// The GPU form of ConvTranspose (LowerOptions::gpu_direct_conv): one output
// element per parallel iteration, in the output's memory order (channels
// innermost for a channels-last node), gathering its inputs directly: output
// position o takes input position i = (o + pad - k*dil) / stride for every tap
// k where that divides and falls inside the input, over the group's input
// channels. (The CPU's implicit GEMM, a fill of the scattered image and a
// blocked GEMM, has several dependent phases: on a grid it ran in one block,
// 20 ms for a UNet's 2x2 upsampling.) `c` is the equivalent stride-1
// convolution's geometry (channels, kernel, dilation), `stride` and
// `pads` (begin pads) the transposed convolution's own.
Stmt GpuDirectConvTranspose(LowerContext& ctx, const ConvGeom& c, const std::vector<int64_t>& stride,
                            const std::vector<int64_t>& pads, const TensorFn& X, const TensorFn& Wt,
                            const TensorFn* bias, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  const size_t sp = c.sp();
  std::vector<int64_t> dims{c.B, c.Co};
  dims.insert(dims.end(), c.out.begin(), c.out.end());
  Expr it = k.NewVar("it");
  const std::vector<Expr> ix = MemoryOrderIndex(ctx, dims, it);
  Expr b = ix[0], co = ix[1];
  Expr g = co / c.Mg, m = co % c.Mg;
  const int acc = k.AddLocal("ct_acc", DType::kF32, {1});
  Expr a = k.Load(acc, {Expr(0)});
  std::vector<Stmt> body;
  body.push_back(k.Store(acc, {Expr(0)}, bias ? Cast(bias->at({co}), DType::kF32) : FloatConst(0)));
  // Taps outermost (each tap's input position and its test once), channels inside.
  std::vector<Expr> kv, xi{b, Expr()}, wi{Expr(), m};
  Expr ok;
  for (size_t d = 0; d < sp; ++d) {
    kv.push_back(k.NewVar("k" + std::to_string(d)));
    Expr z = ix[2 + d] + pads[d] - kv[d] * c.d[d];
    ok = And(ok, (z >= 0) && Binary(BinaryOp::kEq, z % stride[d], Expr(0)) && (z < c.in[d] * stride[d]));
    xi.push_back(Clamp(stride[d] == 1 ? z : z / stride[d], 0, c.in[d] - 1));
    wi.push_back(kv[d]);
  }
  Expr ci = k.NewVar("ci");
  xi[1] = g * c.Cg + ci;
  wi[0] = g * c.Cg + ci;
  Stmt tap = If(ok, For(ci, 0, c.Cg, LoopKind::kSerial,
                        k.Store(acc, {Expr(0)}, a + Cast(X.at(xi), DType::kF32) * Cast(Wt.at(wi), DType::kF32))));
  for (size_t d = sp; d-- > 0;) tap = For(kv[d], 0, c.k[d], LoopKind::kSerial, tap);
  body.push_back(tap);
  std::vector<Expr> oi{b, co};
  oi.insert(oi.end(), ix.begin() + 2, ix.end());
  body.push_back(store(oi, a));
  return For(it, 0, NumElements(dims), LoopKind::kParallel, Block(std::move(body)));
}

Result<Stmt> LowerConvTranspose(LowerContext& ctx, const ir::Node& node, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(ConvOperands in, ReadConvOperands(ctx, node, "ConvTranspose"));
  TensorFn X = in.x, Wt = in.w;
  const TensorFn* bias = in.bias;
  const std::vector<int64_t>& xs = X.type.shape;
  const std::vector<int64_t>& ws = Wt.type.shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const size_t sp = xs.size() - 2;
  ConvGeom t;  // the transposed convolution's own attributes
  std::vector<int64_t> pads;
  KEEL_RETURN_IF_ERROR(ReadWindow(node, sp, t, pads));
  // The equivalent stride-1 convolution over the scattered image: input channels
  // of a group = Cin/group, output channels = W's dim 1 per group.
  ConvGeom c;
  c.B = xs[0]; c.C = xs[1]; c.groups = t.groups;
  c.Cg = c.C / c.groups; c.Mg = ws[1]; c.Co = c.Mg * c.groups;
  if (c.C % c.groups != 0 || ws[0] != c.C || os[1] != c.Co)
    return InvalidArgument(NodeLabel(node) + ": inconsistent channels/groups");
  c.in.assign(xs.begin() + 2, xs.end());
  c.out.assign(os.begin() + 2, os.end());
  c.k.assign(ws.begin() + 2, ws.end());
  c.d = t.d;
  c.s.assign(sp, 1);
  c.pb.assign(sp, 0);
  if (ctx.options().gpu_direct_conv) return GpuDirectConvTranspose(ctx, c, t.s, pads, X, Wt, bias, store);
  ImageConv ic;
  ic.c = c;
  ic.P.resize(sp);
  std::vector<int64_t> border(sp);  // image coordinate of input position 0
  for (size_t d = 0; d < sp; ++d) {
    border[d] = (c.k[d] - 1) * c.d[d] - pads[d];
    ic.P[d] = c.out[d] + (c.k[d] - 1) * c.d[d];
  }
  const int64_t KK = NumElements(c.k);
  IndexFn w_at = Wt.at;
  ic.a = [w_at, c, KK](Expr m, Expr kk, Expr gi) {
    std::vector<Expr> idx{gi * c.Cg + kk / KK, m};
    const std::vector<Expr> kpos = Delinearize(c.k, kk % KK);
    for (size_t d = 0; d < c.sp(); ++d) idx.push_back((c.k[d] - 1) - kpos[d]);  // flipped
    return w_at(idx);
  };
  KernelFunc* kp = &k;
  const std::vector<int64_t> P = ic.P, s = t.s;
  ic.fill = [kp, &ctx, c, P, s, border, X](int src, int64_t lead, Expr bi, Expr gi) -> Stmt {
    KernelFunc& k = *kp;
    const size_t sp = c.sp(), last = sp - 1;
    std::vector<int64_t> row_dims{c.Cg};
    row_dims.insert(row_dims.end(), P.begin(), P.end() - 1);
    const int64_t rows = NumElements(row_dims);
    Expr r = k.NewVar("r"), w = k.NewVar("w");
    std::vector<Expr> rix = Delinearize(row_dims, r);
    rix.push_back(w);
    std::vector<Expr> xi{bi, gi * c.Cg + rix[0]};
    Expr ok;
    for (size_t d = 0; d < sp; ++d) {
      // Image coordinate j holds input position (j - border) / stride when that divides.
      Expr z = rix[1 + d] - border[d];
      ok = And(ok, (z >= 0) && Binary(BinaryOp::kEq, z % s[d], Expr(0)) && (z < (c.in[d] - 1) * s[d] + 1));
      xi.push_back(Clamp(s[d] == 1 ? z : z / s[d], 0, c.in[d] - 1));
    }
    Stmt row = For(w, 0, P[last], LoopKind::kSerial,
                   k.Store(src, {r * P[last] + lead + w}, Select(ok, Cast(X.at(xi), DType::kF32), FloatConst(0))));
    bool par = rows > 1 && rows * P[last] >= ctx.options().min_parallel_elements;
    return For(r, 0, rows, par ? LoopKind::kParallel : LoopKind::kSerial, row);
  };
  return ImplicitGemmConv(ctx, ic, X, bias, store);
}

// DeformConv (2-D): one output row (n, oc, i) per parallel iteration; per
// output column, input channel of the group and tap: the tap's offset and
// mask, then a bilinear sample of four clamped-and-guarded reads (zeros
// outside the image). Sample coordinates are clamped to [-2, size + 1] before
// the integer conversion (a wild offset reads zeros, never out of bounds).
Result<Stmt> LowerDeformConv(LowerContext& ctx, const ir::Node& node, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  const ir::Attributes& at = node.attrs();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Wp, ctx.Input(node, 1));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Op, ctx.Input(node, 2));
  const TensorFn* bias = nullptr;
  const TensorFn* mask = nullptr;
  if (node.inputs().size() > 3 && node.input(3)) { KEEL_ASSIGN_OR_RETURN(bias, ctx.Input(node, 3)); }
  if (node.inputs().size() > 4 && node.input(4)) { KEEL_ASSIGN_OR_RETURN(mask, ctx.Input(node, 4)); }
  const TensorFn X = *Xp, Wt = *Wp, Off = *Op;
  const std::vector<int64_t>& xs = X.type.shape;
  const std::vector<int64_t>& ws = Wt.type.shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  if (xs.size() != 4 || ws.size() != 4 || os.size() != 4)
    return Unsupported(NodeLabel(node) + ": only 2-D deformable convolution is supported");
  ConvGeom c;
  std::vector<int64_t> pads;
  KEEL_RETURN_IF_ERROR(ReadWindow(node, 2, c, pads));
  KEEL_ASSIGN_OR_RETURN(int64_t og, at.GetInt("offset_group", 1));
  const int64_t H = xs[2], W = xs[3], M = os[1], OH = os[2], OW = os[3], KH = ws[2], KW = ws[3];
  const int64_t Cg = ws[1], Mg = M / c.groups, Cog = xs[1] / std::max<int64_t>(og, 1);
  if (og <= 0 || xs[1] != Cg * c.groups || M % c.groups != 0) return InvalidArgument(NodeLabel(node) + ": inconsistent channels/groups");
  Expr r = k.NewVar("r"), j = k.NewVar("ow"), ci = k.NewVar("ci"), a = k.NewVar("kh"), b = k.NewVar("kw");
  const std::vector<Expr> rix = Delinearize({xs[0], M, OH}, r);
  Expr n = rix[0], oc = rix[1], i = rix[2];
  Expr ic = (oc / Mg) * Cg + ci;
  Expr tap = ((ic / Cog) * KH + a) * KW + b;
  auto f32 = [](Expr e) { return Cast(std::move(e), DType::kF32); };
  Expr dy = f32(Off.at({n, tap * 2, i, j})), dx = f32(Off.at({n, tap * 2 + 1, i, j}));
  Expr mk = mask ? f32(mask->at({n, tap, i, j})) : FloatConst(1);
  Expr h = Min(Max(f32(i * c.s[0] - pads[0] + a * c.d[0]) + dy, FloatConst(-2)), FloatConst(static_cast<double>(H + 1)));
  Expr v = Min(Max(f32(j * c.s[1] - pads[1] + b * c.d[1]) + dx, FloatConst(-2)), FloatConst(static_cast<double>(W + 1)));
  Expr hf = Unary(UnaryOp::kFloor, h), vf = Unary(UnaryOp::kFloor, v);
  Expr lh = h - hf, lv = v - vf;
  Expr hi = Cast(hf, DType::kI64), vi = Cast(vf, DType::kI64);
  Expr sample;
  for (int dyc = 0; dyc < 2; ++dyc) {
    for (int dxc = 0; dxc < 2; ++dxc) {
      Expr hy = hi + dyc, vx = vi + dxc;
      Expr inside = (hy >= 0) && (hy < H) && (vx >= 0) && (vx < W);
      Expr wgt = (dyc ? lh : FloatConst(1) - lh) * (dxc ? lv : FloatConst(1) - lv);
      Expr val = Select(inside, f32(X.at({n, ic, Clamp(hy, 0, H - 1), Clamp(vx, 0, W - 1)})), FloatConst(0));
      Expr term = wgt * val;
      sample = sample.is_null() ? term : sample + term;
    }
  }
  int sum = k.AddLocal("dcn_sum", DType::kF32, {1});
  Expr s = k.Load(sum, {Expr(0)});
  Stmt taps = For(ci, 0, Cg, LoopKind::kSerial,
                  For(a, 0, KH, LoopKind::kSerial,
                      For(b, 0, KW, LoopKind::kSerial,
                          k.Store(sum, {Expr(0)}, s + f32(Wt.at({oc, ci, a, b})) * mk * sample))));
  Stmt per_out = Block({k.Store(sum, {Expr(0)}, bias ? f32(bias->at({oc})) : FloatConst(0)), taps,
                        store({n, oc, i, j}, s)});
  const int64_t rows = xs[0] * M * OH;
  bool par = rows > 1 && rows * OW * Cg * KH * KW >= ctx.options().min_parallel_elements;
  return For(r, 0, rows, par ? LoopKind::kParallel : LoopKind::kSerial, For(j, 0, OW, LoopKind::kSerial, per_out));
}

}  // namespace keel::codegen
