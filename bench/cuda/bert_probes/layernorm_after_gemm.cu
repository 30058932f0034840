// bench/cuda/bert_probes/layernorm_after_gemm.cu — LayerNorm variants after a cuBLASLt GEMM (BERT-base out-projection shape), CUDA-graph replay:
// what a LayerNorm costs in the graph, and how close Keel's form is to the floor.
#include "bench/cuda/bert_probes/probe_util.cuh"

constexpr int N = 768;
__device__ __forceinline__ void Wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void Trigger() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

// VEC halves per load, warp per row, rows strided by the grid; GB_EARLY: gamma/beta read before the wait.
template <int VEC, bool GB_EARLY, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) Ln(const __half* x, const float* gamma, const float* beta, __half* y, int m) {
  constexpr int PER = N / (32 * VEC);  // loads per lane
  const int lane = threadIdx.x & 31;
  float g[PER][VEC], b[PER][VEC];
  Trigger();
  if (GB_EARLY) {
#pragma unroll
    for (int j = 0; j < PER; ++j)
#pragma unroll
      for (int i = 0; i < VEC; ++i) { g[j][i] = gamma[(j * 32 + lane) * VEC + i]; b[j][i] = beta[(j * 32 + lane) * VEC + i]; }
  }
  Wait();
  for (int row = blockIdx.x * WARPS + (threadIdx.x >> 5); row < m; row += gridDim.x * WARPS) {
    const __half* xr = x + (size_t)row * N;
    float v[PER][VEC];
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      __align__(16) __half h[VEC];
      if (VEC == 8) *reinterpret_cast<uint4*>(h) = __ldg(reinterpret_cast<const uint4*>(xr + (j * 32 + lane) * VEC));
      else *reinterpret_cast<uint2*>(h) = __ldg(reinterpret_cast<const uint2*>(xr + (j * 32 + lane) * VEC));
#pragma unroll
      for (int i = 0; i < VEC; ++i) { v[j][i] = __half2float(h[i]); s += v[j][i]; }
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    const float mean = s / N;
    float q = 0.f;
#pragma unroll
    for (int j = 0; j < PER; ++j)
#pragma unroll
      for (int i = 0; i < VEC; ++i) { const float d = v[j][i] - mean; q += d * d; }
#pragma unroll
    for (int o = 16; o; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
    const float rstd = rsqrtf(q / N + 1e-5f);
    if (!GB_EARLY) {
#pragma unroll
      for (int j = 0; j < PER; ++j)
#pragma unroll
        for (int i = 0; i < VEC; ++i) { g[j][i] = gamma[(j * 32 + lane) * VEC + i]; b[j][i] = beta[(j * 32 + lane) * VEC + i]; }
    }
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      __align__(16) __half h[VEC];
#pragma unroll
      for (int i = 0; i < VEC; ++i) h[i] = __float2half((v[j][i] - mean) * rstd * g[j][i] + b[j][i]);
      if (VEC == 8) *reinterpret_cast<uint4*>(y + (size_t)row * N + (j * 32 + lane) * VEC) = *reinterpret_cast<uint4*>(h);
      else *reinterpret_cast<uint2*>(y + (size_t)row * N + (j * 32 + lane) * VEC) = *reinterpret_cast<uint2*>(h);
    }
  }
}


// ROWS rows per block, 96 threads per row (one 16-byte load each), cross-warp sums through shared memory.
template <int ROWS>
__global__ void __launch_bounds__(ROWS * 96) LnWide(const __half* x, const float* gamma, const float* beta, __half* y, int m) {
  __shared__ float red[ROWS][3][2];
  const int t = threadIdx.x % 96, r = threadIdx.x / 96, w = t >> 5, lane = t & 31;
  const int row = blockIdx.x * ROWS + r;
  float g[8], b[8];
  Trigger();
#pragma unroll
  for (int i = 0; i < 8; ++i) { g[i] = gamma[t * 8 + i]; b[i] = beta[t * 8 + i]; }
  Wait();
  float v[8];
  float s = 0.f;
  if (row < m) {
    __align__(16) __half h[8];
    *reinterpret_cast<uint4*>(h) = __ldg(reinterpret_cast<const uint4*>(x + (size_t)row * N + t * 8));
#pragma unroll
    for (int i = 0; i < 8; ++i) { v[i] = __half2float(h[i]); s += v[i]; }
  }
#pragma unroll
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) red[r][w][0] = s;
  __syncthreads();
  const float mean = (red[r][0][0] + red[r][1][0] + red[r][2][0]) / N;
  float q = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) { const float d = v[i] - mean; q += d * d; }
