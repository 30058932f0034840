// bench/cuda/bert_probes/layer_streams.cu — twelve BERT-base encoder layers (cuBLASLt GEMMs with
// their epilogues, two LayerNorms and a stand-in for the attention) as one CUDA graph: the whole
// batch on one stream against the batch split in two halves on two streams (two independent chains
// in one graph), to see how much of the small kernels' time concurrency would hide. Argument: rows.
#include "bench/cuda/bert_probes/probe_util.cuh"

constexpr int E = 768, F = 3072;

// LayerNorm over E = 768: a warp per row, 4 halves a lane and step (Keel's generated form).
__global__ void __launch_bounds__(224) LayerNorm(const __half* x, const float* gamma, const float* beta, __half* y, int m) {
  const int row = blockIdx.x * 7 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (row >= m) return;
  float v[6][4], s = 0.f;
#pragma unroll
  for (int j = 0; j < 6; ++j) {
    const uint2 u = *reinterpret_cast<const uint2*>(x + size_t(row) * E + (j * 32 + lane) * 4);
    const __half* h = reinterpret_cast<const __half*>(&u);
#pragma unroll
    for (int i = 0; i < 4; ++i) s += v[j][i] = __half2float(h[i]);
  }
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(~0u, s, o);
  const float mean = s / E;
  float q = 0.f;
#pragma unroll
  for (int j = 0; j < 6; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) q += (v[j][i] - mean) * (v[j][i] - mean);
  for (int o = 16; o; o >>= 1) q += __shfl_xor_sync(~0u, q, o);
  const float rstd = rsqrtf(q / E + 1e-5f);
#pragma unroll
  for (int j = 0; j < 6; ++j) {
    __align__(8) __half h[4];
    const int c = (j * 32 + lane) * 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) h[i] = __float2half((v[j][i] - mean) * rstd * gamma[c + i] + beta[c + i]);
    *reinterpret_cast<uint2*>(y + size_t(row) * E + c) = *reinterpret_cast<uint2*>(h);
  }
}

// Stand-in for the fused attention: reads each row's Q, K and V (2,304 halves), writes 768.
__global__ void Attention(const __half* qkv, __half* y, int m) {
  const int row = blockIdx.x, c = threadIdx.x * 8;
  if (row >= m || c >= E) return;
  const __half* r = qkv + size_t(row) * 3 * E;
  const uint4 q = *reinterpret_cast<const uint4*>(r + c), k = *reinterpret_cast<const uint4*>(r + E + c),
              v = *reinterpret_cast<const uint4*>(r + 2 * E + c);
  const __half2* a = reinterpret_cast<const __half2*>(&q);
  const __half2* b = reinterpret_cast<const __half2*>(&k);
  const __half2* d = reinterpret_cast<const __half2*>(&v);
  __align__(16) __half2 o[4];
  for (int i = 0; i < 4; ++i) o[i] = __hfma2(a[i], b[i], d[i]);
  *reinterpret_cast<uint4*>(y + size_t(row) * E + c) = *reinterpret_cast<uint4*>(o);
}

struct Chain {  // one chain's activations and GEMMs (rows m)
  int m;
  __half *x, *qkv, *att, *t, *x1, *h;
  LtGemm *g_qkv, *g_out, *g_ff1, *g_ff2;
};

