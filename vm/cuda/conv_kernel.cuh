// vm/cuda/conv_kernel.cuh — the "keel.conv2d" runtime kernels
// (keel_conv_nhwc_{f16,bf16}_c{16,32,64}_n{1,2,4}): channels-last convolutions with few
// channels as an implicit GEMM on the tensor cores. The algorithm, launch
// geometry and shared-memory layout are described in
// vm/cuda/library_calls_conv.h (ConvKernelArgs is the one parameter).
//
// Part of the VM's runtime module: vm/cuda/runtime_kernels.cu includes it (and
// keelc --emit=cuda-host programs hold it verbatim after that file). Needs
// sm_80+ (cp.async, ldmatrix, bf16 mma); keel_wait_for_previous_grid and the
// keel_to_f32 / keel_act helpers come from runtime_kernels.cu.
#include "vm/cuda/library_calls_conv.h"
#include "vm/cuda/mma_primitives.cuh"

namespace keel_conv {

namespace cl = keel::cuda_lib;
using namespace keel_mma;  // NOLINT: the tensor-core primitives this kernel is written in

constexpr int kRowsPerWarp = cl::kConvTileRows / cl::kConvWarps;
constexpr int kThreads = 32 * cl::kConvWarps;
static_assert(cl::kConvTileCols == 16, "a warp's row of pixels is one MMA tile of 16 rows");

// Queues the copy of the weights into shared memory: row (tap, n) holds
// w[n][tap][:], zeros for n >= k and for the padded channels. Each thread keeps
// one 16-byte chunk of a row (CP / 8 chunks) and walks the rows.
template <typename T, int CP>
__device__ __forceinline__ void StageWeights(const cl::ConvKernelArgs& a, unsigned char* smem) {
  constexpr int kChunks = CP / 8;
  const int ch = threadIdx.x % kChunks;
  const int taps = a.r * a.s;
  const int np_shift = __ffs(a.np) - 1;  // np is a power of two
  const T* w = static_cast<const T*>(a.w);
  const bool data = ch * 8 < a.c;
  for (int row = threadIdx.x / kChunks; row < taps * a.np; row += kThreads / kChunks) {
    const int tap = row >> np_shift, n = row & (a.np - 1);
    const bool valid = data && n < a.k;
    CopyAsync16(smem + row * a.ld + ch * 16, valid ? w + (n * taps + tap) * a.c + ch * 8 : w, valid);
  }
}

// Where a tile starts: its image, first output row and first output column
// (tiles run along the output's columns, then rows, then images; tile < 2^31).
struct Tile {
  int img, oy0, ox0;
};
__device__ __forceinline__ Tile TileAt(const cl::ConvKernelArgs& a, unsigned tile) {
  const unsigned rest = tile / static_cast<unsigned>(a.tiles_w);
  const unsigned tile_w = tile - rest * static_cast<unsigned>(a.tiles_w);
  const unsigned img = rest / static_cast<unsigned>(a.tiles_h);
  const unsigned tile_h = rest - img * static_cast<unsigned>(a.tiles_h);
  return {static_cast<int>(img), static_cast<int>(tile_h) * cl::kConvTileRows,
          static_cast<int>(tile_w) * cl::kConvTileCols};
}

// A thread's walk over an input window: its first pixel (row, column) and the
// step between its copies, the same for every tile.
struct WindowWalk {
  int p0, row0, col0, step, step_rows, step_cols;
};

// Queues the copy of tile `t`'s input window into `window` (zeros outside the
// image and for the padded channels). Each thread keeps one chunk and walks
// the pixels (no divisions). Every index is below 2^31 (ConvKernelRefusal).
template <typename T, int CP>
__device__ __forceinline__ void StageWindow(const cl::ConvKernelArgs& a, const WindowWalk& walk, unsigned char* window,
                                            const Tile& t) {
  constexpr int kChunks = CP / 8;
  const int ch = threadIdx.x % kChunks;
  const int iy0 = t.oy0 * a.sh - a.ph, ix0 = t.ox0 * a.sw - a.pw;
  const T* x = static_cast<const T*>(a.x) + t.img * a.h * a.w_in * a.c + ch * 8;
  const bool data = ch * 8 < a.c;
  int p = walk.p0, row = walk.row0, col = walk.col0;
  for (; row < a.in_rows; p += walk.step, row += walk.step_rows, col += walk.step_cols) {
    if (col >= a.in_cols) {
      col -= a.in_cols;
      ++row;
      if (row >= a.in_rows) break;
    }
    const int iy = iy0 + row, ix = ix0 + col;
    const bool valid = data && iy >= 0 && iy < a.h && ix >= 0 && ix < a.w_in;
    CopyAsync16(window + p * a.ld + ch * 16, valid ? x + (iy * a.w_in + ix) * a.c : x, valid);
  }
}

template <typename T, int CP, int NT>
__device__ __forceinline__ void ConvNhwc(const cl::ConvKernelArgs& a) {
  extern __shared__ __align__(16) unsigned char smem[];
  keel_wait_for_previous_grid();
  constexpr int kChunks = CP / 8;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned first = blockIdx.x * static_cast<unsigned>(a.tiles_per_block);
  const unsigned end = static_cast<unsigned>(
      first + a.tiles_per_block < a.tiles ? first + a.tiles_per_block : a.tiles);

  // The epilogue's bias values (lane l's output channels 2 (l % 4) + {0, 1} of each n-tile).
  const int g = lane >> 2, pair = 2 * (lane & 3);
  float bias[NT][2];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int n = j * 8 + pair;
    const bool has = a.bias != nullptr && n < a.k;
    bias[j][0] = has ? keel_to_f32(static_cast<const T*>(a.bias)[n]) : 0.f;
    bias[j][1] = has ? keel_to_f32(static_cast<const T*>(a.bias)[n + 1]) : 0.f;
  }

