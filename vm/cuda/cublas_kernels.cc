// vm/cuda/cublas_kernels.cc — see cublas_kernels.h.
#include "vm/cuda/cublas_kernels.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "serialization/format.h"
#include "serialization/library_ops.h"
#include "vm/cuda/autotune.h"
#include "vm/cuda/cuda_errors.h"
#include "vm/cuda/library_attrs.h"
#include "vm/cuda/library_dtypes.h"

namespace keel::vm_internal {
namespace {

namespace lo = ser::library_ops;

// Tuning entries hold the algorithm as kGemmAlgoWords 64-bit words (autotune.h).
static_assert(sizeof(cublasLtMatmulAlgo_t) == kGemmAlgoWords * sizeof(int64_t));

// The heuristics may pick algorithms that want up to this much workspace.
constexpr uint64_t kMaxGemmWorkspace = 32ull << 20;

int64_t Elements(const KernelArgEntry& a, const LibraryDType& t) { return static_cast<int64_t>(a.bytes / t.bytes); }

class CublasGemm final : public CudaLaunchState {
 public:
  CublasGemm(CudaDevice& dev, std::string name) : dev_(dev), name_(std::move(name)) {}
  ~CublasGemm() override {
    if (pref_) (void)cublasLtMatmulPreferenceDestroy(pref_);
    for (cublasLtMatrixLayout_t l : {a_, b_, c_, d_}) {
      if (l) (void)cublasLtMatrixLayoutDestroy(l);
    }
    if (desc_) (void)cublasLtMatmulDescDestroy(desc_);
  }

  Status Plan(const KernelEntry& k);
  Status Launch(void* const* args) override;

 private:
  Status Heuristic(uint32_t alignment, cublasLtMatmulAlgo_t* algo, uint64_t* ws, bool* found);
  Status Heuristics(uint32_t alignment, int count, std::vector<cublasLtMatmulHeuristicResult_t>* out);
  Status Tune(const std::string& key, uint64_t a_bytes, uint64_t b_bytes, uint64_t bias_bytes, uint64_t y_bytes);

  CudaDevice& dev_;
  std::string name_;
  cublasLtHandle_t lt_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr, d_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  // algo16_: 16-byte aligned operands (tuned); algo4_: any operands aligned to
  // one element (4 bytes in f32, 2 in f16/bf16), the fallback.
  cublasLtMatmulAlgo_t algo16_{}, algo4_{};
  bool has16_ = false;
  uint64_t ws16_ = 0, ws4_ = 0;
  LibraryDType dtype_;
  float alpha_ = 1.f, beta_ = 0.f;
  bool has_bias_ = false;
  bool full_bias_ = false;  // bias is cuBLASLt's C matrix
  int bias_arg_ = -1, y_arg_ = 2;
  std::string call16_, call4_;
};

Status CublasGemm::Heuristic(uint32_t alignment, cublasLtMatmulAlgo_t* algo, uint64_t* ws, bool* found) {
  std::vector<cublasLtMatmulHeuristicResult_t> results;
  KEEL_RETURN_IF_ERROR(Heuristics(alignment, 1, &results));
  *found = !results.empty();
  if (*found) {
    *algo = results[0].algo;
    *ws = results[0].workspaceSize;
  }
  return Status::Ok();
}

Status CublasGemm::Heuristics(uint32_t alignment, int count, std::vector<cublasLtMatmulHeuristicResult_t>* out) {
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    KEEL_CUBLAS_RETURN(cublasLtMatmulPreferenceSetAttribute, pref_, attr, &alignment, sizeof alignment);
  }
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(count));
  int returned = 0;
  const cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(lt_, desc_, a_, b_, c_, d_, pref_, count, results.data(), &returned);
  if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED) {
    return CublasStatus(s, "cublasLtMatmulAlgoGetHeuristic");
  }
  out->clear();
  if (s != CUBLAS_STATUS_SUCCESS) return Status::Ok();
  for (int i = 0; i < returned; ++i)
    if (results[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS) out->push_back(results[static_cast<size_t>(i)]);
  return Status::Ok();
}

