// compiler/codegen/lower_conv.cc — convolutions over any number of spatial
// dims (N, C, spatial...; weights O, I/group, kernel...) with groups, strides,
// pads and dilations, and transposed convolutions.
//   * one input channel per group (depthwise, channel multiplier >= 1): a direct
//     kernel (lower_conv_direct.h), parallel over output rows (image, channel, every output spatial
//     dim but the last; in 2-D, blocks of a few rows sharing each input row's
//     vector loads); the window's leading dims are serial loops, skipped
//     as a whole outside the input; the interior columns of the last dim (no
//     padding reads) run as vector chunks (kLanes) accumulating all taps in
//     registers, the border columns as scalar code (unrolled column by column
//     over the taps known to be inside, or a guarded loop for wide borders);
//     2-D ones on small images (output width up to
//     LowerOptions::depthwise_plane_width) take the plane kernel instead
//     (lower_depthwise_plane.cc: padded, stride-phased planes, one per iteration
//     or a few small ones);
//     on a GPU (LowerOptions::gpu_direct_conv) a parallel iteration is a short
//     run of outputs in one row, flat over the output in its memory order
//     (channels innermost for a channels-last node); grouped convolutions on a
//     GPU take that form too, summing over the group's input channels, and so
//     do dense ones to few output channels (GpuDirectDenseConv);
//   * otherwise: implicit GEMM per (image, group): M = output channels of the
//     group, N = prod(output spatial), K = Cin/group * prod(kernel), with im2col
//     done while packing B (see lower_gemm.cc) from a zero-padded copy of the
//     group's input (or the input itself), so no column buffer is materialized
//     (unit-stride runs of whole vectors read in place instead: b_vector);
//     a large image (a network's stem) in bands of output rows, each band
//     copying only the image rows it reads (RowBands);
//     pointwise ones on few pixels with their weight packed for it run as the
//     transposed product instead (pixels as rows: PointwisePixelRows, lower_ops.h),
//     and so do dense and grouped ones of other kernels (ConvPixelRows; a grouped
//     one's groups the products of one batched GEMM, each group's output
//     channels its columns, so a 7x7 image's 49 pixels are no longer two padded
//     32-column panels in each of 32 groups, one fork-join per group).
//   * channels-last pointwise and depthwise 2-D convolutions (the twin of a
//     channels-last node over plain buffers): lower_conv_nhwc.h.
//   * ConvTranspose is the same implicit GEMM: a stride-1 convolution with the
//     flipped, transposed weights over the input scattered (stride apart) into
//     a zero image with (kernel-1)*dilation - pad border; on a GPU a direct
//     gather of each output's inputs (lower_conv_direct.h); lower_conv_transpose.cc.
// Bias (input 2) is added before the fused epilogue. DeformConv: lower_deform_conv.cc.
#include <algorithm>
#include <climits>
#include <cstring>

#include "compiler/codegen/lower_conv_direct.h"
#include "compiler/codegen/lower_conv_implicit.h"
#include "compiler/codegen/lower_conv_nhwc.h"
#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/channels_last.h"
#include "compiler/ops/registry.h"

