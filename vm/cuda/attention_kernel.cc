// vm/cuda/attention_kernel.cc — see attention_kernel.h.
#include "vm/cuda/attention_kernel.h"

#include <cstdint>
#include <string>
#include <vector>

#include "serialization/library_ops.h"
#include "vm/cuda/cuda_driver.h"
#include "vm/cuda/cuda_errors.h"
#include "vm/cuda/library_attrs.h"
#include "vm/cuda/library_calls_attention.h"
#include "vm/cuda/library_dtypes.h"

namespace keel::vm_internal {
namespace {

namespace lo = ser::library_ops;
namespace cl = cuda_lib;
static_assert(cl::kAttentionDigits == lo::kAttentionMaxBatchDigits, "one limit for the compiler and the VM");
static_assert(cl::kAttentionMaxWidth == lo::kAttentionMaxHeadWidth, "one limit for the compiler and the VM");

constexpr int64_t kMaxExtent = INT32_MAX;
constexpr int64_t kMaxStride = int64_t{1} << 40;

class KeelAttention final : public CudaLaunchState {
 public:
  KeelAttention(CudaDevice& dev, std::string name) : dev_(dev), name_(std::move(name)) {}
  Status Plan(const KernelEntry& k);
  Status Launch(void* const* args) override;

 private:
  CudaDevice& dev_;
  std::string name_, call_;
  CUfunction fn_ = nullptr;
  cl::AttentionArgs args_;
  cl::AttentionLaunch launch_;
  int mask_arg_ = -1, y_arg_ = 3;
};

Status KeelAttention::Plan(const KernelEntry& k) {
  AttrReader at(k);
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> radix,
                        at.IntList(lo::attr::kBatch, cl::kAttentionDigits, 1, kMaxExtent));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> dims, at.Ints(lo::attr::kDims, 4, {}, 1, kMaxExtent));
  if (dims.empty()) return at.Error(lo::attr::kDims, "is required");
  KEEL_ASSIGN_OR_RETURN(const double scale, at.Float(lo::attr::kScale, 1.0));
  const bool has_mask = at.Has(lo::attr::kMaskView);
  const size_t view_len = radix.size() + 3;
  auto view = [&](const char* key, cl::AttentionView* v) -> Status {
    if (!at.Has(key)) return at.Error(key, "is required");
    KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> x, at.Ints(key, view_len, {}, -kMaxStride, kMaxStride));
    v->offset = x[0];
    for (size_t t = 0; t < radix.size(); ++t) v->batch[t] = x[1 + t];
    v->row = x[view_len - 2];
    v->col = x[view_len - 1];
    return Status::Ok();
  };
  KEEL_RETURN_IF_ERROR(view(lo::attr::kQView, &args_.qv));
  KEEL_RETURN_IF_ERROR(view(lo::attr::kKView, &args_.kv));
  KEEL_RETURN_IF_ERROR(view(lo::attr::kVView, &args_.vv));
  KEEL_RETURN_IF_ERROR(view(lo::attr::kYView, &args_.yv));
  if (has_mask) KEEL_RETURN_IF_ERROR(view(lo::attr::kMaskView, &args_.mv));
  KEEL_RETURN_IF_ERROR(at.Finish());
  args_.digits = static_cast<int>(radix.size());
  for (size_t t = 0; t < radix.size(); ++t) args_.radix[t] = radix[t];
  args_.sq = static_cast<int>(dims[0]);
  args_.sk = static_cast<int>(dims[1]);
  args_.d = static_cast<int>(dims[2]);
  args_.dv = static_cast<int>(dims[3]);
  args_.scale = static_cast<float>(scale);
  if (args_.d > cl::kAttentionMaxWidth || args_.dv > cl::kAttentionMaxWidth) {
    return at.Error(lo::attr::kDims, "has a head width above " + std::to_string(cl::kAttentionMaxWidth));
  }
  launch_ = cl::AttentionPlan(&args_);
  if (launch_.blocks > INT32_MAX) return at.Error(lo::attr::kBatch, "makes more than 2^31 blocks");

  const size_t nargs = has_mask ? 5 : 4;
  if (k.args.size() != nargs) {
    return InvalidExecutable("kernel " + k.name + " (keel.attention): expected " + std::to_string(nargs) +
                             " arguments (Q, K, V" + (has_mask ? ", mask" : "") + ", Y), got " +
                             std::to_string(k.args.size()));
  }
  mask_arg_ = has_mask ? 3 : -1;
  y_arg_ = has_mask ? 4 : 3;
  KEEL_ASSIGN_OR_RETURN(const LibraryDType t, LibraryDTypeOfArg(k, 0, "Q"));
  const std::string kernel = cl::AttentionKernelName(t.element, args_);
  if (kernel.empty()) return Unsupported("kernel " + k.name + " (keel.attention): takes f16 or bf16, got " + t.name);
  KEEL_RETURN_IF_ERROR(RequireDType(k, 1, "K", t));
  KEEL_RETURN_IF_ERROR(RequireDType(k, 2, "V", t));
  KEEL_RETURN_IF_ERROR(RequireDType(k, static_cast<size_t>(y_arg_), "Y", t));
  if (has_mask) {
    const DataType m = k.args[3].dtype;
    if (m != t.dtype && m != DataType::kF32) {
      return Unsupported("kernel " + k.name + " (keel.attention): the mask must be f32 or " + t.name + ", got " +
                         DataTypeName(m));
    }
    args_.mask_f32 = m == DataType::kF32;
  }
  struct Check {
    int arg;
    const cl::AttentionView* v;
    long long rows, cols;
    const char* what;
  };
  std::vector<Check> checks = {{0, &args_.qv, args_.sq, args_.d, "Q"},
                               {1, &args_.kv, args_.sk, args_.d, "K"},
                               {2, &args_.vv, args_.sk, args_.dv, "V"},
                               {y_arg_, &args_.yv, args_.sq, args_.dv, "Y"}};
  if (has_mask) checks.push_back({3, &args_.mv, args_.sq, args_.sk, "the mask"});
  for (const Check& c : checks) {
    const KernelArgEntry& a = k.args[static_cast<size_t>(c.arg)];
    const long long elements = static_cast<long long>(a.bytes / DataTypeSize(a.dtype));
    if (!cl::AttentionViewInBounds(args_, *c.v, c.rows, c.cols, elements)) {
      return InvalidExecutable("kernel " + k.name + " (keel.attention): " + c.what + "'s view addresses elements " +
                               "outside its argument of " + std::to_string(elements) + " elements");
    }
  }
  KEEL_ASSIGN_OR_RETURN(fn_, dev_.RuntimeFunction(kernel.c_str()));
  KEEL_RETURN_IF_ERROR(CuStatus(Driver().FuncSetAttribute(fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                          static_cast<int>(launch_.shared)),
                                "cuFuncSetAttribute")
                           .WithContext("kernel " + k.name));
  call_ = cl::AttentionCallName(kernel, launch_);
  return Status::Ok();
}

Status KeelAttention::Launch(void* const* args) {
  args_.q = args[0];
  args_.k = args[1];
  args_.v = args[2];
  args_.mask = mask_arg_ >= 0 ? args[mask_arg_] : nullptr;
  args_.y = args[y_arg_];
  void* params[] = {&args_};
  dev_.Bind();
  dev_.BeginOp();
  const CUresult r =
      dev_.LaunchRuntimeKernel(fn_, static_cast<unsigned>(launch_.blocks), launch_.threads, params, launch_.shared);
  if (r != CUDA_SUCCESS) return CuStatus(r, "cuLaunchKernel").WithContext("kernel " + name_);
  dev_.EndLaunch(call_, name_);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<CudaLaunchState>> MakeKeelAttention(CudaDevice& dev, const KernelEntry& kernel) {
  auto a = std::make_unique<KeelAttention>(dev, kernel.name);
  KEEL_RETURN_IF_ERROR(a->Plan(kernel));
  return std::unique_ptr<CudaLaunchState>(std::move(a));
}

}  // namespace keel::vm_internal
