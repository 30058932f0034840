// vm/cuda/library_calls_conv.h — the "keel.conv2d" kernel's launch contract
// (serialization/library_ops.h): the argument block the kernel takes, its
// shared-memory layout, its launch geometry and its trace name, one source for
// the kernel (vm/cuda/conv_kernel.cuh includes this), the VM
// (vm/cuda/conv_kernel.cc) and keelc --emit=cuda-host programs (pasted
// verbatim, as library_calls.h says).
//
// The kernel: an implicit GEMM on the tensor cores for channels-last (NHWC)
// f16/bf16 convolutions with few channels, where cuDNN's tensor-core kernels,
// which tile 32 or more channels, waste most of their work (a UNet's 16 -> 16
// 3x3 layer at batch 32, 128x128: 44 us in f16 and 60 us in bf16 on an H200,
// for 34 MB of traffic). A tile is 8 output rows x 16 output columns of one
// image, every output channel; a block of four warps takes a run of
// consecutive tiles (enough that about kConvTargetBlocks blocks cover the
// output). It copies the weights (padded to cp input and np output channels
// with zeros) into shared memory once, then each tile's input window (zeros
// outside the image) with cp.async, the next tile's window while this one
// computes (two buffers). Each warp runs two rows of 16 pixels as MMA tiles:
// for each kernel tap and 16 input channels, one ldmatrix.x4 of the 16 pixels'
// channels (the pixel rows are wherever the tap puts them, so any stride and
// dilation work) and of the output channels' weights, and m16n8k16 MMAs with
// f32 accumulation. The epilogue adds bias and residual in f32, applies the
// activation and stores channel pairs.
//
// Shared memory (bytes): every pixel and every weight row takes `ld` =
// 2·cp + 16 bytes (cp: input channels padded to 16, 32 or 64, so that a row's
// 16-byte chunks are a power of two): rows stay 16-byte aligned for cp.async
// and ldmatrix, and the extra 16 bytes put ldmatrix's eight rows in different
// banks. Weights first ([tap][output channel] rows), then one or two input
// windows ([row][column] pixels).
//
// Thread-safety: pure functions and plain structs.
#ifndef KEEL_VM_CUDA_LIBRARY_CALLS_CONV_H_
#define KEEL_VM_CUDA_LIBRARY_CALLS_CONV_H_

#include "vm/cuda/library_calls.h"

#include <string>