namespace keel::codegen {
namespace {

// The length of one column phase of an image row of `width` columns split into `phases`.
int64_t ColumnPhase(int64_t width, int64_t phases) { return (width + phases - 1) / phases; }

// Bands of output rows (dim 0) for a convolution over the workspace image `P`:
// 1 unless the image and the output together exceed 4 x `budget` bytes; then
// the fewest bands, dividing the output rows evenly (every band the same
// product, its tables shared), of which one band's image rows and output fit
// in `budget`, each band whole GEMM panels (`panel` columns; a tail panel per
// band, packed by gathers and stored by the guarded edge path, cost squeezenet's
// 111x111 stem 35% in 37 bands) and at least 4 of them.
int64_t RowBands(const ConvGeom& c, const std::vector<int64_t>& P, int64_t budget, int64_t panel) {
  const int64_t min_columns = 4 * panel;
  if (budget <= 0 || c.sp() < 2) return 1;
  const int64_t out_row = 4 * c.Mg * NumElements(c.out) / c.out[0];  // bytes per output row
  const int64_t img_row = 4 * c.Cg * NumElements(P) / P[0];          // bytes per image row
  if (out_row * c.out[0] + img_row * P[0] <= 4 * budget) return 1;
  const int64_t halo = (c.k[0] - 1) * c.d[0] + 1 - c.s[0];  // image rows a band reads beyond its own
  for (int64_t nb = 2; nb <= c.out[0]; ++nb) {
    if (c.out[0] % nb != 0) continue;
    const int64_t r = c.out[0] / nb;
    const int64_t cols = r * (NumElements(c.out) / c.out[0]);
    if (cols < min_columns) break;
    if (cols % panel != 0) continue;
    if (r * (out_row + c.s[0] * img_row) + halo * img_row <= budget) return nb;
  }
  return 1;
}


// The pixels-as-rows GEMMs' epilogue: row m is output pixel m of image bi,
// column n output channel n; adds the bias (when given) before `store`.
// With `ch0` (a grouped convolution's group), column n is output channel ch0 + n.
std::function<Stmt(Expr, Expr, Expr)> PixelRowsStore(const StoreFn& store, const TensorFn* bias, Expr bi,
                                                     std::vector<int64_t> out, Expr ch0 = Expr()) {
  TensorFn bfn = bias ? *bias : TensorFn{};
  return [store, bfn, bi, out, ch0](Expr m, Expr n, Expr acc) {
    Expr co = ch0.is_null() ? n : ch0 + n;
    Expr v = bfn.at ? acc + Cast(bfn.at({co}), DType::kF32) : acc;
    std::vector<Expr> idx{bi, co};
    for (const Expr& e : Delinearize(out, m)) idx.push_back(e);
    return store(idx, v);
  };
}

// The transposed pointwise product (PointwisePixelRows, lower_ops.h): per image,
// rows = pixels, columns = output channels, K = input channels. A(p, ci) is read
// inside the micro-kernel (a row tile's broadcasts are adjacent pixels of one
// channel row), B is the weight in row panels of NR rows, read in place as W^T's
// column panels; the stores go to channel co at pixel p (NR channels a vector,
// N pixels apart).
Result<Stmt> PixelRowsConv(LowerContext& ctx, const ConvGeom& c, const TensorFn& X, const TensorFn& Wt,
                           const TensorFn* bias, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  const int64_t N = NumElements(c.out);
  if (Wt.buffer < 0 || Wt.type.dtype != DType::kF32)
    return InvalidArgument("pointwise pixel rows: the weight must be an f32 buffer in column panels");
  Expr bi = c.B > 1 ? k.NewVar("img") : Expr(0);
  KernelFunc* kp = &k;
  GemmOperands g;
  g.m = N; g.n = c.Co; g.k = c.C;
  const std::vector<int64_t> out = c.out;
  if (X.buffer >= 0) {
    int xview = k.AddArgView(k.buffer(X.buffer).arg_index, "x_pixels", {c.B, c.C, N});
    g.a = [kp, xview, bi](Expr m, Expr ci) { return kp->Load(xview, {bi, ci, m}); };
    // Row tiles of balanced sizes up to gemm_mr_max (as the implicit form's): a 7x7 image's 49
    // pixels are 13, 13, 13 and 10 rows instead of 12-row tiles and a 1-row one, whose two
    // accumulator chains wait on the FMA latency (ResNet-50's 2048 -> 512 at 7x7: 0.74-0.86 of
    // the time; docs/MEASUREMENTS.md, cpu28).
    const int64_t most = std::max<int64_t>(1, ctx.options().gemm_mr_max), tiles = (N + most - 1) / most;
    g.row_tile = (N + tiles - 1) / tiles;
    g.a_tile = [kp, xview, bi](Expr m0, int64_t i, Expr ci) { return kp->Load(xview, {bi, ci, m0 + i}); };
  } else {
    IndexFn x_at = X.at;
    g.a = [x_at, bi, out](Expr m, Expr ci) {
      std::vector<Expr> idx{bi, ci};
      for (const Expr& e : Delinearize(out, m)) idx.push_back(e);
      return x_at(idx);
    };
  }
  g.b_packed = k.AddArgView(k.buffer(Wt.buffer).arg_index, "w_columns", {c.Co * c.C});
  g.b_packed_narrow_tail = true;  // the last Co % NR rows are a panel of their own
  g.a_k_apart = true;
  g.store = PixelRowsStore(store, bias, bi, out);
  KEEL_ASSIGN_OR_RETURN(Stmt body, BuildBlockedGemm(ctx, g, "conv_px"));
  return c.B > 1 ? For(bi, 0, c.B, LoopKind::kSerial, body) : body;
}

// The row tile of the transposed implicit GEMM over output rows of `ow` pixels: whole output
// rows (the most that fit LowerOptions::gemm_mr_max rows; in 3-D and beyond, a divisor of
// the `oh` rows of a plane, so that no tile crosses planes), else the largest divisor of `ow`
// between half the GEMM's row tile and that maximum; 0 if none. A tile's rows are then
// constant offsets from the window origin of its first pixel.
int64_t PixelRowTile(const LowerOptions& o, int64_t ow, int64_t oh, bool planes) {
  const int64_t most = std::max<int64_t>(1, o.gemm_mr_max), mr = std::max<int64_t>(1, o.gemm_mr);
  if (ow <= most) {
    int64_t r = most / ow;
    while (planes && oh % r != 0) --r;
    return r * ow;
  }
  for (int64_t t = most; 2 * t >= mr; --t)
    if (ow % t == 0) return t;
  return 0;
}

// The transposed implicit GEMM of a convolution on few pixels (ConvPixelRows,
// lower_ops.h): per image, rows = output pixels, columns = output channels, K = C * taps;
// a grouped one's groups are the products of one batched GEMM (columns = the group's Mg output
// channels, K = Cg * taps, A read from the group's channels of an image `ic.fill` fills whole),
// its weight's groups packed one after the other, each Mg rows in panels of NR and a narrow last
// one of Mg % NR rows.
// A(p, kk) is read inside the micro-kernel from the (zero-padded copy of the) image at
// origin[p] + row_off[kk], two baked tables (the window origin of pixel p, the channel and
// tap of row kk), so there is no im2col pass and no guard: the row tile's broadcasts are
// the tile's pixels at one (channel, tap), constant offsets from one address (the tile is
// whole output rows or a part of one: PixelRowTile; 14 x 32 on AVX-512 at 7x7 and 14x14). B is the weight [Co, C * taps] packed in row
// panels of NR rows, read in place as W^T's column panels (whole panels: NR divides Co),
// so the weights stream once per row block instead of a 7x7 image's 49 pixels padding two
// 32-column panels to 64. The stores go to channel co at pixel p (NR channels a vector, N
// pixels apart), as in PixelRowsConv.
Result<Stmt> PixelRowsImplicitConv(LowerContext& ctx, const ImageConv& ic, const TensorFn& X, const TensorFn& Wt,
                                   const TensorFn* bias, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  const ConvGeom& c = ic.c;
  const size_t sp = c.sp();
  const int64_t N = NumElements(c.out), KK = NumElements(c.k), Kdim = c.Cg * KK, img = NumElements(ic.P);
  const bool grouped = c.groups > 1;
  if (Wt.buffer < 0 || Wt.type.dtype != DType::kF32 || (grouped && !GemmReadsRowPanelsAsB(ctx.options(), c.Mg)))
    return InvalidArgument("convolution pixel rows: the weight must be an f32 buffer in column panels");
  std::vector<int64_t> st(sp, 1);  // image strides
  for (size_t d = sp - 1; d-- > 0;) st[d] = st[d + 1] * ic.P[d + 1];
  const bool direct = ic.direct && X.buffer >= 0;
  std::vector<uint8_t> origin(static_cast<size_t>(N) * 4);
  auto put32 = [](std::vector<uint8_t>& v, int64_t i, int64_t x) {
    int32_t x32 = static_cast<int32_t>(x);
    std::memcpy(&v[static_cast<size_t>(i) * 4], &x32, 4);
  };
  for (int64_t n = 0; n < N; ++n) {
    int64_t off = 0, r = n;
    for (size_t d = sp; d-- > 0;) { off += (r % c.out[d]) * c.s[d] * st[d]; r /= c.out[d]; }
    put32(origin, n, off);
  }
  std::vector<uint8_t> rows(static_cast<size_t>(Kdim) * 4);
  for (int64_t kk = 0; kk < Kdim; ++kk) {
    int64_t off = (kk / KK) * img, r = kk % KK;
    for (size_t d = sp; d-- > 0;) { off += (r % c.k[d]) * c.d[d] * st[d]; r /= c.k[d]; }
    put32(rows, kk, off);
  }
  Expr bi = c.B > 1 ? k.NewVar("img") : Expr(0);
  Expr gi = grouped ? k.NewVar("grp") : Expr(0);
  int src = -1;
  Stmt fill;
  if (direct) {
    src = k.AddArgView(k.buffer(X.buffer).arg_index, "x_flat", {c.B * c.C * img});
  } else {
    src = k.AddWorkspace("conv_xpad", DType::kF32, {c.C * img});
    fill = ic.fill(src, 0, bi, Expr(0), ic.P, Expr(0), 1);
  }
  KernelFunc* kp = &k;
  const int ob = k.AddConstant("conv_px_origin", DType::kI32, {N}, std::move(origin));
  Expr image = direct ? bi * (c.C * img) : Expr(0);
  if (grouped) image = image + gi * (c.Cg * img);
  GemmOperands g;
  g.m = N; g.n = c.Mg; g.k = Kdim;
  const int rb = k.AddConstant("conv_px_row_off", DType::kI32, {Kdim}, std::move(rows));
  // A tile is whole output rows or a part of one (PixelRowTile): its row i is the window origin
  // of its first pixel plus i / OW image rows and i % OW strides.
  const int64_t OW = c.out[sp - 1], sw = c.s[sp - 1], row_step = sp > 1 ? c.s[sp - 2] * st[sp - 2] : 0;
  g.row_tile = PixelRowTile(ctx.options(), OW, sp > 1 ? c.out[sp - 2] : 1, sp > 2);
  if (g.row_tile <= 0) return InvalidArgument("convolution pixel rows: no row tile for output rows of " + std::to_string(OW));
  g.a_tile = [kp, src, ob, rb, image, sw, OW, row_step](Expr m0, int64_t i, Expr kk) {
    return kp->Load(src, {image + Cast(kp->Load(ob, {m0}), DType::kI64) + Cast(kp->Load(rb, {kk}), DType::kI64) +
                              Expr((i % OW) * sw + (i / OW) * row_step)});
  };
  g.b_packed = k.AddArgView(k.buffer(Wt.buffer).arg_index, "w_columns", {c.Co * Kdim});
  // A tap's pixels are rows apart, the next channel's an image: K blocks sized for L1
  // (GemmOperands::a_k_apart). Not for a group, whose K (Cg x taps, 144 and 288 in ResNeXt-50's
  // 14x14 and 7x7 layers) and B (Mg columns) are small: one block of up to 320 rows, no partial
  // sums (32 groups of 8 to 64 columns: 0.91-0.99 of the time at 1 and 2 threads, cpu48).
  g.a_k_apart = !grouped;
  g.store = PixelRowsStore(store, bias, bi, c.out, grouped ? gi * c.Mg : Expr());
  if (grouped) {
    g.batch = c.groups;
    g.batch_var = gi;
    g.b_packed_stride = c.Mg * Kdim;
    g.b_packed_narrow_tail = c.Mg % GemmPanelWidth(ctx.options()) != 0;
  }
  KEEL_ASSIGN_OR_RETURN(Stmt body, BuildBlockedGemm(ctx, g, "conv_pxk"));
  if (fill) body = Block({fill, body});
  return c.B > 1 ? For(bi, 0, c.B, LoopKind::kSerial, body) : body;
}

// X, W and the optional bias of a convolution node, checked: one rank >= 3
// for input, weight and output; f32 data, or f16/bf16 read widened to f32
// (the kernels accumulate in f32; f64 would lose precision).
// Whether a convolution (input, weight shapes; strides, pads) is a strided unpadded 1x1 one
// that runs as the stride-1 one over a compact image (LowerOptions::conv_subsample_bytes).
bool CompactsStridedPointwise(const LowerOptions& o, const std::vector<int64_t>& xs, const std::vector<int64_t>& ws,
                              const std::vector<int64_t>& strides, const std::vector<int64_t>& pads) {
  if (o.conv_subsample_bytes <= 0 || xs.size() < 3 || ws.size() != xs.size()) return false;
  if (NumElements(std::vector<int64_t>(ws.begin() + 2, ws.end())) != 1) return false;
  for (int64_t p : pads) if (p != 0) return false;
  bool strided = false;
  for (int64_t s : strides) strided = strided || s > 1;
  return strided && NumElements(std::vector<int64_t>(xs.begin() + 1, xs.end())) * 4 >= o.conv_subsample_bytes;
}

// A one-group channels-first CPU Conv over f32 weights whose shapes are known,
// the kind both pixels-as-rows forms take (with `grouped`, one of more groups): its shapes and
// window; false for any other node.
struct PlainConv {
  std::vector<int64_t> xs, ws, ys, pads;
  ConvGeom c;
};
bool ReadPlainConv(const LowerOptions& o, const ir::Node& conv, PlainConv* p, bool grouped = false) {
  const ops::OpDef* def = ops::FindOp(conv);
  if (def == nullptr || def->library != ops::LibraryCall::kConv || o.gpu_direct_conv || conv.inputs().size() < 2)
    return false;
  if (conv.outputs().size() != 1 || !conv.input(0) || !conv.input(1)) return false;
  if (!conv.input(0)->has_type() || !conv.input(1)->has_type() || !conv.output(0)->has_type()) return false;
  p->xs = conv.input(0)->type().shape;
  p->ws = conv.input(1)->type().shape;
  p->ys = conv.output(0)->type().shape;
  const size_t rank = p->xs.size();
  // Any other form's weight (Winograd's U, channels-last) has another rank or layout; the
  // output-only channels-last form keeps the weight and moves the output alone.
  if (rank < 3 || p->ws.size() != rank || p->ys.size() != rank) return false;
  if (ops::IsChannelsLast(conv) && !ops::IsOutputChannelsLast(conv)) return false;
  if (ops::IsOutputChannelsLast(conv)) p->ys = ops::PermuteShape(p->ys, ops::ToChannelsFirstPerm(rank));
  if (conv.input(1)->type().dtype != DType::kF32 || p->ys[1] != p->ws[0]) return false;
  if (!ReadWindow(conv, rank - 2, p->c, p->pads).ok()) return false;
  if (!grouped) return p->c.groups == 1 && p->ws[1] == p->xs[1];
  return p->c.groups > 1 && p->ws[1] * p->c.groups == p->xs[1] && p->ws[0] % p->c.groups == 0;
}

// ConvPixelRows for a grouped convolution of more than one input channel per group
// (LowerOptions::grouped_conv_pixel_rows): NR where it takes the form, else 0. Each group's Mg
// output channels are the columns of its product, in whole panels or a narrow last one; unlike
// the dense form it packs no padded columns per group (a 7x7 image's 49 pixels took two 32-column
// panels in each of 32 groups, a 14x14 one's 196 seven).
int64_t GroupedConvPixelRows(const LowerOptions& o, const ir::Node& conv) {
  PlainConv pc;
  if (o.grouped_conv_pixel_rows <= 0 || !ReadPlainConv(o, conv, &pc, true) || pc.ws[1] < 2) return 0;
  const std::vector<int64_t>&xs = pc.xs, &ws = pc.ws, &ys = pc.ys;
  const size_t rank = xs.size();
  int64_t pixels = 1, img = xs[1];
  for (size_t d = 2; d < rank; ++d) {
    pixels *= ys[d];
    img *= std::max(xs[d] + pc.c.pb[d - 2], (ys[d] - 1) * pc.c.s[d - 2] + (ws[d] - 1) * pc.c.d[d - 2] + 1);  // LowerConv's ic.P
  }
  const int64_t group_columns = ws[0] / pc.c.groups;
  const int64_t most = group_columns < 16 ? std::min(o.grouped_conv_pixel_rows, o.grouped_conv_pixel_rows_few_channels)
                                          : o.grouped_conv_pixel_rows;
  if (pixels > most || img > INT32_MAX || !GemmReadsRowPanelsAsB(o, group_columns)) return 0;
  return PixelRowTile(o, ys.back(), rank > 3 ? ys[rank - 2] : 1, rank > 4) > 0 ? GemmPanelWidth(o) : 0;
}

}  // namespace

Result<Stmt> ImplicitGemmConv(LowerContext& ctx, const ImageConv& ic, const TensorFn& X, const TensorFn* bias,
                              const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  ConvGeom c = ic.c;
  const size_t sp = c.sp(), last = sp - 1;
  bool pointwise = ic.direct && NumElements(c.k) == 1;
  for (size_t d = 0; d < sp; ++d) pointwise = pointwise && c.s[d] == 1 && c.out[d] == ic.P[d];
  // Bands (RowBands) where the image goes through a workspace: each one the product of
  // out[0] / bands output rows over the image rows they read.
  std::vector<int64_t> image = ic.P;
  // (A band has at least 4 panels, so with a last-dim stride up to 4 it packs runs from the
  // workspace, never straight from X; beyond that only a padded image goes through one.)
  const bool workspace = !(pointwise && X.buffer >= 0) && !(ic.direct && X.buffer >= 0 && c.s[last] > 4);
  const int64_t bands =
      ic.bands && workspace ? RowBands(c, ic.P, ctx.options().conv_row_band_bytes, GemmPanelWidth(ctx.options())) : 1;
  Expr band = bands > 1 ? k.NewVar("band") : Expr(0);
  if (bands > 1) {
    c.out[0] /= bands;
    image[0] = (c.out[0] - 1) * c.s[0] + (c.k[0] - 1) * c.d[0] + 1;
  }
  const int64_t band_rows = c.out[0];
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
  if (pointwise && X.buffer >= 0) {
    const int64_t S = NumElements(ic.P);
    int xview = k.AddArgView(k.buffer(X.buffer).arg_index, "x_cols", {c.B, c.C, S});
    g.b = [kp, xview, bi, gi, c](Expr kk, Expr n) { return kp->Load(xview, {bi, gi * c.Cg + kk, n}); };
    g.b_in_place = true;
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
    // Column phases: with a last-dim stride of 2..4 and the image copied anyway, each image row is
    // stored as sw phases (column x at (x % sw) * Wq + x / sw), so that a run of output columns
    // reads its tap's columns as consecutive elements of one phase: the packing's runs become
    // plain vector loads instead of masked loads and a shuffle per 16 lanes (a 224x224 stem's
    // 7x7 stride-2 runs; LowerOptions::conv_column_phases). The tables below stay sums of a per-pixel
    // and a per-row part, since (ow * sw + t) % sw = t % sw and (ow * sw + t) / sw = ow + t / sw.
    const int64_t phases = runs && !direct && ic.phased && sw > 1 ? sw : 1;
    std::vector<int64_t> P = image;
    const int64_t Wq = ColumnPhase(P[last], phases);
    P[last] = phases * Wq;
    auto column = [phases, Wq](int64_t x) { return (x % phases) * Wq + x / phases; };
    const int64_t img = NumElements(P);
    std::vector<int64_t> st(sp, 1);  // image strides
    for (size_t d = last; d-- > 0;) st[d] = st[d + 1] * P[d + 1];
    int src = -1;
    if (direct) {
      src = k.AddArgView(k.buffer(X.buffer).arg_index, "x_flat", {c.B * c.C * img});
    } else {
      src = k.AddWorkspace("conv_xpad", DType::kF32, {lead + c.Cg * img + slack});
      pad_copy = ic.fill(src, lead, bi, gi, image, band * (band_rows * c.s[0]), phases);
    }
    auto put32 = [](std::vector<uint8_t>& v, int64_t i, int64_t x) {
      int32_t x32 = static_cast<int32_t>(x);
      std::memcpy(&v[static_cast<size_t>(i) * 4], &x32, 4);
    };
    auto origin = [&](int64_t n) {
      int64_t off = lead;
      for (size_t d = sp; d-- > 0;) {
        off += d == last ? column((n % c.out[d]) * c.s[d]) : (n % c.out[d]) * c.s[d] * st[d];
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
        o += d == last ? column((rem % c.k[d]) * c.d[d]) : (rem % c.k[d]) * c.d[d] * st[d];
        rem /= c.k[d];
      }
      return o;
    };
    const bool table = row_offset(Kdim - 1) <= INT32_MAX;
    if (!table && phases > 1) return InvalidArgument("convolution: column phases need the row-offset table");
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
      // base[p][s]: lane j of run s reads base + j * step; end[p][s]: first lane after run s.
      const int64_t step = phases > 1 ? 1 : sw;
      std::vector<uint8_t> base(static_cast<size_t>(Nfull * S) * 4), end(static_cast<size_t>(Nfull * S) * 4);
      for (int64_t p = 0; p < Nfull; ++p) {
        int64_t s = 0, j = 0;
        while (j < NR) {
          const int64_t n = p * NR + j;
          const int64_t len = std::min(NR - j, OW - n % OW);
          put32(base, p * S + s, origin(n) - j * step);
          put32(end, p * S + s, j + len);
          j += len;
          ++s;
        }
        for (; s < S; ++s) { put32(base, p * S + s, origin(p * NR)); put32(end, p * S + s, NR); }
      }
      // Unit-stride runs in output rows of whole vectors (NR / 2 columns): the GEMM may read full panels
      // in place, vector h of panel p from its first column's window origin (conv_runs_in_place).
      if (ctx.options().conv_runs_in_place && step == 1 && NR % 2 == 0 && OW % (NR / 2) == 0)
        g.b_vector = [kp, src, coff, ob, NR](Expr kk, Expr p, int64_t h, Expr j) {
          return kp->Load(src, {coff(kk) + Cast(kp->Load(ob, {p * NR + h * (NR / 2)}), DType::kI64) + j});
        };
      int bb = k.AddConstant("conv_run_base", DType::kI32, {Nfull, S}, std::move(base));
      int eb = k.AddConstant("conv_run_end", DType::kI32, {Nfull, S}, std::move(end));
      g.b_fast = [kp, src, coff, bb, eb, S, step](Expr kk, Expr p, Expr j) {
        Expr v;
        for (int64_t s = S; s-- > 0;) {
          Expr x = kp->Load(src, {coff(kk) + Cast(kp->Load(bb, {p, Expr(s)}), DType::kI64) + j * step});
          v = v.is_null() ? x : Select(j < Cast(kp->Load(eb, {p, Expr(s)}), DType::kI64), x, v);
        }
        return v;
      };
    }
  }
  TensorFn bfn = bias ? *bias : TensorFn{};
  // A band's column n is column n + band * N of the whole output (its rows follow the bands').
  const std::vector<int64_t> out = ic.c.out;
  g.c_rows = true;  // the output's pixels, in order
  g.store = [store, bfn, bi, gi, c, out, band, bands, N](Expr m, Expr n, Expr acc) {
    Expr co = gi * c.Mg + m;
    Expr v = bfn.at ? acc + Cast(bfn.at({co}), DType::kF32) : acc;
    std::vector<Expr> idx{bi, co};
    for (const Expr& e : Delinearize(out, bands > 1 ? n + band * N : n)) idx.push_back(e);
    return store(idx, v);
  };
  KEEL_ASSIGN_OR_RETURN(Stmt body, BuildBlockedGemm(ctx, g, "conv"));
  if (pad_copy) body = Block({pad_copy, body});
  if (bands > 1) body = For(band, 0, bands, LoopKind::kSerial, body);
  if (c.groups > 1) body = For(gi, 0, c.groups, LoopKind::kSerial, body);
  if (c.B > 1) body = For(bi, 0, c.B, LoopKind::kSerial, body);
  return body;
}