// Times the heuristics' top candidates (16-byte aligned operands) on scratch
// buffers and keeps the fastest in algo16_/ws16_ (autotune.h).
Status CublasGemm::Tune(const std::string& key, uint64_t a_bytes, uint64_t b_bytes, uint64_t bias_bytes,
                        uint64_t y_bytes) {
  if (const std::vector<int64_t>* t = dev_.FindTuning(key); t != nullptr) {
    if (t->size() == 1 + sizeof(cublasLtMatmulAlgo_t) / sizeof(int64_t)) {
      ws16_ = static_cast<uint64_t>((*t)[0]);
      std::memcpy(&algo16_, t->data() + 1, sizeof algo16_);
      has16_ = true;
    }
    return Status::Ok();
  }
  std::vector<cublasLtMatmulHeuristicResult_t> cands;
  KEEL_RETURN_IF_ERROR(Heuristics(16, 8, &cands));
  if (cands.size() > 1 && dev_.autotune()) {
    ScratchBuffers scratch(dev_.device_allocator());
    uint64_t max_ws = 0;
    for (const auto& c : cands) max_ws = std::max<uint64_t>(max_ws, c.workspaceSize);
    KEEL_ASSIGN_OR_RETURN(void* a, scratch.Get(a_bytes));
    KEEL_ASSIGN_OR_RETURN(void* b, scratch.Get(b_bytes));
    KEEL_ASSIGN_OR_RETURN(void* y, scratch.Get(y_bytes));
    KEEL_ASSIGN_OR_RETURN(void* ws, scratch.Get(max_ws));
    void* bias = nullptr;
    if (has_bias_) { KEEL_ASSIGN_OR_RETURN(bias, scratch.Get(bias_bytes)); }
    if (has_bias_ && !full_bias_) {
      KEEL_CUBLAS_RETURN(cublasLtMatmulDescSetAttribute, desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    }
    const void* c = full_bias_ ? bias : y;
    KEEL_ASSIGN_OR_RETURN(CUfunction spin, dev_.RuntimeFunction("keel_spin"));
    std::vector<double> us;
    for (const auto& cand : cands) {
      auto enqueue = [&]() {
        return cublasLtMatmul(lt_, desc_, &alpha_, b, a_, a, b_, &beta_, c, c_, y, d_, &cand.algo, ws,
                              cand.workspaceSize, dev_.stream()) == CUBLAS_STATUS_SUCCESS;
      };
      KEEL_ASSIGN_OR_RETURN(double t, TimeOnStream(dev_.stream(), spin, 10, enqueue));
      us.push_back(t);
      if (dev_.autotune_log()) {
        int id = -1, tile = -1;
        size_t written = 0;
        (void)cublasLtMatmulAlgoConfigGetAttribute(&cand.algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written);
        (void)cublasLtMatmulAlgoConfigGetAttribute(&cand.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                                   &written);
        std::fprintf(stderr, "keel autotune %s cublasLt algo=%d tile=%d ws=%zu: %.2f us\n", name_.c_str(), id, tile,
                     cand.workspaceSize, t);
      }
    }
    const int pick = PickFastest(us);
    if (pick >= 0) {
      algo16_ = cands[static_cast<size_t>(pick)].algo;
      ws16_ = cands[static_cast<size_t>(pick)].workspaceSize;
      has16_ = true;
    }
  } else if (!cands.empty()) {
    algo16_ = cands[0].algo;
    ws16_ = cands[0].workspaceSize;
    has16_ = true;
  }
  if (has16_) {
    std::vector<int64_t> v(1 + sizeof(cublasLtMatmulAlgo_t) / sizeof(int64_t));
    v[0] = static_cast<int64_t>(ws16_);
    std::memcpy(v.data() + 1, &algo16_, sizeof algo16_);
    dev_.StoreTuning(key, std::move(v));
  }
  return Status::Ok();
}

Status CublasGemm::Plan(const KernelEntry& k) {
  AttrReader at(k);
  constexpr int64_t kMax = int64_t{1} << 40;
  KEEL_ASSIGN_OR_RETURN(const int64_t m, at.RequiredInt(lo::attr::kM, 1, kMax));
  KEEL_ASSIGN_OR_RETURN(const int64_t n, at.RequiredInt(lo::attr::kN, 1, kMax));
  KEEL_ASSIGN_OR_RETURN(const int64_t kk, at.RequiredInt(lo::attr::kK, 1, kMax));
  KEEL_ASSIGN_OR_RETURN(const int64_t batch, at.Int(lo::attr::kBatch, 1, 1, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(const int64_t ta, at.Int(lo::attr::kTransA, 0, 0, 1));
  KEEL_ASSIGN_OR_RETURN(const int64_t tb, at.Int(lo::attr::kTransB, 0, 0, 1));
  KEEL_ASSIGN_OR_RETURN(const int64_t sa, at.Int(lo::attr::kStrideA, m * kk, 0, kMax));
  KEEL_ASSIGN_OR_RETURN(const int64_t sb, at.Int(lo::attr::kStrideB, kk * n, 0, kMax));
  KEEL_ASSIGN_OR_RETURN(const int64_t sy, at.Int(lo::attr::kStrideY, m * n, 0, kMax));
  KEEL_ASSIGN_OR_RETURN(const int64_t has_bias, at.Int(lo::attr::kHasBias, 0, 0, 1));
  KEEL_ASSIGN_OR_RETURN(const std::string bias_mode,
                        at.Str(lo::attr::kBiasBroadcast, lo::value::kBiasRow, {lo::value::kBiasRow, lo::value::kBiasFull}));
  KEEL_ASSIGN_OR_RETURN(const double alpha, at.Float(lo::attr::kAlpha, 1.0));
  KEEL_ASSIGN_OR_RETURN(const double beta, at.Float(lo::attr::kBeta, 1.0));
  KEEL_ASSIGN_OR_RETURN(const std::string epi,
                        at.Str(lo::attr::kEpilogue, "", {lo::value::kEpilogueNone, lo::value::kEpilogueRelu,
                                                         lo::value::kEpilogueGeluTanh}));
  KEEL_RETURN_IF_ERROR(at.Finish());

  has_bias_ = has_bias != 0;
  full_bias_ = has_bias_ && bias_mode == lo::value::kBiasFull;
  const size_t nargs = 3 + (has_bias_ ? 1 : 0) + (k.workspace_bytes > 0 ? 1 : 0);
  if (k.args.size() != nargs) {
    return InvalidExecutable("kernel " + k.name + " (cublas.gemm): expected " + std::to_string(nargs) +
                             " arguments (A, B" + (has_bias_ ? ", bias" : "") + ", Y" +
                             (k.workspace_bytes ? ", workspace" : "") + "), got " + std::to_string(k.args.size()));
  }
  bias_arg_ = has_bias_ ? 2 : -1;
  y_arg_ = has_bias_ ? 3 : 2;
  // A, B, the bias (row vector or C matrix) and Y all in one type: f32, f16 or
  // bf16 (no mixed I/O; cuBLASLt takes a half bias vector of D's type).
  KEEL_ASSIGN_OR_RETURN(dtype_, LibraryDTypeOfArg(k, 0, "A"));
  KEEL_RETURN_IF_ERROR(RequireDType(k, 1, "B", dtype_));
  if (has_bias_) KEEL_RETURN_IF_ERROR(RequireDType(k, 2, "the bias", dtype_));
  KEEL_RETURN_IF_ERROR(RequireDType(k, static_cast<size_t>(y_arg_), "Y", dtype_));
  auto need = [&](int arg, int64_t stride, int64_t block, const char* what) -> Status {
    const int64_t needed = (batch - 1) * stride + block;
    if (Elements(k.args[arg], dtype_) < needed) {
      return InvalidExecutable("kernel " + k.name + " (cublas.gemm): " + what + " has " +
                               std::to_string(Elements(k.args[arg], dtype_)) + " elements, the attributes address " +
                               std::to_string(needed));
    }
    return Status::Ok();
  };
  KEEL_RETURN_IF_ERROR(need(0, sa, m * kk, "A"));
  KEEL_RETURN_IF_ERROR(need(1, sb, kk * n, "B"));
  if (Elements(k.args[y_arg_], dtype_) != batch * m * n || (batch > 1 && sy != m * n)) {
    return InvalidExecutable("kernel " + k.name + " (cublas.gemm): Y must be dense with batch*m*n = " +
                             std::to_string(batch * m * n) + " elements");
  }
  if (has_bias_) {
    const int64_t want = full_bias_ ? m * n : n;
    if (Elements(k.args[2], dtype_) != want) {
      return InvalidExecutable("kernel " + k.name + " (cublas.gemm): a \"" + bias_mode + "\" bias needs " +
                               std::to_string(want) + " elements, got " + std::to_string(Elements(k.args[2], dtype_)));
    }
    if (!full_bias_ && beta != 1.0) {
      return Unsupported("kernel " + k.name + " (cublas.gemm): a \"row\" bias needs beta == 1 (fold beta into it)");
    }
  }
  alpha_ = static_cast<float>(alpha);
  beta_ = full_bias_ ? static_cast<float>(beta) : 0.f;

  KEEL_ASSIGN_OR_RETURN(lt_, dev_.LtHandle());
  // f32 accumulation and f32 alpha/beta for every type. Half operands run on the
  // tensor cores with that (CUBLAS_COMPUTE_32F); TF32 concerns f32 operands only.
  const cublasComputeType_t compute =
      !dtype_.half && dev_.allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  KEEL_CUBLAS_RETURN(cublasLtMatmulDescCreate, &desc_, compute, CUDA_R_32F);
  // Row-major Y = opA(A) opB(B) is column-major Y^T = opB(B)^T opA(A)^T: swap the
  // operands, keep each one's transpose flag (library_ops.h).
  const cublasOperation_t op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N;  // on B
  const cublasOperation_t op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;  // on A
  KEEL_CUBLAS_RETURN(cublasLtMatmulDescSetAttribute, desc_, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a);
  KEEL_CUBLAS_RETURN(cublasLtMatmulDescSetAttribute, desc_, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b);
  const bool row_bias = has_bias_ && !full_bias_;
  cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_DEFAULT;
  if (epi == lo::value::kEpilogueRelu) e = row_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  else if (epi == lo::value::kEpilogueGeluTanh) e = row_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  else if (row_bias) e = CUBLASLT_EPILOGUE_BIAS;
  KEEL_CUBLAS_RETURN(cublasLtMatmulDescSetAttribute, desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e);
  if (row_bias) {
    // The bias vector in D's type (cuBLASLt's default for f32/f16/bf16 D, set explicitly).
    const cudaDataType_t bt = dtype_.cuda;
    KEEL_CUBLAS_RETURN(cublasLtMatmulDescSetAttribute, desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
  }

  auto layout = [&](cublasLtMatrixLayout_t* l, int64_t rows, int64_t cols, int64_t stride) -> Status {
    KEEL_CUBLAS_RETURN(cublasLtMatrixLayoutCreate, l, dtype_.cuda, static_cast<uint64_t>(rows),
                       static_cast<uint64_t>(cols), rows);
    if (batch > 1) {
      const int32_t count = static_cast<int32_t>(batch);
      KEEL_CUBLAS_RETURN(cublasLtMatrixLayoutSetAttribute, *l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                         sizeof count);
      KEEL_CUBLAS_RETURN(cublasLtMatrixLayoutSetAttribute, *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                         sizeof stride);
    }
    return Status::Ok();
  };
  // Column-major operand 1 is B: [n,k] when not transposed (ld n), else [k,n] (ld k).
  KEEL_RETURN_IF_ERROR(layout(&a_, tb ? kk : n, tb ? n : kk, sb));
  // Operand 2 is A: [k,m] (ld k), or [m,k] (ld m) when transposed.
  KEEL_RETURN_IF_ERROR(layout(&b_, ta ? m : kk, ta ? kk : m, sa));
  KEEL_RETURN_IF_ERROR(layout(&d_, n, m, m * n));
  KEEL_RETURN_IF_ERROR(layout(&c_, n, m, full_bias_ ? 0 : m * n));

  KEEL_CUBLAS_RETURN(cublasLtMatmulPreferenceCreate, &pref_);
  const uint64_t max_ws = kMaxGemmWorkspace;
  KEEL_CUBLAS_RETURN(cublasLtMatmulPreferenceSetAttribute, pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws,
                     sizeof max_ws);
  bool has4 = false;
  {
    const std::string key = GemmProblemKey(m, n, kk, batch, ta, tb, sa, sb, bias_mode, has_bias != 0, epi, alpha, beta,
                                           dev_.allow_tf32(), dtype_.dtype);
    KEEL_RETURN_IF_ERROR(Tune(key, k.args[0].bytes, k.args[1].bytes, has_bias_ ? k.args[2].bytes : 0,
                              k.args[y_arg_].bytes));
  }
  KEEL_RETURN_IF_ERROR(Heuristic(dtype_.bytes, &algo4_, &ws4_, &has4));
  if (!has4) {
    return Unsupported("kernel " + k.name + " (cublas.gemm): cuBLASLt has no algorithm for m=" + std::to_string(m) +
                       " n=" + std::to_string(n) + " k=" + std::to_string(kk) + " batch=" + std::to_string(batch) +
                       " epilogue \"" + epi + "\" in " + dtype_.name);
  }
  KEEL_RETURN_IF_ERROR(dev_.ReserveWorkspace(std::max(ws16_, ws4_)));
  auto describe = [](const cublasLtMatmulAlgo_t& a, uint64_t ws) {
    int id = -1, tile = -1;
    size_t written = 0;
    (void)cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written);
    (void)cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &written);
    return "cublasLtMatmul algo=" + std::to_string(id) + " tile=" + std::to_string(tile) +
           " workspace=" + std::to_string(ws);
  };
  call16_ = has16_ ? describe(algo16_, ws16_) : std::string();
  call4_ = describe(algo4_, ws4_) + " (" + std::to_string(dtype_.bytes) + "-byte aligned)";
  return Status::Ok();
}

Status CublasGemm::Launch(void* const* args) {
  const void* a = args[0];
  const void* b = args[1];
  void* y = args[y_arg_];
  const void* bias = has_bias_ ? args[bias_arg_] : nullptr;
  const void* c = full_bias_ ? bias : y;
  const uintptr_t misalign = (reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
                              reinterpret_cast<uintptr_t>(c) | reinterpret_cast<uintptr_t>(y)) & 15u;
  const bool use16 = has16_ && misalign == 0;
  if (has_bias_ && !full_bias_) {
    KEEL_CUBLAS_RETURN(cublasLtMatmulDescSetAttribute, desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  }
  dev_.Bind();
  dev_.BeginOp();
  // Operand order is swapped (column-major view of the row-major problem).
  const cublasStatus_t s =
      cublasLtMatmul(lt_, desc_, &alpha_, b, a_, a, b_, &beta_, c, c_, y, d_, use16 ? &algo16_ : &algo4_,
                     dev_.workspace(), use16 ? ws16_ : ws4_, dev_.stream());
  if (s != CUBLAS_STATUS_SUCCESS) return CublasStatus(s, "cublasLtMatmul").WithContext("kernel " + name_);
  dev_.EndLaunch(use16 ? call16_ : call4_, name_);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<CudaLaunchState>> MakeCublasGemm(CudaDevice& dev, const KernelEntry& kernel) {
  auto g = std::make_unique<CublasGemm>(dev, kernel.name);
  KEEL_RETURN_IF_ERROR(g->Plan(kernel));
  return std::unique_ptr<CudaLaunchState>(std::move(g));
}

}  // namespace keel::vm_internal
