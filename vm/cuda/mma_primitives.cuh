// vm/cuda/mma_primitives.cuh — the tensor-core building blocks of the VM's own
// runtime kernels (vm/cuda/attention_kernel.cuh, conv_kernel.cuh): asynchronous
// global -> shared copies, ldmatrix and mma.sync m16n8k16 with f32 accumulation
// for f16 and bf16, and the pair rounding of two floats into one operand register.
//
// Part of the VM's runtime module (vm/cuda/runtime_kernels.cu includes the
// kernels that include it; keelc --emit=cuda-host programs hold it verbatim
// before them). Needs sm_80+.
//
// Register fragments follow PTX's mma.m16n8k16 layouts: A (16 x 16, row) in
// four registers, lane l holding rows l/4 and l/4 + 8, columns 2(l%4) + {0, 1}
// and 8 + 2(l%4) + {0, 1}; B (16 x 8, col) in two, lane l holding column l/4,
// rows 2(l%4) + {0, 1} and 8 + 2(l%4) + {0, 1}; the f32 C/D (16 x 8) in four,
// rows l/4 and l/4 + 8, columns 2(l%4) + {0, 1}.
#ifndef KEEL_VM_CUDA_MMA_PRIMITIVES_CUH_
#define KEEL_VM_CUDA_MMA_PRIMITIVES_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace keel_mma {

__device__ __forceinline__ unsigned SharedAddress(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared without the registers; zeros where !valid (no read).
__device__ __forceinline__ void CopyAsync16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SharedAddress(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void CommitCopies() { asm volatile("cp.async.commit_group;\n" ::); }
// At most `pending` of this thread's committed groups are still in flight (the
// rest landed: visible to this thread; to the others after a barrier).
template <int pending>
__device__ __forceinline__ void WaitCopies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
}
// Every committed group has landed.
__device__ __forceinline__ void WaitAllCopies() { WaitCopies<0>(); }

// Four 8x8 matrices of 2-byte elements; lane l gives the address of row l%8 of matrix l/8.
__device__ __forceinline__ void LoadMatrices(unsigned r[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SharedAddress(row)));
}
__device__ __forceinline__ void LoadMatricesTransposed(unsigned r[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SharedAddress(row)));
}

// c (16x8, f32) += a (16x16) b (16x8).
template <typename T>
__device__ __forceinline__ void Mma(float c[4], const unsigned a[4], unsigned b0, unsigned b1);
template <>
__device__ __forceinline__ void Mma<__half>(float c[4], const unsigned a[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void Mma<__nv_bfloat16>(float c[4], const unsigned a[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two values rounded to T in one register, the first in the low half (one
// cvt.rn.{f16,bf16}x2.f32).
template <typename T>
__device__ __forceinline__ unsigned Pack(float x, float y);
template <>
__device__ __forceinline__ unsigned Pack<__half>(float x, float y) {
  const __half2 h = __floats2half2_rn(x, y);
  return *reinterpret_cast<const unsigned*>(&h);
}
template <>
__device__ __forceinline__ unsigned Pack<__nv_bfloat16>(float x, float y) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
  return *reinterpret_cast<const unsigned*>(&h);
}

}  // namespace keel_mma

#endif  // KEEL_VM_CUDA_MMA_PRIMITIVES_CUH_
