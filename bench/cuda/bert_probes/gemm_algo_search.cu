// bench/cuda/bert_probes/gemm_algo_search.cu — how much cuBLASLt time the heuristics' candidates
// leave on BERT-base's four GEMMs (f16, weight [N, K], bias / GELU epilogues, the residual as C),
// CUDA-graph replay. For each shape: the heuristics' first, the best of their first 8 (what Keel
// times today), the best of their first 64, each of the first 8 with other split-K counts, and an
// enumeration of every algorithm id x tile x stages x split-K {1, 2, 3, 4} x cluster shape the
// library accepts. Arguments: rows (1,024 = batch 8 x 128 tokens) and, optionally, "quick" to
// skip the enumeration.
#include <cstring>
#include <map>
#include <string>

#include "bench/cuda/bert_probes/probe_util.cuh"

namespace {

template <typename T>
T Config(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T v{};
  size_t n = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&a, attr, &v, sizeof(v), &n);
  return v;
}

std::string Describe(const cublasLtMatmulAlgo_t& a) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "id %d tile %d stages %d splitK %d red %d swz %d custom %d cluster %d",
                Config<int>(a, CUBLASLT_ALGO_CONFIG_ID), Config<int>(a, CUBLASLT_ALGO_CONFIG_TILE_ID),
                Config<int>(a, CUBLASLT_ALGO_CONFIG_STAGES_ID), Config<int>(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                Config<int>(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
                Config<int>(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING), Config<int>(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION),
                Config<int>(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID));
  return buf;
}

template <typename T>
std::vector<T> CapList(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoCapAttributes_t attr) {
  size_t n = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&a, attr, nullptr, 0, &n) != CUBLAS_STATUS_SUCCESS || n == 0) return {};
  std::vector<T> v(n / sizeof(T));
  cublasLtMatmulAlgoCapGetAttribute(&a, attr, v.data(), n, &n);
  return v;
}

template <typename T>
bool Set(cublasLtMatmulAlgo_t* a, cublasLtMatmulAlgoConfigAttributes_t attr, T v) {
  return cublasLtMatmulAlgoConfigSetAttribute(a, attr, &v, sizeof(v)) == CUBLAS_STATUS_SUCCESS;
}

}  // namespace

