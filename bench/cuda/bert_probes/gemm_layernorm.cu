// bench/cuda/bert_probes/gemm_layernorm.cu — GEMM + bias + residual + LayerNorm over rows of N = 128 x (cluster size)
// columns, one thread-block cluster per row block; against cuBLASLt + a LayerNorm kernel (run.sh says how to run).
#include <cooperative_groups.h>

#include <cmath>

#include "bench/cuda/bert_probes/probe_util.cuh"
#include "vm/cuda/mma_primitives.cuh"
namespace cg = cooperative_groups;
using namespace keel_mma;

struct Args { const __half *a, *w, *bias, *res, *gamma, *beta; __half* y; int m, n, k; float eps; };

constexpr int BN = 128;
constexpr int LDB = BN + 8;  // padded rows (halves)

template <int BM, int WM, int WN, int STAGES, int BK, bool LN>
__global__ void __launch_bounds__(WM * WN * 32) GemmLn(const Args p) {
  constexpr int LDA = BK + 8;
  constexpr int kThreads = WM * WN * 32;
  constexpr int TM = BM / WM, TN = BN / WN;  // warp tile
  constexpr int MI = TM / 16, NJ = TN / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  __half* sa = reinterpret_cast<__half*>(smem);
  __half* sb = sa + STAGES * BM * LDA;
  float* red = reinterpret_cast<float*>(sb + STAGES * BK * LDB);  // [WN][BM]
  float* part = red + WN * BM;     // [BM] cluster-visible partial sums
  float* part2 = part + BM;        // [BM]
  float* stat = part2 + BM;        // [BM] mean, then rstd
  cg::cluster_group cluster = cg::this_cluster();
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp / WN, wn = warp % WN;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int ktiles = p.k / BK;

  auto stage = [&](int s, int kt) {
    const int k0 = kt * BK;
    for (int c = tid; c < BM * (BK / 8); c += kThreads) {
      const int r = c / (BK / 8), ch = c % (BK / 8);
      const bool ok = row0 + r < p.m;
      CopyAsync16(sa + (s * BM + r) * LDA + ch * 8, p.a + (size_t)(ok ? row0 + r : 0) * p.k + k0 + ch * 8, ok);
    }
    for (int c = tid; c < BK * (BN / 8); c += kThreads) {
      const int r = c / (BN / 8), ch = c % (BN / 8);
      CopyAsync16(sb + (s * BK + r) * LDB + ch * 8, p.w + (size_t)(k0 + r) * p.n + col0 + ch * 8, true);
    }
  };
  float acc[MI][NJ][4] = {};
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) { if (s < ktiles) stage(s, s); CommitCopies(); }
  for (int kt = 0; kt < ktiles; ++kt) {
    WaitCopies<STAGES - 2>();
    __syncthreads();
    { const int nk = kt + STAGES - 1; if (nk < ktiles) stage(nk % STAGES, nk); CommitCopies(); }
    const int s = kt % STAGES;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned af[MI][4];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
        LoadMatrices(af[mi], sa + (s * BM + wm * TM + mi * 16 + (lane & 15)) * LDA + kk + (lane >> 4) * 8);
      unsigned bf[NJ][2];
#pragma unroll
      for (int nj = 0; nj < NJ; nj += 2) {
        unsigned r4[4];
        LoadMatricesTransposed(r4, sb + (s * BK + kk + (lane & 7) + ((lane >> 3) & 1) * 8) * LDB + wn * TN + nj * 8 + (lane >> 4) * 8);
        bf[nj][0] = r4[0]; bf[nj][1] = r4[1]; bf[nj + 1][0] = r4[2]; bf[nj + 1][1] = r4[3];
      }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int nj = 0; nj < NJ; ++nj) Mma<__half>(acc[mi][nj], af[mi], bf[nj][0], bf[nj][1]);
    }
  }
  WaitAllCopies();
  if (!LN) {
    const int g = lane >> 2, pair = 2 * (lane & 3);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row0 + wm * TM + mi * 16 + g + 8 * h;
        if (r >= p.m) continue;
#pragma unroll
        for (int nj = 0; nj < NJ; ++nj) {
          const int c = col0 + wn * TN + nj * 8 + pair;
          *reinterpret_cast<unsigned*>(p.y + (size_t)r * p.n + c) = Pack<__half>(acc[mi][nj][2 * h], acc[mi][nj][2 * h + 1]);
        }
      }
    return;
  }
  // Epilogue.
  const int g = lane >> 2, pair = 2 * (lane & 3);
  float rs[MI][2] = {};
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row0 + wm * TM + mi * 16 + g + 8 * h;
      const bool ok = r < p.m;
