// vm/cuda/attention_kernel.cuh — the "keel.attention" runtime kernels
// (keel_attention_f16, keel_attention_bf16): scaled dot-product attention over
// strided views with an online softmax, on the tensor cores through mma.sync.
// The algorithm, launch geometry and shared-memory layout are described in
// vm/cuda/library_calls_attention.h (AttentionArgs is the one parameter).
//
// Part of the VM's runtime module: vm/cuda/runtime_kernels.cu includes it (and
// keelc --emit=cuda-host programs hold it verbatim before that file). Needs
// sm_80+ (cp.async, ldmatrix, bf16 mma); keel_wait_for_previous_grid and the
// keel_to_f32 / keel_from_f32 conversions come from runtime_kernels.cu.
//
// Register fragments follow PTX's mma.m16n8k16 layouts: in a 16 x 8 f32 tile
// lane l holds rows l/4 and l/4 + 8, columns 2(l%4) and 2(l%4) + 1, which is
// also where the A operand of the next MMA wants them, so the probabilities
// go from the score accumulators to P V's operand without shared memory.
#include "vm/cuda/library_calls_attention.h"
#include "vm/cuda/mma_primitives.cuh"

namespace keel_attention {

namespace cl = keel::cuda_lib;
constexpr int kKeys = cl::kAttentionBlockKeys;
constexpr float kLog2e = 1.4426950408889634f;
using namespace keel_mma;  // NOLINT: the tensor-core primitives this kernel is written in

// 2^x in one instruction (ex2.approx, subnormal results flushed to 0: a
// probability that small is 0 in every 2-byte type but bf16, and negligible
// there); 2^-inf = 0.
__device__ __forceinline__ float Exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Both halves 1.0: the B operand that turns an MMA into row sums.
template <typename T>
__device__ __forceinline__ unsigned OnePair() {
  return Pack<T>(1.f, 1.f);
}

// One operand's view with this block's batch offset folded in.
struct Operand {
  long long offset, row, col;
  bool vec;  // whole 16-byte runs along a row: cp.async
};

__device__ __forceinline__ Operand OperandOf(const void* base, long long offset, const cl::AttentionView& v,
                                             int width) {
  const bool vec = v.col == 1 && width % 8 == 0 && v.row % 8 == 0 && offset % 8 == 0 &&
                   (reinterpret_cast<unsigned long long>(base) & 15u) == 0;
  return {offset, v.row, v.col, vec};
}

// rows x cols_pad elements from row first_row on into shared memory (row
// stride ld), zeros beyond rows_valid / cols_valid, by `threads` threads (a
// warp or a key group; this one is `thread`): asynchronous 16-byte copies
// where the operand allows, else element by element (visible after the next
// barrier). CHUNKS (DMAX / 8, a power of two <= 16) 16-byte slots per row:
// each thread keeps one column and walks the rows, so the loop is pointer
// increments, no divisions.
template <typename T, int CHUNKS>
__device__ __forceinline__ void LoadTile(T* dst, int ld, const T* src, const Operand& o, int first_row,
                                         int rows_valid, int rows, int cols_valid, int cols_pad, int thread,
                                         int threads) {
  const T* origin = src + o.offset + first_row * o.row;
  if (o.vec) {
    const int dr = threads / CHUNKS;
    const int c = (thread % CHUNKS) * 8;
    if (c >= cols_pad) return;
    int r = thread / CHUNKS;
    const T* from = origin + r * o.row + c;
    T* to = dst + r * ld + c;
    const long long from_step = dr * o.row;
    for (; r < rows; r += dr, from += from_step, to += dr * ld) {
      const bool valid = r < rows_valid && c < cols_valid;
      CopyAsync16(to, valid ? from : origin, valid);
    }
    return;
  }
  for (int idx = thread; idx < rows * cols_pad; idx += threads) {
    const int r = idx / cols_pad, c = idx % cols_pad;
    T v;
    keel_from_f32(0.f, &v);
    if (r < rows_valid && c < cols_valid) v = origin[r * o.row + c * o.col];
    dst[r * ld + c] = v;
  }
}

// The warp's 16 output rows (row stride ld in shared memory, cols valid
// columns) to Y from row first_row on, rows below rows_valid only: 16-byte
// stores where the view allows (CHUNKS as in LoadTile), else element by element.
template <typename T, int CHUNKS>
__device__ __forceinline__ void StoreTile(T* y, const Operand& o, int first_row, int rows_valid, const T* src, int ld,
                                          int cols, int lane) {
  T* origin = y + o.offset + first_row * o.row;
  if (o.vec) {
    constexpr int dr = 32 / CHUNKS;
    const int c = (lane % CHUNKS) * 8;
    if (c >= cols) return;
    for (int r = lane / CHUNKS; r < 16 && r < rows_valid; r += dr)
      *reinterpret_cast<uint4*>(origin + r * o.row + c) = *reinterpret_cast<const uint4*>(src + r * ld + c);
    return;
  }
  for (int idx = lane; idx < 16 * cols; idx += 32) {
    const int r = idx / cols, c = idx - r * cols;
    if (r < rows_valid) origin[r * o.row + c * o.col] = src[r * ld + c];
  }
}

// Adds the mask (in log2 units) to a step's scores of rows row0 / row1 (fragment
// layout).
template <typename T>
__device__ __forceinline__ void AddMask(float (&s)[kKeys / 8][4], const cl::AttentionArgs& a, long long mo, int kb,
                                     int row0, int row1, int c4) {
  const float* mask_f32 = static_cast<const float*>(a.mask);
  const T* mask_t = static_cast<const T*>(a.mask);
#pragma unroll
  for (int n = 0; n < kKeys / 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = kb + n * 8 + 2 * c4 + (e & 1), row = e < 2 ? row0 : row1;
      if (key < a.sk && row < a.sq) {
        const long long mi = mo + row * a.mv.row + key * a.mv.col;
        s[n][e] += kLog2e * (a.mask_f32 ? mask_f32[mi] : keel_to_f32(mask_t[mi]));
      }
    }
  }
}

