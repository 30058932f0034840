// bench/cuda/bert_probes/gemm_weight_layout.cu — cuBLASLt on BERT-base's four GEMMs, weight [K,N] (Keel) vs [N,K] (PyTorch), best of the heuristics' 8, graph replay.
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <functional>
#include <algorithm>
#define CK(x) do { auto e = (x); if (e != 0) { printf("%s:%d err %d\n", __FILE__, __LINE__, (int)e); exit(1);} } while (0)
static float Bench(cudaStream_t s, int reps, const std::function<void()>& f) {
  cudaGraph_t g; cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < reps; ++i) f();
  CK(cudaStreamEndCapture(s, &g)); CK(cudaGraphInstantiate(&ge, g, 0));
  for (int i = 0; i < 5; ++i) CK(cudaGraphLaunch(ge, s));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  float best = 1e9;
  for (int t = 0; t < 9; ++t) {
    cudaEventRecord(e0, s);
    for (int i = 0; i < 10; ++i) CK(cudaGraphLaunch(ge, s));
    cudaEventRecord(e1, s); CK(cudaEventSynchronize(e1));
    float ms; cudaEventElapsedTime(&ms, e0, e1); best = std::min(best, ms * 1000 / (10 * reps));
  }
  cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
  return best;
}
int main(int argc, char** argv) {
  const int m = argc > 1 ? atoi(argv[1]) : 1024;
  cudaStream_t s; CK(cudaStreamCreate(&s));
  cublasLtHandle_t lt; CK(cublasLtCreate(&lt));
  void* ws; size_t wsz = 32 << 20; CK(cudaMalloc(&ws, wsz));
  struct Shape { const char* name; int n, k; cublasLtEpilogue_t epi; bool res; };
  Shape shapes[] = {{"qkv", 2304, 768, CUBLASLT_EPILOGUE_BIAS, false}, {"out", 768, 768, CUBLASLT_EPILOGUE_BIAS, true},
                    {"ff1", 3072, 768, CUBLASLT_EPILOGUE_GELU_BIAS, false}, {"ff2", 768, 3072, CUBLASLT_EPILOGUE_BIAS, true}};
  __half *a, *w, *b, *c, *d;
  CK(cudaMalloc(&a, (size_t)m * 3072 * 2)); CK(cudaMalloc(&w, 3072 * 3072 * 2)); CK(cudaMalloc(&b, 3072 * 2));
  CK(cudaMalloc(&c, (size_t)m * 3072 * 2)); CK(cudaMalloc(&d, (size_t)m * 3072 * 2));
  CK(cudaMemset(a, 0, (size_t)m * 3072 * 2)); CK(cudaMemset(w, 0, 3072 * 3072 * 2)); CK(cudaMemset(b, 0, 3072 * 2)); CK(cudaMemset(c, 0, (size_t)m * 3072 * 2));
  for (int round = 0; round < 3; ++round)
  for (auto& sh : shapes) {
    for (int trans = 0; trans < 2; ++trans) {
      // column-major view: D^T[n,m] = op(W)^T ... ; Keel: W [K,N] row-major = col-major N x K (lda N), op N.
      // PyTorch: W [N,K] row-major = col-major K x N (lda K), op T.
      cublasLtMatmulDesc_t op; CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      cublasOperation_t ta = trans ? CUBLAS_OP_T : CUBLAS_OP_N;
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &sh.epi, sizeof(sh.epi)));
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof(b)));
      cudaDataType_t bt = CUDA_R_16F; CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)));
      cublasLtMatrixLayout_t la, lb, lc;
      if (trans) CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, sh.k, sh.n, sh.k));
      else CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, sh.n, sh.k, sh.n));
      CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, sh.k, m, sh.k));
      CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16F, sh.n, m, sh.n));
      cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
      CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsz, sizeof(wsz)));
      cublasLtMatmulHeuristicResult_t hr[8]; int nres = 0;
      CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 8, hr, &nres));
      const float alpha = 1, beta = sh.res ? 1 : 0;
      float best = 1e9, first = 0;
      for (int i = 0; i < nres; ++i) {
        float tm = Bench(s, 20, [&] { CK(cublasLtMatmul(lt, op, &alpha, w, la, a, lb, &beta, c, lc, d, lc, &hr[i].algo, ws, wsz, s)); });
        if (i == 0) first = tm;
        best = std::min(best, tm);
      }
      printf("round %d m %d %s %s: heuristic first %.2f us, best of %d %.2f us\n", round, m, sh.name, trans ? "W[N,K] (torch)" : "W[K,N] (keel) ", first, nres, best);
    }
  }
}
