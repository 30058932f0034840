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

#ifdef KEEL_HAVE_CUDNN
#include <cstdio>
#include <memory>

#include "vm/cuda/autotune.h"
#include "vm/cuda/library_calls_cudnn_attention.h"
#endif

namespace keel::vm_internal {
namespace {

namespace lo = ser::library_ops;
namespace cl = cuda_lib;
static_assert(cl::kAttentionDigits == lo::kAttentionMaxBatchDigits, "one limit for the compiler and the VM");
static_assert(cl::kAttentionMaxWidth == lo::kAttentionMaxHeadWidth, "one limit for the compiler and the VM");

constexpr int64_t kMaxExtent = INT32_MAX;
constexpr int64_t kMaxStride = int64_t{1} << 40;

#ifdef KEEL_HAVE_CUDNN
// A finalized fused attention engine: the graph and the chosen configuration's
// plan. One per problem within a VM, shared by its kernels of that problem
// (CudaDevice::FindSharedPlan under the problem's tuning key): finalizing
// compiles the engine's kernel at run time, so twelve identical attentions
// pay for one.
struct AttentionEnginePlan {
  cl::EngineGraph graph;
  cl::EnginePlan plan;
  std::string call;  // the trace's call name
  ~AttentionEnginePlan() {
    cl::DestroyEnginePlan(plan);
    cl::DestroyEngineGraph(graph);
  }
};

// One kernel's use of an engine: its problem (offsets, scale) and variant pack.
struct AttentionEngine {
  cudnnHandle_t h = nullptr;
  cl::AttentionGraphProblem p;
  std::shared_ptr<const AttentionEnginePlan> shared;
  cl::EngineVariantPack pack;
  uint64_t workspace = 0;  // this kernel's private workspace slice (CudaDevice::private_workspace)
  float scale = 1.f;       // the by-value scale's host value (the pack points here)
  ~AttentionEngine() { cl::DestroyEngineVariantPack(pack); }
  cudnnStatus_t Run(const cl::EnginePlan& with, void* const* a, int mask_arg, int y_arg, void* ws) {
    return cl::AttentionEngineExecute(h, with.plan, &pack, p, a[0], a[1], a[2], mask_arg >= 0 ? a[mask_arg] : nullptr,
                                      a[y_arg], &scale, ws);
  }
};
#endif

class KeelAttention final : public CudaLaunchState {
 public:
  KeelAttention(CudaDevice& dev, std::string name) : dev_(dev), name_(std::move(name)) {}
  Status Plan(const KernelEntry& k);
  Status Launch(void* const* args) override;