Result<ConvOperands> ReadConvOperands(LowerContext& ctx, const ir::Node& node, const char* op) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* x, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* w, ctx.Input(node, 1));
  ConvOperands in;
  in.x = *x;
  in.w = *w;
  if (node.input(2)) {
    KEEL_ASSIGN_OR_RETURN(in.bias, ctx.Input(node, 2));
  }
  const size_t rank = in.x.type.shape.size();
  if (rank < 3 || in.w.type.shape.size() != rank || node.output(0)->type().shape.size() != rank)
    return InvalidArgument(NodeLabel(node) + ": convolution needs input, weight and output of one rank >= 3");
  auto widened = [](DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; };
  if (!widened(in.x.type.dtype) || !widened(in.w.type.dtype))
    return Unsupported(NodeLabel(node) + ": " + op + " on " + ir::DTypeName(in.x.type.dtype));
  KEEL_RETURN_IF_ERROR(ReadWindow(node, rank - 2, in.window, in.pads));
  return in;
}


int64_t PointwisePixelRows(const LowerOptions& o, const ir::Node& conv) {
  PlainConv pc;
  if (o.pointwise_pixel_rows <= 0 || !ReadPlainConv(o, conv, &pc)) return 0;
  const std::vector<int64_t>&xs = pc.xs, &ws = pc.ws, &ys = pc.ys;
  const ConvGeom& c = pc.c;
  int64_t pixels = 1;
  for (size_t d = 2; d < xs.size(); ++d) {
    if (ws[d] != 1 || c.s[d - 2] != 1 || ys[d] != xs[d]) return 0;
    pixels *= ys[d];
  }
  for (int64_t p : pc.pads) if (p != 0) return 0;
  const int64_t nr = GemmPanelWidth(o), K = ws[1];
  // Output channels past whole panels: a narrow last panel where the target takes it
  // (LowerOptions::pointwise_pixel_rows_tail; SqueezeNet's 384 -> 48 squeezes at 13x13).
  const int64_t tail = ws[0] % nr, min_tail = o.pointwise_pixel_rows_tail;
  const bool columns_ok = tail == 0 || (min_tail > 0 && tail % min_tail == 0 && GemmReadsRowPanelsAsB(o, ws[0]));
  if (!columns_ok) return 0;
  if (pixels > o.pointwise_pixel_rows) {
    // A larger image with one whole panel of output channels and K >= 4 NR: X read in place
    // once either way, the plain form's packed panels reused by few row tiles, and the
    // transposed form's scattered stores at most a quarter of its FMAs' time (K = 32 and 64 at
    // 28x28 took 2.2x and 1.6x the time so; LowerOptions::pointwise_pixel_rows_one_panel).
    return pixels <= o.pointwise_pixel_rows_one_panel && ws[0] == nr && K >= 4 * nr ? nr : 0;
  }
  // Work per output, relative to the N x K FMAs: the plain form computes whole column panels
  // (7x7: 64 columns for 49) and packs X at run time (~0.1); the transposed form scatters
  // every output alone, NR channels N pixels apart (~NR / K), and reads X again for every NR
  // output channels, which beyond a 7x7 image only a projection (Co <= K) repays. Measured
  // (one thread, B/A of the layer): 7x7 with K 160..2048 0.78-0.98; 14x14 projections
  // (192 -> 64 ... 1024 -> 256) 0.80-0.97, expansions 1.03 (256 -> 1024) to 1.14 (80 -> 480).
  if (pixels > 64 && ws[0] > K) return 0;
  const double plain = static_cast<double>(GemmPanels(o, pixels) * nr) / static_cast<double>(pixels) + 0.1;
  return 1.0 + static_cast<double>(nr) / static_cast<double>(K) < plain ? nr : 0;
}

