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
//     of NR rows is W^T's column panels, read in place, the last Co % NR rows
//     a narrow panel; otherwise packed at run time), K = C; the tasks keep row blocks outermost (GemmOperands::
//     rows_outer), so each thread writes the pixels the next layer reads on it.
//   * depthwise (one input channel per group, multiplier 1, 2-D): one output
//     row (image, oh) per parallel iteration, or two interior rows with AVX-512, or
//     (LowerOptions::depthwise_nhwc_tile_rows) a tile of rows walked chunk by chunk; per output pixel, the channels in
//     vector chunks of up to 16 lanes (the last chunk overlapping the one before
//     it), every tap an unit-stride load of the input pixel's channels times
//     the tap's weights (packed at compile time as [KH*KW][C], the row-panel
//     layout of the [C, KH*KW] weight with C rows per panel, so they are
//     unit-stride too), summed in registers. The border rows and columns
//     (some tap outside the input) are generated one by one with only the taps
//     inside, so no tap is guarded.
#include <algorithm>
#include <utility>

#include "compiler/codegen/lower_conv_nhwc.h"

#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/channels_last.h"
#include "compiler/ops/registry.h"

namespace keel::codegen {
namespace {

constexpr int64_t kLanes = 16;  // channels per vector chunk (one zmm, two ymm)
constexpr int64_t kPixelBlock = 4;  // interior output pixels computed together
constexpr int64_t kRowPixels = 16;  // rows up to this wide: every pixel together

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
  // Where the GEMM's own row tile leaves a ragged last tile (the 7x7 stage's 49 pixels: four tiles
  // of 12 and one of 1, whose two accumulator chains wait on the FMA latency; 196 at 14x14: a tile
  // of 4), row tiles of balanced sizes up to gemm_mr_max instead (13, 13, 13 and 10; 14 x 14), as
  // the channels-first pixels-as-rows form has (lower_conv.cc PixelRowsConv). MnasNet's 1x1
  // layers at 7x7 took 0.89-0.95 of the time; where the tile divides M (112x112 to 28x28) the
  // balanced 14-row tiles measured 1.06-1.10 on its 16 -> 48 at 112x112 (docs/MEASUREMENTS.md, cpu29).
  if (g.m % GemmRowTile(ctx.options(), g.m) != 0) {
    const int64_t most = std::max<int64_t>(1, ctx.options().gemm_mr_max), tiles = (g.m + most - 1) / most;
    g.row_tile = (g.m + tiles - 1) / tiles;
    g.a_tile = [kp, xview](Expr m0, int64_t i, Expr ci) { return kp->Load(xview, {m0 + i, ci}); };
  }
  if (packed_rows > 0) {
    if (packed_rows != NhwcPackedRows(ctx.options(), NhwcConv::kPointwise, c.Co) || Wt.channels_last_buffer < 0)
      return InvalidArgument("channels-last pointwise convolution: the weight must be in row panels of " +
                             std::to_string(NR) + " rows");
    g.b_packed = k.AddArgView(k.buffer(Wt.channels_last_buffer).arg_index, "w_columns", {c.Co * c.C});
    g.b_packed_narrow_tail = true;  // the last Co % NR rows are a panel of their own
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

// The taps [lo, hi) of one window dim whose input index o * s - pad + t * dil is inside [0, in).
std::pair<int64_t, int64_t> TapsInside(int64_t o, int64_t s, int64_t pad, int64_t dil, int64_t taps, int64_t in) {
  int64_t lo = 0, hi = taps;
  while (lo < taps && o * s - pad + lo * dil < 0) ++lo;
  while (hi > lo && o * s - pad + (hi - 1) * dil >= in) --hi;
  return {lo, hi};
}

// Output positions [lo, hi) of one dim whose every tap is inside the input.
std::pair<int64_t, int64_t> Interior(int64_t s, int64_t pad, int64_t dil, int64_t taps, int64_t in, int64_t out) {
  int64_t lo = 0, hi = out;
  while (lo < out && TapsInside(lo, s, pad, dil, taps, in) != std::make_pair(int64_t{0}, taps)) ++lo;
  while (hi > lo && TapsInside(hi - 1, s, pad, dil, taps, in) != std::make_pair(int64_t{0}, taps)) --hi;
  return {lo, hi};
}

// Border rows or columns (each generated on its own) of a depthwise convolution: at most this many.
constexpr int64_t kMaxBorder = 16;

bool FewBorders(const ConvGeom& c) {
  for (size_t d = 0; d < 2; ++d) {
    const auto [lo, hi] = Interior(c.s[d], c.pb[d], c.d[d], c.k[d], c.in[d], c.out[d]);
    if (lo + (c.out[d] - std::max(lo, hi)) > kMaxBorder) return false;
  }
  return true;
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
  // Two output rows per parallel iteration where both are interior rows (AVX-512). One row of
  // blocks read each input row from L2 three times (3x3): the three input rows an output row
  // reads (3 * W * C floats, 43-64 KB in MobileNetV2 and MnasNet, where W * C stays about
  // constant from 112x112 to 14x14) do not fit the 48 KB L1, and at one row per iteration the
  // depthwise layers ran at one 16-lane FMA per cycle of the two the core issues. Two rows
  // share KH - sh of their input rows in registers and keep twice the accumulator chains. Where
  // that spills it is not taken: 5x5 windows over rows of at most kRowPixels pixels (every
  // pixel is a chain: 14 or 28 with 25 weights) or at a stride above 1 (docs/MEASUREMENTS.md, cpu40).
  // An odd number of groups splits unevenly between 2 threads (14 rows: 7 pairs, 8 rows on one
  // thread where single rows give 7 each; MobileNetV2's 14x14 layers took 1.13-1.29x the time at
  // 2 threads), so only an even number or at least 16 of them.
  const int64_t pair_groups = c.B * ((OH + 1) / 2);
  // Row tiles, channel chunk outside the rows (LowerOptions::depthwise_nhwc_tile_rows): where
  // there is more than one 16-lane chunk, at least 4 rows, and a window of at most 9 taps (5x5
  // windows spilled: the 25 weights of a chunk live across the tile's rows, 1.9x the time on
  // MnasNet's 28x28 layers; docs/MEASUREMENTS.md, cpu44). The tiles per image are an even number
  // (2 threads take equal shares; 14 rows are 2 tiles of 7, where 7 pairs split 4 / 3), each at
  // most tile_rows rows.
  const int64_t tile_rows = ctx.options().depthwise_nhwc_tile_rows;
  int64_t TT = 0, RT = 0;  // tiles per image, rows per tile (0: no tiles)
  if (tile_rows > 0 && C > kLanes && OH >= 4 && KH * KW <= 9) {
    int64_t tiles = std::max<int64_t>(2, (OH + tile_rows - 1) / tile_rows);
    tiles += tiles % 2;
    RT = (OH + tiles - 1) / tiles;
    TT = (OH + RT - 1) / RT;
  }
  const bool pair_rows = ctx.options().vector_registers >= 32 && (KH * KW <= 9 || (OW > kRowPixels && sh == 1)) &&
                         (TT > 0 || pair_groups % 2 == 0 || pair_groups >= 16);
  const int64_t R = pair_rows ? 2 : 1;
  const int64_t NG = TT > 0 ? TT : (OH + R - 1) / R;  // row groups (or tiles) per image
  Expr r = k.NewVar("row");
  Expr bi = c.B > 1 ? r / NG : Expr(0), g_var = c.B > 1 ? r % NG : r;
  // In a tile, the chunk's first channel and lanes (its loop is outside the rows); null: every
  // chunk for each pixel group (ChannelChunks).
  Expr tile_chunk;
  int64_t tile_lanes = kLanes;
  // Output pixels `anchor + j` of row `oh`, each (j, its taps [kw0, kw1)), every channel, over
  // the taps [kh0, kh1) x [kw0, kw1), all inside the input: one store per pixel in each chunk's
  // body, so the pixels share the weights' loads and keep independent accumulator chains (one
  // pixel alone waits on its chain's FMA latency). Every input address is one base per group plus
  // a constant, so at stride 1 the pixels' equal taps are one load (LLVM's CSE); with per-pixel
  // bases it loaded every (pixel, tap) again (KW times the loads at stride 1), and the loads, not
  // the FMAs, bounded MnasNet's 5x5 layers (docs/MEASUREMENTS.md, cpu29). At a stride above 1 the
  // pixels share fewer taps, and with 16 vector registers (AVX2, a chunk two ymm) keeping those
  // values live spilled: MobileNetV2's 3x3 stride 2 at 112x112 took 1.28x the time, so there each
  // pixel keeps its own base and every tap folds its load into the FMA.
  const bool shared_taps = sw == 1 || ctx.options().vector_registers >= 32;
  using Taps = std::pair<int64_t, int64_t>;
  auto chunks = [&](const std::function<Stmt(Expr)>& per) {
    if (tile_chunk.is_null()) return ChannelChunks(k, C, per);
    Expr i = k.NewVar("ci");
    return For(i, 0, tile_lanes, LoopKind::kLanes, per(tile_chunk + i));
  };
  auto pixels = [&](Expr oh, Expr anchor, const std::vector<std::pair<int64_t, Taps>>& ows, Taps rows, int64_t nrows) {
    return chunks([&](Expr ch) {
      Expr col0 = anchor.is_null() ? Expr(-pw) : anchor * sw - pw;
      Expr base = ((bi * H + (oh * sh - ph)) * W + col0) * C + ch;
      std::vector<Stmt> stores;
      for (int64_t dy = 0; dy < nrows; ++dy) {  // the iteration's rows oh + dy
        for (const auto& [j, cols] : ows) {
          Expr ow = anchor.is_null() ? Expr(j) : anchor + j;
          Expr acc = bias ? Cast(bias->at({ch}), DType::kF32) : Expr();
          for (int64_t kh = rows.first; kh < rows.second; ++kh) {
            for (int64_t kw = cols.first; kw < cols.second; ++kw) {
              Expr at = shared_taps ? base + Expr(((dy * sh + kh * dh) * W + j * sw + kw * dw) * C)
                                    : ((bi * H + (oh * sh + (dy * sh + kh * dh - ph))) * W + (ow * sw + (kw * dw - pw))) * C + ch;
              Expr term = kp->Load(xflat, {at}) * weight(kh, kw, ch);
              acc = acc.is_null() ? term : acc + term;
            }
          }
          stores.push_back(store({bi, ch, dy == 0 ? oh : oh + dy, ow}, acc.is_null() ? FloatConst(0) : acc));
        }
      }
      return Block(stores);
    });
  };
  // Border rows and columns (some tap outside the input) are generated one by one with the taps
  // inside, the interior as loops with every tap: no guards anywhere. A row of at most
  // kRowPixels outputs is one group; a wider one groups its left border, blocks of kPixelBlock
  // interior pixels, the interior's rest together, and its right border. (Blocks of 6, 8 or 12 on
  // AVX-512, and two partial sums per pixel, measured no better: the 5x5 layers' 25 weights and
  // 8 accumulators spill.)
  // (Plain variables, not structured bindings: the lambdas below capture them,
  // which clang before 16 refuses for bindings.)
  const std::pair<int64_t, int64_t> rows_inside = Interior(sh, ph, dh, KH, H, OH);
  const std::pair<int64_t, int64_t> cols_inside = Interior(sw, pw, dw, KW, W, OW);
  const int64_t oh_lo = rows_inside.first, oh_hi = rows_inside.second;
  const int64_t ow_lo = cols_inside.first, ow_hi = cols_inside.second;
  auto border_cols = [&](int64_t lo, int64_t hi) {
    std::vector<std::pair<int64_t, Taps>> ows;
    for (int64_t ow = lo; ow < hi; ++ow) ows.push_back({ow, TapsInside(ow, sw, pw, dw, KW, W)});
    return ows;
  };
  auto row = [&](Expr oh, Taps rows, int64_t nrows) {
    if (OW <= kRowPixels) return pixels(oh, Expr(), border_cols(0, OW), rows, nrows);
    std::vector<Stmt> parts;
    if (ow_lo > 0) parts.push_back(pixels(oh, Expr(), border_cols(0, ow_lo), rows, nrows));
    if (ow_hi > ow_lo) {
      const int64_t blocks = (ow_hi - ow_lo) / kPixelBlock, rest = ow_lo + blocks * kPixelBlock;
      if (blocks > 0) {
        Expr ob = k.NewVar("ob");
        std::vector<std::pair<int64_t, Taps>> ows;
        for (int64_t j = 0; j < kPixelBlock; ++j) ows.push_back({j, {0, KW}});
        parts.push_back(For(ob, 0, blocks, LoopKind::kSerial, pixels(oh, ob * kPixelBlock + ow_lo, ows, rows, nrows)));
      }
      if (rest < ow_hi) {
        // The rest together (each pixel alone waited on its one chain's FMA latency).
        std::vector<std::pair<int64_t, Taps>> ows;
        for (int64_t ow = rest; ow < ow_hi; ++ow) ows.push_back({ow - rest, {0, KW}});
        parts.push_back(pixels(oh, Expr(rest), ows, rows, nrows));
      }
    }
    if (std::max(ow_lo, ow_hi) < OW) parts.push_back(pixels(oh, Expr(), border_cols(std::max(ow_lo, ow_hi), OW), rows, nrows));
    return Block(parts);
  };
  // One output row `oh_var`: the interior form, or the border row it equals.
  auto single = [&](Expr oh_var) {
    Stmt body = oh_hi > oh_lo ? row(oh_var, {0, KH}, 1) : Stmt();
    for (int64_t oh = OH; oh-- > 0;) {
      if (oh >= oh_lo && oh < oh_hi) continue;
      Stmt border = row(Expr(oh), TapsInside(oh, sh, ph, dh, KH, H), 1);
      body = body ? If(Binary(BinaryOp::kEq, oh_var, Expr(oh)), border, body) : border;
    }
    return body;
  };
  Stmt body;
  if (TT > 0) {
    // For each chunk, the tile's rows in order: the KH input rows of a row stay in L1 for the next.
    // With pairs (AVX-512), rows oh and oh + 1 of the tile together where both are interior rows.
    // `tile` is the tile's rows for the chunk of `lanes` lanes from channel `first`.
    auto tile = [&](Expr first, int64_t lanes) {
      tile_chunk = first;
      tile_lanes = lanes;
      Expr j = k.NewVar("tr");
      Expr oh = g_var * RT + j * R;
      Stmt step = single(oh);
      if (OH % RT != 0) step = If(Binary(BinaryOp::kLt, oh, Expr(OH)), step);
      if (R == 2) {
        // The second row where it is inside the tile and the output.
        Expr next_ok;
        if (OH % RT != 0) next_ok = Binary(BinaryOp::kLt, oh + 1, Expr(OH));
        if (RT % 2 != 0) {
          Expr in_tile = Binary(BinaryOp::kLt, j * R + 1, Expr(RT));
          next_ok = next_ok.is_null() ? in_tile : Binary(BinaryOp::kAnd, next_ok, in_tile);
        }
        Stmt both = Block({step, next_ok.is_null() ? single(oh + 1) : If(next_ok, single(oh + 1))});
        Expr pair_ok = Binary(BinaryOp::kAnd, Binary(BinaryOp::kGe, oh, Expr(oh_lo)), Binary(BinaryOp::kLt, oh + 1, Expr(oh_hi)));
        if (RT % 2 != 0) pair_ok = Binary(BinaryOp::kAnd, pair_ok, Binary(BinaryOp::kLt, j * R + 1, Expr(RT)));
        step = oh_hi > oh_lo + 1 ? If(pair_ok, row(oh, {0, KH}, 2), both) : both;
      }
      return For(j, 0, (RT + R - 1) / R, LoopKind::kSerial, step);
    };
    // The whole chunks, then the rest: 8 or 4 lanes of its own where it is that many (MnasNet's
    // 72 channels: no lanes computed twice; its 56x56 layers took 0.94-0.98 of the time), else a
    // 16-lane chunk overlapping the one before.
    Expr cq = k.NewVar("cq");
    std::vector<Stmt> parts{For(cq, 0, C / kLanes, LoopKind::kSerial, tile(cq * kLanes, kLanes))};
    const int64_t rest = C % kLanes, rest_lanes = rest == 8 || rest == 4 ? rest : kLanes;
    if (rest > 0) parts.push_back(tile(Expr(C - rest_lanes), rest_lanes));
    body = Block(parts);
  } else if (R == 1) {
    body = single(g_var);
  } else {
    // Groups whose R rows are all interior: [glo, ghi); the others row by row.
    const int64_t glo = (oh_lo + R - 1) / R, ghi = std::max(glo, oh_hi / R);
    Expr oh0 = g_var * R;
    std::vector<Stmt> each;
    for (int64_t dy = 0; dy < R; ++dy) {
      Stmt one = single(dy == 0 ? oh0 : oh0 + dy);
      if (dy > 0 && OH % R != 0) one = If(Binary(BinaryOp::kLt, oh0 + dy, Expr(OH)), one);
      each.push_back(one);
    }
    body = Block(each);
    if (ghi > glo)
      body = If(Binary(BinaryOp::kAnd, Binary(BinaryOp::kGe, g_var, Expr(glo)), Binary(BinaryOp::kLt, g_var, Expr(ghi))),
                row(oh0, {0, KH}, R), body);
  }
  const int64_t rows = c.B * NG;
  const bool par = rows > 1 && c.B * OH * OW * C >= ctx.options().min_parallel_elements;
  return For(r, 0, rows, par ? LoopKind::kParallel : LoopKind::kSerial, body);
}

}  // namespace

NhwcConv NhwcConvForm(const ConvGeom& c) {
  if (c.sp() != 2) return NhwcConv::kNone;
  bool pointwise = c.groups == 1;
  for (size_t d = 0; d < 2; ++d) pointwise = pointwise && c.k[d] == 1 && c.s[d] == 1 && c.pb[d] == 0 && c.out[d] == c.in[d];
  if (pointwise) return NhwcConv::kPointwise;
  if (c.Cg == 1 && c.Mg == 1 && FewBorders(c)) return NhwcConv::kDepthwise;
  return NhwcConv::kNone;
}

NhwcConv NhwcConvFormOf(const ir::Node& conv) {
  const ops::OpDef* def = ops::FindOp(conv);
  if (def == nullptr || def->library != ops::LibraryCall::kConv || conv.outputs().size() != 1 ||
      conv.inputs().size() < 2 || ops::IsOutputChannelsLast(conv)) {
    return NhwcConv::kNone;
  }
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
  // A ragged Co (MnasNet's 24, 40, 72, 80, 120, 240 channels) was packed at run time and padded
  // to whole panels (40 -> 64 columns); a narrow tail panel read in place is neither.
  if (form == NhwcConv::kPointwise) return GemmReadsRowPanelsAsB(options, co) ? nr : 0;
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