int main(int argc, char** argv) {
  const int rows = argc > 1 ? std::atoi(argv[1]) : 1024;
  cudaStream_t s0, s1;
  CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  cublasLtHandle_t lt;
  CK(cublasLtCreate(&lt));
  const size_t wsz = 32 << 20;
  void *ws0, *ws1;
  CK(cudaMalloc(&ws0, wsz));
  CK(cudaMalloc(&ws1, wsz));
  __half *w_qkv, *w_out, *w_ff1, *w_ff2, *bias;
  float *gamma, *beta;
  CK(cudaMalloc(&w_qkv, size_t(E) * 3 * E * 2));
  CK(cudaMalloc(&w_out, size_t(E) * E * 2));
  CK(cudaMalloc(&w_ff1, size_t(E) * F * 2));
  CK(cudaMalloc(&w_ff2, size_t(F) * E * 2));
  CK(cudaMalloc(&bias, F * 2));
  CK(cudaMalloc(&gamma, E * 4));
  CK(cudaMalloc(&beta, E * 4));
  for (void* p : {(void*)w_qkv, (void*)w_out, (void*)w_ff1, (void*)w_ff2, (void*)bias}) CK(cudaMemset(p, 0, 4));
  CK(cudaMemset(gamma, 0, E * 4));
  CK(cudaMemset(beta, 0, E * 4));
  auto make = [&](int m) {
    Chain c{m};
    for (__half** p : {&c.x, &c.att, &c.t, &c.x1}) { CK(cudaMalloc(p, size_t(m) * E * 2)); CK(cudaMemset(*p, 0, size_t(m) * E * 2)); }
    CK(cudaMalloc(&c.qkv, size_t(m) * 3 * E * 2));
    CK(cudaMalloc(&c.h, size_t(m) * F * 2));
    c.g_qkv = new LtGemm(lt, m, 3 * E, E, false, CUBLASLT_EPILOGUE_BIAS, bias, wsz, 1);
    c.g_out = new LtGemm(lt, m, E, E, true, CUBLASLT_EPILOGUE_BIAS, bias, wsz, 1);
    c.g_ff1 = new LtGemm(lt, m, F, E, false, CUBLASLT_EPILOGUE_GELU_BIAS, bias, wsz, 1);
    c.g_ff2 = new LtGemm(lt, m, E, F, false, CUBLASLT_EPILOGUE_BIAS, bias, wsz, 1);
    return c;
  };
  auto layers = [&](const Chain& c, cudaStream_t s, void* ws) {
    for (int l = 0; l < 12; ++l) {
      c.g_qkv->Run(lt, 0, c.x, w_qkv, 0.f, c.qkv, c.qkv, ws, wsz, s);
      Attention<<<c.m, 96, 0, s>>>(c.qkv, c.att, c.m);
      c.g_out->Run(lt, 0, c.att, w_out, 1.f, c.x, c.t, ws, wsz, s);
      LayerNorm<<<(c.m + 6) / 7, 224, 0, s>>>(c.t, gamma, beta, c.x1, c.m);
      c.g_ff1->Run(lt, 0, c.x1, w_ff1, 0.f, c.h, c.h, ws, wsz, s);
      c.g_ff2->Run(lt, 0, c.h, w_ff2, 1.f, c.x1, c.t, ws, wsz, s);
      LayerNorm<<<(c.m + 6) / 7, 224, 0, s>>>(c.t, gamma, beta, c.x, c.m);
    }
  };
  const Chain whole = make(rows), half_a = make(rows / 2), half_b = make(rows / 2);
  cudaEvent_t fork, join;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  for (int round = 0; round < 3; ++round) {
    const float one = GraphMicros(s0, 1, [&] { layers(whole, s0, ws0); });
    const float halves_one_stream = GraphMicros(s0, 1, [&] { layers(half_a, s0, ws0); layers(half_b, s0, ws0); });
    const float two = GraphMicros(s0, 1, [&] {
      CK(cudaEventRecord(fork, s0));
      CK(cudaStreamWaitEvent(s1, fork));
      layers(half_b, s1, ws1);
      layers(half_a, s0, ws0);
      CK(cudaEventRecord(join, s1));
      CK(cudaStreamWaitEvent(s0, join));
    });
    std::printf("rows %d round %d: one stream %.1f us, two halves on one stream %.1f us, two halves on two streams %.1f us (%.2fx)\n",
                rows, round, one, halves_one_stream, two, two / one);
  }
}