#pragma unroll
  for (int o = 16; o; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
  if (lane == 0) red[r][w][1] = q;
  __syncthreads();
  const float rstd = rsqrtf((red[r][0][1] + red[r][1][1] + red[r][2][1]) / N + 1e-5f);
  if (row < m) {
    __align__(16) __half h[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) h[i] = __float2half((v[i] - mean) * rstd * g[i] + b[i]);
    *reinterpret_cast<uint4*>(y + (size_t)row * N + t * 8) = *reinterpret_cast<uint4*>(h);
  }
}
template <int ROWS>
void LaunchWide(cudaStream_t s, int m, const __half* x, const float* g, const float* b, __half* y) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((m + ROWS - 1) / ROWS); cfg.blockDim = dim3(ROWS * 96); cfg.stream = s;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization; at[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, LnWide<ROWS>, x, g, b, y, m));
}

template <int VEC, bool EARLY, int WARPS>
void LaunchLn(cudaStream_t s, bool pdl, int grid, const __half* x, const float* g, const float* b, __half* y, int m) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid); cfg.blockDim = dim3(WARPS * 32); cfg.stream = s;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization; at[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = at; cfg.numAttrs = pdl ? 1 : 0;
  CK(cudaLaunchKernelEx(&cfg, Ln<VEC, EARLY, WARPS>, x, g, b, y, m));
}

int main() {
  const LtSession ses = LtSession::Create();
  cudaStream_t s = ses.s; cublasLtHandle_t lt = ses.lt; void* ws = ses.ws; const size_t wsz = ses.wsz;
  for (int m : {1024, 128}) {
    const int k = 768, n = N;
    __half *a, *w, *c, *d, *y; float *g, *be;
    CK(cudaMalloc(&a, (size_t)m * k * 2)); CK(cudaMalloc(&w, (size_t)k * n * 2)); CK(cudaMalloc(&c, (size_t)m * n * 2));
    CK(cudaMalloc(&d, (size_t)m * n * 2)); CK(cudaMalloc(&y, (size_t)m * n * 2)); CK(cudaMalloc(&g, n * 4)); CK(cudaMalloc(&be, n * 4));
    CK(cudaMemset(a, 0, (size_t)m * k * 2)); CK(cudaMemset(w, 0, (size_t)k * n * 2)); CK(cudaMemset(c, 0, (size_t)m * n * 2));
    CK(cudaMemset(g, 0, n * 4)); CK(cudaMemset(be, 0, n * 4));
    const LtGemm lt_gemm(lt, m, n, k, false, CUBLASLT_EPILOGUE_DEFAULT, nullptr, wsz, 1);
    auto gemm = [&] { lt_gemm.Run(lt, 0, a, w, 1.f, c, d, ws, wsz, s); };
    for (int round = 0; round < 1; ++round) {
      const float tg = GraphMicros(s, 20, gemm);
      printf("m %d round %d: GEMM alone %.2f us per launch\n", m, round, tg);
#define V(VEC, EARLY, WARPS, PDL, GRID) { auto f = [&] { LaunchLn<VEC, EARLY, WARPS>(s, PDL, GRID, d, g, be, y, m); }; \
      const float tl = GraphMicros(s, 20, f); const float tp = GraphMicros(s, 20, [&] { gemm(); f(); }); \
      printf("  LN vec %d gb_early %d warps %d pdl %d grid %4d: alone %.2f us, after the GEMM +%.2f us\n", VEC, EARLY, WARPS, PDL, GRID, tl, tp - tg); }
      V(4, false, 7, true, (m + 6) / 7)   // Keel's form today at b8
      V(4, false, 1, true, m)   // Keel's form today at b1
      V(8, true, 1, true, m)
      V(4, true, 1, true, m)
      V(4, false, 7, false, (m + 6) / 7)
      V(8, false, 7, true, (m + 6) / 7)
      V(8, true, 7, true, (m + 6) / 7)
      V(8, true, 4, true, (m + 3) / 4)
      V(8, true, 8, true, (m + 7) / 8)
      V(8, true, 8, true, 132)
      V(8, true, 2, true, (m + 1) / 2)
#define W(ROWS) { auto f = [&] { LaunchWide<ROWS>(s, m, d, g, be, y); }; \
      const float tl = GraphMicros(s, 20, f); const float tp = GraphMicros(s, 20, [&] { gemm(); f(); }); \
      printf("  LN wide rows %d: alone %.2f us, after the GEMM +%.2f us\n", ROWS, tl, tp - tg); }
      W(1) W(2) W(4)
    }
  }
}