#pragma unroll
      for (int nj = 0; nj < NJ; ++nj) {
        const int c = col0 + wn * TN + nj * 8 + pair;
        const __half2 b2 = *reinterpret_cast<const __half2*>(p.bias + c);
        float v0 = acc[mi][nj][2 * h] + __low2float(b2), v1 = acc[mi][nj][2 * h + 1] + __high2float(b2);
        if (ok) {
          const __half2 r2 = *reinterpret_cast<const __half2*>(p.res + (size_t)r * p.n + c);
          v0 += __low2float(r2); v1 += __high2float(r2);
        }
        acc[mi][nj][2 * h] = v0; acc[mi][nj][2 * h + 1] = v1;
        rs[mi][h] += v0 + v1;
      }
    }
  auto reduce_rows = [&](float (&v)[MI][2], float* out) {
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float x = v[mi][h];
        x += __shfl_xor_sync(0xffffffffu, x, 1);
        x += __shfl_xor_sync(0xffffffffu, x, 2);
        if ((lane & 3) == 0) red[wn * BM + wm * TM + mi * 16 + g + 8 * h] = x;
      }
    __syncthreads();
    for (int r = tid; r < BM; r += kThreads) {
      float x = 0.f;
#pragma unroll
      for (int j = 0; j < WN; ++j) x += red[j * BM + r];
      out[r] = x;
    }
  };
  reduce_rows(rs, part);
  cluster.sync();
  const int ranks = cluster.num_blocks();
  const float inv_n = 1.f / p.n;
  for (int r = tid; r < BM; r += kThreads) {
    float x = 0.f;
    for (int q = 0; q < ranks; ++q) x += cluster.map_shared_rank(part, q)[r];
    stat[r] = x * inv_n;
  }
  __syncthreads();
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float mean = stat[wm * TM + mi * 16 + g + 8 * h];
      float s = 0.f;
#pragma unroll
      for (int nj = 0; nj < NJ; ++nj) {
        const float d0 = acc[mi][nj][2 * h] - mean, d1 = acc[mi][nj][2 * h + 1] - mean;
        s += d0 * d0 + d1 * d1;
      }
      rs[mi][h] = s;
    }
  __syncthreads();  // stat/red reads done
  reduce_rows(rs, part2);
  cluster.sync();
  float mean_r[MI][2];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) mean_r[mi][h] = stat[wm * TM + mi * 16 + g + 8 * h];
  __syncthreads();
  for (int r = tid; r < BM; r += kThreads) {
    float x = 0.f;
    for (int q = 0; q < ranks; ++q) x += cluster.map_shared_rank(part2, q)[r];
    stat[r] = rsqrtf(x * inv_n + p.eps);
  }
  cluster.sync();  // remote reads done (also makes stat visible)
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int rl = wm * TM + mi * 16 + g + 8 * h, r = row0 + rl;
      if (r >= p.m) continue;
      const float rstd = stat[rl], mean = mean_r[mi][h];
#pragma unroll
      for (int nj = 0; nj < NJ; ++nj) {
        const int c = col0 + wn * TN + nj * 8 + pair;
        const __half2 g2 = *reinterpret_cast<const __half2*>(p.gamma + c);
        const __half2 b2 = *reinterpret_cast<const __half2*>(p.beta + c);
        const float y0 = (acc[mi][nj][2 * h] - mean) * rstd * __low2float(g2) + __low2float(b2);
        const float y1 = (acc[mi][nj][2 * h + 1] - mean) * rstd * __high2float(g2) + __high2float(b2);
        *reinterpret_cast<unsigned*>(p.y + (size_t)r * p.n + c) = Pack<__half>(y0, y1);
      }
    }
}