 private:
  CUresult LaunchOwn(void* const* args);
#ifdef KEEL_HAVE_CUDNN
  Status ChooseEngine(const KernelEntry& k, cl::ElementType t);
  std::unique_ptr<AttentionEngine> engine_;
#endif

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
  const std::string kernel = cl::AttentionKernelName(t.element, args_.d, args_.dv);
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
#ifdef KEEL_HAVE_CUDNN
  KEEL_RETURN_IF_ERROR(ChooseEngine(k, t.element));
#endif
  return Status::Ok();
}

#ifdef KEEL_HAVE_CUDNN
// Keel's kernel or one of cuDNN's fused attention engines
// (library_calls_cudnn_attention.h), by the same rules as a convolution's
// engine verdict (cudnn_kernels.cc CudnnConv::ChooseEngine): VmOptions::cudnn_engines
// kOff keeps Keel's kernel; a tuning entry's verdict is followed (the engine
// built from its identity; one this cuDNN does not offer is an error); else,
// with autotuning, Keel's kernel and every candidate are timed and an engine
// is kept when it beats the kernel by more than 3%; kForce takes the
// heuristics' first engine. Attentions without a graph form keep the kernel.
// Kernels of one problem share the first one's plan (AttentionEnginePlan).
Status KeelAttention::ChooseEngine(const KernelEntry& k, cl::ElementType t) {
  const VmOptions::CudnnEngines policy = dev_.cudnn_engines();
  if (policy == VmOptions::CudnnEngines::kOff) return Status::Ok();
  auto e = std::make_unique<AttentionEngine>();
  std::string why;
  if (!cl::AttentionGraphProblemOf(args_, t, mask_arg_ >= 0, &e->p, &why)) {
    if (dev_.autotune_log()) std::fprintf(stderr, "keel engines %s: Keel's attention kernel (%s)\n", name_.c_str(), why.c_str());
    return Status::Ok();
  }
  e->scale = e->p.scale;
  const bool force = policy == VmOptions::CudnnEngines::kForce;
  const std::string key = (force ? "engine-force|" : "") + cl::AttentionProblemKey(e->p);
  const std::vector<int64_t>* cached = dev_.FindTuning(key);
  cl::EngineId id;
  bool recorded = false;
  if (cached != nullptr && !cl::EngineFromTuning(*cached, &recorded, &id, cl::kAttentionTuningLeadValues)) {
    return InvalidArgument("kernel " + k.name + " (keel.attention): malformed engine verdict in tuning entry " + key);
  }
  if (recorded && id.index < 0) return Status::Ok();
  if (!recorded && !dev_.autotune() && !force) return Status::Ok();  // no competition
  KEEL_ASSIGN_OR_RETURN(e->h, dev_.CudnnHandle());
  auto use = [&](std::shared_ptr<const AttentionEnginePlan> plan) {
    e->shared = std::move(plan);
    engine_ = std::move(e);
    // A slice of its own: the clear cuDNN records before the call then waits for nothing
    // (graph_rewrite.h).
    KEEL_ASSIGN_OR_RETURN(engine_->workspace, dev_.ReservePrivateWorkspace(engine_->shared->plan.workspace));
    return Status::Ok();
  };
  // A kernel of this problem chose before (its verdict is the recorded one).
  if (auto shared = dev_.FindSharedPlan(key); recorded && shared != nullptr) {
    if (dev_.autotune_log()) std::fprintf(stderr, "keel engines %s: shares an earlier kernel's plan\n", name_.c_str());
    return use(std::static_pointer_cast<const AttentionEnginePlan>(std::move(shared)));
  }
  auto fresh = std::make_shared<AttentionEnginePlan>();
  auto keep = [&](cl::EnginePlan plan) {
    fresh->plan = std::move(plan);
    fresh->call = cl::AttentionEngineCallName(fresh->plan.id, fresh->plan.workspace);
    dev_.StoreSharedPlan(key, fresh);
    return use(std::move(fresh));
  };
  const cl::EngineNumerics numerics = cl::AttentionNumerics(e->p);
  if (const cl::CallStatus st = cl::BuildAttentionGraph(e->h, e->p, &fresh->graph); !st.ok()) {
    if (recorded) {
      return InvalidArgument("kernel " + k.name + " (keel.attention): the tuning entry for " + key +
                             " names a cuDNN engine, but cuDNN cannot build the attention graph: " +
                             LibraryCallStatus(st).message());
    }
    if (dev_.autotune_log()) {
      std::fprintf(stderr, "keel engines %s: Keel's attention kernel (%s)\n", name_.c_str(),
                   LibraryCallStatus(st).message().c_str());
    }
    return Status::Ok();
  }
  if (recorded) {
    cl::EnginePlan plan;
    if (const cl::CallStatus st = cl::EnginePlanOf(e->h, numerics, fresh->graph, id, cl::kMaxConvWorkspace, &plan);
        !st.ok()) {
      cl::DestroyEnginePlan(plan);
      return InvalidArgument("kernel " + k.name + " (keel.attention): the tuning entry for " + key +
                             " names a cuDNN engine this cuDNN does not offer: " + LibraryCallStatus(st).message());
    }
    return keep(std::move(plan));
  }
  std::vector<cl::EnginePlan> plans;
  std::string summary;
  // cuDNN's fused attention engines compile their kernels at run time (NVRTC,
  // when a plan is finalized): they are what this path is for, so they are
  // allowed here (the convolutions' search leaves them out).
  EngineSearch search = dev_.engine_search();
  search.rtc = true;
  KEEL_RETURN_IF_ERROR(LibraryCallStatus(
      cl::EngineCandidates(e->h, numerics, fresh->graph, cl::kMaxConvWorkspace, search, &plans, &summary)));
  if (plans.empty() && dev_.autotune_log()) {
    std::fprintf(stderr, "keel engines %s: Keel's attention kernel (%s)\n", name_.c_str(), summary.c_str());
  }
  int pick = plans.empty() ? -1 : 0;  // kForce without timing: the heuristics' first
  if (!plans.empty() && dev_.autotune()) {
    ScratchBuffers scratch(dev_.device_allocator());
    std::vector<void*> a(k.args.size());
    for (size_t i = 0; i < a.size(); ++i) {
      KEEL_ASSIGN_OR_RETURN(a[i], scratch.Get(k.args[i].bytes));
    }
    uint64_t max_ws = 0;
    for (const cl::EnginePlan& c : plans) max_ws = std::max(max_ws, c.workspace);
    KEEL_ASSIGN_OR_RETURN(void* ws, scratch.Get(max_ws));
    KEEL_ASSIGN_OR_RETURN(CUfunction spin, dev_.RuntimeFunction("keel_spin"));
    std::vector<double> us;
    for (const cl::EnginePlan& c : plans) {
      KEEL_ASSIGN_OR_RETURN(const double us_c, TimeOnStream(dev_.stream(), spin, 5, [&]() {
        return e->Run(c, a.data(), mask_arg_, y_arg_, ws) == CUDNN_STATUS_SUCCESS;
      }));
      us.push_back(us_c);
      if (dev_.autotune_log()) {
        std::fprintf(stderr, "keel engines %s %s%s: %.2f us\n", name_.c_str(), cl::EngineIdText(c.id).c_str(),
                     c.notes.c_str(), us_c);
      }
    }
    double own = -1;
    if (!force) {
      KEEL_ASSIGN_OR_RETURN(own, TimeOnStream(dev_.stream(), spin, 5, [&]() {
        return LaunchOwn(a.data()) == CUDA_SUCCESS;
      }));
    }
    const int best = PickFastest(us);
    pick = best >= 0 && (own < 0 || us[static_cast<size_t>(best)] < 0.97 * own) ? best : -1;
    if (dev_.autotune_log()) {
      std::fprintf(stderr, "keel engines %s: Keel's kernel %.2f us -> %s (%s)\n", name_.c_str(), own,
                   pick >= 0 ? cl::EngineIdText(plans[static_cast<size_t>(pick)].id).c_str() : "Keel's kernel",
                   summary.c_str());
    }
  }
  std::vector<int64_t> entry = {pick >= 0 ? static_cast<int64_t>(plans[static_cast<size_t>(pick)].workspace) : 0};
  cl::SetEngineTuning(pick >= 0 ? plans[static_cast<size_t>(pick)].id : cl::EngineId{}, &entry,
                      cl::kAttentionTuningLeadValues);
  dev_.StoreTuning(key, std::move(entry));
  for (size_t i = 0; i < plans.size(); ++i) {
    if (static_cast<int>(i) != pick) cl::DestroyEnginePlan(plans[i]);
  }
  if (pick < 0) return Status::Ok();
  return keep(std::move(plans[static_cast<size_t>(pick)]));
}
#endif

// Keel's own kernel on the device's stream.
CUresult KeelAttention::LaunchOwn(void* const* args) {
  args_.q = args[0];
  args_.k = args[1];
  args_.v = args[2];
  args_.mask = mask_arg_ >= 0 ? args[mask_arg_] : nullptr;
  args_.y = args[y_arg_];
  void* params[] = {&args_};
  return dev_.LaunchRuntimeKernel(fn_, static_cast<unsigned>(launch_.blocks), launch_.threads, params, launch_.shared);
}

Status KeelAttention::Launch(void* const* args) {
  dev_.Bind();
  dev_.BeginOp();
#ifdef KEEL_HAVE_CUDNN
  if (engine_ != nullptr) {
    const cudnnStatus_t s = engine_->Run(engine_->shared->plan, args, mask_arg_, y_arg_,
                                           dev_.private_workspace(engine_->workspace));
    if (s != CUDNN_STATUS_SUCCESS) return CudnnStatus(s, "cudnnBackendExecute").WithContext("kernel " + name_);
    dev_.EndLaunch(engine_->shared->call, name_);
    return Status::Ok();
  }
#endif
  const CUresult r = LaunchOwn(args);
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
