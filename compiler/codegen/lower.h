// compiler/codegen/lower.h — graph Node → KernelSpec (kernel IR) lowering.
//
// A node is either a plain op or a "keel.Fused" group whose body is lowered as
// one kernel. What each op is comes from the op registry (compiler/ops: its
// fusion class and lowering hook). Supported shapes of a group:
//   * only elementwise / injective / view ops: one loop nest over each output,
//     every op inlined as an index function;
//   * at most one anchor (contractions, windows, reductions): injective ops
//     before it are inlined into its operand reads, and elementwise ops after
//     it that keep its output shape form the epilogue, applied before the
//     single store (e.g. Conv + bias + Add residual + Relu). A plain anchor
//     node may have several outputs (each stored directly).
// Nodes must be canonical (ops::CanonicalizeNode) with types on every value.
//
// Performance structure: GEMM-like anchors (Gemm, MatMul, Conv with more than
// one input channel per group) share one blocked GEMM: the B operand is packed
// (for Conv: im2col from a zero-padded copy of the input, as runs of vector
// loads) into NR-wide panels in the workspace, then an MR x NR register-blocked
// micro-kernel (MR unrolled rows of NR-lane kLanes statements: explicit SIMD,
// FMA) runs over cache blocks in parallel through ctx->parallel_for. A Conv
// whose constant weight the compiler stored in the micro-kernel's MR-row panels
// (ops/packed_weight.h, gemm_panels.h) reads A as one stream per register tile.
// Gemm with M == 1 and transposed weights runs as dot products. Depthwise
// convolutions use a direct row kernel with vector chunks over interior columns
// (2-D stride 1: blocks of rows sharing each input row's loads). Tile sizes
// come from LowerOptions (LowerOptionsForCpuFeatures picks them per ISA).
//
// Thread-safety: pure function of its arguments. Errors: kUnsupported naming
// the op (and the node) for ops/attributes/dtypes not handled; kInvalidArgument
// for malformed nodes (missing types, wrong arity).
#pragma once

#include <cstdint>
#include <string>

#include "compiler/codegen/kernel_spec.h"
#include "compiler/ir/graph.h"
#include "keel/status.h"

