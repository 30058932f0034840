// compiler/codegen/lower_conv_direct.cc — see lower_conv_direct.h.
#include "compiler/codegen/lower_conv_direct.h"

#include <algorithm>

namespace keel::codegen {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

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

}  // namespace

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
  // The group's input channels: one (depthwise), or a serial loop over Cg.
  Expr g = c.Mg == 1 ? co : co / c.Mg;
  Expr cv = c.Cg > 1 ? k.NewVar("ci") : Expr();
  Expr ci = c.Cg > 1 ? g * c.Cg + cv : g;
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
  std::vector<Expr> xi{b, ci}, wi{co, c.Cg > 1 ? cv : Expr(0)};
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
  if (c.Cg > 1) window = For(cv, 0, c.Cg, LoopKind::kSerial, window);
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

Stmt GpuPixelConv(LowerContext& ctx, const ConvGeom& c, const TensorFn& X, const TensorFn& Wt, const TensorFn* bias,
                  const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  const size_t sp = c.sp();
  std::vector<int64_t> pixels{c.B};
  pixels.insert(pixels.end(), c.out.begin(), c.out.end());
  Expr it = k.NewVar("it");
  const std::vector<Expr> px = Delinearize(pixels, it);  // (b, output coords): the NHWC order
  const int acc = k.AddLocal("px_acc", DType::kF32, {c.Co});
  std::vector<Stmt> body;
  {
    Expr co = k.NewVar("co");
    body.push_back(For(co, 0, c.Co, LoopKind::kUnroll,
                       k.Store(acc, {co}, bias ? Cast(bias->at({co}), DType::kF32) : FloatConst(0))));
  }
  std::vector<Expr> kvars;
  Expr inside;
  Expr ci = k.NewVar("ci"), co = k.NewVar("co");
  std::vector<Expr> xi{px[0], ci}, wi{co, ci};
  for (size_t d = 0; d < sp; ++d) {
    kvars.push_back(k.NewVar("k" + std::to_string(d)));
    Expr id = px[1 + d] * c.s[d] - c.pb[d] + kvars[d] * c.d[d];
    inside = And(inside, (id >= 0) && (id < c.in[d]));
    xi.push_back(id);
    wi.push_back(kvars[d]);
  }
  // The pixel's input channels are contiguous: unrolled, neighbouring loads merge into
  // vectors (and the unrolled output channels share each load).
  Stmt fma = k.Store(acc, {co}, k.Load(acc, {co}) + Cast(X.at(xi), DType::kF32) * Cast(Wt.at(wi), DType::kF32));
  Stmt channel = For(co, 0, c.Co, LoopKind::kUnroll, fma);
  Stmt window = For(ci, 0, c.C, c.C <= 64 ? LoopKind::kUnroll : LoopKind::kSerial, channel);
  if (!inside.is_null()) window = If(inside, window);
  for (size_t d = sp; d-- > 0;) window = For(kvars[d], 0, c.k[d], LoopKind::kSerial, window);
  body.push_back(window);
  {
    Expr o = k.NewVar("co");
    std::vector<Expr> oi{px[0], o};
    for (size_t d = 0; d < sp; ++d) oi.push_back(px[1 + d]);
    body.push_back(For(o, 0, c.Co, LoopKind::kUnroll, store(oi, k.Load(acc, {o}))));
  }
  return For(it, 0, NumElements(pixels), LoopKind::kParallel, Block(std::move(body)));
}

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


}  // namespace keel::codegen