// The key warps of a tile merge their parts. Each writes its output
// fragments, maxima and sums to its record (element e of n-tile n of lane l
// at (4n + e) * 32 + l: coalesced, free of bank conflicts; then the maxima
// and sums, 32 each per row half); then key warp kw combines the n-tiles kw,
// kw + KW, ... of its tile from every key warp's record and stores them.
template <typename T, int DMAX, bool EXACT>
__device__ __forceinline__ void MergeKeyWarps(const cl::AttentionArgs& a, const cl::AttentionSmem& L,
                                              const float (&o)[DMAX / 8][4], const float (&m_run)[2],
                                              const float (&l_run)[2], int tile, int kw, int q0, long long yo,
                                              int lane) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int kw_count = a.key_warps, tiles = (EXACT ? DMAX : L.dvp) / 8, stats = 4 * 32 * tiles;
  float* first = reinterpret_cast<float*>(smem) + tile * kw_count * L.merge_warp;
  __syncthreads();  // every warp is done with the K and V buffers
  float* mine = first + kw * L.merge_warp;
#pragma unroll
  for (int n = 0; n < DMAX / 8; ++n) {
    if (EXACT || n < tiles) {
#pragma unroll
      for (int e = 0; e < 4; ++e) mine[(4 * n + e) * 32 + lane] = o[n][e];
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    mine[stats + 32 * h + lane] = m_run[h];
    mine[stats + 64 + 32 * h + lane] = l_run[h];
  }
  __syncthreads();
  // Each key warp's weight per row half, and the rows' inverse sums (exp2 of
  // -inf is 0: a key warp whose keys were all masked drops out).
  float f[cl::kAttentionMaxKeyWarps][2], inv[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float m = -INFINITY;
#pragma unroll
    for (int w = 0; w < cl::kAttentionMaxKeyWarps; ++w) {
      if (w < kw_count) m = fmaxf(m, first[w * L.merge_warp + stats + 32 * h + lane]);
    }
    const float m_use = m == -INFINITY ? 0.f : m;
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < cl::kAttentionMaxKeyWarps; ++w) {
      f[w][h] = w < kw_count ? Exp2(first[w * L.merge_warp + stats + 32 * h + lane] - m_use) : 0.f;
      if (w < kw_count) sum += f[w][h] * first[w * L.merge_warp + stats + 64 + 32 * h + lane];
    }
    inv[h] = 1.f / sum;
  }
  T* y = static_cast<T*>(a.y);
  const bool pairs = a.yv.col == 1 && (reinterpret_cast<unsigned long long>(y) & 3u) == 0;
  const int g = lane >> 2, c4 = lane & 3;
