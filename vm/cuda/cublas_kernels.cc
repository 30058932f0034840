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
#include "vm/cuda/library_calls_cublaslt.h"
#include "vm/cuda/library_dtypes.h"

namespace keel::vm_internal {
namespace {

namespace lo = ser::library_ops;

namespace cl = cuda_lib;

// Tuning entries hold the algorithm as kGemmAlgoWords 64-bit words (autotune.h).
static_assert(cl::kGemmAlgoWords == kGemmAlgoWords);

int64_t Elements(const KernelArgEntry& a, const LibraryDType& t) { return static_cast<int64_t>(a.bytes / t.bytes); }

// Descriptor set-up, the heuristics and the launch are the calls shared with
// keelc --emit=cuda-host programs (vm/cuda/library_calls_cublaslt.h); this class
// adds the executable's validation, timing and the device's bookkeeping.
class CublasGemm final : public CudaLaunchState {
 public:
  CublasGemm(CudaDevice& dev, std::string name) : dev_(dev), name_(std::move(name)) {}
  ~CublasGemm() override { cl::DestroyGemmDescriptors(plan_.d); }

  Status Plan(const KernelEntry& k);
  Status Launch(void* const* args) override;

 private:
  Status Tune(const std::string& key, uint64_t a_bytes, uint64_t b_bytes, uint64_t bias_bytes, uint64_t y_bytes);

