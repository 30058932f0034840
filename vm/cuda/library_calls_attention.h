// vm/cuda/library_calls_attention.h — the "keel.attention" kernel's launch
// contract (serialization/library_ops.h): the argument block the kernel takes,
// its launch geometry and its trace name, one source for the kernel
// (vm/cuda/attention_kernel.cuh includes this), the VM (vm/cuda/attention_kernel.cc)
// and keelc --emit=cuda-host programs (pasted verbatim, as library_calls.h says).
//
// The kernel (FlashAttention-2's scheme): a block of four warps; each warp
// owns one tile of 16 queries of one batch entry and a share of its keys: with
// key_warps = KW > 1 the KW warps of a tile take every KW-th step of 32 keys
// and merge their results at the end (a small batch then still gives enough
// warps, and each warp's chain of dependent steps is shorter). The warps of
// the block's tiles that take the same steps (a key group) copy each step's
// K and V rows into shared memory together (cp.async, two stages when there
// is more than one step, so the next copy overlaps this step's math) and meet
// at a named barrier once a step. A warp keeps its Q fragments, its 16 x 32
// scores and its 16 x dv f32 output in registers, computes the scores on the
// tensor cores (mma.sync m16n8k16, f32 accumulation), updates each row's
// running maximum (online softmax, f32), rounds the probabilities to the data
// type straight into the next MMA's operand registers and adds P V to its
// output and P times ones to the rows' sums (so the sums count exactly what
// P V multiplies), both rescaled by the change of the maximum. Nothing of size
// sq x sk is ever stored. Head widths are padded to 16 with zeros in shared
// memory.
//
// Thread-safety: pure functions and plain structs.
#ifndef KEEL_VM_CUDA_LIBRARY_CALLS_ATTENTION_H_
#define KEEL_VM_CUDA_LIBRARY_CALLS_ATTENTION_H_

#include "vm/cuda/library_calls.h"

#include <string>

namespace keel::cuda_lib {

[[maybe_unused]] constexpr int kAttentionDigits = 6;      // batch digits (library_ops.h kAttentionMaxBatchDigits)
[[maybe_unused]] constexpr int kAttentionMaxWidth = 128;  // d, dv (library_ops.h kAttentionMaxHeadWidth)
[[maybe_unused]] constexpr int kAttentionBlockKeys = 32;  // keys per step
[[maybe_unused]] constexpr int kAttentionWarps = 4;       // per block
[[maybe_unused]] constexpr int kAttentionMaxKeyWarps = 4;
[[maybe_unused]] constexpr long long kAttentionTargetWarps = 1024;

// Division by a divisor known at launch time without the integer divide
// (a few dozen instructions on the GPU): q = (n * mul) >> (32 + shift) for
// every n < 2^31, with mul = ceil(2^(31 + l) / d), l = ceil(log2 d) (Granlund
// and Montgomery's method); mul = 0 means d = 1. AttentionPlan sets them.
struct AttentionDivisor {
  unsigned d = 1, mul = 0, shift = 0;
};
inline AttentionDivisor MakeAttentionDivisor(unsigned d) {
  AttentionDivisor v;
  v.d = d;
  if (d <= 1) return v;
  unsigned l = 0;
  while ((1ull << l) < d) ++l;
  v.mul = static_cast<unsigned>(((1ull << (31 + l)) + d - 1) / d);
  v.shift = l - 1;
  return v;
}
#ifdef __CUDACC__
__host__ __device__ __forceinline__
#else
inline
#endif
unsigned AttentionDivide(unsigned n, const AttentionDivisor& v) {
#ifdef __CUDA_ARCH__
  const unsigned hi = __umulhi(n, v.mul);
#else
  const unsigned hi = static_cast<unsigned>((static_cast<unsigned long long>(n) * v.mul) >> 32);
#endif
  return v.mul == 0 ? n : hi >> v.shift;
}

// One operand's view in elements: offset + sum digit_t * batch[t] + r * row + c * col.
struct AttentionView {
  long long offset = 0;
  long long batch[kAttentionDigits] = {};
  long long row = 0, col = 0;
};

// The kernel's single parameter (passed by value).
struct AttentionArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* mask = nullptr;  // null: no mask
  void* y = nullptr;
  AttentionView qv, kv, vv, mv, yv;
  long long radix[kAttentionDigits] = {};  // batch digits, outer first
  int digits = 0;
  int sq = 0, sk = 0, d = 0, dv = 0;
  float scale = 1.f;
  int mask_f32 = 0;   // the mask is f32 (else the data type)
  // Set by AttentionPlan: warps sharing one query tile's keys (1, 2 or 4), and
  // the block index's decomposition: query blocks per batch entry, then the
  // batch digits.
  int key_warps = 1;
  AttentionDivisor query_blocks, radix_divisor[kAttentionDigits];
};