  WindowWalk walk;
  walk.p0 = threadIdx.x / kChunks;
  walk.row0 = walk.p0 / a.in_cols;
  walk.col0 = walk.p0 - walk.row0 * a.in_cols;
  walk.step = kThreads / kChunks;
  walk.step_rows = walk.step / a.in_cols;
  walk.step_cols = walk.step - walk.step_rows * a.in_cols;

  Tile tile = TileAt(a, first);
  StageWeights<T, CP>(a, smem);
  StageWindow<T, CP>(a, walk, smem + a.window, tile);
  CommitCopies();

  // ldmatrix.x4 addresses: for A, lane l gives pixel l % 16's channels
  // 8 (l / 16) .. +7; for B, matrix l / 8 = (n-tile offset, channel half),
  // row l % 8 = the output channel within its tile.
  const int pixel = lane & 15, a_half = lane >> 4;
  const int b_tile = NT == 1 ? 0 : lane >> 4, b_half = (lane >> 3) & 1, b_row = lane & 7;
  const int a_lane = ((warp * kRowsPerWarp * a.sh) * a.in_cols + pixel * a.sw) * a.ld + a_half * 16;
  const int a_row_step = a.sh * a.in_cols * a.ld;  // the warp's next output row
  const int a_tap_col = a.dw * a.ld, a_tap_row = a.dh * a.in_cols * a.ld - a.s * a_tap_col;
  const unsigned char* b_lane = smem + (b_tile * 8 + b_row) * a.ld + b_half * 16;
  const int b_tap = a.np * a.ld, b_pair = 16 * a.ld;  // next tap; next pair of n-tiles
  T* y = static_cast<T*>(a.y);
  const T* res = static_cast<const T*>(a.res);

