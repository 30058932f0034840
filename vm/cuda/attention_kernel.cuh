// vm/cuda/attention_kernel.cuh — the "keel.attention" runtime kernels
// (keel_attention_f16, keel_attention_bf16): scaled dot-product attention over
// strided views with an online softmax, on the tensor cores through WMMA. The
// algorithm, launch geometry and shared-memory layout are described in
// vm/cuda/library_calls_attention.h (AttentionArgs is the one parameter).
//
// Part of the VM's runtime module: vm/cuda/runtime_kernels.cu includes it (and
// keelc --emit=cuda-host programs hold it verbatim before that file). Needs
// sm_80+ (bf16 WMMA); keel_wait_for_previous_grid and the keel_to_f32 /
// keel_from_f32 conversions come from runtime_kernels.cu.
#include <mma.h>

#include "vm/cuda/library_calls_attention.h"

namespace keel_attention {

namespace cl = keel::cuda_lib;
constexpr int kRows = cl::kAttentionBlockRows;
constexpr int kKeys = cl::kAttentionBlockKeys;
constexpr int kWarps = cl::kAttentionThreads / 32;
static_assert(kRows == 16 * kWarps, "each warp owns 16 query rows");

// rows x cols_pad elements of an operand into shared memory (row stride ld),
// zeros beyond rows_valid / cols_valid. 16-byte moves when the rows are
// contiguous and aligned (the usual head layout), else one element at a time.
template <typename T>
__device__ __forceinline__ void LoadTile(T* dst, int ld, const T* src, long long off, long long rs, long long cs,
                                         int rows_valid, int rows, int cols_valid, int cols_pad) {
  const bool vec = cs == 1 && cols_valid % 8 == 0 && rs % 8 == 0 && off % 8 == 0 &&
                   (reinterpret_cast<unsigned long long>(src) & 15u) == 0;
  if (vec) {
    const int per_row = cols_pad / 8;
    for (int idx = threadIdx.x; idx < rows * per_row; idx += blockDim.x) {
      const int r = idx / per_row, c = (idx % per_row) * 8;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (r < rows_valid && c < cols_valid) v = *reinterpret_cast<const uint4*>(src + off + r * rs + c);
      *reinterpret_cast<uint4*>(dst + r * ld + c) = v;
    }
    return;
  }
  for (int idx = threadIdx.x; idx < rows * cols_pad; idx += blockDim.x) {
    const int r = idx / cols_pad, c = idx % cols_pad;
    T v;
    keel_from_f32(0.f, &v);
    if (r < rows_valid && c < cols_valid) v = src[off + r * rs + c * cs];
    dst[r * ld + c] = v;
  }
}

template <typename T>
__device__ __forceinline__ void Attention(const cl::AttentionArgs& a) {
  using namespace nvcuda;
  const cl::AttentionSmem L = cl::AttentionLayout(a.d, a.dv);
  const int dp = L.dp, dvp = L.dvp, ldq = L.ldq, ldv = L.ldv, lds = L.lds, ldp = L.ldp, ldo = L.ldo;
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);
  T* ks = qs + L.k;
  T* vs = qs + L.v;
  float* scores = reinterpret_cast<float*>(smem + L.scores);
  T* probs = reinterpret_cast<T*>(smem + L.probs);
  float* outs = reinterpret_cast<float*>(smem + L.out);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float* S = scores + warp * 16 * lds;
  T* P = probs + warp * 16 * ldp;
  float* O = outs + warp * 16 * ldo;

  // This block's batch entry and first query; the operands' offsets for it.
  const long long qblocks = (a.sq + kRows - 1) / kRows;
  long long b = blockIdx.x / qblocks;
  const int q0 = static_cast<int>(blockIdx.x % qblocks) * kRows;
  long long qo = a.qv.offset, ko = a.kv.offset, vo = a.vv.offset, mo = a.mv.offset, yo = a.yv.offset;
  for (int t = a.digits - 1; t >= 0; --t) {
    const long long digit = b % a.radix[t];
    b /= a.radix[t];
    qo += digit * a.qv.batch[t];
    ko += digit * a.kv.batch[t];
    vo += digit * a.vv.batch[t];
    mo += digit * a.mv.batch[t];
    yo += digit * a.yv.batch[t];
  }
  const T* q = static_cast<const T*>(a.q);
  const T* k = static_cast<const T*>(a.k);
  const T* v = static_cast<const T*>(a.v);
  keel_wait_for_previous_grid();
  LoadTile(qs, ldq, q, qo + q0 * a.qv.row, a.qv.row, a.qv.col, a.sq - q0, kRows, a.d, dp);
  for (int i = lane; i < 16 * dvp; i += 32) O[(i / dvp) * ldo + i % dvp] = 0.f;