#ifdef __CUDACC__
#define KEEL_ATTENTION_HD __host__ __device__
#else
#define KEEL_ATTENTION_HD
#endif

// The dynamic shared memory, the one description the kernel and the launch
// share (offsets and strides in elements of the 2-byte data type): each
// warp's 16 Q rows (the same rows later stage its output), then per key
// group (the warps that share key_warps' share of the keys: one per tile of
// the block) `stages` buffers of 32 K rows, then as many of 32 V rows; the
// group's warps copy them together. After the last step the bytes hold each
// warp's f32 output fragments, maxima and sums for the key warps' merge.
// Widths are padded to the tensor-core tile (16) and rows get 8 elements
// more: rows stay 16-byte aligned for cp.async and ldmatrix, and ldmatrix's
// eight rows fall in different banks.
struct AttentionSmem {
  int dp = 0, dvp = 0;   // padded widths
  int ldq = 0, ldv = 0;  // Q and K rows; V rows
  unsigned q_warp = 0;                // one warp's Q rows (16 x max(ldq, ldv): also its staged output)
  unsigned kv = 0;                    // the first group's K/V buffers (after every warp's Q rows)
  unsigned k_stage = 0, v_stage = 0;  // one stage's size
  unsigned v = 0;                     // a group's first V stage, from the group's start
  unsigned group = 0;                 // one group's K/V buffers
  unsigned merge_warp = 0;            // floats of one warp's merge record: dvp / 2 fragments of 32 lanes, 4 rows of m, l
  unsigned bytes = 0;                 // the block's
};
KEEL_ATTENTION_HD inline AttentionSmem AttentionLayout(int d, int dv, int stages, int key_warps) {
  AttentionSmem s;
  s.dp = (d + 15) & ~15;
  s.dvp = (dv + 15) & ~15;
  s.ldq = s.dp + 8;
  s.ldv = s.dvp + 8;
  s.q_warp = static_cast<unsigned>(16 * (s.ldq > s.ldv ? s.ldq : s.ldv));
  s.kv = s.q_warp * static_cast<unsigned>(kAttentionWarps);
  s.k_stage = static_cast<unsigned>(kAttentionBlockKeys * s.ldq);
  s.v_stage = static_cast<unsigned>(kAttentionBlockKeys * s.ldv);
  s.v = static_cast<unsigned>(stages) * s.k_stage;
  s.group = s.v + static_cast<unsigned>(stages) * s.v_stage;
  s.merge_warp = static_cast<unsigned>(32 * (s.dvp / 2 + 4));
  const unsigned main = 2u * (s.kv + s.group * static_cast<unsigned>(key_warps));
  const unsigned merge = key_warps > 1 ? 4u * s.merge_warp * static_cast<unsigned>(kAttentionWarps) : 0u;
  s.bytes = main > merge ? main : merge;
  return s;
}

inline long long AttentionBatchCount(const AttentionArgs& a) {
  long long n = 1;
  for (int t = 0; t < a.digits; ++t) n *= a.radix[t];
  return n;
}

// Steps of 32 keys, and a warp's share of them (the most any warp has).
KEEL_ATTENTION_HD inline int AttentionSteps(int sk) { return (sk + kAttentionBlockKeys - 1) / kAttentionBlockKeys; }
// log2 of key_warps (1, 2 or 4): the kernel divides by shifts.
static_assert(kAttentionMaxKeyWarps == 4, "AttentionKeyWarpShift's formula holds for 1, 2 and 4 only");
KEEL_ATTENTION_HD inline int AttentionKeyWarpShift(const AttentionArgs& a) { return a.key_warps >> 1; }
KEEL_ATTENTION_HD inline int AttentionStages(const AttentionArgs& a) {
  return (AttentionSteps(a.sk) + a.key_warps - 1) >> AttentionKeyWarpShift(a) > 1 ? 2 : 1;
}