namespace keel::cuda_lib {

[[maybe_unused]] constexpr int kConvTileRows = 8;   // output rows per block
[[maybe_unused]] constexpr int kConvTileCols = 16;  // output columns per block: one MMA tile of pixels
[[maybe_unused]] constexpr int kConvWarps = 4;      // per block; each takes kConvTileRows / kConvWarps rows
[[maybe_unused]] constexpr int kConvMaxChannels = 64;  // input (library_ops.h kKeelConvMaxChannels)
[[maybe_unused]] constexpr int kConvMaxOutputs = 32;   // output (library_ops.h kKeelConvMaxOutputs)
[[maybe_unused]] constexpr long long kConvTargetBlocks = 512;  // runs of tiles are sized to give about this many
// The most shared memory a block may take: what every sm_80+ GPU grants (sm_86
// and sm_89 allow 99 KB a block).
[[maybe_unused]] constexpr unsigned kConvMaxShared = 96u * 1024u;

// The kernel's single parameter (passed by value).
struct ConvKernelArgs {
  const void* x = nullptr;     // [n, h, w, c]
  const void* w = nullptr;     // [k, r, s, c]
  const void* bias = nullptr;  // [k] or null
  const void* res = nullptr;   // [n, oh, ow, k] or null (may be y)
  void* y = nullptr;           // [n, oh, ow, k]
  int n = 0, h = 0, w_in = 0, c = 0;
  int oh = 0, ow = 0, k = 0;
  int r = 0, s = 0, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int act = 0;  // 0 none, 1 relu, 2 clip to [0, clip_max]
  float clip_max = 0.f;
  // Set by ConvKernelPlan: padded input channels (16, 32 or 64), padded
  // output channels (8 per n-tile), the row size in shared memory, the input
  // window's rows and columns and its bytes, where the first window starts
  // (after the weights), the tiles along the output's rows and columns, all
  // tiles, and the tiles of one block (the last block may have fewer).
  int cp = 0, np = 0, ld = 0, in_rows = 0, in_cols = 0;
  unsigned window = 0, window_bytes = 0;
  int tiles_h = 0, tiles_w = 0;
  long long tiles = 0, tiles_per_block = 1;
};

// One launch's geometry.
struct ConvKernelLaunch {
  unsigned long long blocks = 0;
  unsigned threads = 0, shared = 0;
};

// The runtime kernels are compiled per class: input channels padded to 16, 32
// or 64 (the channel loop unrolled) and 1, 2 or 4 n-tiles of 8 output
// channels (the accumulators are registers); the smallest class that holds
// (c, k) runs it. X(CP, NT) for every class. The 18 kernels take 1.2 MB of the
// runtime module (sm_90 cubin and compute_80 PTX); with the channel chunks a
// loop (6 kernels) they took 0.36 MB, but the UNet at batch 32 took 0.479
// instead of 0.453 ms in f16 (H200). Classes nothing uses are left out.
#define KEEL_CONV_CLASSES(X) \
  X(16, 1) X(16, 2) X(16, 4) X(32, 1) X(32, 2) X(32, 4) X(64, 1) X(64, 2) X(64, 4)
inline int ConvNTiles(int k) {
  const int tiles = (k + 7) / 8;
  return tiles <= 1 ? 1 : tiles <= 2 ? 2 : 4;
}
inline int ConvPaddedChannels(int c) { return c <= 16 ? 16 : c <= 32 ? 32 : 64; }

// Fills the layout fields of *a from its shape fields and returns the launch:
// a function of the attributes only, so the VM and host programs launch alike.
inline ConvKernelLaunch ConvKernelPlan(ConvKernelArgs* a) {
  a->cp = ConvPaddedChannels(a->c);
  a->np = 8 * ConvNTiles(a->k);
  a->ld = 2 * a->cp + 16;
  a->in_rows = (kConvTileRows - 1) * a->sh + (a->r - 1) * a->dh + 1;
  a->in_cols = (kConvTileCols - 1) * a->sw + (a->s - 1) * a->dw + 1;
  a->window = static_cast<unsigned>(a->r * a->s * a->np * a->ld);
  const unsigned long long window_bytes = static_cast<unsigned long long>(a->in_rows) * a->in_cols * a->ld;
  a->window_bytes = static_cast<unsigned>(window_bytes > 0xffffffffull ? 0xffffffffull : window_bytes);
  a->tiles_h = (a->oh + kConvTileRows - 1) / kConvTileRows;
  a->tiles_w = (a->ow + kConvTileCols - 1) / kConvTileCols;
  a->tiles = static_cast<long long>(a->n) * a->tiles_h * a->tiles_w;
  a->tiles_per_block = a->tiles > kConvTargetBlocks ? (a->tiles + kConvTargetBlocks - 1) / kConvTargetBlocks : 1;
  ConvKernelLaunch l;
  l.blocks = static_cast<unsigned long long>((a->tiles + a->tiles_per_block - 1) / a->tiles_per_block);
  l.threads = 32u * kConvWarps;
  const unsigned long long shared = a->window + (a->tiles_per_block > 1 ? 2 : 1) * window_bytes;
  l.shared = shared > 0xffffffffull ? 0xffffffffu : static_cast<unsigned>(shared);
  return l;
}

// Why the kernel cannot run a planned problem (nullptr: it can): the layout
// rules above (channels multiple of 8 for 16-byte copies, at most
// kConvMaxChannels in and kConvMaxOutputs out, an even k for paired stores, shared memory within
// kConvMaxShared, fewer than 2^31 blocks and elements).
inline const char* ConvKernelRefusal(const ConvKernelArgs& a, const ConvKernelLaunch& l) {
  if (a.c % 8 != 0 || a.c > kConvMaxChannels) return "input channels must be a multiple of 8, at most 64";
  if (a.k % 2 != 0 || a.k > kConvMaxOutputs) return "output channels must be even, at most 32";
  if (l.shared > kConvMaxShared) return "the kernel window needs more than 96 KB of shared memory a block";
  if (l.blocks > 0x7fffffffull) return "more than 2^31 blocks";
  const long long in = static_cast<long long>(a.n) * a.h * a.w_in * a.c;
  const long long out = static_cast<long long>(a.n) * a.oh * a.ow * a.k;
  if (in >= (1ll << 31) || out >= (1ll << 31)) return "tensors of 2^31 elements or more";
  return nullptr;
}

// The runtime kernel for data type `t` (f16 or bf16) and the class of c input
// and k output channels, e.g. "keel_conv_nhwc_f16_c16_n2"; empty for another type.
inline std::string ConvKernelName(ElementType t, int c, int k) {
  const char* type = t == ElementType::kF16 ? "f16" : t == ElementType::kBF16 ? "bf16" : nullptr;
  if (type == nullptr) return "";
  return std::string("keel_conv_nhwc_") + type + "_c" + std::to_string(ConvPaddedChannels(c)) + "_n" +
         std::to_string(ConvNTiles(k));
}

// The trace's name of one launch.
inline std::string ConvKernelCallName(const std::string& kernel, const ConvKernelLaunch& l) {
  return kernel + " grid=" + std::to_string(l.blocks) + " block=" + std::to_string(l.threads) +
         " shared=" + std::to_string(l.shared);
}

}  // namespace keel::cuda_lib

#endif  // KEEL_VM_CUDA_LIBRARY_CALLS_CONV_H_
