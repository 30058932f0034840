// bench/cuda/bert_probes/probe_util.cuh — what the BERT probes share: a checked call, a
// CUDA-graph timing of one step, and a cuBLASLt f16 GEMM on row-major operands.
#pragma once

#include <cublasLt.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <utility>
#include <vector>

#define CK(x)                                                              \
  do {                                                                     \
    auto e = (x);                                                          \
    if (e != 0) {                                                          \
      std::printf("%s:%d error %d\n", __FILE__, __LINE__, static_cast<int>(e)); \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)

// Microseconds per step: `reps` steps captured in one CUDA graph, replayed 10 times per
// sample, the best of `samples` samples.
inline float GraphMicros(cudaStream_t s, int reps, const std::function<void()>& step, int samples = 9) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < reps; ++i) step();
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  for (int i = 0; i < 5; ++i) CK(cudaGraphLaunch(ge, s));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float best = 1e9f;
  for (int t = 0; t < samples; ++t) {
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < 10; ++i) CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms = 0.f;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    best = std::min(best, ms * 1000.f / (10 * reps));
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  return best;
}

// D[m, n] = epilogue(A[m, k] W + bias) + beta C, all f16 and row-major, f32 accumulation; W is
// [k, n] (Keel's layout) or, with w_nk, [n, k] (PyTorch's). In cuBLASLt's column-major terms
// D^T = op(W)^T A^T. `algos` holds the heuristics' first `candidates` configurations.
struct LtGemm {
  cublasLtMatmulDesc_t op{};
  cublasLtMatrixLayout_t la{}, lb{}, lc{};
  std::vector<cublasLtMatmulHeuristicResult_t> algos;

  LtGemm(cublasLtHandle_t lt, int m, int n, int k, bool w_nk, cublasLtEpilogue_t epilogue, const void* bias,
         size_t workspace, int candidates) {
    CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = w_nk ? CUBLAS_OP_T : CUBLAS_OP_N;
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    if (bias != nullptr) {
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
      const cudaDataType_t bt = CUDA_R_16F;
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)));
    }
    if (w_nk) CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, k, n, k));
    else CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, n, k, n));
    CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, k, m, k));
    CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16F, n, m, n));
    cublasLtMatmulPreference_t pref;
    CK(cublasLtMatmulPreferenceCreate(&pref));
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                            sizeof(workspace)));
    algos.resize(candidates);
    int found = 0;
    CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, candidates, algos.data(), &found));
    algos.resize(found);
    CK(cublasLtMatmulPreferenceDestroy(pref));
  }
  void Run(cublasLtHandle_t lt, size_t algo, const void* a, const void* w, float beta, const void* c, void* d,
           void* workspace, size_t workspace_bytes, cudaStream_t s) const {
    const float alpha = 1.f;
    CK(cublasLtMatmul(lt, op, &alpha, w, la, a, lb, &beta, c, lc, d, lc, &algos[algo].algo, workspace,
                      workspace_bytes, s));
  }
};

// A stream, a cuBLASLt handle and a 32 MiB workspace: what every probe times on.
struct LtSession {
  cudaStream_t s;
  cublasLtHandle_t lt;
  void* ws;
  size_t wsz;
  static LtSession Create() {
    LtSession r{nullptr, nullptr, nullptr, size_t(32) << 20};
    CK(cudaStreamCreate(&r.s));
    CK(cublasLtCreate(&r.lt));
    CK(cudaMalloc(&r.ws, r.wsz));
    return r;
  }
};

// BERT-base's four GEMMs per layer (width 768, FFN 3072), as the probes time them.
struct BertGemm {
  const char* name;
  int n, k;
  cublasLtEpilogue_t epilogue;
  bool residual;  // the residual added as C (beta 1)
};
inline constexpr BertGemm kBertGemms[] = {{"qkv", 2304, 768, CUBLASLT_EPILOGUE_BIAS, false},
                                          {"out", 768, 768, CUBLASLT_EPILOGUE_BIAS, true},
                                          {"ff1", 3072, 768, CUBLASLT_EPILOGUE_GELU_BIAS, false},
                                          {"ff2", 768, 3072, CUBLASLT_EPILOGUE_BIAS, true}};

// Zeroed f16 operands large enough for any of kBertGemms at `m` rows: A, W, the bias, C and D.
struct BertGemmBuffers {
  __half *a, *w, *b, *c, *d;
  explicit BertGemmBuffers(int m) {
    const size_t rows = size_t(m) * 3072 * 2;
    for (auto [p, bytes] : {std::pair<__half**, size_t>{&a, rows}, {&w, size_t(3072) * 3072 * 2}, {&b, 3072 * 2},
                            {&c, rows}, {&d, rows}}) {
      CK(cudaMalloc(p, bytes));
      CK(cudaMemset(*p, 0, bytes));
    }
  }
};
