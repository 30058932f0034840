// vm/cuda/library_calls_cublaslt.h — the cuBLASLt calls of "cublas.gemm"
// kernels, shared verbatim by the VM (vm/cuda/cublas_kernels.cc) and keelc
// --emit=cuda-host programs (see library_calls.h for why and how).
//
// The row-major problem Y = alpha opA(A) opB(B) (+ bias) is run as cuBLASLt's
// column-major Y^T = opB(B)^T opA(A)^T: operands swapped, each keeping its
// transpose flag (serialization/library_ops.h). A "row" bias and relu /
// gelu_tanh go through cuBLASLt epilogues; a "full" bias is C with beta.
// Compute type is FP32 with f32 alpha/beta for every element type (half
// operands run on the tensor cores accumulating in f32); f32 operands use TF32
// only when allowed. Two algorithms are kept: one for 16-byte aligned operands
// (tuned or the heuristics' first) and a fallback for operands aligned to one
// element.
//
// Ownership: GemmDescriptors holds cuBLASLt objects the caller destroys with
// DestroyGemmDescriptors (safe on a partly created set). Errors: CallStatus.
#ifndef KEEL_VM_CUDA_LIBRARY_CALLS_CUBLASLT_H_
#define KEEL_VM_CUDA_LIBRARY_CALLS_CUBLASLT_H_

#include <cublasLt.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "vm/cuda/library_calls.h"

namespace keel::cuda_lib {

// Tuning entries hold the workspace and then the algorithm as 8 64-bit words.
constexpr size_t kGemmAlgoWords = sizeof(cublasLtMatmulAlgo_t) / sizeof(int64_t);
static_assert(sizeof(cublasLtMatmulAlgo_t) == kGemmAlgoWords * sizeof(int64_t), "an algorithm is whole words");

// The heuristics may pick algorithms that want up to this much workspace.
constexpr uint64_t kMaxGemmWorkspace = 32ull << 20;

enum class GemmActivation : int { kNone = 0, kRelu = 1, kGeluTanh = 2 };

// One cublas.gemm problem, its attributes already validated.
struct GemmProblem {
  int64_t m = 1, n = 1, k = 1, batch = 1;
  bool trans_a = false, trans_b = false;
  int64_t stride_a = 0, stride_b = 0;  // elements between batches of A and B
  bool has_bias = false, full_bias = false;
  bool has_residual = false;  // C is a residual matrix added with factor 1 (never with a full bias)
  GemmActivation activation = GemmActivation::kNone;
  ElementType type = ElementType::kF32;      // A and B
  ElementType out_type = ElementType::kF32;  // D, C and the bias: `type`, or f32 from half A and B
  bool allow_tf32 = false;
};

struct GemmDescriptors {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
};

inline void DestroyGemmDescriptors(GemmDescriptors& g) {
  if (g.pref) (void)cublasLtMatmulPreferenceDestroy(g.pref);
  for (cublasLtMatrixLayout_t l : {g.a, g.b, g.c, g.d}) {
    if (l) (void)cublasLtMatrixLayoutDestroy(l);
  }
  if (g.desc) (void)cublasLtMatmulDescDestroy(g.desc);
  g = GemmDescriptors{};
}

// A column-major layout of `rows` x `cols` (leading dimension `rows`), strided
// batches when batch > 1.
inline CallStatus GemmLayout(cublasLtMatrixLayout_t* l, cudaDataType_t type, int64_t rows, int64_t cols,
                             int64_t batch, int64_t stride) {
  KEEL_LIB_CUBLAS(cublasLtMatrixLayoutCreate, l, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), rows);
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    KEEL_LIB_CUBLAS(cublasLtMatrixLayoutSetAttribute, *l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
    KEEL_LIB_CUBLAS(cublasLtMatrixLayoutSetAttribute, *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                    sizeof stride);
  }
  return {};
}