#pragma unroll 1
  for (int n = kw; n < tiles; n += kw_count) {
    float out[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int w = 0; w < cl::kAttentionMaxKeyWarps; ++w) {
      if (w < kw_count) {
#pragma unroll
        for (int e = 0; e < 4; ++e) out[e] += f[w][e >> 1] * first[w * L.merge_warp + (4 * n + e) * 32 + lane];
      }
    }
    const int c = n * 8 + 2 * c4;
    if (c >= a.dv) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = q0 + g + 8 * h;
      if (row >= a.sq) continue;
      const float y0 = out[2 * h] * inv[h], y1 = out[2 * h + 1] * inv[h];
      const long long at = yo + row * a.yv.row + c * a.yv.col;
      if (pairs && c + 1 < a.dv && (at & 1) == 0) {
        *reinterpret_cast<unsigned*>(y + at) = Pack<T>(y0, y1);
      } else {
        keel_from_f32(y0, y + at);
        if (c + 1 < a.dv) keel_from_f32(y1, y + at + a.yv.col);
      }
    }
  }
}

// This thread's share of one operand's K or V rows per step, when the operand
// allows 16-byte copies: the addresses are set up once, so a step costs a
// pointer increment and one predicated cp.async per row (the general
// LoadTile recomputed them per step, ~75 instructions a call).
template <typename T, int CHUNKS>
struct StepCopy {
  const T* src;          // row `first` of the group's first step, column c
  T* dst;                // the same row and column in stage 0
  long long step_rows;   // elements from one of the group's steps to its next
  long long row_stride;  // elements from one of this thread's rows to its next (dr rows)
  int first, dr, c;
  bool on;  // c is a column this thread copies (below the padded width)

  __device__ __forceinline__ void Init(T* stage0, int ld, const T* base, const Operand& o, int first_step_row,
                                       int group_steps, int cols_pad, int thread, int threads) {
    dr = threads / CHUNKS;
    c = (thread % CHUNKS) * 8;
    first = thread / CHUNKS;
    on = c < cols_pad;
    src = base + o.offset + static_cast<long long>(first_step_row + first) * o.row + c;
    dst = stage0 + first * ld + c;
    step_rows = static_cast<long long>(group_steps) * kKeys * o.row;
    row_stride = static_cast<long long>(dr) * o.row;
  }
  // Step `i` of the group (its first key kb) into the stage at `to` (elements
  // from stage 0); zeros for rows past sk and columns past cols_valid.
  __device__ __forceinline__ void Issue(int i, int to, int ld, int kb, int sk, int cols_valid) const {
    if (!on) return;
    const T* from = src + i * step_rows;
    T* into = dst + to;
    const bool col = c < cols_valid;
#pragma unroll 2
    for (int r = first; r < kKeys; r += dr, from += row_stride, into += dr * ld) {
      const bool valid = col && kb + r < sk;
      CopyAsync16(into, valid ? from : src, valid);
    }
  }
};