  // Lane pair (2r, 2r+1) owns row r of the warp's 16: columns [32*half, 32*half + 32) of a step.
  const int row = lane >> 1, half = lane & 1;
  const int gi = q0 + warp * 16 + row;
  const float scale = a.scale;
  float m_run = -INFINITY, l_run = 0.f;
  for (int kb = 0; kb < a.sk; kb += kKeys) {
    __syncthreads();  // the previous step is done with ks / vs (and qs is loaded)
    LoadTile(ks, ldq, k, ko + kb * a.kv.row, a.kv.row, a.kv.col, a.sk - kb, kKeys, a.d, dp);
    LoadTile(vs, ldv, v, vo + kb * a.vv.row, a.vv.row, a.vv.col, a.sk - kb, kKeys, a.dv, dvp);
    __syncthreads();
    // S (16 x 64) = Q_warp (16 x dp) K^T (dp x 64): K's tile read column-major.
    for (int t = 0; t < kKeys / 16; ++t) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.f);
      for (int c = 0; c < dp; c += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
        wmma::load_matrix_sync(fa, qs + warp * 16 * ldq + c, ldq);
        wmma::load_matrix_sync(fb, ks + t * 16 * ldq + c, ldq);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(S + t * 16, acc, lds, wmma::mem_row_major);
    }
    __syncwarp();
    // Online softmax of this step's columns (f32).
    float s[32];
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const int col = half * 32 + j, key = kb + col;
      float x = -INFINITY;
      if (key < a.sk) {
        x = S[row * lds + col] * scale;
        if (a.mask != nullptr && gi < a.sq) {
          const long long mi = mo + gi * a.mv.row + key * a.mv.col;
          x += a.mask_f32 ? static_cast<const float*>(a.mask)[mi] : keel_to_f32(static_cast<const T*>(a.mask)[mi]);
        }
      }
      s[j] = x;
      mx = fmaxf(mx, x);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    const float m_new = fmaxf(m_run, mx);
    const float corr = m_run == -INFINITY ? 0.f : __expf(m_run - m_new);
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const float p = s[j] == -INFINITY ? 0.f : __expf(s[j] - m_new);
      T pt;
      keel_from_f32(p, &pt);
      sum += keel_to_f32(pt);  // the rounded value P V uses
      P[row * ldp + half * 32 + j] = pt;
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l_run = l_run * corr + sum;
    m_run = m_new;
    for (int c = half; c < dvp; c += 2) O[row * ldo + c] *= corr;
    __syncwarp();
    // O (16 x dvp) += P (16 x 64) V (64 x dvp).
    for (int t = 0; t < dvp / 16; ++t) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, O + t * 16, ldo, wmma::mem_row_major);
      for (int c = 0; c < kKeys; c += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, P + c, ldp);
        wmma::load_matrix_sync(fb, vs + c * ldv + t * 16, ldv);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(O + t * 16, acc, ldo, wmma::mem_row_major);
    }
    __syncwarp();
  }
  if (gi < a.sq) {
    T* y = static_cast<T*>(a.y);
    const float inv = 1.f / l_run;
    for (int c = half; c < a.dv; c += 2) keel_from_f32(O[row * ldo + c] * inv, y + yo + gi * a.yv.row + c * a.yv.col);
  }
}

}  // namespace keel_attention

extern "C" __global__ void __launch_bounds__(keel::cuda_lib::kAttentionThreads)
    keel_attention_f16(const keel::cuda_lib::AttentionArgs a) {
  keel_attention::Attention<__half>(a);
}

extern "C" __global__ void __launch_bounds__(keel::cuda_lib::kAttentionThreads)
    keel_attention_bf16(const keel::cuda_lib::AttentionArgs a) {
  keel_attention::Attention<__nv_bfloat16>(a);
}