namespace {
// Whether more than half of `planes` channel planes, `plane_bytes` apart, fall into one set of
// an L1 cache indexed by address bits 6-11 (64-byte lines, 4 KiB a way): the transposed GEMM's
// stores of one row tile then evict one another.
bool PlanesCrowdOneCacheSet(int64_t plane_bytes, int64_t planes) {
  std::vector<int64_t> per_set(64, 0);
  for (int64_t c = 0; c < planes; ++c) {
    if (2 * ++per_set[static_cast<size_t>((c * plane_bytes % 4096) / 64)] > planes) return true;
  }
  return false;
}
}  // namespace

int64_t ConvPixelRows(const LowerOptions& o, const ir::Node& conv, bool nhwc_output) {
  nhwc_output = nhwc_output || ops::IsOutputChannelsLast(conv);
  if (!nhwc_output) {
    if (int64_t nr = PointwisePixelRows(o, conv)) return nr;
    if (int64_t nr = GroupedConvPixelRows(o, conv)) return nr;
  }
  PlainConv pc;
  if (o.conv_pixel_rows <= 0 || !ReadPlainConv(o, conv, &pc)) return 0;
  const std::vector<int64_t>&xs = pc.xs, &ws = pc.ws, &ys = pc.ys;
  const ConvGeom& c = pc.c;
  const size_t rank = xs.size();
  int64_t pixels = 1, img = xs[1];
  bool pointwise = true;  // 1x1, strides 1, no pads: PointwisePixelRows's to take or leave
  for (size_t d = 2; d < rank; ++d) {
    pixels *= ys[d];
    img *= std::max(xs[d] + c.pb[d - 2], (ys[d] - 1) * c.s[d - 2] + (ws[d] - 1) * c.d[d - 2] + 1);  // LowerConv's ic.P
    pointwise = pointwise && ws[d] == 1 && c.s[d - 2] == 1 && ys[d] == xs[d];
  }
  for (int64_t p : pc.pads) pointwise = pointwise && p == 0;
  // Measured against the implicit GEMM (one thread and two, docs/MEASUREMENTS.md, "Dense
  // convolutions with pixels as rows"): 0.57-0.93 for every such layer of ResNet-18 (3x3 stride
  // 2 from 56x56 to 7x7, 1x1 stride 2, 3x3 at 7x7) and for 3x3 layers at 13x13 and 14x14; a
  // 224x224 stem 0.95-1.05 (not worth the scattered stores of 12,544 pixels: the pixel bound).
  // Stored channels-last, a pixel's NR output channels are one vector store: no pixel bound.
  const int64_t nr = GemmPanelWidth(o);
  if (pointwise || ws[0] % nr != 0 || img > INT32_MAX) return 0;
  if (!nhwc_output && pixels > o.conv_pixel_rows) {
    // Beyond the pixel bound, one panel of output channels over a deep enough K
    // (LowerOptions::conv_pixel_rows_one_panel): the plain form packs every pixel's K values for
    // Co / MR = 4 row tiles only, which costs more than the transposed form's scattered stores,
    // unless the NR planes those stores write crowd one L1 set (a 128x128 image's 64 KB planes:
    // 5-9x the time).
    int64_t K = ws[1];
    for (size_t d = 2; d < rank; ++d) K *= ws[d];
    if (!o.conv_pixel_rows_one_panel || ws[0] != nr || K < 4 * nr || PlanesCrowdOneCacheSet(4 * pixels, nr)) return 0;
  }
  // A strided unpadded 1x1 one that runs as the stride-1 one over a compact image (LowerConv):
  // above the pointwise bound, the implicit GEMM's form of that (ResNet-50's 256 -> 512 from
  // 56x56 to 28x28: 0.70 against 1.03 ms at 2 threads).
  if (CompactsStridedPointwise(o, xs, ws, c.s, pc.pads) && pixels > o.pointwise_pixel_rows) return 0;
  return PixelRowTile(o, ys.back(), rank > 3 ? ys[rank - 2] : 1, rank > 4) > 0 ? nr : 0;
}