int main(int argc, char** argv) {
  const int m = argc > 1 ? std::atoi(argv[1]) : 1024;
  const bool quick = argc > 2 && std::strcmp(argv[2], "quick") == 0;
  const LtSession ses = LtSession::Create();
  cudaStream_t s = ses.s; cublasLtHandle_t lt = ses.lt; void* ws = ses.ws; const size_t wsz = ses.wsz;
  const BertGemmBuffers buf(m);
  __half *a = buf.a, *w = buf.w, *b = buf.b, *c = buf.c, *d = buf.d;
  float total_first = 0, total_best8 = 0, total_best64 = 0, total_split = 0, total_enum = 0;
  for (const BertGemm& sh : kBertGemms) {
    const LtGemm g(lt, m, sh.n, sh.k, /*w_nk=*/true, sh.epilogue, b, wsz, 64);
    const float beta = sh.residual ? 1.f : 0.f;
    auto time_algo = [&](const cublasLtMatmulAlgo_t& algo, int samples) {
      cublasLtMatmulHeuristicResult_t r{};
      if (cublasLtMatmulAlgoCheck(lt, g.op, g.la, g.lb, g.lc, g.lc, &algo, &r) != CUBLAS_STATUS_SUCCESS ||
          r.workspaceSize > wsz)
        return 1e9f;
      const float alpha = 1.f;
      // A failing launch (an accepted but unusable configuration) must not end the probe.
      if (cublasLtMatmul(lt, g.op, &alpha, w, g.la, a, g.lb, &beta, c, g.lc, d, g.lc, &algo, ws, wsz, s) !=
          CUBLAS_STATUS_SUCCESS) {
        cudaStreamSynchronize(s);
        cudaGetLastError();
        return 1e9f;
      }
      CK(cudaStreamSynchronize(s));
      return GraphMicros(s, 20, [&] {
        cublasLtMatmul(lt, g.op, &alpha, w, g.la, a, g.lb, &beta, c, g.lc, d, g.lc, &algo, ws, wsz, s);
      }, samples);
    };
    float first = 0, best8 = 1e9f, best64 = 1e9f;
    int best64_at = -1;
    for (size_t i = 0; i < g.algos.size(); ++i) {
      const float t = time_algo(g.algos[i].algo, 9);
      if (i == 0) first = t;
      if (i < 8) best8 = std::min(best8, t);
      if (t < best64) best64 = t, best64_at = int(i);
    }
    std::printf("m %d %s: %zu candidates; first %.2f us, best of 8 %.2f, best of all %.2f (#%d: %s)\n", m, sh.name,
                g.algos.size(), first, best8, best64, best64_at, Describe(g.algos[best64_at].algo).c_str());
    // The first 8 with other split-K counts (and each reduction scheme the algorithm has).
    float best_split = 1e9f;
    std::string best_split_what;
    for (size_t i = 0; i < std::min<size_t>(8, g.algos.size()); ++i) {
      for (int split : {1, 2, 3, 4, 6, 8}) {
        for (int red : {0, 1, 2, 4}) {
          if ((split == 1) != (red == 0)) continue;
          cublasLtMatmulAlgo_t algo = g.algos[i].algo;
          if (!Set(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, split) ||
              !Set(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, red))
            continue;
          const float t = time_algo(algo, 5);
          if (t < best_split) best_split = t, best_split_what = Describe(algo);
        }
      }
    }
    std::printf("m %d %s: first 8 x split-K: best %.2f us (%s)\n", m, sh.name, best_split, best_split_what.c_str());
    float best_enum = 1e9f;
    std::string best_enum_what;
    cublasLtMatmulAlgo_t best_enum_algo{};
    int tried = 0, accepted = 0;
    if (!quick) {
      int ids[256], nids = 0;
      CK(cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                                  256, ids, &nids));
      for (int id_i = 0; id_i < nids; ++id_i) {
        cublasLtMatmulAlgo_t base;
        if (cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                                   CUDA_R_16F, ids[id_i], &base) != CUBLAS_STATUS_SUCCESS)
          continue;
        std::vector<int> tiles = CapList<int>(base, CUBLASLT_ALGO_CAP_TILE_IDS);
        std::vector<int> stages = CapList<int>(base, CUBLASLT_ALGO_CAP_STAGES_IDS);
        if (tiles.empty()) tiles.push_back(0);
        if (stages.empty()) stages.push_back(0);
        int split_ok = 0;
        size_t n = 0;
        cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &split_ok, sizeof(split_ok), &n);
        for (int tile : tiles) {
          for (int stage : stages) {
            for (int split : {1, 2, 3, 4}) {
              if (split > 1 && !split_ok) continue;
              for (int cluster : {0, 2, 3, 5}) {  // auto, 1x1, 2x1, 1x2
                cublasLtMatmulAlgo_t algo = base;
                if (!Set(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, tile) ||
                    !Set(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, stage) ||
                    !Set(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, split))
                  continue;
                if (split > 1) Set(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, 1);  // in place
                if (cluster != 0 && !Set(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, cluster)) continue;
                ++tried;
                cublasLtMatmulHeuristicResult_t r{};
                if (cublasLtMatmulAlgoCheck(lt, g.op, g.la, g.lb, g.lc, g.lc, &algo, &r) != CUBLAS_STATUS_SUCCESS)
                  continue;
                ++accepted;
                const float t = time_algo(algo, 3);
                if (t < best_enum) best_enum = t, best_enum_what = Describe(algo), best_enum_algo = algo;
              }
            }
          }
        }
      }
      if (best_enum < 1e9f) best_enum = time_algo(best_enum_algo, 9);  // re-timed as the others
      std::printf("m %d %s: enumeration: %d ids, %d configurations, %d accepted; best %.2f us (%s)\n", m, sh.name,
                  nids, tried, accepted, best_enum, best_enum_what.c_str());
    }
    total_first += first, total_best8 += best8, total_best64 += best64, total_split += std::min(best_split, best8);
    total_enum += std::min({best_enum, best_split, best64});
  }
  std::printf("m %d per layer: first %.2f us, best of 8 %.2f, best of 64 %.2f, split-K variants %.2f, all %.2f\n", m,
              total_first, total_best8, total_best64, total_split, total_enum);
}
