// bench/cuda/bert_probes/gemm_weight_layout.cu — cuBLASLt on BERT-base's four GEMMs with the
// weight [K, N] (Keel's layout) or [N, K] (PyTorch's), the heuristics' first and best of 8,
// CUDA-graph replay. Argument: rows (1,024 = batch 8 x 128 tokens).
#include "bench/cuda/bert_probes/probe_util.cuh"

int main(int argc, char** argv) {
  const int m = argc > 1 ? std::atoi(argv[1]) : 1024;
  const LtSession ses = LtSession::Create();
  cudaStream_t s = ses.s; cublasLtHandle_t lt = ses.lt; void* ws = ses.ws; const size_t wsz = ses.wsz;
  const BertGemmBuffers buf(m);
  __half *a = buf.a, *w = buf.w, *b = buf.b, *c = buf.c, *d = buf.d;
  for (int round = 0; round < 3; ++round) {
    for (const BertGemm& sh : kBertGemms) {
      for (bool w_nk : {false, true}) {
        const LtGemm g(lt, m, sh.n, sh.k, w_nk, sh.epilogue, b, wsz, 8);
        float first = 0.f, best = 1e9f;
        for (size_t i = 0; i < g.algos.size(); ++i) {
          const float t = GraphMicros(s, 20, [&] { g.Run(lt, i, a, w, sh.residual ? 1.f : 0.f, c, d, ws, wsz, s); });
          if (i == 0) first = t;
          best = std::min(best, t);
        }
        std::printf("round %d m %d %s %s: heuristic first %.2f us, best of %zu %.2f us\n", round, m, sh.name,
                    w_nk ? "W[N,K] (torch)" : "W[K,N] (keel) ", first, g.algos.size(), best);
      }
    }
  }
}