// DMAX (64 or 128) bounds the padded head widths: it sizes the register
// arrays. EXACT: d = dv = DMAX, so no tile of the widths is padding (the
// predicates on the widths fold away) and the shared-memory row strides are
// constants (the fragment loads take immediate offsets).
template <typename T, int DMAX, bool EXACT>
__device__ __forceinline__ void Attention(const cl::AttentionArgs& a) {
  const int kw_count = a.key_warps, kw_shift = cl::AttentionKeyWarpShift(a), stages = cl::AttentionStages(a);
  const cl::AttentionSmem L = cl::AttentionLayout(a.d, a.dv, stages, kw_count);
  const int dp = EXACT ? DMAX : L.dp, dvp = EXACT ? DMAX : L.dvp;
  const int ldq = EXACT ? DMAX + 8 : L.ldq, ldv = EXACT ? DMAX + 8 : L.ldv;  // AttentionLayout's, as constants
  extern __shared__ __align__(128) unsigned char smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  T* qs = reinterpret_cast<T*>(smem) + warp * L.q_warp;
  const int tiles_per_block = cl::kAttentionWarps >> kw_shift;
  const int tile = warp >> kw_shift, kw = warp & (kw_count - 1);
  // The key group: the tiles' warps with this kw copy its K and V rows together.
  T* ks0 = reinterpret_cast<T*>(smem) + L.kv + kw * L.group;
  T* vs0 = ks0 + L.v;
  const int group_thread = tile * 32 + lane, group_threads = 32 * tiles_per_block;

  // This block's batch entry and this warp's first query; the operands' offsets.
  // (32-bit arithmetic: the grid and every radix are below 2^31; divisions by
  // AttentionPlan's multipliers.)
  unsigned b = AttentionDivide(blockIdx.x, a.query_blocks);
  const int q0 = static_cast<int>(blockIdx.x - b * a.query_blocks.d) * 16 * tiles_per_block + tile * 16;
  long long qo = a.qv.offset, ko = a.kv.offset, vo = a.vv.offset, mo = a.mv.offset, yo = a.yv.offset;
#pragma unroll 1
  for (int t = a.digits - 1; t >= 0; --t) {
    const unsigned next = AttentionDivide(b, a.radix_divisor[t]);
    const long long digit = b - next * a.radix_divisor[t].d;
    b = next;
    qo += digit * a.qv.batch[t];
    ko += digit * a.kv.batch[t];
    vo += digit * a.vv.batch[t];
    mo += digit * a.mv.batch[t];
    yo += digit * a.yv.batch[t];
  }
  const T* q = static_cast<const T*>(a.q);
  const T* k = static_cast<const T*>(a.k);
  const T* v = static_cast<const T*>(a.v);
  const Operand qop = OperandOf(q, qo, a.qv, a.d), kop = OperandOf(k, ko, a.kv, a.d),
                vop = OperandOf(v, vo, a.vv, a.dv);

  // Fragment coordinates: rows g and g + 8 of the warp's 16, columns 2 c4 (+1) of each 8.
  const int g = lane >> 2, c4 = lane & 3;
  const int row0 = q0 + g, row1 = row0 + 8;
  // ldmatrix addressing: lane l points at row l%8 of matrix l/8; each lane's
  // offset within a stage is fixed, the fragments' are constants from it.
  const int mat = lane >> 3, mrow = lane & 7;
  const int k_lane = ((mat >> 1) * 8 + mrow) * ldq + (mat & 1) * 8;
  const int v_lane = ((mat & 1) * 8 + mrow) * ldv + (mat >> 1) * 8;
  // Scores in log2 units (exp2 below). Without a mask, and with a positive
  // scale (the maximum then commutes with it), the scale rides in the
  // exponent's FFMA; otherwise the scores are scaled (and masked) in place.
  const bool scale_in_exp = a.mask == nullptr && a.scale > 0.f;
  const float scale = a.scale * kLog2e;
  const float exp_scale = scale_in_exp ? scale : 1.f;

  float o[DMAX / 8][4];
#pragma unroll
  for (int n = 0; n < DMAX / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  // The rows' running sums, as an MMA accumulator: P times a column of ones
  // adds exactly the rounded probabilities that P V multiplies, in f32, and
  // every lane of a quad holds its rows' whole sums (no shuffles).
  float l_acc[4] = {0.f, 0.f, 0.f, 0.f};
  float m_run[2] = {-INFINITY, -INFINITY};
  const unsigned ones = OnePair<T>();

  // The group's steps: kw, kw + KW, ... (every warp of the group takes them
  // all, also a tile past the queries: its zero rows are never stored).
  const int steps = cl::AttentionSteps(a.sk);
  const int mine = (steps - kw + kw_count - 1) >> kw_shift;
  // A tile wholly past the queries (the block's last tiles when the query
  // count is not a multiple of its 16 x tiles) only helps its group copy K
  // and V and meets it at the barriers: no math.
  const bool live = q0 < a.sq;
  const bool fast_copies = kop.vec && vop.vec;
  StepCopy<T, DMAX / 8> kcopy, vcopy;
  if (fast_copies) {
    kcopy.Init(ks0, ldq, k, kop, kw * kKeys, kw_count, dp, group_thread, group_threads);
    vcopy.Init(vs0, ldv, v, vop, kw * kKeys, kw_count, dvp, group_thread, group_threads);
  }
  const int k_stage = kKeys * ldq, v_stage = kKeys * ldv;
  auto load_keys = [&](int i) {
    const int kb = (kw + i * kw_count) * kKeys, stage = stages == 2 ? i & 1 : 0;
    if (fast_copies) {
      kcopy.Issue(i, stage * k_stage, ldq, kb, a.sk, a.d);
      vcopy.Issue(i, stage * v_stage, ldv, kb, a.sk, a.dv);
      return;
    }
    LoadTile<T, DMAX / 8>(ks0 + stage * k_stage, ldq, k, kop, kb, a.sk - kb, kKeys, a.d, dp, group_thread,
                          group_threads);
    LoadTile<T, DMAX / 8>(vs0 + stage * v_stage, ldv, v, vop, kb, a.sk - kb, kKeys, a.dv, dvp, group_thread,
                          group_threads);
  };
  // The group's warps meet: their copies have landed and are visible, and all
  // are done with the step before (whose buffers the next copy reuses).
  auto group_sync = [&] {
    // (Barrier ids 1 and 2 as immediates: with four warps a block, a group of
    // several warps means at most two key warps.)
    static_assert(cl::kAttentionWarps == 4, "two key groups at most when a group has several warps");
    if (tiles_per_block > 1 && kw == 0) {
      asm volatile("bar.sync 1, %0;\n" ::"r"(group_threads) : "memory");
    } else if (tiles_per_block > 1) {
      asm volatile("bar.sync 2, %0;\n" ::"r"(group_threads) : "memory");
    } else {
      __syncwarp();
    }
  };
  keel_wait_for_previous_grid();
  // A key warp may have no step (AttentionPlan can give a tile more key warps
  // than steps; it is then alone in its group): it copies nothing, so no copy
  // can land in the merge's records after the loop.
  if (mine > 0) {
    if (live) LoadTile<T, DMAX / 8>(qs, ldq, q, qop, q0, a.sq - q0, 16, a.d, dp, lane, 32);
    load_keys(0);
  }
  CommitCopies();

  // Every key group meets as often as the first (which has the most steps):
  // one with fewer steps (7 steps over 2 key warps) meets once more with
  // nothing to do. Its named barrier is its own, so this changes nothing on
  // the GPU; but compute-sanitizer's racecheck pairs barriers by count, not by
  // id, and with unequal counts reported the key warps' merge as racing.
  const int meets = (steps + kw_count - 1) >> kw_shift;
  unsigned qf[DMAX / 16][4];
  for (int i = 0; i < meets; ++i) {
    WaitAllCopies();
    group_sync();
    if (i + 1 < mine) load_keys(i + 1);
    CommitCopies();
    if (!live || i >= mine) continue;
    const int stage = stages == 2 ? i & 1 : 0;
    const T* ks = ks0 + stage * k_stage + k_lane;
    const T* vs = vs0 + stage * v_stage + v_lane;
    if (i == 0) {
      // A fragments of Q: matrices (rows 0-7 | 8-15) x (columns 0-7 | 8-15).
#pragma unroll
      for (int kc = 0; kc < DMAX / 16; ++kc) {
        if (EXACT || kc * 16 < dp) LoadMatrices(qf[kc], qs + ((mat & 1) * 8 + mrow) * ldq + kc * 16 + (mat >> 1) * 8);
      }
    }
    // S (16 x 32) = Q K^T. K's rows are B's columns: matrices (keys 0-7 | 8-15) x (d 0-7 | 8-15).
    float s[kKeys / 8][4];
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
    for (int kc = 0; kc < DMAX / 16; ++kc) {
      if (EXACT || kc * 16 < dp) {
#pragma unroll
        for (int np = 0; np < kKeys / 16; ++np) {
          unsigned bk[4];
          LoadMatrices(bk, ks + np * 16 * ldq + kc * 16);
          Mma<T>(s[2 * np], qf[kc], bk[0], bk[1]);
          Mma<T>(s[2 * np + 1], qf[kc], bk[2], bk[3]);
        }
      }
    }
    // Scale and mask (when the scale is not in the exponent) and the keys past
    // the end (each in its own loop, skipped as a whole where it does not
    // apply: the hot path stays short for the instruction cache); each row's
    // maximum over the quad's lanes, in the exponent's units.
    const int kb = (kw + i * kw_count) * kKeys;
    if (!scale_in_exp) {
#pragma unroll
      for (int n = 0; n < kKeys / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) s[n][e] *= scale;
      }
      if (a.mask != nullptr) AddMask<T>(s, a, mo, kb, row0, row1, c4);
    }
    if (kb + kKeys > a.sk) {
#pragma unroll
      for (int n = 0; n < kKeys / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (kb + n * 8 + 2 * c4 + (e & 1) >= a.sk) s[n][e] = -INFINITY;
        }
      }
    }
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n) {
      mx[0] = fmaxf(mx[0], fmaxf(s[n][0], s[n][1]));
      mx[1] = fmaxf(mx[1], fmaxf(s[n][2], s[n][3]));
    }
    // exp2 of -inf is 0: a masked score drops out, and so does the old output
    // when the maximum was -inf. Only a maximum still -inf (every score so far
    // masked) is replaced by 0, so that no -inf - -inf makes a NaN.
    float corr[2], m_use[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
      const float m_new = fmaxf(m_run[h], mx[h] * exp_scale);
      m_use[h] = m_new == -INFINITY ? 0.f : m_new;
      corr[h] = Exp2(m_run[h] - m_use[h]);
      m_run[h] = m_new;
    }
    // Probabilities, rounded to T, as A fragments of P V: keys 16 kc + (0-7 | 8-15).
    unsigned pf[kKeys / 16][4];
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n) {
      float p[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) p[e] = Exp2(fmaf(s[n][e], exp_scale, -m_use[e >> 1]));
      pf[n >> 1][(n & 1) * 2] = Pack<T>(p[0], p[1]);
      pf[n >> 1][(n & 1) * 2 + 1] = Pack<T>(p[2], p[3]);
    }