// Plain LN kernel (one warp per row, 128-bit loads) for the baseline.
__global__ void LnKernel(const __half* x, const __half* gamma, const __half* beta, __half* y, int m, int n, float eps) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (row >= m) return;
  const __half* xr = x + (size_t)row * n;
  float v[24]; int cnt = 0; float s = 0.f;
  for (int c = lane * 8; c < n; c += 256) {
    uint4 u = *reinterpret_cast<const uint4*>(xr + c);
    const __half* h = reinterpret_cast<const __half*>(&u);
    for (int i = 0; i < 8; ++i) { v[cnt * 8 + i] = __half2float(h[i]); s += v[cnt * 8 + i]; }
    ++cnt;
  }
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float mean = s / n; float q = 0.f;
  for (int i = 0; i < cnt * 8; ++i) { const float d = v[i] - mean; q += d * d; }
  for (int o = 16; o; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
  const float rstd = rsqrtf(q / n + eps);
  int j = 0;
  for (int c = lane * 8; c < n; c += 256, ++j) {
    __align__(16) __half out[8];
    for (int i = 0; i < 8; ++i) out[i] = __float2half((v[j * 8 + i] - mean) * rstd * __half2float(gamma[c + i]) + __half2float(beta[c + i]));
    *reinterpret_cast<uint4*>(y + (size_t)row * n + c) = *reinterpret_cast<uint4*>(out);
  }
}

template <int BM, int WM, int WN, int STAGES, int BK, bool LN>
struct Config {
  static constexpr int LDA = BK + 8;
  static size_t Smem() { return (size_t)STAGES * (BM * LDA + BK * LDB) * 2 + (WN * BM + 3 * BM) * 4; }
  static void Launch(const Args& a, cudaStream_t s) {
    static bool once = [] { CK(cudaFuncSetAttribute(GemmLn<BM, WM, WN, STAGES, BK, LN>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)Smem())); return true; }();
    (void)once;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(a.n / BN, (a.m + BM - 1) / BM);
    cfg.blockDim = dim3(WM * WN * 32);
    cfg.dynamicSmemBytes = Smem();
    cfg.stream = s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = a.n / BN; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
    cfg.attrs = at; cfg.numAttrs = LN ? 1 : 0;
    CK(cudaLaunchKernelEx(&cfg, GemmLn<BM, WM, WN, STAGES, BK, LN>, a));
  }
};