  for (unsigned t = first; t < end; ++t) {
    const int buf = static_cast<int>(t - first) & 1;
    const Tile next = t + 1 < end ? TileAt(a, t + 1) : tile;
    if (t + 1 < end) StageWindow<T, CP>(a, walk, smem + a.window + (buf ^ 1) * a.window_bytes, next);
    CommitCopies();
    WaitCopies<1>();  // this tile's window (and the weights) have landed
    __syncthreads();

    float acc[kRowsPerWarp][NT][4] = {};
    const unsigned char* pa = smem + a.window + buf * a.window_bytes + a_lane;
    const unsigned char* pb = b_lane;
    for (int rr = 0; rr < a.r; ++rr, pa += a_tap_row) {
      for (int ss = 0; ss < a.s; ++ss, pa += a_tap_col, pb += b_tap) {
#pragma unroll
        for (int kc = 0; kc < CP / 16; ++kc) {
          unsigned b[NT][2];
#pragma unroll
          for (int j = 0; j < NT; j += 2) {
            unsigned r4[4];
            LoadMatrices(r4, pb + (j / 2) * b_pair + kc * 32);
            b[j][0] = r4[0];
            b[j][1] = r4[1];
            if (j + 1 < NT) {
              b[j + 1][0] = r4[2];
              b[j + 1][1] = r4[3];
            }
          }
#pragma unroll
          for (int m = 0; m < kRowsPerWarp; ++m) {
            unsigned af[4];
            LoadMatrices(af, pa + m * a_row_step + kc * 32);
#pragma unroll
            for (int j = 0; j < NT; ++j) Mma<T>(acc[m][j], af, b[j][0], b[j][1]);
          }
        }
      }
    }

    // Epilogue: lane l holds pixels l/4 and l/4 + 8 of each row, channels
    // 2 (l % 4) + {0, 1} of each n-tile (k is even: a pair is whole or absent).
#pragma unroll
    for (int m = 0; m < kRowsPerWarp; ++m) {
      const int oy = tile.oy0 + warp * kRowsPerWarp + m;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int ox = tile.ox0 + g + 8 * half;
        if (oy >= a.oh || ox >= a.ow) continue;
        const int at = ((tile.img * a.oh + oy) * a.ow + ox) * a.k + pair;
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          if (j * 8 + pair >= a.k) continue;
          float v0 = acc[m][j][2 * half] + bias[j][0], v1 = acc[m][j][2 * half + 1] + bias[j][1];
          if (res != nullptr) {
            v0 += keel_to_f32(res[at + j * 8]);
            v1 += keel_to_f32(res[at + j * 8 + 1]);
          }
          *reinterpret_cast<unsigned*>(y + at + j * 8) =
              Pack<T>(keel_act(v0, a.act, a.clip_max), keel_act(v1, a.act, a.clip_max));
        }
      }
    }
    tile = next;
    __syncthreads();  // every warp is done with this window before the next stage overwrites it
  }
}

}  // namespace keel_conv

// keel_conv_nhwc_{f16,bf16}_c{16,32,64}_n{1,2,4} (library_calls_conv.h ConvKernelName).
#define KEEL_CONV_KERNEL(TYPE, NAME, CP, NT)                                                        \
  extern "C" __global__ void __launch_bounds__(32 * keel::cuda_lib::kConvWarps)                     \
      NAME(const keel::cuda_lib::ConvKernelArgs a) {                                                \
    keel_conv::ConvNhwc<TYPE, CP, NT>(a);                                                           \
  }
#define KEEL_CONV_KERNELS(CP, NT)                                                 \
  KEEL_CONV_KERNEL(__half, keel_conv_nhwc_f16_c##CP##_n##NT, CP, NT)             \
  KEEL_CONV_KERNEL(__nv_bfloat16, keel_conv_nhwc_bf16_c##CP##_n##NT, CP, NT)
KEEL_CONV_CLASSES(KEEL_CONV_KERNELS)
#undef KEEL_CONV_KERNELS
#undef KEEL_CONV_KERNEL