#pragma unroll
    for (int n = 0; n < DMAX / 8; ++n) {
      o[n][0] *= corr[0];
      o[n][1] *= corr[0];
      o[n][2] *= corr[1];
      o[n][3] *= corr[1];
    }
    l_acc[0] *= corr[0];
    l_acc[1] *= corr[0];
    l_acc[2] *= corr[1];
    l_acc[3] *= corr[1];
    // O (16 x dv) += P V. V's rows are B's rows: transposed matrices (keys 0-7 | 8-15) x (dv 0-7 | 8-15).
#pragma unroll
    for (int kc = 0; kc < kKeys / 16; ++kc) {
      Mma<T>(l_acc, pf[kc], ones, ones);
#pragma unroll
      for (int np = 0; np < DMAX / 16; ++np) {
        if (EXACT || np * 16 < dvp) {
          unsigned bv[4];
          LoadMatricesTransposed(bv, vs + kc * 16 * ldv + np * 16);
          Mma<T>(o[2 * np], pf[kc], bv[0], bv[1]);
          Mma<T>(o[2 * np + 1], pf[kc], bv[2], bv[3]);
        }
      }
    }
  }
  // Every column of the sums' accumulator holds its row's sum.
  const float l_run[2] = {l_acc[0], l_acc[2]};
  if (kw_count == 1) {
    if (!live) return;
    // The rows, divided by their sums and rounded, go through the warp's own
    // Q rows (its copies have all landed) and leave in 16-byte runs: a short
    // epilogue instead of one guarded store per register pair.
    __syncwarp();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float inv = 1.f / l_run[h];
#pragma unroll
      for (int n = 0; n < DMAX / 8; ++n) {
        if (EXACT || n * 8 < dvp) {
          *reinterpret_cast<unsigned*>(qs + (g + 8 * h) * ldv + n * 8 + 2 * c4) =
              Pack<T>(o[n][2 * h] * inv, o[n][2 * h + 1] * inv);
        }
      }
    }
    __syncwarp();
    StoreTile<T, DMAX / 8>(static_cast<T*>(a.y), OperandOf(a.y, yo, a.yv, a.dv), q0, a.sq - q0, qs, ldv, a.dv, lane);
    return;
  }
  MergeKeyWarps<T, DMAX, EXACT>(a, L, o, m_run, l_run, tile, kw, q0, yo, lane);
}

}  // namespace keel_attention

