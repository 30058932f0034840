// vm/cuda/runtime_kernels.cu — the few CUDA kernels the VM itself launches
// (not the model's generated kernels): epilogues around library calls.
//
// Compiled by nvcc at build time (sm_90 cubin + compute_80 PTX) and embedded in
// the runtime (vm/cuda/runtime_module.h loads it with cuModuleLoadData), so the
// runtime needs no compiler at run time.
//
// keel_bias_act_f32[x4]: y[n,c,s] = act(y[n,c,s] + bias[c] + res[n,c,s]) in
// place on a dense N,C,spatial... tensor of any spatial rank (s in [0,hw), hw the
// product of the spatial dims: 1-D, 2-D and 3-D convolutions alike); bias and res
// may be null; act 0 none, 1 relu, 2 clip to [0, clip_max]. The x4 variant moves
// float4s (hw % 4 == 0, 16-byte aligned pointers). Grid-stride loops: any grid
// covers the tensor.
// keel_bias_act_f16 / keel_bias_act_bf16: the same on f16 / bf16 tensors (y,
// bias and res all in that type, as cudnn.conv2d takes them), added and clamped
// in f32 and rounded once to the half type (one element per thread step).
// Used by cudnn.conv2d when cuDNN's own fused call is slower or unavailable
// (clipped ReLU, bias without the IMPLICIT_PRECOMP_GEMM algorithm): one pass
// instead of cudnnAddTensor + cudnnActivationForward.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

// The epilogues may be launched as programmatic dependents of the library call
// before them (sm_90+, vm/cuda/cuda_device.h): nothing is read before the
// previous grid has completed and its writes are visible.
__device__ __forceinline__ void keel_wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ float keel_act(float v, int act, float clip_max) {
  if (act == 1) return fmaxf(v, 0.f);
  if (act == 2) return fminf(fmaxf(v, 0.f), clip_max);
  return v;
}

extern "C" __global__ void keel_bias_act_f32(float* __restrict__ y, const float* __restrict__ bias,
                                             const float* __restrict__ res, long long total, long long hw,
                                             int channels, int act, float clip_max) {
  keel_wait_for_previous_grid();
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    float v = y[i];
    if (bias) v += __ldg(bias + (int)((i / hw) % channels));
    if (res) v += res[i];
    y[i] = keel_act(v, act, clip_max);
  }
}

extern "C" __global__ void keel_bias_act_f32x4(float4* __restrict__ y, const float* __restrict__ bias,
                                               const float4* __restrict__ res, long long total4, long long hw4,
                                               int channels, int act, float clip_max) {
  keel_wait_for_previous_grid();
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total4;
       i += (long long)gridDim.x * blockDim.x) {
    float4 v = y[i];
    if (bias) {
      const float b = __ldg(bias + (int)((i / hw4) % channels));
      v.x += b; v.y += b; v.z += b; v.w += b;
    }
    if (res) {
      const float4 r = res[i];
      v.x += r.x; v.y += r.y; v.z += r.z; v.w += r.w;
    }
    v.x = keel_act(v.x, act, clip_max);
    v.y = keel_act(v.y, act, clip_max);
    v.z = keel_act(v.z, act, clip_max);
    v.w = keel_act(v.w, act, clip_max);
    y[i] = v;
  }
}

// One element of a half tensor, widened to f32 and narrowed back (round to nearest even).
__device__ __forceinline__ float keel_to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float keel_to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void keel_from_f32(float v, __half* out) { *out = __float2half_rn(v); }
__device__ __forceinline__ void keel_from_f32(float v, __nv_bfloat16* out) { *out = __float2bfloat16_rn(v); }

template <typename T>
__device__ __forceinline__ void keel_bias_act_half(T* __restrict__ y, const T* __restrict__ bias,
                                                   const T* __restrict__ res, long long total, long long hw,
                                                   int channels, int act, float clip_max) {
  keel_wait_for_previous_grid();
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    float v = keel_to_f32(y[i]);
    if (bias) v += keel_to_f32(bias[(int)((i / hw) % channels)]);
    if (res) v += keel_to_f32(res[i]);
    keel_from_f32(keel_act(v, act, clip_max), y + i);
  }
}

extern "C" __global__ void keel_bias_act_f16(__half* __restrict__ y, const __half* __restrict__ bias,
                                             const __half* __restrict__ res, long long total, long long hw,
                                             int channels, int act, float clip_max) {
  keel_bias_act_half(y, bias, res, total, hw, channels, act, clip_max);
}

extern "C" __global__ void keel_bias_act_bf16(__nv_bfloat16* __restrict__ y, const __nv_bfloat16* __restrict__ bias,
                                              const __nv_bfloat16* __restrict__ res, long long total, long long hw,
                                              int channels, int act, float clip_max) {
  keel_bias_act_half(y, bias, res, total, hw, channels, act, clip_max);
}

// keel_spin: keeps the GPU busy for `ns` nanoseconds (one thread). Autotuning
// queues it before the calls it times, so that the host has queued them all
// before the GPU starts: the events then measure device time, not the
// libraries' per-call host overhead (vm/cuda/autotune.h).
// keel_prefetch_l2: [p, p + bytes) fetched into L2 (l2_prefetch.h), nothing written. On sm_90
// thread 0 of each block issues bulk prefetches (the TMA unit fetches, no registers wait) of
// 32 KiB pieces from the first 16-byte boundary (the instruction's alignment), the blocks
// taking turns; a head and tail under 16 bytes are left out. Older GPUs: one 128-byte line per
// thread and step.
extern "C" __global__ void keel_prefetch_l2(const char* p, unsigned long long bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x != 0) return;
  const unsigned long long head = (16 - (reinterpret_cast<unsigned long long>(p) & 15)) & 15;
  if (bytes <= head) return;
  p += head;
  bytes -= head;
  constexpr unsigned long long kPiece = 32768;
  for (unsigned long long o = kPiece * blockIdx.x; o < bytes; o += kPiece * gridDim.x) {
    const unsigned long long n = bytes - o < kPiece ? ((bytes - o) & ~15ull) : kPiece;
    if (n == 0) break;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p + o), "r"(static_cast<unsigned>(n)) : "memory");
  }
#else
  const unsigned long long stride = 128ull * gridDim.x * blockDim.x;
  for (unsigned long long o = 128ull * (blockIdx.x * blockDim.x + threadIdx.x); o < bytes; o += stride) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p + o));
  }
#endif
}

extern "C" __global__ void keel_spin(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

// keel_fill: `count` elements of `element_size` bytes (1, 2 or 4) at dst set to `value`'s low
// bytes, the work of a 1-D memset node of a captured graph that graph_rewrite.h turns into a
// kernel node (a memset node between two kernels costs microseconds of idle GPU).
extern "C" __global__ void keel_fill(void* dst, unsigned value, unsigned long long count, int element_size) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < count; i += 1ull * gridDim.x * blockDim.x) {
    if (element_size == 4) static_cast<unsigned*>(dst)[i] = value;
    else if (element_size == 2) static_cast<unsigned short*>(dst)[i] = static_cast<unsigned short>(value);
    else static_cast<unsigned char*>(dst)[i] = static_cast<unsigned char>(value);
  }
}

// keel_attention_f16 / keel_attention_bf16 ("keel.attention", serialization/library_ops.h).
#include "vm/cuda/attention_kernel.cuh"

// keel_conv_nhwc_{f16,bf16}_n{1,2,4,8} ("keel.conv2d", serialization/library_ops.h).
#include "vm/cuda/conv_kernel.cuh"
