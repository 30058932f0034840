// compiler/codegen/lower_ops.h — optimized kernel builders for the heavy
// anchor ops (GEMM-like contractions, convolutions, pooling, row reductions).
// The op registry (compiler/ops) points the ops' `kernel` hooks here; each
// lower_*.cc file implements one family.
//
// Each builder returns the statements computing its node's output, calling
// `store(idx, value)` once per output element (the fused epilogue, if any, is
// applied by `store`).
// Errors: kUnsupported naming the node for attributes/dtypes not handled.
#pragma once

#include <string>

#include "compiler/codegen/gemm_panels.h"
#include "compiler/codegen/lower_context.h"

namespace keel::codegen {

// Shared blocked GEMM: C[m, n] = sum_k A(m, k) * B(k, n), stored through
// `store(m, n, acc)`. A is read inside the micro-kernel, B only while packing.
struct GemmOperands {
  int64_t m = 0, n = 0, k = 0;
  std::function<Expr(Expr m, Expr k)> a;
  std::function<Expr(Expr k, Expr n)> b;
  std::function<Stmt(Expr m, Expr n, Expr acc)> store;
  // Optional fast packing path for a full NR-wide panel p (columns p*NR + j):
  // where b_fast_ok(p) holds (always, when b_fast_ok is empty),
  // B(k, p*NR + j) == b_fast(k, p, j), typically built of unit-stride reads in
  // j (e.g. a conv panel's runs of output columns).
  std::function<Expr(Expr p)> b_fast_ok;
  // B(k, n) is unit-stride in k (a transposed row-major B, e.g. a classifier's
  // weights): with M == 1 the product is N dot products over contiguous rows
  // (no packing; packing would gather every element).
  bool b_unit_k = false;
  std::function<Expr(Expr k, Expr p, Expr j)> b_fast;
  // b(k, n) is one plain load, unit-stride in n and in bounds for every column
  // of a full panel (a pointwise convolution's input rows, X[ci, pixel]): where
  // one M block would pack a task's panels at once and its row tiles times K is
  // small (LowerOptions::gemm_b_in_place_rows), the micro-kernel reads full
  // panels through it in place, and only a tail panel (N % NR) is packed.
  // Packing such a B wrote and read it once more for the two row tiles of
  // SqueezeNet's squeeze layers (16 output channels over 55x55 pixels); the
  // in-place read is strided by N per k row, which packing hides from many tiles.
  bool b_in_place = false;
  // B (with b_packed) is a MatMul's or Gemm's constant weight, packed at compile time: where it is
  // large (read from memory once per run) and A fits one block, the tasks split its columns alone
  // (LowerOptions::gemm_weight_column_tasks_bytes).
  bool b_weight = false;
  // Optional: each vector of a full panel (NR / 2 lanes, h = 0 or 1) is one plain load unit-stride
  // in j: B(k, p * NR + h * NR / 2 + j) == b_vector(k, p, h, j) for j < NR / 2 (a strided
  // convolution's runs of output columns from its workspace image in column phases, each vector
  // inside one output row). The micro-kernel then reads full panels through it and packs only a
  // tail panel (N % NR), one per M block: no pass that copies each panel's K rows before its row
  // tiles (LowerOptions::conv_runs_in_place). Not batched.
  std::function<Expr(Expr k, Expr p, int64_t h, Expr j)> b_vector;
  // `batch` independent products of the same shape, all in the same parallel
  // regions (one fork-join for all of them, not one each: what lets a
  // Winograd convolution's (m+2)^2 small GEMMs gain from a second thread).
  // a, b and store read `batch_var`, which the GEMM binds to [0, batch).
  int64_t batch = 1;
  Expr batch_var;
  // >= 0: B is already packed, by the caller, in this buffer of the kernel, as
  // [batch][GemmPanels(n)][k][GemmPanelWidth()] floats (columns past n hold
  // any finite value: they are computed but never stored); b and b_fast are
  // then unused and the GEMM has no packing pass or packing workspace.
  int b_packed = -1;
  // With b_packed: one packed B shared by every product of the batch (a
  // MatMul's constant weight under batched A), [GemmPanels(n)][k][NR].
  bool b_packed_shared = false;
  // With b_packed: where the packed B starts in that buffer (floats; null: at 0), e.g. one
  // band's panels of Winograd's V, and (> 0) the floats from one product's panels to the next
  // (0: exactly its panels' size; more keeps the products' panels off the same cache sets).
  Expr b_packed_base;
  int64_t b_packed_stride = 0;
  // Inside a parallel loop of the caller (Winograd's bands of tiles, lower_winograd.cc): every
  // loop of the GEMM serial, and its own workspace (the partial sums of K blocks) in
  // `region_slots` copies, copy `region_slot` used, so that iterations that run at once on
  // different threads never share one.
  bool in_region = false;
  Expr region_slot;
  int64_t region_slots = 1;
  // With b_packed: the last panel (when N % NR != 0) is stored narrow, as
  // [k][N % NR] right after the full panels, not padded to NR columns: the
  // row-panel layout (gemm_panels.h) of a weight whose rows are the product's
  // columns (a channels-last pointwise convolution's [Co, C] weight, NR rows a
  // panel). Its register tiles then compute exactly N % NR lanes. Batched only with
  // b_packed_stride (each product's panels that far apart: a grouped convolution's groups).
  bool b_packed_narrow_tail = false;
  // > 0: A is stored in the row-panel layout (gemm_panels.h) with this many
  // rows per panel (the GEMM's register tile then has exactly these rows,
  // whatever the options say), and `a_panel(offset)` reads the element at
  // `offset` of the packed [M, K] matrix (of product batch_var in a batch);
  // `a` is then unused. Lets the micro-kernel read the weights of a tile as
  // one contiguous stream (compile-time packed constants, ops/packed_weight.h).
  int64_t a_panel_rows = 0;
  std::function<Expr(Expr offset)> a_panel;
  // The tasks keep row blocks outermost even where B is packed by a pass of
  // its own (no "column blocks outermost"): a channels-last convolution's rows
  // are the pixels, which the layers around it split between threads the same
  // way (lower_conv_nhwc.cc).
  bool rows_outer = false;
  // store(m, n) writes column n of row m next to column n - 1 (a channels-first convolution's
  // pixels): the tiles may prefetch their rows' output lines (LowerOptions::gemm_prefetch_c).
  bool c_rows = false;
  // > 0: the register tile has this many rows (the last tile the M % row_tile
  // left, if any), and A is read as a_tile(m0, i, kk) = A(m0 + i, kk) for the
  // tile at row m0 (i < its rows): a reader whose rows are constant offsets
  // from one per-tile origin (a convolution's pixels of whole output rows)
  // keeps one base address per tile instead of a computed address per row,
  // which LLVM otherwise assembles in vector registers and extracts lane by
  // lane. `a` is then unused; not with a_panel.
  int64_t row_tile = 0;
  std::function<Expr(Expr m0, int64_t i, Expr kk)> a_tile;
  // A(m, k) is unit-stride in m and its k rows are far apart (a pixels-as-rows convolution's
  // input channels, an image apart): a register tile reads a new line or two of A at every k,
  // so the K blocks are sized for L1 instead (LowerOptions::gemm_kc_k_apart).
  bool a_k_apart = false;
};
// The packed B panels' count for N columns (their width: GemmPanelWidth, gemm_panels.h).
int64_t GemmPanels(const LowerOptions& o, int64_t n);
Result<Stmt> BuildBlockedGemm(LowerContext& ctx, const GemmOperands& g, const std::string& tag);

// packed_cols > 0: B (input 1) is a constant in the column-panel layout
// (gemm_panels.h, ops/packed_weight.h): [ceil(N / NR), K, NR] with N =
// packed_cols and NR the GEMM's panel width (InvalidArgument otherwise); the
// GEMM reads it in place (no packing at run time). A Gemm in that form has
// transB = 0.
Result<Stmt> LowerGemm(LowerContext& ctx, const ir::Node& node, int64_t packed_cols, const StoreFn& store);
Result<Stmt> LowerMatMul(LowerContext& ctx, const ir::Node& node, int64_t packed_cols, const StoreFn& store);
// packed_rows > 0: the weight (input 1) is stored in the row-panel layout
// (gemm_panels.h) with that many rows per panel, each group's [Co/group,
// Cin/group * prod(kernel)] matrix packed on its own (ops/packed_weight.h);
// only convolutions with more than one input channel per group (the implicit
// GEMM) take it (InvalidArgument otherwise).
Result<Stmt> LowerConv(LowerContext& ctx, const ir::Node& node, int64_t packed_rows, const StoreFn& store);
// The transposed form of a pointwise convolution on few pixels (LowerOptions::
// pointwise_pixel_rows): per image, C'[p, co] = sum_ci X[ci, p] * W[co, ci] with
// the pixels p as the GEMM's rows and the output channels as its columns, so a
// 7x7 image's 49 pixels fill row tiles (4 x 12 + 1) instead of 2 column panels
// of 32 (64 columns computed for 49). W [Co, Ci] packed in row panels of NR
// rows is exactly W^T's column panels (when NR divides Co), so the weight-packing
// pass packs it so and the GEMM reads it in place. Returns NR (the rows per panel
// the weight must have) for a Conv that takes the form, 0 otherwise: any spatial
// rank, group 1, a 1x1 kernel, strides 1, no pads, an f32 weight, Co a multiple
// of NR, and the form estimated cheaper (its outputs are stored one by one, so
// few input channels favour the plain form). LowerConv takes the form when the
// weight is packed with that many rows.
int64_t PointwisePixelRows(const LowerOptions& options, const ir::Node& conv);
// The same transposed form for any convolution of one group on few pixels
// (LowerOptions::conv_pixel_rows), and for grouped ones of more than one input channel per
// group (LowerOptions::grouped_conv_pixel_rows: each group a product of one batched GEMM, its
// Mg output channels whole panels or a narrow last one): PointwisePixelRows where that takes it, else
// NR for a Conv other than a stride-1 unpadded pointwise one (any kernel,
// strides, pads, dilations) with an f32 weight, Co a multiple of NR, and output
// rows that a register tile covers whole or in equal parts (lower_conv.cc
// PixelRowTile). Its A is read inside the micro-kernel through baked
// window-origin and row-offset tables from the (padded) image, so unlike the
// plain implicit GEMM it neither pads the pixels to whole column panels nor
// packs them at run time. LowerConv takes it when the weight is packed with
// that many rows; the Winograd rule weighs it (CpuBackend::WinogradTile).
// A node in the output-only channels-last form (ops/channels_last.h), or the
// twin of one (`nhwc_output`), stores each pixel's NR output channels as one
// vector: NR for any such dense convolution however many its pixels (a
// network's stem), never the pointwise form.
int64_t ConvPixelRows(const LowerOptions& options, const ir::Node& conv, bool nhwc_output = false);
// A Conv in Winograd form (compiler/ops/winograd.h) with output tile side `tile`
// (2 or 4): lower_winograd.cc. packed_rows > 0: each of U's (m+2)^2 [Co, Ci]
// matrices is in the row-panel layout with that many rows per panel.
Result<Stmt> LowerWinogradConv(LowerContext& ctx, const ir::Node& node, int64_t tile, int64_t packed_rows,
                               const StoreFn& store);
// A 2-D depthwise convolution's geometry (one input channel per group, Mg
// output channels per input channel), for the plane kernel below.
struct DepthwiseGeom2D {
  int64_t B = 1, Co = 1, Mg = 1, H = 1, W = 1, OH = 1, OW = 1, KH = 1, KW = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;  // strides, dilations, leading pads
};
// lower_depthwise_plane.cc: the CPU kernel for small images (output width at
// most LowerOptions::depthwise_plane_width, or depthwise_plane_wide_window_width
// for windows of at least 5 columns, strides 1 or 2, the zero-padded
// plane within a local buffer): one (image, channel) plane per parallel
// iteration (up to 4 small ones, all copied before their taps run),
// copied into padded stride phases so that every tap is a
// unit-stride vector load over the flattened output. Applies says whether it
// takes the shape; the lowering returns InvalidArgument when it does not.
bool DepthwisePlaneApplies(const LowerOptions& options, const DepthwiseGeom2D& g);
Result<Stmt> LowerDepthwisePlane(LowerContext& ctx, const DepthwiseGeom2D& g, const TensorFn& X, const TensorFn& Wt,
                                 const TensorFn* bias, const StoreFn& store);
Result<Stmt> LowerConvTranspose(LowerContext& ctx, const ir::Node& node, const StoreFn& store);
Result<Stmt> LowerDeformConv(LowerContext& ctx, const ir::Node& node, const StoreFn& store);
// Window pools (any spatial rank); stores[1], when present, receives MaxPool's Indices.
// The op's own definition (compiler/ops) says which kind of pool, reduction or
// softmax a node is; the lowerings take it instead of comparing op names.
enum class PoolKind { kMax, kAvg, kLp };
enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };
enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };
Result<Stmt> LowerPool(LowerContext& ctx, const ir::Node& node, PoolKind kind, const std::vector<StoreFn>& stores);
// GlobalAveragePool / GlobalMaxPool / GlobalLpPool.
Result<Stmt> LowerGlobalPool(LowerContext& ctx, const ir::Node& node, PoolKind kind, const StoreFn& store);
// MaxUnpool: zeros, then X scattered at Indices (flat into `natural`, which sits
// at the origin of the output).
Result<Stmt> LowerMaxUnpool(LowerContext& ctx, const ir::Node& node, const std::vector<int64_t>& natural,
                            const StoreFn& store);