Result<Stmt> LowerConv(LowerContext& ctx, const ir::Node& node, int64_t packed_rows, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(ConvOperands in, ReadConvOperands(ctx, node, "Conv"));
  TensorFn X = in.x, Wt = in.w;
  const TensorFn* bias = in.bias;
  const std::vector<int64_t>& xs = X.type.shape;
  const std::vector<int64_t>& ws = Wt.type.shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const size_t sp = xs.size() - 2;
  ConvGeom c = in.window;
  const std::vector<int64_t>& pads = in.pads;
  c.B = xs[0]; c.C = xs[1]; c.Co = ws[0];
  c.Cg = c.C / c.groups; c.Mg = c.Co / c.groups;
  c.in.assign(xs.begin() + 2, xs.end());
  c.out.assign(os.begin() + 2, os.end());
  c.k.assign(ws.begin() + 2, ws.end());
  if (c.C % c.groups != 0 || c.Co % c.groups != 0 || ws[1] != c.Cg || os[1] != c.Co)
    return InvalidArgument(NodeLabel(node) + ": inconsistent channels/groups");

  // The twin of a channels-last pointwise or depthwise convolution over f32 buffers: its NHWC kernel.
  if (ctx.channels_last_output() && !ctx.options().gpu_direct_conv && X.channels_last_buffer >= 0 &&
      X.type.dtype == DType::kF32 && Wt.type.dtype == DType::kF32 && NhwcConvForm(c) != NhwcConv::kNone)
    return LowerConvNhwc(ctx, c, X, Wt, bias, packed_rows, store);
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
  if (ctx.options().gpu_direct_conv && (c.groups > 1 || GpuDirectDenseConv(c.groups, c.Co))) {
    if (packed_rows > 0) return InvalidArgument(NodeLabel(node) + ": a GPU direct convolution's weight cannot be panel-packed");
    if (c.groups == 1 && ctx.channels_last_output()) return GpuPixelConv(ctx, c, X, Wt, bias, store);
    return GpuDirectConv(ctx, c, X, Wt, bias, store);
  }

  if (packed_rows > 0 && packed_rows == PointwisePixelRows(ctx.options(), node))
    return PixelRowsConv(ctx, c, X, Wt, bias, store);
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
  // A dense convolution on few pixels with its weight packed for it: pixels as rows; so is the
  // twin of one in the output-only channels-last form (ops/channels_last.h: the output stored
  // NHWC, X a plain NCHW buffer, where a moved X is read through its permutation instead).
  const bool nhwc_output = ctx.channels_last_output() && X.buffer >= 0;
  const bool pixel_rows = packed_rows > 0 && packed_rows == ConvPixelRows(ctx.options(), node, nhwc_output);
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
  // Rows of the image (channel, leading coords): copied with zero borders, or zero outside the input;
  // in column phases, each phase's columns inside the input (for every phase) as one vector loop
  // of `phases` interleaved reads, the few border columns guarded.
  ic.bands = true;
  ic.phased = ctx.options().conv_column_phases;
  // The grouped pixels-as-rows form fills the whole image at once (every group's channels), before
  // its batched GEMM: the fills' geometry as one group.
  ConvGeom fc = c;
  if (pixel_rows && c.groups > 1) fc.Cg = c.C;
  ic.fill = [kp, &ctx, c = fc, X](int src, int64_t lead, Expr bi, Expr gi, const std::vector<int64_t>& P,
                             Expr row_off, int64_t phases) -> Stmt {
    KernelFunc& k = *kp;
    const size_t sp = c.sp(), last = sp - 1;
    const int64_t W = c.in[last], pl = c.pb[last], Wq = ColumnPhase(P[last], phases), Wp = phases * Wq;
    std::vector<int64_t> row_dims{c.Cg};
    row_dims.insert(row_dims.end(), P.begin(), P.end() - 1);
    const int64_t rows = NumElements(row_dims);
    Expr r = k.NewVar("r"), w = k.NewVar("w"), w2 = k.NewVar("w"), w3 = k.NewVar("w"), w4 = k.NewVar("w");
    const std::vector<Expr> rix = Delinearize(row_dims, r);
    std::vector<Expr> xi{bi, gi * c.Cg + rix[0]};
    Expr ok;
    for (size_t d = 0; d < last; ++d) {
      Expr h = rix[1 + d] - c.pb[d];
      if (d == 0) h = h + row_off;
      xi.push_back(h);
      ok = And(ok, (h >= 0) && (h < c.in[d]));
    }
    Expr row0 = r * Wp + lead;
    auto x_at = [&](Expr col) {
      std::vector<Expr> at = xi;
      at.push_back(col);
      return Cast(X.at(at), DType::kF32);
    };
    Stmt copy;
    if (phases == 1) {
      copy = Block({
          For(w, 0, pl, LoopKind::kSerial, k.Store(src, {row0 + w}, FloatConst(0))),
          For(w2, 0, W, LoopKind::kVectorize, k.Store(src, {row0 + pl + w2}, x_at(w2))),
          For(w3, pl + W, Wp, LoopKind::kSerial, k.Store(src, {row0 + w3}, FloatConst(0))),
      });
    } else {
      // Phase f's element q is column q * phases + f - pl of the input row.
      auto put = [&](Expr q, bool guarded) {
        std::vector<Stmt> stores;
        for (int64_t f = 0; f < phases; ++f) {
          Expr x = q * phases + (f - pl), at = row0 + f * Wq + q;
          Stmt st = k.Store(src, {at}, x_at(x));
          stores.push_back(guarded ? If((x >= 0) && (x < W), st, k.Store(src, {at}, FloatConst(0))) : st);
        }
        return Block(std::move(stores));
      };
      const int64_t q_lo = std::min(Wq, (pl + phases - 1) / phases);
      const int64_t q_hi = std::clamp<int64_t>(W + pl >= phases ? (W + pl - phases) / phases + 1 : 0, q_lo, Wq);
      copy = Block({For(w, 0, q_lo, LoopKind::kSerial, put(w, true)), For(w2, q_lo, q_hi, LoopKind::kVectorize, put(w2, false)),
                    For(w3, q_hi, Wq, LoopKind::kSerial, put(w3, true))});
    }
    Stmt zero = For(w4, 0, Wp, LoopKind::kVectorize, k.Store(src, {row0 + w4}, FloatConst(0)));
    bool par = rows > 1 && rows * Wp >= ctx.options().min_parallel_elements;
    return For(r, 0, rows, par ? LoopKind::kParallel : LoopKind::kSerial, ok.is_null() ? copy : If(ok, copy, zero));
  };
  if (ic.direct && CompactsStridedPointwise(ctx.options(), xs, ws, c.s, pads)) {
    // A strided 1x1 convolution without padding (ResNet's downsampling) as the stride-1 one over
    // a compact copy of the pixels it reads. In place, the pixel-rows tiles' broadcasts span
    // `stride` times the cache lines they use and the implicit GEMM copies the whole image
    // before packing its runs; the copy of the used pixels alone costs less than either
    // (docs/MEASUREMENTS.md, "Strided 1x1 convolutions over a compact image").
    const std::vector<int64_t> s = c.s;
    ic.c.s.assign(sp, 1);
    ic.c.in = c.out;
    ic.P = c.out;
    ic.direct = false;
    ic.phased = false;  // (its image has stride 1)
    ic.fill = [kp, &ctx, c = fc, s, X](int src, int64_t lead, Expr bi, Expr gi, const std::vector<int64_t>& P,
                                  Expr row_off, int64_t /*phases: 1*/) -> Stmt {
      KernelFunc& k = *kp;
      const size_t last = c.sp() - 1;
      std::vector<int64_t> row_dims{c.Cg};
      row_dims.insert(row_dims.end(), P.begin(), P.end() - 1);
      const int64_t rows = NumElements(row_dims), W = P[last];
      Expr r = k.NewVar("r"), w = k.NewVar("w");
      const std::vector<Expr> rix = Delinearize(row_dims, r);
      std::vector<Expr> xi{bi, gi * c.Cg + rix[0]};
      for (size_t d = 0; d < last; ++d) xi.push_back((d == 0 ? rix[1 + d] + row_off : rix[1 + d]) * s[d]);
      xi.push_back(w * s[last]);
      const bool par = rows > 1 && rows * W >= ctx.options().min_parallel_elements;
      return For(r, 0, rows, par ? LoopKind::kParallel : LoopKind::kSerial,
                 For(w, 0, W, LoopKind::kSerial, k.Store(src, {lead + r * W + w}, Cast(X.at(xi), DType::kF32))));
    };
  }
  return pixel_rows ? PixelRowsImplicitConv(ctx, ic, X, Wt, bias, store) : ImplicitGemmConv(ctx, ic, X, bias, store);
}

}  // namespace keel::codegen
