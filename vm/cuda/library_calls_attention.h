// vm/cuda/library_calls_attention.h — the "keel.attention" kernel's launch
// contract (serialization/library_ops.h): the argument block the kernel takes,
// its launch geometry and its trace name, one source for the kernel
// (vm/cuda/attention_kernel.cuh includes this), the VM (vm/cuda/attention_kernel.cc)
// and keelc --emit=cuda-host programs (pasted verbatim, as library_calls.h says).
//
// The kernel: one block of kAttentionThreads threads (4 warps) per 64 queries
// of one batch entry; each warp owns 16 queries. Per step of 64 keys it loads
// K and V into shared memory, computes the warp's 16x64 scores on the tensor
// cores (WMMA, f32 accumulation), updates each row's running maximum and sum
// (online softmax, f32), rounds the probabilities to the data type and adds
// P V to its f32 output rows in shared memory, rescaled by the change of the
// maximum. Nothing of size sq x sk is ever stored. Head widths are padded to
// 16 with zeros in shared memory.
//
// Thread-safety: pure functions and plain structs.
#ifndef KEEL_VM_CUDA_LIBRARY_CALLS_ATTENTION_H_
#define KEEL_VM_CUDA_LIBRARY_CALLS_ATTENTION_H_

#include "vm/cuda/library_calls.h"

#include <string>

namespace keel::cuda_lib {

[[maybe_unused]] constexpr int kAttentionDigits = 6;      // batch digits (library_ops.h kAttentionMaxBatchDigits)
[[maybe_unused]] constexpr int kAttentionMaxWidth = 128;  // d, dv (library_ops.h kAttentionMaxHeadWidth)
[[maybe_unused]] constexpr int kAttentionBlockRows = 64;  // queries per block
[[maybe_unused]] constexpr int kAttentionBlockKeys = 64;  // keys per step
[[maybe_unused]] constexpr unsigned kAttentionThreads = 128;

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
// launch share: Q (64 rows), K and V (64 keys) tiles in the 2-byte data type,
// then per warp 16 rows of f32 scores, data-type probabilities and f32 output.
// Widths are padded to the tensor-core tile (16); rows get 8 (2-byte) or 4
// (f32) elements more, which keeps every WMMA tile 32-byte aligned and spreads
// rows over the banks. Offsets and strides in elements of each region's type.
struct AttentionSmem {
  int dp = 0, dvp = 0;              // padded widths
  int ldq = 0, ldv = 0;             // Q and K rows; V rows
  int lds = 0, ldp = 0, ldo = 0;    // score, probability and output rows
  unsigned k = 0, v = 0;            // K and V tiles (2-byte elements from Q's start)
  unsigned scores = 0, probs = 0, out = 0;  // bytes from the start
  unsigned bytes = 0;
};
KEEL_ATTENTION_HD inline AttentionSmem AttentionLayout(int d, int dv) {
  AttentionSmem s;
  s.dp = (d + 15) & ~15;
  s.dvp = (dv + 15) & ~15;
  s.ldq = s.dp + 8;
  s.ldv = s.dvp + 8;
  s.lds = kAttentionBlockKeys + 4;
  s.ldp = kAttentionBlockKeys + 8;
  s.ldo = s.dvp + 4;
  s.k = static_cast<unsigned>(kAttentionBlockRows * s.ldq);
  s.v = s.k + static_cast<unsigned>(kAttentionBlockKeys * s.ldq);
  const unsigned warps = kAttentionThreads / 32;
  s.scores = 2u * (s.v + static_cast<unsigned>(kAttentionBlockKeys * s.ldv));
  s.probs = s.scores + 4u * warps * 16u * static_cast<unsigned>(s.lds);
  s.out = s.probs + 2u * warps * 16u * static_cast<unsigned>(s.ldp);
  s.bytes = s.out + 4u * warps * 16u * static_cast<unsigned>(s.ldo);
  return s;
}

inline unsigned AttentionSharedBytes(int d, int dv) { return AttentionLayout(d, dv).bytes; }

inline long long AttentionBatchCount(const AttentionArgs& a) {
  long long n = 1;
  for (int t = 0; t < a.digits; ++t) n *= a.radix[t];
  return n;
}

// Blocks of the one-dimensional grid: every batch entry times its query blocks.
inline unsigned long long AttentionBlocks(const AttentionArgs& a) {
  return static_cast<unsigned long long>(AttentionBatchCount(a)) *
         static_cast<unsigned long long>((a.sq + kAttentionBlockRows - 1) / kAttentionBlockRows);
}

// The runtime kernel for data type `t` (f16 or bf16), null for another.
inline const char* AttentionKernelName(ElementType t) {
  return t == ElementType::kF16 ? "keel_attention_f16" : t == ElementType::kBF16 ? "keel_attention_bf16" : nullptr;
}

// The trace's name of one launch.
inline std::string AttentionCallName(ElementType t, const AttentionArgs& a) {
  return std::string(AttentionKernelName(t)) + " grid=" + std::to_string(AttentionBlocks(a)) +
         " block=" + std::to_string(kAttentionThreads) + " shared=" + std::to_string(AttentionSharedBytes(a.d, a.dv));
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