// The matmul descriptor (compute type, transposes, epilogue, bias type), the
// four layouts and the preference (maximum workspace), in the VM's order.
inline CallStatus CreateGemmDescriptors(const GemmProblem& p, GemmDescriptors* g) {
  const ElementTypeInfo& t = InfoOf(p.type);
  // f32 accumulation and f32 alpha/beta for every type; TF32 concerns f32 operands only.
  const cublasComputeType_t compute = !t.half && p.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  KEEL_LIB_CUBLAS(cublasLtMatmulDescCreate, &g->desc, compute, CUDA_R_32F);
  const cublasOperation_t op_a = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // on B
  const cublasOperation_t op_b = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;  // on A
  KEEL_LIB_CUBLAS(cublasLtMatmulDescSetAttribute, g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a);
  KEEL_LIB_CUBLAS(cublasLtMatmulDescSetAttribute, g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b);
  const bool row_bias = p.has_bias && !p.full_bias;
  cublasLtEpilogue_t e = row_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  if (p.activation == GemmActivation::kRelu) e = row_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  if (p.activation == GemmActivation::kGeluTanh) e = row_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  KEEL_LIB_CUBLAS(cublasLtMatmulDescSetAttribute, g->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e);
  const ElementTypeInfo& out = InfoOf(p.out_type);
  if (row_bias) {
    // The bias vector in D's type (cuBLASLt's default for f32/f16/bf16 D, set
    // explicitly; with half A/B and f32 D it takes no half bias).
    const cudaDataType_t bt = out.cuda;
    KEEL_LIB_CUBLAS(cublasLtMatmulDescSetAttribute, g->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
  }
  const int64_t m = p.m, n = p.n, kk = p.k;
  // Operand 1 is B: [n,k] when not transposed (ld n), else [k,n] (ld k).
  KEEL_LIB_RETURN_IF_FAILED(GemmLayout(&g->a, t.cuda, p.trans_b ? kk : n, p.trans_b ? n : kk, p.batch, p.stride_b));
  // Operand 2 is A: [k,m] (ld k), or [m,k] (ld m) when transposed.
  KEEL_LIB_RETURN_IF_FAILED(GemmLayout(&g->b, t.cuda, p.trans_a ? m : kk, p.trans_a ? kk : m, p.batch, p.stride_a));
  KEEL_LIB_RETURN_IF_FAILED(GemmLayout(&g->d, out.cuda, n, m, p.batch, m * n));
  // C is Y, the residual (Y's layout), or the "full" bias: the same matrix for
  // every batch (stride 0).
  KEEL_LIB_RETURN_IF_FAILED(GemmLayout(&g->c, out.cuda, n, m, p.batch, p.full_bias ? 0 : m * n));
  KEEL_LIB_CUBLAS(cublasLtMatmulPreferenceCreate, &g->pref);
  const uint64_t max_ws = kMaxGemmWorkspace;
  KEEL_LIB_CUBLAS(cublasLtMatmulPreferenceSetAttribute, g->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws,
                  sizeof max_ws);
  return {};
}

// Up to `count` usable algorithms for operands aligned to `alignment` bytes, in
// the heuristics' order; none (and ok) when cuBLASLt supports no algorithm.
inline CallStatus GemmHeuristics(cublasLtHandle_t lt, const GemmDescriptors& g, uint32_t alignment, int count,
                                 std::vector<cublasLtMatmulHeuristicResult_t>* out) {
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    KEEL_LIB_CUBLAS(cublasLtMatmulPreferenceSetAttribute, g.pref, attr, &alignment, sizeof alignment);
  }
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(count));
  int returned = 0;
  const cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(lt, g.desc, g.a, g.b, g.c, g.d, g.pref, count, results.data(), &returned);
  out->clear();
  if (s == CUBLAS_STATUS_NOT_SUPPORTED) return {};
  if (s != CUBLAS_STATUS_SUCCESS) return {CallStatus::kCublas, static_cast<int>(s), "cublasLtMatmulAlgoGetHeuristic"};
  for (int i = 0; i < returned; ++i) {
    if (results[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS) out->push_back(results[static_cast<size_t>(i)]);
  }
  return {};
}

// An algorithm and its workspace; `found` false when there is none.
struct GemmAlgorithm {
  cublasLtMatmulAlgo_t algo{};
  uint64_t workspace = 0;
  bool found = false;
};

// A tuning entry's algorithm (autotune.h: workspace, then kGemmAlgoWords words);
// not found for an entry of another size.
inline GemmAlgorithm GemmAlgorithmFromTuning(const std::vector<int64_t>& entry) {
  GemmAlgorithm a;
  if (entry.size() == 1 + kGemmAlgoWords) {
    a.workspace = static_cast<uint64_t>(entry[0]);
    std::memcpy(&a.algo, entry.data() + 1, sizeof a.algo);
    a.found = true;
  }
  return a;
}