  CudaDevice& dev_;
  std::string name_;
  cublasLtHandle_t lt_ = nullptr;
  cl::GemmPlan plan_;
  LibraryDType dtype_;  // A and B
  LibraryDType out_;    // Y, the bias and the residual
  int bias_arg_ = -1, res_arg_ = -1, y_arg_ = 2;
  uint64_t operand_bytes_[2] = {};  // A and B, for the L2 prefetch of a constant one
};

// The 16-byte algorithm (plan_.aligned16): the tuning file's, else the
// heuristics' top candidates timed in CUDA graphs on scratch buffers
// (autotune.h TimeInGraph), else the heuristics' first.
Status CublasGemm::Tune(const std::string& key, uint64_t a_bytes, uint64_t b_bytes, uint64_t bias_bytes,
                        uint64_t y_bytes) {
  if (const std::vector<int64_t>* t = dev_.FindTuning(key); t != nullptr) {
    plan_.aligned16 = cl::GemmAlgorithmFromTuning(*t);
    return Status::Ok();
  }
  std::vector<cublasLtMatmulHeuristicResult_t> cands;
  KEEL_RETURN_IF_ERROR(LibraryCallStatus(cl::GemmHeuristics(lt_, plan_.d, 16, 8, &cands)));
  const bool has_bias = plan_.has_bias, full_bias = plan_.full_bias;
  if (cands.size() > 1 && dev_.autotune()) {
    ScratchBuffers scratch(dev_.device_allocator());
    uint64_t max_ws = 0;
    for (const auto& c : cands) max_ws = std::max<uint64_t>(max_ws, c.workspaceSize);
    KEEL_ASSIGN_OR_RETURN(void* a, scratch.Get(a_bytes));
    KEEL_ASSIGN_OR_RETURN(void* b, scratch.Get(b_bytes));
    KEEL_ASSIGN_OR_RETURN(void* y, scratch.Get(y_bytes));
    KEEL_ASSIGN_OR_RETURN(void* ws, scratch.Get(max_ws));
    void* bias = nullptr;
    if (has_bias) { KEEL_ASSIGN_OR_RETURN(bias, scratch.Get(bias_bytes)); }
    if (has_bias && !full_bias) {
      KEEL_CUBLAS_RETURN(cublasLtMatmulDescSetAttribute, plan_.d.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                         sizeof bias);
    }
    const void* c = full_bias ? bias : y;
    std::vector<double> us;
    for (const auto& cand : cands) {
      auto enqueue = [&]() {
        return cublasLtMatmul(lt_, plan_.d.desc, &plan_.alpha, b, plan_.d.a, a, plan_.d.b, &plan_.beta, c,
                              plan_.d.c, y, plan_.d.d, &cand.algo, ws, cand.workspaceSize,
                              dev_.stream()) == CUBLAS_STATUS_SUCCESS;
      };
      KEEL_ASSIGN_OR_RETURN(double t, TimeInGraph(dev_.stream(), 10, enqueue));
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
    if (pick >= 0) plan_.aligned16 = cl::GemmAlgorithmOf(cands[static_cast<size_t>(pick)]);
  } else if (!cands.empty()) {
    plan_.aligned16 = cl::GemmAlgorithmOf(cands[0]);
  }
  if (plan_.aligned16.found) dev_.StoreTuning(key, cl::GemmTuningEntry(plan_.aligned16));
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
  KEEL_ASSIGN_OR_RETURN(const int64_t has_res, at.Int(lo::attr::kHasResidual, 0, 0, 1));
  KEEL_ASSIGN_OR_RETURN(const std::string bias_mode,
                        at.Str(lo::attr::kBiasBroadcast, lo::value::kBiasRow, {lo::value::kBiasRow, lo::value::kBiasFull}));
  KEEL_ASSIGN_OR_RETURN(const double alpha, at.Float(lo::attr::kAlpha, 1.0));
  KEEL_ASSIGN_OR_RETURN(const double beta, at.Float(lo::attr::kBeta, 1.0));
  KEEL_ASSIGN_OR_RETURN(const std::string epi,
                        at.Str(lo::attr::kEpilogue, "", {lo::value::kEpilogueNone, lo::value::kEpilogueRelu,
                                                         lo::value::kEpilogueGeluTanh}));
  KEEL_RETURN_IF_ERROR(at.Finish());

  operand_bytes_[0] = k.args[0].bytes;
  operand_bytes_[1] = k.args[1].bytes;
  plan_.has_bias = has_bias != 0;
  plan_.full_bias = plan_.has_bias && bias_mode == lo::value::kBiasFull;
  plan_.has_residual = has_res != 0;
  const bool has_b = plan_.has_bias, full_bias = plan_.full_bias, has_r = plan_.has_residual;
  if (full_bias && has_r) {
    return InvalidExecutable("kernel " + k.name + " (cublas.gemm): a residual cannot go with a \"full\" bias");
  }
  const lo::EpilogueArgs order = lo::EpilogueArgOrder(has_b, has_r);
  const size_t nargs = static_cast<size_t>(order.count()) + (k.workspace_bytes > 0 ? 1 : 0);
  if (k.args.size() != nargs) {
    return InvalidExecutable("kernel " + k.name + " (cublas.gemm): expected " + std::to_string(nargs) +
                             " arguments (A, B" + (has_b ? ", bias" : "") + (has_r ? ", residual" : "") + ", Y" +
                             (k.workspace_bytes ? ", workspace" : "") + "), got " + std::to_string(k.args.size()));
  }
  bias_arg_ = order.bias;
  res_arg_ = order.residual;
  y_arg_ = order.y;
  // A and B in one type: f32, f16 or bf16. Y, the bias (row vector or C
  // matrix) and the residual in Y's type: A's, or f32 from half A and B
  // (cuBLASLt's D in f32; it takes a bias only in D's type).
  KEEL_ASSIGN_OR_RETURN(dtype_, LibraryDTypeOfArg(k, 0, "A"));
  KEEL_RETURN_IF_ERROR(RequireDType(k, 1, "B", dtype_));
  KEEL_ASSIGN_OR_RETURN(out_, LibraryDTypeOfArg(k, static_cast<size_t>(y_arg_), "Y"));
  if (out_.dtype != dtype_.dtype && !(dtype_.half && out_.dtype == DataType::kF32)) {
    return Unsupported("kernel " + k.name + " (cublas.gemm): Y in " + out_.name + " from A and B in " + dtype_.name +
                       " (Y takes A's type, or f32 from half A and B)");
  }
  if (has_b) KEEL_RETURN_IF_ERROR(RequireDType(k, 2, "the bias", out_));
  if (has_r) KEEL_RETURN_IF_ERROR(RequireDType(k, static_cast<size_t>(res_arg_), "the residual", out_));
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
  if (Elements(k.args[y_arg_], out_) != batch * m * n || (batch > 1 && sy != m * n)) {
    return InvalidExecutable("kernel " + k.name + " (cublas.gemm): Y must be dense with batch*m*n = " +
                             std::to_string(batch * m * n) + " elements");
  }
  if (has_r && Elements(k.args[res_arg_], out_) != batch * m * n) {
    return InvalidExecutable("kernel " + k.name + " (cublas.gemm): the residual must have batch*m*n = " +
                             std::to_string(batch * m * n) + " elements");
  }
  if (has_b) {
    const int64_t want = full_bias ? m * n : n;
    if (Elements(k.args[2], out_) != want) {
      return InvalidExecutable("kernel " + k.name + " (cublas.gemm): a \"" + bias_mode + "\" bias needs " +
                               std::to_string(want) + " elements, got " + std::to_string(Elements(k.args[2], out_)));
    }
    if (!full_bias && beta != 1.0) {
      return Unsupported("kernel " + k.name + " (cublas.gemm): a \"row\" bias needs beta == 1 (fold beta into it)");
    }
  }
  plan_.alpha = static_cast<float>(alpha);
  plan_.beta = full_bias ? static_cast<float>(beta) : has_r ? 1.f : 0.f;

  KEEL_ASSIGN_OR_RETURN(lt_, dev_.LtHandle());
  cl::GemmProblem problem;
  problem.m = m;
  problem.n = n;
  problem.k = kk;
  problem.batch = batch;
  problem.trans_a = ta != 0;
  problem.trans_b = tb != 0;
  problem.stride_a = sa;
  problem.stride_b = sb;
  problem.has_bias = has_b;
  problem.full_bias = full_bias;
  problem.has_residual = has_r;
  problem.activation = epi == lo::value::kEpilogueRelu       ? cl::GemmActivation::kRelu
                       : epi == lo::value::kEpilogueGeluTanh ? cl::GemmActivation::kGeluTanh
                                                             : cl::GemmActivation::kNone;
  problem.type = dtype_.element;
  problem.out_type = out_.element;
  problem.allow_tf32 = dev_.allow_tf32();
  KEEL_RETURN_IF_ERROR(LibraryCallStatus(cl::CreateGemmDescriptors(problem, &plan_.d)));
  {
    const std::string key = GemmProblemKey(m, n, kk, batch, ta, tb, sa, sb, bias_mode, has_bias != 0, has_r, epi,
                                           alpha, beta, dev_.allow_tf32(), dtype_.dtype, out_.dtype != dtype_.dtype);
    KEEL_RETURN_IF_ERROR(Tune(key, k.args[0].bytes, k.args[1].bytes, has_b ? k.args[2].bytes : 0,
                              k.args[y_arg_].bytes));
  }
  KEEL_RETURN_IF_ERROR(LibraryCallStatus(cl::GemmFinishPlan(lt_, dtype_.element, &plan_)));
  if (!plan_.aligned1.found) {
    return Unsupported("kernel " + k.name + " (cublas.gemm): cuBLASLt has no algorithm for m=" + std::to_string(m) +
                       " n=" + std::to_string(n) + " k=" + std::to_string(kk) + " batch=" + std::to_string(batch) +
                       " epilogue \"" + epi + "\" in " + dtype_.name + (out_.dtype != dtype_.dtype ? std::string(" to ") + out_.name : ""));
  }
  return dev_.ReserveWorkspace(cl::GemmWorkspaceBytes(plan_));
}

Status CublasGemm::Launch(void* const* args) {
  const void* bias = plan_.has_bias ? args[bias_arg_] : nullptr;
  const void* residual = plan_.has_residual ? args[res_arg_] : nullptr;
  dev_.Bind();
  const void* operands[2] = {args[0], args[1]};
  dev_.BeforeGemm(operands, operand_bytes_, 2);
  dev_.BeginOp();
  const std::string* call = nullptr;
  KEEL_RETURN_IF_ERROR(LibraryCallStatus(cl::GemmLaunch(lt_, plan_, args[0], args[1], bias, residual, args[y_arg_],
                                                        dev_.workspace(), dev_.stream(), &call))
                           .WithContext("kernel " + name_));
  dev_.EndLaunch(*call, name_);
  dev_.AfterGemm();
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<CudaLaunchState>> MakeCublasGemm(CudaDevice& dev, const KernelEntry& kernel) {
  auto g = std::make_unique<CublasGemm>(dev, kernel.name);
  KEEL_RETURN_IF_ERROR(g->Plan(kernel));
  return std::unique_ptr<CudaLaunchState>(std::move(g));
}

}  // namespace keel::vm_internal
