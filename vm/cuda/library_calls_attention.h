// vm/cuda/library_calls_attention.h — the "keel.attention" kernel's launch
// contract (serialization/library_ops.h): the argument block the kernel takes,
// its launch geometry and its trace name, one source for the kernel
// (vm/cuda/attention_kernel.cuh includes this), the VM (vm/cuda/attention_kernel.cc)
// and keelc --emit=cuda-host programs (pasted verbatim, as library_calls.h says).
//
// The kernel (FlashAttention-2's scheme): one block of 1, 2 or 4 warps per
// 16 queries per warp of one batch entry (AttentionWarps picks the most warps
// that still give kAttentionTargetBlocks blocks, so small batches spread over
// the SMs). Each warp keeps its 16 queries' Q fragments, its 16 x 64 scores
// and its 16 x dv f32 output in registers; per step of 64 keys the block
// copies K and V into shared memory (cp.async, two stages: the next step's
// copy overlaps this step's math), the warp computes its scores on the tensor
// cores (mma.sync m16n8k16, f32 accumulation), updates each row's running
// maximum and sum (online softmax, f32), rounds the probabilities to the data
// type straight into the next MMA's operand registers and adds P V to its
// output, rescaled by the change of the maximum. Nothing of size sq x sk is
// ever stored. Head widths are padded to 16 with zeros in shared memory.
//
// Thread-safety: pure functions and plain structs.
#ifndef KEEL_VM_CUDA_LIBRARY_CALLS_ATTENTION_H_
#define KEEL_VM_CUDA_LIBRARY_CALLS_ATTENTION_H_

#include "vm/cuda/library_calls.h"

#include <string>

namespace keel::cuda_lib {

[[maybe_unused]] constexpr int kAttentionDigits = 6;      // batch digits (library_ops.h kAttentionMaxBatchDigits)
[[maybe_unused]] constexpr int kAttentionMaxWidth = 128;  // d, dv (library_ops.h kAttentionMaxHeadWidth)
[[maybe_unused]] constexpr int kAttentionBlockKeys = 64;  // keys per step
[[maybe_unused]] constexpr int kAttentionMaxWarps = 4;     // 16 queries each
[[maybe_unused]] constexpr long long kAttentionTargetBlocks = 256;

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
  int mask_f32 = 0;  // the mask is f32 (else the data type)
};

#ifdef __CUDACC__
#define KEEL_ATTENTION_HD __host__ __device__
#else
#define KEEL_ATTENTION_HD
#endif

// One block's dynamic shared memory, the one description the kernel and the
// launch share: Q (16 rows per warp), then two stages of K and of V (64 keys
// each), all in the 2-byte data type. Widths are padded to the tensor-core
// tile (16) and rows get 8 elements more: rows stay 16-byte aligned for
// cp.async and ldmatrix, and ldmatrix's eight rows fall in different banks.
// Offsets and strides in elements.
struct AttentionSmem {
  int dp = 0, dvp = 0;   // padded widths
  int ldq = 0, ldv = 0;  // Q and K rows; V rows
  unsigned k = 0, v = 0;  // the first K and V stage (from Q's start)
  unsigned k_stage = 0, v_stage = 0;  // one stage's size
  unsigned bytes = 0;
};
KEEL_ATTENTION_HD inline AttentionSmem AttentionLayout(int d, int dv, int warps) {
  AttentionSmem s;
  s.dp = (d + 15) & ~15;
  s.dvp = (dv + 15) & ~15;
  s.ldq = s.dp + 8;
  s.ldv = s.dvp + 8;
  s.k_stage = static_cast<unsigned>(kAttentionBlockKeys * s.ldq);
  s.v_stage = static_cast<unsigned>(kAttentionBlockKeys * s.ldv);
  s.k = static_cast<unsigned>(16 * warps * s.ldq);
  s.v = s.k + 2u * s.k_stage;
  s.bytes = 2u * (s.v + 2u * s.v_stage);
  return s;
}

inline long long AttentionBatchCount(const AttentionArgs& a) {
  long long n = 1;
  for (int t = 0; t < a.digits; ++t) n *= a.radix[t];
  return n;
}

inline long long AttentionBlocksWith(const AttentionArgs& a, int warps) {
  return AttentionBatchCount(a) * ((a.sq + 16LL * warps - 1) / (16LL * warps));
}

// Warps per block: the most (up to 4, and no more than the queries need) that
// still give kAttentionTargetBlocks blocks, else one. A function of the
// attributes only, so the VM and host programs launch alike on every device.
inline int AttentionWarps(const AttentionArgs& a) {
  for (int w = kAttentionMaxWarps; w > 1; w /= 2) {
    if (16LL * (w / 2) < a.sq && AttentionBlocksWith(a, w) >= kAttentionTargetBlocks) return w;
  }
  return 1;
}

// One launch's geometry, from the attributes.
struct AttentionLaunch {
  unsigned long long blocks = 0;
  unsigned threads = 0, shared = 0;
};
inline AttentionLaunch AttentionLaunchOf(const AttentionArgs& a) {
  const int w = AttentionWarps(a);
  AttentionLaunch l;
  l.blocks = static_cast<unsigned long long>(AttentionBlocksWith(a, w));
  l.threads = 32u * static_cast<unsigned>(w);
  l.shared = AttentionLayout(a.d, a.dv, w).bytes;
  return l;
}

// The runtime kernel for data type `t` (f16 or bf16), null for another.
inline const char* AttentionKernelName(ElementType t) {
  return t == ElementType::kF16 ? "keel_attention_f16" : t == ElementType::kBF16 ? "keel_attention_bf16" : nullptr;
}

// The trace's name of one launch.
inline std::string AttentionCallName(ElementType t, const AttentionLaunch& l) {
  return std::string(AttentionKernelName(t)) + " grid=" + std::to_string(l.blocks) + " block=" +
         std::to_string(l.threads) + " shared=" + std::to_string(l.shared);
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