inline std::vector<int64_t> GemmTuningEntry(const GemmAlgorithm& a) {
  std::vector<int64_t> v(1 + kGemmAlgoWords);
  v[0] = static_cast<int64_t>(a.workspace);
  std::memcpy(v.data() + 1, &a.algo, sizeof a.algo);
  return v;
}

inline GemmAlgorithm GemmAlgorithmOf(const cublasLtMatmulHeuristicResult_t& r) {
  return GemmAlgorithm{r.algo, r.workspaceSize, true};
}

// The trace's name of a launch with this algorithm.
inline std::string GemmDescribe(const GemmAlgorithm& a) {
  int id = -1, tile = -1;
  size_t written = 0;
  (void)cublasLtMatmulAlgoConfigGetAttribute(&a.algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written);
  (void)cublasLtMatmulAlgoConfigGetAttribute(&a.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &written);
  return "cublasLtMatmul algo=" + std::to_string(id) + " tile=" + std::to_string(tile) +
         " workspace=" + std::to_string(a.workspace);
}

// The launch-time state of a planned gemm: descriptors, both algorithms, the
// scale factors and the trace names.
struct GemmPlan {
  GemmDescriptors d;
  GemmAlgorithm aligned16, aligned1;  // 16-byte aligned operands; one element's alignment
  float alpha = 1.f, beta = 0.f;  // beta: the full bias's, 1 with a residual, else 0
  bool has_bias = false, full_bias = false, has_residual = false;
  std::string call16, call1;
};

// The end of planning once the 16-byte algorithm is chosen (tuned, timed or the
// heuristics' first): the fallback for one element's alignment, and the trace
// names. Ok with aligned1.found false when cuBLASLt has no fallback algorithm.
inline CallStatus GemmFinishPlan(cublasLtHandle_t lt, ElementType type, GemmPlan* p) {
  std::vector<cublasLtMatmulHeuristicResult_t> one;
  KEEL_LIB_RETURN_IF_FAILED(GemmHeuristics(lt, p->d, InfoOf(type).bytes, 1, &one));
  if (one.empty()) return {};
  p->aligned1 = GemmAlgorithmOf(one[0]);
  p->call16 = p->aligned16.found ? GemmDescribe(p->aligned16) : std::string();
  p->call1 = GemmDescribe(p->aligned1) + " (" + std::to_string(InfoOf(type).bytes) + "-byte aligned)";
  return {};
}

inline uint64_t GemmWorkspaceBytes(const GemmPlan& p) {
  return p.aligned16.workspace > p.aligned1.workspace ? p.aligned16.workspace : p.aligned1.workspace;
}

// One launch on `stream`: the 16-byte algorithm when every operand allows it.
// Sets *call to the trace name of the algorithm used.
inline CallStatus GemmLaunch(cublasLtHandle_t lt, GemmPlan& p, const void* a, const void* b, const void* bias,
                             const void* residual, void* y, void* workspace, cudaStream_t stream,
                             const std::string** call) {
  const void* c = p.full_bias ? bias : p.has_residual ? residual : y;
  const uintptr_t misalign = (reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
                              reinterpret_cast<uintptr_t>(c) | reinterpret_cast<uintptr_t>(y)) & 15u;
  const bool use16 = p.aligned16.found && misalign == 0;
  if (p.has_bias && !p.full_bias) {
    KEEL_LIB_CUBLAS(cublasLtMatmulDescSetAttribute, p.d.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  }
  const GemmAlgorithm& algo = use16 ? p.aligned16 : p.aligned1;
  // Operand order is swapped (column-major view of the row-major problem).
  KEEL_LIB_CUBLAS(cublasLtMatmul, lt, p.d.desc, &p.alpha, b, p.d.a, a, p.d.b, &p.beta, c, p.d.c, y, p.d.d, &algo.algo,
                  workspace, algo.workspace, stream);
  *call = use16 ? &p.call16 : &p.call1;
  return {};
}

}  // namespace keel::cuda_lib

#endif  // KEEL_VM_CUDA_LIBRARY_CALLS_CUBLASLT_H_