namespace keel::codegen {

struct LowerOptions {
  int64_t gemm_mr = 6;    // micro-kernel rows (A rows per register tile)
  int64_t gemm_mr_alt = 0;  // > 0: rows used instead when it divides M and gemm_mr does not
  int64_t gemm_nr = 16;   // micro-kernel columns (a multiple of the vector width)
  // The most rows a register tile may have where a kernel picks its own (the
  // transposed convolution's whole output rows, lower_conv.cc PixelRowTile):
  // what the vector registers hold with NR-wide rows, B and a broadcast.
  int64_t gemm_mr_max = 6;
  // GEMMs whose B is packed inside each task (one M block): pack one panel, then run every row
  // tile on it, instead of packing the task's panels first (lower_gemm.cc; where N is whole panels).
  bool gemm_panel_at_a_time = true;
  // Those whose B is a plain unit-stride buffer (GemmOperands::b_in_place, a pointwise
  // convolution's input): the panel's first row tile reads its K rows in place and stores them
  // into the slot as it goes, and only the other row tiles read the slot, instead of a copy loop
  // over the panel before them (lower_gemm.cc); also with a tail panel where output rows are whole
  // cache lines, in one M block, for at most 32 row tiles a panel. ResNet-50's 256 -> 64 at 56x56
  // and 512 -> 128 at 28x28 took 0.95 of the time at one thread and 0.93-0.94 at two, its 512 ->
  // 256 at 28x28 1.01 and 0.87 (docs/MEASUREMENTS.md, cpu37).
  bool gemm_first_tile_packs = true;
  // GEMMs whose B was packed at compile time: the row tiles of every K block prefetch the next
  // K block of their panel (or the next task's first) into L2, each a share (lower_gemm.cc);
  // otherwise it arrives from memory at the pace of the first tile's loads.
  bool gemm_prefetch_b = true;
  // GEMMs whose store writes consecutive columns of an output row next to each other
  // (GemmOperands::c_rows, a channels-first convolution): each register tile prefetches the
  // output lines of the next tile into L2, and the lines its epilogue reads at the same places
  // (a fused residual), a share per k iteration (lower_gemm.cc). A tile's rows are MR streams a
  // whole image apart, each a task's panels long: too short for the hardware prefetchers, into
  // lines that the layers before evicted. Only for outputs of at least l2_bytes.
  bool gemm_prefetch_c = true;
  // GEMMs that pack B a panel at a time from a plain buffer read in rows N apart (a pointwise
  // convolution's input, GemmOperands::b_in_place): the row tiles of a panel prefetch the rows
  // of the next panel into L2, each a share of them (lower_gemm.cc).
  bool gemm_prefetch_pack = true;
  // GEMMs whose B can be read in place (GemmOperands::b_in_place: a pointwise convolution's
  // input) and packed inside each task read its full panels in place instead where the row
  // tiles times K is at most this: every tile then reads K rows N elements apart, on as many
  // pages, instead of a contiguous panel, which pays only where few tiles reuse a short panel
  // (SqueezeNet's 55x55 squeeze and expand 1x1 layers took 0.63-0.93x the time; its 27x27
  // squeezes, Mt x K = 512 and 1024, and ResNet-50's 56x56 1x1 layers, 512-2048, 1.05-1.22x).
  // 0: never.
  int64_t gemm_b_in_place_rows = 256;
  // The K block of GEMMs whose A has its k rows far apart (GemmOperands::a_k_apart: the
  // pixels-as-rows convolutions). A register tile of such a GEMM reads a new line or two of A at
  // every k; at blocks of 256, B's block (32 KB with 32-lane panels) and those lines (~28 KB) did
  // not fit a 48 KB L1 together and B was read again from L2 by every row tile. ResNet-50's 1x1
  // layers on 14x14 and 7x7 pixels took 0.76-0.89 of the time at 64, its 3x3 layers on 7x7 and
  // strided 1x1 ones 0.80-0.90; 32, 48, 96 and 128 measured no better (docs/MEASUREMENTS.md,
  // cpu28). 0: 256, as every other GEMM.
  int64_t gemm_kc_k_apart = 64;
  // Those GEMMs (read through a tile reader) prefetch into L2, at every k, the A lines of k + 16
  // for the tile's first and last row, where A is at least half of l2_bytes: ResNet-50's 1x1
  // layers on 14x14 pixels (800 KB of A) took 0.89-0.92 of the time, its 3x3 stride 2 to 7x7
  // 0.86; distances 4, 8 and 32 and prefetching into L1 measured less, and A of 100 KB
  // (512 channels of 7x7) 1.01-1.03 (docs/MEASUREMENTS.md, cpu28).
  bool gemm_prefetch_a = true;
  // GEMMs whose A is a weight packed at compile time in row panels (a channels-first
  // convolution's, Winograd's transformed weights), run row tile after row tile over a task's
  // panels: the tiles of one row tile prefetch the next one's A panel into L2, each a share
  // (lower_gemm.cc), where A is at least half of l2_bytes (a smaller weight stays in cache
  // between runs of its tiles; ResNet-50's 64 KB ones measured 1.01-1.03). ResNet-50's 1x1
  // layers on 14x14 took 0.87-0.89 of the time, its Winograd layers on 14x14 0.72-0.77 and on
  // 28x28 0.85-0.88 (docs/MEASUREMENTS.md, cpu31).
  bool gemm_prefetch_a_panels = true;
  // GEMMs whose B is packed by a pass of its own, with a tail panel of half a panel (one vector)
  // after full ones: the last full panel and the tail run as one register tile of 1.5 panels (three
  // vectors a row) where MR x 3 accumulators fit the vector registers (lower_gemm.cc), instead of
  // the tail's own tile of one vector a row, one FMA per load. SqueezeNet's classifier (512 ->
  // 1000 at 13x13: 5 panels and 9 columns) took 0.97-0.98 of the time, its 64 -> 256 expand 1x1
  // layers 0.94-0.95 (docs/MEASUREMENTS.md, cpu43).
  bool gemm_merged_tail = true;
  // Winograd convolutions whose tiles fill 2 to this many GEMM panels run as one parallel region
  // over as many bands of tiles, each band's input transform, GEMMs and output transform on one
  // thread (lower_winograd.cc); 0: never (three parallel regions), the default. With 2 (ResNet's
  // 28x28 and 14x14 layers, 49 tiles in two bands) ResNet-18 took 0.96-0.97 of the time at one
  // thread and 0.97-0.99 at two against cpu42's placebo build, but 1.03-1.04 of main's at two
  // threads on a quick machine: its unchanged 56x56 layers took 1.1-1.2x the time. Not through
  // the arena layout (cpu45: their buffers and code do not move, and shifting every buffer is
  // neutral): banding layer3 alone slows the next run's first layers, for a reason not yet
  // found. Bands also cap a layer's threads at its band count. 56x56 (7 bands) lost at two
  // threads: each band reads all of U (docs/MEASUREMENTS.md, cpu42, cpu45).
  int64_t winograd_band_panels = 0;
  // A Winograd layer's output transform writes its full tiles' outputs through a transpose in
  // registers (each tile's rows as short vector stores) instead of one scatter per output
  // position of every chunk of tiles (lower_winograd.cc), where a tile's m² outputs are a
  // multiple of the transform's lanes (F(4,3): 16 outputs, 16 lanes on AVX-512, 8 on AVX2).
  bool winograd_tile_stores = true;
  // A Winograd layer's input transform reads the patches of its interior tiles (no padding
  // inside) as short row vectors through a transpose in registers instead of one gather per
  // patch element of every chunk of tiles (lower_winograd.cc); the border tiles keep the gathers.
  bool winograd_tile_loads = true;
  // keelc --winograd auto does not pick a Winograd tile for a 3x3 convolution with fewer than
  // this many input channels whose transformed tiles, (m + 2)^2 x tiles x (Ci + Co) floats, exceed
  // winograd_few_channels_workspace bytes (0: no such limit). There its transforms cost more than
  // the estimate says (cpu_backend.cc WinogradCost): against the implicit GEMM, Inception-v3's
  // 32-channel stem layers at 147x147 (13-19 MB) took 1.07x-1.3x the time, U-Net's 16- and
  // 32-channel layers at 128x128 (4.7-7 MB) 1.6x, EfficientNetV2-S's 24-channel one at 112x112
  // (5.4 MB) 1.8x. With less (SqueezeNet's 16- and 32-channel expand layers, 1-2.3 MB; U-Net's
  // 32-channel layers at 64x64, 2.4 MB) and from 48 channels on (EfficientNetV2-S's 48 -> 192 at
  // 56x56, 6.8 MB: 0.47) Winograd won (docs/MEASUREMENTS.md, cpu47).
  int64_t winograd_min_input_channels = 48;
  int64_t winograd_few_channels_workspace = 4 << 20;
  // One-element f32/f64/integer constants that a kernel takes as arguments (a Pow's exponent, a
  // tanh-GELU's coefficients, a normalization's epsilon) read as immediates (lower.cc), so the
  // scalar lowerings see them: Pow(x, 2) multiplies instead of calling pow() (a T5 RMS norm's
  // Pow took 0.12 ms at 64 x 256; docs/MEASUREMENTS.md, cpu47). The argument stays (readers of
  // the plain buffer still find it). CPU only: the CUDA kernels were not measured with it.
  bool inline_scalar_constants = true;
  // RNN, GRU and LSTM steps compute each gate row's recurrent product with the state in
  // vector lanes over output rows (the state's element broadcast, rows of R transposed into a
  // workspace once per call), instead of a dot product per row ending in a horizontal sum
  // (ops/recurrent_kernel.cc). CPU only (measured there).
  bool recurrent_rows_in_lanes = true;
  int64_t l2_bytes = 512 * 1024;  // cache budget used to size GEMM blocks
  // Elementwise/reduction loop nests with fewer output elements run serially.
  int64_t min_parallel_elements = 1 << 14;
  // Lowering for a GPU grid: convolutions with one input channel per group
  // (depthwise) give each parallel iteration a short run of outputs along the
  // last dim, iterations in the order the output is laid out, so a warp's loads
  // and stores are contiguous. (The CPU form gives each iteration a whole output
  // row as vector chunks: on a GPU that leaves a warp's loads one row apart.)
  bool gpu_direct_conv = false;
  // The CPU form of 2-D stride-1 depthwise convolutions computes this many
  // neighbouring output rows per parallel iteration, loading each input row
  // once for all of them (1: a row per iteration).
  int64_t depthwise_rows = 4;
  // > 0: channels-last depthwise convolutions (lower_conv_nhwc.cc) with more than one 16-lane
  // chunk of channels give each parallel iteration a tile of at most this many output rows and
  // walk all of a tile's rows for one chunk before the next chunk, so the KH input rows a row
  // reads stay in L1 (3 x W x 64 bytes) and each input row comes from L2 about once per tile
  // instead of once per output row that reads it. 0: a row (or two) per iteration, all chunks.
  int64_t depthwise_nhwc_tile_rows = 0;
  // 2-D depthwise convolutions with an output at most this wide (and strides
  // 1 or 2) use the plane kernel (lower_depthwise_plane.cc) on the CPU; 0: never.
  int64_t depthwise_plane_width = 32;
  // ...and those whose window has at least 5 columns, up to this output width where it is
  // wider: their row kernel runs (KW - 1) border columns per row as scalar code.
  int64_t depthwise_plane_wide_window_width = 0;
  // 16-lane chunks per group of the plane kernel, each its own accumulator
  // chain: 4 fits AVX2's 16 ymm registers; AVX-512 has room for 8.
  int64_t depthwise_plane_chains = 4;
  // The target's vector registers (16 ymm with AVX2, 32 zmm with AVX-512): the channels-last
  // depthwise kernel shares its strided taps' loads between pixels only with 32, as with 16 the
  // shared values spilled (lower_conv_nhwc.cc).
  int64_t vector_registers = 16;
  // 1x1 stride-1 convolutions over at most this many pixels (a network's 7x7
  // and 14x14 stages) may run as the transposed GEMM (lower_conv.cc,
  // PointwisePixelRows: pixels as the product's rows, output channels as its
  // vector columns) where that estimates cheaper; 0: never.
  int64_t pointwise_pixel_rows = 196;
  // > 0: those may also have output channels past whole panels, in a narrow last panel
  // (GemmReadsRowPanelsAsB) of a multiple of this many columns. 8 (a quarter panel) on AVX-512,
  // where SqueezeNet's 384 -> 48 at 13x13 took 0.72-0.80 of the time and ShuffleNetV2's
  // 232 -> 232 at 7x7 0.87-0.95 on a quiet machine (1.1-1.55 with another process on the
  // cores); with AVX2's 16-lane panels its 116 -> 116 at 14x14 took 1.24-1.33 and its 232 -> 232
  // 1.10-1.36 (docs/MEASUREMENTS.md, cpu30). 0: whole panels only.
  int64_t pointwise_pixel_rows_tail = 0;
  // > pointwise_pixel_rows: those over more pixels, up to this many, with exactly one whole panel
  // of output channels (NR) and at least 4 NR input channels, run as the transposed GEMM too,
  // without the cost estimate (fit on 7x7 and 14x14 images). The plain form packs X into
  // column panels that only Co / MR row tiles read (4 with Co = 32), each task's packed panels
  // beyond L1; the transposed form reads X in place exactly once (one panel of channels) and
  // keeps the weight in L1. 784 on AVX-512: SqueezeNet's 27x27 squeezes 256 -> 32 and 128 -> 32
  // took 0.78 and 0.88 of the time at one thread, 0.78 and 0.93 at two; its 55x55 squeezes to 16
  // channels (a half panel) took twice the time so (docs/MEASUREMENTS.md, cpu35). 0: never.
  int64_t pointwise_pixel_rows_one_panel = 0;
  // Convolutions of one group (any kernel but the pointwise ones above) with
  // at most this many output pixels per image (a network's 28x28 and smaller
  // stages) run as the transposed implicit GEMM (lower_conv.cc, ConvPixelRows)
  // where a row tile of whole output rows or a divisor of one exists; 0: never.
  int64_t conv_pixel_rows = 784;
  // ...and beyond that bound, those with exactly one panel of output channels (Co = NR) and K =
  // C x taps of at least 4 NR, unless the NR output planes crowd one L1 set (lower_conv.cc). The
  // plain form packs every pixel's K values for only Co / MR = 4 row tiles. AVX-512, one-panel
  // 3x3 layers, 2 threads: Inception-v3's 32 -> 32 at 147x147 0.70 of the time, 16 and 32 input
  // channels at 98x98 to 147x147 0.79-0.89, 8 input channels (K = 72) 1.00; 32 -> 32 at 128x128
  // (every 64 KB plane in one set) 9.4 (docs/MEASUREMENTS.md, cpu50).
  bool conv_pixel_rows_one_panel = false;
  // Grouped convolutions (more than one input channel per group) with at most this many output
  // pixels per image run in that transposed form too, every group one product of one batched
  // GEMM (lower_conv.cc, ConvPixelRows), where each group's output channels are whole panels or
  // a narrow last panel the GEMM reads in place (GemmReadsRowPanelsAsB); groups of fewer than 16
  // output channels only up to grouped_conv_pixel_rows_few_channels pixels. Measured on 3x3
  // layers of 32 groups (docs/MEASUREMENTS.md, cpu48), the transposed form's time over the plain
  // implicit GEMM's (per-group GEMMs in a serial loop), 1 / 2 threads, AVX-512: 14x14 and 7x7 with
  // 8 to 64 channels per group 0.36-0.97 / 0.22-0.70; 28x28 with 16 0.98 / 0.84, with 8 1.29 /
  // 1.01 (AVX2 1.26 / 1.01), 56x56 with 8 1.51 / 1.35. 0: never.
  int64_t grouped_conv_pixel_rows = 784;
  int64_t grouped_conv_pixel_rows_few_channels = 196;
  // Strided unpadded 1x1 convolutions whose input image has at least this many bytes (as f32)
  // run as the stride-1 one over a compact copy of the pixels they read (lower_conv.cc
  // LowerConv), in either GEMM form, instead of reading X in place. A smaller image stays in
  // cache, and the copy's parallel pass costs more than it saves (ResNet-18's 200 and 400 KB
  // ones, 1.09-1.33x the time at 2 threads). 0: never.
  int64_t conv_subsample_bytes = 512 * 1024;
  // Implicit-GEMM convolutions whose padded workspace image and output
  // together exceed 4x this many bytes run in bands of output rows, each band
  // filling only its input rows and writing at most about this many bytes
  // (lower_conv.cc RowBands): the whole image's copy, made before the first
  // product, is otherwise evicted by the output before the later panels read
  // it. 0: never, the default: at 1 thread 256 KiB bands take MobileNetV2's
  // stem from 1.35x to 0.99x ONNX Runtime's time, but at 2 threads each band is
  // a parallel product of its own (a barrier per band, fewer panels per thread)
  // and whole models got slower: ResNet-18 and MobileNetV2 1.06x, MnasNet 1.03x
  // (docs/MEASUREMENTS.md). Worth turning on once bands split across threads.
  int64_t conv_row_band_bytes = 0;
  // Implicit-GEMM convolutions with a last-dim stride of 2..4 copy their padded image in column
  // phases (column x at (x % stride) * ceil(width / stride) + x / stride), so that the packing
  // reads each run of output columns' tap as consecutive elements instead of a strided run
  // (masked loads and a shuffle per vector; lower_conv.cc ImplicitGemmConv). A 224x224 7x7
  // stride-2 stem took 0.94 of the time at 1 and 2 threads (docs/MEASUREMENTS.md, cpu31).
  bool conv_column_phases = true;
  // Those whose runs are unit-stride (in column phases, or stride 1) and whose output rows are
  // whole vectors (NR / 2 columns) give the GEMM a reader of each panel's vectors in place
  // (GemmOperands::b_vector): the micro-kernel then reads the workspace image itself and only a
  // tail panel is packed (lower_conv.cc ImplicitGemmConv, lower_gemm.cc).
  bool conv_runs_in_place = true;
  // Softmax and LogSoftmax rows of at least kRowLanes elements reduce over
  // vector lanes (lower_rows.h LaneReduce: partial maxima and sums per lane, one
  // vectorized exp per element) instead of scalar loops, in which LLVM leaves
  // the exp scalar. (The row normalizations' plain sums gained nothing: LLVM
  // vectorizes those loops.) Likewise Reduce* ops that keep the innermost axis
  // fold vector lanes of neighbouring outputs (lower_reduce.cc ColumnReduce).
  // Off on the GPU, whose row mapping (gpu_mapping.h) splits the scalar
  // reduction loops over a warp.
  bool lane_row_reductions = true;
  // A fused group that is one Resize of f32 data runs separably (ops/resize.cc ResizeInRows):
  // per block of output rows, each source row it reads resized along the last axis once into a
  // local plane (the columns' taps and weights computed once per block), then every output row
  // a weighted sum of such rows in vector chunks. The injective loop nest computes both axes'
  // source coordinates in f64 and gathers every tap for every output element (LR-ASPP's 21 x
  // 28x28 -> 224x224: 0.59 ms against ONNX Runtime's 0.23; docs/MEASUREMENTS.md, cpu49). Off
  // on the GPU, which was not measured with it.
  bool resize_rows = true;
  // Pools with leading window dims fold them first into padded local rows, every output column a
  // vector lane (lower_pool.cc; max, average and Lp). Off on the GPU, which keeps the max pools'
  // unpadded column maxima over the interior columns (its lowering before cpu49).
  bool pool_padded_rows = true;
  // Transposes that move the innermost axis (NCHW <-> NHWC) copy tiles of this
  // many elements square, one vector register a row (lower_transpose.h): 16
  // floats with AVX-512, 8 with AVX2, 4 with SSE. 0: the generic loop nest (the
  // GPU's, whose lanes are threads).
  int64_t transpose_tile = 8;
};

// Lowering options tuned for a CPU target, given its LLVM feature string
// (CpuTargetInfo::features, e.g. "+avx2,+fma,..."): with AVX-512 the GEMM
// register tile is sized for 32 zmm registers, with AVX2 for 16 ymm registers,
// without AVX for 16 xmm registers.
// Pure function; the same features give the same options.
LowerOptions LowerOptionsForCpuFeatures(const std::string& features);

// Lowering options of the CUDA back end (compiler/driver/cuda_backend.cc): every
// loop nest parallel, depthwise convolutions in their GPU form.
LowerOptions LowerOptionsForCuda();

// "k<index>_<op>_<op>..." — lowercase op types (fused body order), sanitized,
// at most ~48 characters. Unique as long as `index` is.
std::string KernelName(const ir::Node& node, int64_t index);

// Lowers `node` (plain or keel.Fused) to a kernel named KernelName(node, index).
Result<KernelSpec> LowerNodeToKernel(const ir::Node& node, int64_t index, const LowerOptions& options = {});

}  // namespace keel::codegen