int main(int argc, char** argv) {
  int m = 1024, n = 768;
  std::vector<int> ks = {768, 3072};
  if (argc > 1) m = atoi(argv[1]);
  const LtSession ses = LtSession::Create();
  cudaStream_t s = ses.s; cublasLtHandle_t lt = ses.lt; void* ws = ses.ws; const size_t wsz = ses.wsz;
  for (int k : ks) {
    std::vector<__half> ha((size_t)m * k), hw((size_t)k * n), hb(n), hr((size_t)m * n), hg(n), hbe(n);
    srand(1);
    auto rnd = [] { return (rand() / (float)RAND_MAX - 0.5f); };
    for (auto& x : ha) x = __float2half(rnd());
    for (auto& x : hw) x = __float2half(rnd() * 0.1f);
    for (auto& x : hb) x = __float2half(rnd());
    for (auto& x : hr) x = __float2half(rnd() * 4);
    for (auto& x : hg) x = __float2half(1 + rnd());
    for (auto& x : hbe) x = __float2half(rnd());
    __half *a, *w, *b, *r, *ga, *be, *y, *y2, *t;
    auto up = [&](__half** d, const std::vector<__half>& h) { CK(cudaMalloc(d, h.size() * 2)); CK(cudaMemcpy(*d, h.data(), h.size() * 2, cudaMemcpyHostToDevice)); };
    up(&a, ha); up(&w, hw); up(&b, hb); up(&r, hr); up(&ga, hg); up(&be, hbe);
    CK(cudaMalloc(&y, (size_t)m * n * 2)); CK(cudaMalloc(&y2, (size_t)m * n * 2)); CK(cudaMalloc(&t, (size_t)m * n * 2));
    Args args{a, w, b, r, ga, be, y, m, n, k, 1e-5f};
    // reference on the CPU (f64)
    std::vector<double> ref((size_t)m * n);
    for (int i = 0; i < m; ++i) {
      std::vector<double> v(n, 0.0);
      for (int kk = 0; kk < k; ++kk) { const double av = __half2float(ha[(size_t)i * k + kk]); const __half* wr = &hw[(size_t)kk * n]; for (int j = 0; j < n; ++j) v[j] += av * __half2float(wr[j]); }
      double mean = 0; for (int j = 0; j < n; ++j) { v[j] += __half2float(hb[j]) + __half2float(hr[(size_t)i * n + j]); mean += v[j]; }
      mean /= n; double var = 0; for (int j = 0; j < n; ++j) var += (v[j] - mean) * (v[j] - mean); var /= n;
      const double rstd = 1 / std::sqrt(var + 1e-5);
      for (int j = 0; j < n; ++j) ref[(size_t)i * n + j] = (v[j] - mean) * rstd * __half2float(hg[j]) + __half2float(hbe[j]);
    }
    auto check = [&](__half* d, const char* name) {
      std::vector<__half> h((size_t)m * n); CK(cudaMemcpy(h.data(), d, h.size() * 2, cudaMemcpyDeviceToHost));
      double num = 0, den = 0, mx = 0;
      for (size_t i = 0; i < h.size(); ++i) { const double e = __half2float(h[i]) - ref[i]; num += e * e; den += ref[i] * ref[i]; mx = std::max(mx, std::abs(e)); }
      printf("  %-28s relL2 %.2e maxabs %.2e\n", name, std::sqrt(num / den), mx);
    };
    // cuBLASLt: D = A W + bias + C, the best of the heuristics' 8, then the LayerNorm kernel.
    const LtGemm lt_gemm(lt, m, n, k, false, CUBLASLT_EPILOGUE_BIAS, b, wsz, 8);
    float best_lt = 1e9f;
    size_t best_i = 0;
    for (size_t i = 0; i < lt_gemm.algos.size(); ++i) {
      const float tm = GraphMicros(s, 20, [&] { lt_gemm.Run(lt, i, a, w, 1.f, r, t, ws, wsz, s); }, 7);
      if (tm < best_lt) best_lt = tm, best_i = i;
    }
    const size_t nres = lt_gemm.algos.size();
    auto ln = [&] { LnKernel<<<(m + 3) / 4, 128, 0, s>>>(t, ga, be, y2, m, n, 1e-5f); };
    float tln = GraphMicros(s, 20, ln, 7);
    float tboth = GraphMicros(s, 20, [&] { lt_gemm.Run(lt, best_i, a, w, 1.f, r, t, ws, wsz, s); ln(); }, 7);
    CK(cudaStreamSynchronize(s));
    printf("m %d n %d k %d: cuBLASLt best of %zu %.2f us, LN %.2f us, both %.2f us\n", m, n, k, nres, best_lt, tln, tboth);
    check(y2, "cublasLt+LN");
#define TRY(BM, WM, WN, ST, BK, LN) { CK(cudaMemset(y, 0, (size_t)m * n * 2)); Config<BM, WM, WN, ST, BK, LN>::Launch(args, s); CK(cudaStreamSynchronize(s)); \
      float tm = GraphMicros(s, 20, [&] { Config<BM, WM, WN, ST, BK, LN>::Launch(args, s); }, 7); \
      printf("  fused BM%d warps %dx%d stages %d BK %d LN %d: %.2f us (%.2fx both, %.2fx gemm)\n", BM, WM, WN, ST, BK, LN, tm, tm / tboth, tm / best_lt); if (LN) check(y, "fused"); }
    TRY(64, 2, 4, 4, 32, false) TRY(64, 2, 4, 4, 32, true) TRY(64, 2, 4, 3, 64, false) TRY(64, 2, 4, 3, 64, true) TRY(64, 2, 2, 3, 64, true) TRY(128, 2, 4, 3, 32, false) TRY(128, 2, 4, 3, 64, false) TRY(128, 2, 2, 3, 64, false)
  }
  printf("done\n");
}