// keel_attention_{f16,bf16}_SUFFIX for every width class (library_calls_attention.h).
// Widths up to 64 are held to 128 registers, four blocks an SM (146 otherwise,
// three: a few bytes spill, and ViT-B/16's attention at batch 32 took 3%
// less time, H100); the 128-wide kernels take what they need (two blocks).
#define KEEL_ATTENTION_KERNEL(TYPE, NAME, DMAX, EXACT)                                          \
  extern "C" __global__ void __launch_bounds__(32 * keel::cuda_lib::kAttentionWarps, DMAX == 64 ? 4 : 1) \
      NAME(const keel::cuda_lib::AttentionArgs a) {                                              \
    keel_attention::Attention<TYPE, DMAX, EXACT>(a);                                             \
  }
#define KEEL_ATTENTION_KERNELS(SUFFIX, DMAX, EXACT)                                 \
  KEEL_ATTENTION_KERNEL(__half, keel_attention_f16_##SUFFIX, DMAX, EXACT)           \
  KEEL_ATTENTION_KERNEL(__nv_bfloat16, keel_attention_bf16_##SUFFIX, DMAX, EXACT)
KEEL_ATTENTION_WIDTH_CLASSES(KEEL_ATTENTION_KERNELS)
#undef KEEL_ATTENTION_KERNELS
#undef KEEL_ATTENTION_KERNEL