Result<Stmt> LowerSoftmax(LowerContext& ctx, const ir::Node& node, SoftmaxKind kind, const StoreFn& store);
Result<Stmt> LowerReduce(LowerContext& ctx, const ir::Node& node, ReduceKind kind, const StoreFn& store);
// ArgMax / ArgMin (lower_reduce.cc); LowerSoftmax (lower_softmax.cc) also lowers LogSoftmax and Hardmax.
Result<Stmt> LowerArgReduce(LowerContext& ctx, const ir::Node& node, bool is_max, const StoreFn& store);
// lower_scan.cc: CumSum; TopK (stores: values, then indices when the node has that output).
Result<Stmt> LowerCumSum(LowerContext& ctx, const ir::Node& node, const StoreFn& store);
// CumProd: CumSum's loop with a product (identity 1).
Result<Stmt> LowerCumProd(LowerContext& ctx, const ir::Node& node, const StoreFn& store);
Result<Stmt> LowerTopK(LowerContext& ctx, const ir::Node& node, const std::vector<StoreFn>& stores);

// Row normalizations (lower_norm.cc): LayerNormalization, RMSNormalization,
// Instance/GroupNormalization, MeanVarianceNormalization, LpNormalization and
// training-mode BatchNormalization share one kernel shape. The iteration space
// `shape` (x itself, or a regrouped view of it such as GroupNormalization's
// [N, G, C/G, spatial...]) splits into rows: the dims marked `reduced` make up
// one row. Per row, in `compute` precision: mean = Σx / D (when `center`, else
// 0), sum = Σ f(x - mean) with f = square (|·| when `abs_sum`), inv =
// inv(mean, sum, D); then `row` (optional) stores the row statistics and
// `element` stores every element of the row. Each row is one parallel
// iteration; the statistics live in a small local buffer (registers).
struct RowNormSpec {
  std::vector<int64_t> shape;
  std::vector<bool> reduced;  // one flag per dim of `shape`
  DType compute = DType::kF32;
  std::function<Expr(const std::vector<Expr>& it)> x;  // x at an iteration index, of type `compute`
  bool center = true;
  bool abs_sum = false;
  std::function<Expr(Expr mean, Expr sum, double count)> inv;
  std::function<Stmt(const std::vector<Expr>& it, Expr x, Expr mean, Expr inv)> element;
  // `row` is an iteration index whose reduced dims are 0.
  std::function<Stmt(const std::vector<Expr>& row, Expr mean, Expr sum, Expr inv)> row;
};
Result<Stmt> LowerRowNorm(LowerContext& ctx, const RowNormSpec& spec);
// LRN: x / (bias + alpha / size * Σ x² over a window of `size` channels)^beta.
Result<Stmt> LowerLrn(LowerContext& ctx, const ir::Node& node, const StoreFn& store);

}  // namespace keel::codegen