// One launch's geometry.
struct AttentionLaunch {
  unsigned long long blocks = 0;
  unsigned threads = 0, shared = 0;
};

// Sets a->key_warps, the most (up to 4, no more than the steps) that keep the
// warps within kAttentionTargetWarps, and returns the launch: a function of the
// attributes only, so the VM and host programs launch alike on every device.
inline AttentionLaunch AttentionPlan(AttentionArgs* a) {
  const long long tiles = AttentionBatchCount(*a) * ((a->sq + 15) / 16);
  const int steps = AttentionSteps(a->sk);
  int kw = 1;
  while (kw < kAttentionMaxKeyWarps && kw < steps && 2 * kw * tiles <= kAttentionTargetWarps) kw *= 2;
  a->key_warps = kw;
  const long long tiles_per_block = kAttentionWarps / kw;
  const long long query_blocks = (a->sq + 16 * tiles_per_block - 1) / (16 * tiles_per_block);
  a->query_blocks = MakeAttentionDivisor(static_cast<unsigned>(query_blocks));
  for (int t = 0; t < a->digits; ++t) a->radix_divisor[t] = MakeAttentionDivisor(static_cast<unsigned>(a->radix[t]));
  AttentionLaunch l;
  l.blocks = static_cast<unsigned long long>(AttentionBatchCount(*a) * query_blocks);
  l.threads = 32u * kAttentionWarps;
  l.shared = AttentionLayout(a->d, a->dv, AttentionStages(*a), kw).bytes;
  return l;
}

// The runtime kernels: one per data type and head-width class, each sized
// for its widths (a kernel's registers are those of its widest path: one
// kernel for every width held 168 registers a thread, three blocks an SM,
// where the width-64 code runs four). X(SUFFIX, DMAX, EXACT):
// DMAX bounds the padded widths; EXACT means d = dv = DMAX (no predicates on
// the widths). The first class that takes (d, dv) runs it.
#define KEEL_ATTENTION_WIDTH_CLASSES(X) X(d64, 64, true) X(le64, 64, false) X(le128, 128, false)
#define KEEL_ATTENTION_CLASS_TAKES(SUFFIX, DMAX, EXACT) \
  if (EXACT ? d == DMAX && dv == DMAX : d <= DMAX && dv <= DMAX) return #SUFFIX;
inline const char* AttentionWidthClass(int d, int dv) {
  KEEL_ATTENTION_WIDTH_CLASSES(KEEL_ATTENTION_CLASS_TAKES)
  return nullptr;
}
#undef KEEL_ATTENTION_CLASS_TAKES

// The runtime kernel for data type `t` (f16 or bf16) and head widths d, dv
// (at most kAttentionMaxWidth), e.g. "keel_attention_f16_d64"; empty for
// another type.
inline std::string AttentionKernelName(ElementType t, int d, int dv) {
  const char* type = t == ElementType::kF16 ? "f16" : t == ElementType::kBF16 ? "bf16" : nullptr;
  const char* width = AttentionWidthClass(d, dv);
  if (type == nullptr || width == nullptr) return "";
  return std::string("keel_attention_") + type + "_" + width;
}

// The trace's name of one launch.
inline std::string AttentionCallName(const std::string& kernel, const AttentionLaunch& l) {
  return kernel + " grid=" + std::to_string(l.blocks) + " block=" + std::to_string(l.threads) +
         " shared=" + std::to_string(l.shared);
}

// Whether the view stays inside an argument of `elements` elements for every
// batch entry, `rows` rows and `cols` columns (in 128-bit arithmetic: the
// attributes come from a file).
inline bool AttentionViewInBounds(const AttentionArgs& a, const AttentionView& v, long long rows, long long cols,
                                  long long elements) {
  __int128 lo = v.offset, hi = v.offset;
  auto span = [&](long long extent, long long stride) {
    (stride < 0 ? lo : hi) += static_cast<__int128>(extent - 1) * stride;
  };
  for (int t = 0; t < a.digits; ++t) span(a.radix[t], v.batch[t]);
  span(rows, v.row);
  span(cols, v.col);
  return lo >= 0 && hi < elements;
}

}  // namespace keel::cuda_lib

#endif  // KEEL_VM_CUDA_LIBRARY_CALLS_ATTENTION_H_
