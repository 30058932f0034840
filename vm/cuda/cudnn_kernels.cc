// vm/cuda/cudnn_kernels.cc — see cudnn_kernels.h.
#include "vm/cuda/cudnn_kernels.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "common/conv_geometry.h"
#include "serialization/library_ops.h"
#include "vm/cuda/autotune.h"
#include "vm/cuda/cudnn_engine_conv.h"
#include "vm/cuda/cuda_driver.h"
#include "vm/cuda/cuda_errors.h"
#include "vm/cuda/library_attrs.h"
#include "vm/cuda/library_calls_cudnn.h"
#include "vm/cuda/library_calls_cudnn_engine.h"
#include "vm/cuda/library_dtypes.h"

namespace keel::vm_internal {

#ifndef KEEL_HAVE_CUDNN

Result<std::unique_ptr<CudaLaunchState>> MakeCudnnConv2d(CudaDevice&, const KernelEntry& k) {
  return Unsupported("kernel " + k.name + " (" + k.library_op + "): this Keel runtime was built without cuDNN");
}
Result<std::unique_ptr<CudaLaunchState>> MakeCudnnPool2d(CudaDevice&, const KernelEntry& k) {
  return Unsupported("kernel " + k.name + " (cudnn.pool2d): this Keel runtime was built without cuDNN");
}

#else

namespace {

namespace lo = ser::library_ops;
namespace cl = cuda_lib;

// The shared calls name the engine policies by VmOptions' values.
static_assert(static_cast<int>(VmOptions::CudnnEngines::kOff) == static_cast<int>(cl::EnginePolicy::kOff) &&
              static_cast<int>(VmOptions::CudnnEngines::kCompete) == static_cast<int>(cl::EnginePolicy::kCompete) &&
              static_cast<int>(VmOptions::CudnnEngines::kForce) == static_cast<int>(cl::EnginePolicy::kForce) &&
              static_cast<int>(VmOptions::CudnnEngines::kAuto) == static_cast<int>(cl::EnginePolicy::kAuto));

Status ShapeError(const KernelEntry& k, const std::string& what) {
  return InvalidExecutable("kernel " + k.name + " (" + k.library_op + "): " + what);
}

std::string ShapeString(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

Status CheckRank4(const KernelEntry& k, size_t arg, const char* what, const LibraryDType& t) {
  KEEL_RETURN_IF_ERROR(RequireDType(k, arg, what, t));
  const KernelArgEntry& a = k.args[arg];
  if (a.shape.size() != 4) return ShapeError(k, std::string(what) + " must have rank 4, got " + ShapeString(a.shape));
  for (int64_t d : a.shape) {
    if (d < 1 || d > INT32_MAX) return ShapeError(k, std::string(what) + " has a bad dimension " + ShapeString(a.shape));
  }
  return Status::Ok();
}

// Values the geometry check bounded to int32 (common/conv_geometry.h).
std::vector<int> Int32s(const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); }

// ---- conv2d --------------------------------------------------------------------

// Descriptor set-up, the candidates, the fused call and conv + keel_bias_act are
// the calls shared with keelc --emit=cuda-host programs
// (vm/cuda/library_calls_cudnn.h); this class adds the executable's validation,
// timing, the backend-API engines and the device's bookkeeping.
class CudnnConv final : public CudaLaunchState {
 public:
  CudnnConv(CudaDevice& dev, std::string name) : dev_(dev), name_(std::move(name)) {}
  ~CudnnConv() override {
    cl::DestroyConvDescriptors(d_);
    if (zero_bias_) dev_.Free(zero_bias_);
  }
  Status Plan(const KernelEntry& k);
  Status Launch(void* const* args) override;

 private:
  // The shared calls launch the epilogue through the device (programmatic where it may).
  struct Launcher {
    CudaDevice& dev;
    CUresult operator()(CUfunction fn, unsigned grid, unsigned block, void** params) const {
      return dev.LaunchRuntimeKernel(fn, grid, block, params);
    }
  };
  Launcher RuntimeLauncher() { return Launcher{dev_}; }
  cudnnStatus_t Fused(const void* x, const void* w, const void* bias, const void* res, void* y,
                      cudnnConvolutionFwdAlgo_t algo, void* ws, size_t ws_bytes) {
    return cl::ConvFused(h_, d_, x, w, bias ? bias : zero_bias_, res, y, algo, ws, ws_bytes);
  }
  cl::CallStatus ConvThenEpilogue(const void* x, const void* w, const void* bias, const void* res, void* y,
                                  const cl::ConvCandidate& c, void* ws) {
    return cl::ConvThenEpilogue(h_, problem_, d_, epi_, dev_.num_sms(), x, w, bias, res, y, c, ws, RuntimeLauncher());
  }
  // The VM's bias/residual/activation pass in place on Y (nothing to do: no launch).
  cl::CallStatus Epilogue(void* y, const void* bias, const void* res) {
    return cl::BiasActivation(problem_, epi_, dev_.num_sms(), y, bias, res, RuntimeLauncher());
  }
  Status Choose(const KernelEntry& k, const std::string& key);
  // Zeroed scratch X, W, Y, workspace (and bias/residual when the kernel has them)
  // for timing candidates at load; owned by `scratch`.
  struct TimingArgs {
    void *x, *w, *y, *ws, *bias = nullptr, *res = nullptr;
  };
  Result<TimingArgs> AllocateTimingArgs(ScratchBuffers& scratch, uint64_t ws_bytes) const;
  // One timed run of a candidate (false: cuDNN refused it).
  bool RunCandidate(const TimingArgs& a, const cl::ConvCandidate& c) {
    if (c.mode == cl::ConvMode::kFused) {
      return Fused(a.x, a.w, a.bias, a.res, a.y, c.algo, a.ws, c.workspace) == CUDNN_STATUS_SUCCESS;
    }
    return ConvThenEpilogue(a.x, a.w, a.bias, a.res, a.y, c, a.ws).ok();
  }
  // VmOptions::cudnn_engines (cudnn_engine_conv.h): the backend-API engine verdict,
  // recorded or made by timing against the legacy choice; engine_ is set when an
  // engine runs.
  Status ChooseEngine(const KernelEntry& k, const std::string& key);
  void UseEngine(std::unique_ptr<CudnnEngineConv> e) {
    engine_ = std::move(e);
    call_engine_ = cl::EngineCallName(problem_, engine_->id(0), engine_->workspace(0));
  }

  CudaDevice& dev_;
  std::string name_;
  cudnnHandle_t h_ = nullptr;
  cl::ConvProblem problem_;
  cl::ConvDescriptors d_;
  cl::ConvCandidate choice_;  // algorithm, mode, workspace
  int bias_arg_ = -1, res_arg_ = -1, y_arg_ = 2;
  uint64_t y_bytes_ = 0, x_bytes_ = 0, w_bytes_ = 0;
  LibraryDType dtype_;  // X, W, bias, residual and Y alike
  cl::BiasActKernels epi_;  // vec4: f32 only (float4 moves)
  void* zero_bias_ = nullptr;
  std::string call_fused_, call_conv_, call_engine_;
  std::unique_ptr<CudnnEngineConv> engine_;
};

Result<CudnnConv::TimingArgs> CudnnConv::AllocateTimingArgs(ScratchBuffers& scratch, uint64_t ws_bytes) const {
  TimingArgs a;
  KEEL_ASSIGN_OR_RETURN(a.x, scratch.Get(x_bytes_));
  KEEL_ASSIGN_OR_RETURN(a.w, scratch.Get(w_bytes_));
  KEEL_ASSIGN_OR_RETURN(a.y, scratch.Get(y_bytes_));
  KEEL_ASSIGN_OR_RETURN(a.ws, scratch.Get(ws_bytes));
  if (problem_.has_bias) {
    KEEL_ASSIGN_OR_RETURN(a.bias, scratch.Get(dtype_.bytes * static_cast<uint64_t>(problem_.out()[1])));
  }
  if (problem_.has_residual) { KEEL_ASSIGN_OR_RETURN(a.res, scratch.Get(y_bytes_)); }
  return a;
}

Status CudnnConv::Plan(const KernelEntry& k) {
  // The spatial rank comes from X: the attributes' lengths must match it.
  const size_t spatial = k.args.empty() ? 0 : common::ConvSpatialDims(k.args[0].shape.size());
  if (spatial == 0) {
    return ShapeError(k, "X must have 1 to 3 spatial dims (rank 3 to 5), got " +
                             (k.args.empty() ? std::string("no arguments") : ShapeString(k.args[0].shape)));
  }
  KEEL_ASSIGN_OR_RETURN(const ConvAttrs attrs, ReadConvAttrs(k, spatial));
  const std::vector<int64_t>& pads = attrs.pads;
  const std::vector<int64_t>& strides = attrs.strides;
  const std::vector<int64_t>& dil = attrs.dilations;
  const int64_t group = attrs.group;
  const std::string& act = attrs.activation;
  const bool clip = act == lo::value::kActivationClip;
  const double clip_min = attrs.clip_min, clip_max = attrs.clip_max;
  cl::ConvProblem& p = problem_;
  p.transposed = k.library_op == lo::kCudnnConvTranspose;
  p.nhwc = attrs.nhwc;
  if (p.nhwc && spatial < 2) {
    return Unsupported("kernel " + k.name + " (" + k.library_op + "): layout nhwc needs 2 or 3 spatial dims, got " +
                       std::to_string(spatial));
  }

  p.has_bias = attrs.has_bias;
  p.has_residual = attrs.has_residual;
  bias_arg_ = attrs.bias_arg;
  res_arg_ = attrs.res_arg;
  y_arg_ = attrs.y_arg;
  const size_t nargs = static_cast<size_t>(attrs.args) + (k.workspace_bytes > 0 ? 1 : 0);
  if (k.args.size() != nargs) {
    return ShapeError(k, "expected " + std::to_string(nargs) + " arguments, got " + std::to_string(k.args.size()));
  }
  // Every tensor in one type: f32, f16 or bf16 (vm/cuda/library_dtypes.h).
  KEEL_ASSIGN_OR_RETURN(dtype_, LibraryDTypeOfArg(k, 0, "X"));
  KEEL_RETURN_IF_ERROR(RequireDType(k, 1, "W", dtype_));
  KEEL_RETURN_IF_ERROR(RequireDType(k, static_cast<size_t>(y_arg_), "Y", dtype_));
  const auto& xs = k.args[0].shape;
  const auto& ws = k.args[1].shape;
  const auto& ys = k.args[y_arg_].shape;
  auto first = [&p](const std::vector<int64_t>& s) { return p.nhwc ? common::ChannelsFirstShape(s) : s; };
  // Ranks, channels, groups, Y's shape and pad symmetry: one check shared with
  // the compiler and the host-program emitter (common/conv_geometry.h), on the
  // channels-first shapes; a transposed convolution's is its forward problem's.
  Result<common::CudnnConvGeometry> geometry =
      (p.transposed ? common::MakeCudnnConvTransposeGeometry : common::MakeCudnnConvGeometry)(
          first(xs), first(ws), first(ys), pads, strides, dil, group);
  if (!geometry.ok()) return geometry.status().WithContext("kernel " + k.name + " (" + k.library_op + ")");
  const common::CudnnConvGeometry& g = *geometry;
  y_bytes_ = k.args[y_arg_].bytes;
  x_bytes_ = k.args[0].bytes;
  w_bytes_ = k.args[1].bytes;
  const int64_t out_channels = first(ys)[1];
  if (p.has_bias && (k.args[bias_arg_].dtype != dtype_.dtype ||
                     k.args[bias_arg_].bytes != dtype_.bytes * static_cast<uint64_t>(out_channels))) {
    return ShapeError(k, std::string("bias must be ") + dtype_.name + " [" + std::to_string(out_channels) + "]");
  }
  if (p.has_residual && (k.args[res_arg_].dtype != dtype_.dtype || k.args[res_arg_].shape != ys)) {
    return ShapeError(k, std::string("residual must be ") + dtype_.name + " " + ShapeString(ys));
  }
  if (clip && clip_min != 0.0) {
    return Unsupported("kernel " + k.name + " (" + k.library_op + "): clip_min " + std::to_string(clip_min) +
                       " (only clip_min 0 maps onto cuDNN's clipped ReLU)");
  }
  p.activation = act == lo::value::kActivationRelu ? cl::kActRelu : clip ? cl::kActClip : cl::kActNone;
  p.clip_max = clip_max;
  // The geometry check bounded every value to int32 (common/conv_geometry.h).
  p.x = Int32s(g.x);
  p.w = Int32s(g.w);
  p.y = Int32s(g.y);
  p.pads = Int32s(g.pads);
  p.strides = Int32s(g.strides);
  p.dilations = Int32s(g.dilations);
  p.group = static_cast<int>(group);
  p.type = dtype_.element;
  p.allow_tf32 = dev_.allow_tf32();

  KEEL_ASSIGN_OR_RETURN(h_, dev_.CudnnHandle());
  // The VM's epilogue kernel of this type (vm/cuda/runtime_kernels.cu).
  const std::string epilogue_kernel = std::string("keel_bias_act_") + dtype_.name;
  KEEL_ASSIGN_OR_RETURN(epi_.scalar, dev_.RuntimeFunction(epilogue_kernel.c_str()));
  if (!dtype_.half) { KEEL_ASSIGN_OR_RETURN(epi_.vec4, dev_.RuntimeFunction("keel_bias_act_f32x4")); }
  std::vector<int> out;
  KEEL_RETURN_IF_ERROR(LibraryCallStatus(cl::CreateConvDescriptors(p, &d_, &out)));
  if (std::vector<int64_t>(out.begin(), out.end()) != g.y) {
    return ShapeError(k, std::string(p.transposed ? "X" : "Y") + " is " + ShapeString(p.transposed ? xs : ys) +
                             " but cuDNN's convolution gives " + ShapeString(std::vector<int64_t>(out.begin(), out.end())));
  }
  KEEL_RETURN_IF_ERROR(LibraryCallStatus(cl::CreateConvActivation(p, &d_)));
  if (!p.has_bias && !p.transposed) {
    // The fused call always adds a bias: give it zeros.
    const uint64_t bytes = dtype_.bytes * static_cast<uint64_t>(out_channels);
    KEEL_ASSIGN_OR_RETURN(zero_bias_, dev_.Allocate(bytes, 256));
    KEEL_CUDA_RETURN(cudaMemsetAsync, zero_bias_, 0, bytes, dev_.stream());
    KEEL_CUDA_RETURN(cudaStreamSynchronize, dev_.stream());
  }

  // The tuning-file key (autotune.h): one format shared with the tests and the
  // generated host code, so a tuning file serves every path.
  const std::string key = ConvProblemKey(xs, ws, ys, pads, strides, dil, group, p.has_bias, p.has_residual,
                                         p.activation, dev_.allow_tf32(), dtype_.dtype, p.nhwc, p.transposed);
  KEEL_RETURN_IF_ERROR(Choose(k, key));
  // The backend-API engines (cudnn_engine_conv.h): on request, and by default
  // (kAuto) for grouped half or channels-last problems (cl::EnginesConsidered says
  // why), as keelc --emit=cuda-host programs decide.
  if (cl::EnginesConsidered(static_cast<cl::EnginePolicy>(dev_.cudnn_engines()), p)) {
    KEEL_RETURN_IF_ERROR(ChooseEngine(k, key));
  }
  KEEL_RETURN_IF_ERROR(dev_.ReserveWorkspace(std::max<uint64_t>(choice_.workspace, engine_ ? engine_->workspace(0) : 0)));
  call_fused_ = cl::ConvFusedCallName(p, choice_);
  call_conv_ = cl::ConvEpilogueCallName(p, choice_);
  return Status::Ok();
}

// Picks algorithm and mode: from the per-VM cache, else by timing every
// candidate the heuristics offer (cuda_autotune off: the first usable one).
Status CudnnConv::Choose(const KernelEntry& k, const std::string& key) {
  if (const std::vector<int64_t>* t = dev_.FindTuning(key);
      t != nullptr && cl::ConvCandidateFromTuning(problem_, *t, &choice_)) {
    return Status::Ok();
  }
  std::vector<cl::ConvCandidate> cands;
  KEEL_RETURN_IF_ERROR(LibraryCallStatus(cl::ConvCandidates(h_, problem_, d_, &cands)));
  if (cands.empty()) {
    return Unsupported("kernel " + k.name + " (" + k.library_op + "): cuDNN offers no algorithm for X " +
                       ShapeString(k.args[0].shape) + ", W " + ShapeString(k.args[1].shape) + " in " + dtype_.name);
  }
  int pick = 0;
  if (dev_.autotune() && cands.size() > 1) {
    ScratchBuffers scratch(dev_.device_allocator());
    size_t max_ws = 0;
    for (const cl::ConvCandidate& c : cands) max_ws = std::max(max_ws, c.workspace);
    KEEL_ASSIGN_OR_RETURN(const TimingArgs args, AllocateTimingArgs(scratch, max_ws));
    KEEL_ASSIGN_OR_RETURN(CUfunction spin, dev_.RuntimeFunction("keel_spin"));
    std::vector<double> us;
    for (const cl::ConvCandidate& c : cands) {
      Result<double> t = TimeOnStream(dev_.stream(), spin, 5, [&]() { return RunCandidate(args, c); });
      if (!t.ok()) return t.status();
      us.push_back(*t);
      if (dev_.autotune_log()) {
        std::fprintf(stderr, "keel autotune %s %s %s ws=%zu: %.2f us\n", name_.c_str(), cl::ConvCandidateName(problem_, c),
                     c.mode == cl::ConvMode::kFused ? "fused" : "conv+epilogue", c.workspace, *t);
      }
    }
    pick = PickFastest(us);
    if (pick < 0) {
      return Unsupported("kernel " + k.name + " (" + k.library_op + "): no cuDNN algorithm ran for X " +
                         ShapeString(k.args[0].shape) + ", W " + ShapeString(k.args[1].shape));
    }
  }
  choice_ = cands[static_cast<size_t>(pick)];
  dev_.StoreTuning(key, cl::ConvTuningEntry(problem_, choice_));
  return Status::Ok();
}

// The engine verdict (library_calls_engine_choice.h): the tuning entry's when it
// records one (the configuration's identity, or legacy), so a VM reading a tuning
// file and the emitted host program build the same configuration and time
// nothing. Else it is made here. With autotuning: the candidates
// (cudnn_engine_conv.h), each timed with the VM's epilogue after it, and the
// fastest is kept when it beats the legacy choice by more than 3% (near-ties stay
// legacy) or, kForce, whenever one runs. Without autotuning there is no
// competition (the legacy choice stays, as the program does without a recorded
// verdict), except kForce: the heuristics' first engine. The verdict joins the
// legacy choice in the entry, persisted with it; kForce's stays in this VM
// ("engine-force|" key), so a test mode never writes the file. Engines that
// cannot be built are not an error: the legacy path stays. A recorded engine
// this cuDNN does not offer is (kInvalidArgument naming the kernel).
Status CudnnConv::ChooseEngine(const KernelEntry& k, const std::string& key) {
  const bool force = dev_.cudnn_engines() == VmOptions::CudnnEngines::kForce;
  const std::string entry_key = force ? "engine-force|" + key : key;
  const std::vector<int64_t>* cached = dev_.FindTuning(entry_key);
  cl::EngineId id;
  bool recorded = false;
  if (cached != nullptr && !cl::EngineFromTuning(*cached, &recorded, &id)) {
    return InvalidArgument("kernel " + k.name + " (" + k.library_op + "): malformed engine verdict in tuning entry " +
                           key);
  }
  if (recorded) {
    if (id.index < 0) return Status::Ok();
    Result<std::unique_ptr<CudnnEngineConv>> made = CudnnEngineConv::CreateFor(h_, problem_, cl::kMaxConvWorkspace, id);
    if (!made.ok()) {
      return InvalidArgument("kernel " + k.name + " (" + k.library_op + "): the tuning entry for " + key +
                             " names a cuDNN engine this cuDNN does not offer: " + made.status().message());
    }
    UseEngine(std::move(*made));
    return Status::Ok();
  }
  if (!dev_.autotune() && !force) return Status::Ok();
  Result<std::unique_ptr<CudnnEngineConv>> made =
      CudnnEngineConv::Create(h_, problem_, cl::kMaxConvWorkspace, dev_.engine_search());
  int64_t pick = -1;
  if (!made.ok()) {
    if (dev_.autotune_log()) std::fprintf(stderr, "keel engines %s: %s\n", name_.c_str(), made.status().ToString().c_str());
  } else if (!dev_.autotune()) {
    pick = 0;  // kForce without timing: the heuristics' first
  } else {
    CudnnEngineConv& e = **made;
    ScratchBuffers scratch(dev_.device_allocator());
    uint64_t max_ws = choice_.workspace;
    for (size_t i = 0; i < e.size(); ++i) max_ws = std::max(max_ws, e.workspace(i));
    KEEL_ASSIGN_OR_RETURN(const TimingArgs args, AllocateTimingArgs(scratch, max_ws));
    KEEL_ASSIGN_OR_RETURN(CUfunction spin, dev_.RuntimeFunction("keel_spin"));
    std::vector<double> us;
    for (size_t i = 0; i < e.size(); ++i) {
      KEEL_ASSIGN_OR_RETURN(const double t, TimeOnStream(dev_.stream(), spin, 5, [&]() {
        return e.Run(i, args.x, args.w, args.y, args.ws) == CUDNN_STATUS_SUCCESS &&
               Epilogue(args.y, args.bias, args.res).ok();
      }));
      us.push_back(t);
      if (dev_.autotune_log()) std::fprintf(stderr, "keel engines %s %s: %.2f us\n", name_.c_str(), e.describe(i).c_str(), t);
    }
    double legacy = -1;
    if (!force) {
      KEEL_ASSIGN_OR_RETURN(legacy, TimeOnStream(dev_.stream(), spin, 5, [&]() { return RunCandidate(args, choice_); }));
    }
    const int best = PickFastest(us);
    if (best >= 0 && (legacy < 0 || us[static_cast<size_t>(best)] < 0.97 * legacy)) pick = best;
    if (dev_.autotune_log()) {
      std::fprintf(stderr, "keel engines %s: legacy %s %.2f us -> %s (%s)\n", name_.c_str(),
                   cl::ConvAlgoName(choice_.algo), legacy,
                   pick >= 0 ? e.describe(static_cast<size_t>(pick)).c_str() : "legacy", e.summary().c_str());
    }
  }
  std::vector<int64_t> entry = cl::ConvTuningEntry(problem_, choice_);
  cl::SetEngineTuning(pick >= 0 ? (*made)->id(static_cast<size_t>(pick)) : cl::EngineId{}, &entry);
  dev_.StoreTuning(entry_key, std::move(entry));
  if (pick < 0) return Status::Ok();
  (*made)->Keep(static_cast<size_t>(pick));
  UseEngine(std::move(*made));
  return Status::Ok();
}

Status CudnnConv::Launch(void* const* args) {
  dev_.Bind();
  const void* bias = problem_.has_bias ? args[bias_arg_] : nullptr;
  const void* res = problem_.has_residual ? args[res_arg_] : nullptr;
  void* y = args[y_arg_];
  dev_.BeginOp();
  if (engine_ != nullptr && cl::EngineUsable(args[0], args[1], res, y)) {
    const cudnnStatus_t s = engine_->Run(0, args[0], args[1], y, dev_.workspace());
    if (s != CUDNN_STATUS_SUCCESS) return CudnnStatus(s, "cudnnBackendExecute").WithContext("kernel " + name_);
    KEEL_RETURN_IF_ERROR(LibraryCallStatus(Epilogue(y, bias, res)).WithContext("kernel " + name_));
    dev_.EndLaunch(call_engine_, name_);
    return Status::Ok();
  }
  if (choice_.mode == cl::ConvMode::kFused) {
    const cudnnStatus_t s = Fused(args[0], args[1], bias, res, y, choice_.algo, dev_.workspace(), choice_.workspace);
    if (s == CUDNN_STATUS_SUCCESS) {
      dev_.EndLaunch(call_fused_, name_);
      return Status::Ok();
    }
    if (s != CUDNN_STATUS_NOT_SUPPORTED) {
      return CudnnStatus(s, "cudnnConvolutionBiasActivationForward").WithContext("kernel " + name_);
    }
    choice_.mode = cl::ConvMode::kConvEpilogue;  // no fused kernel after all: the sequence from now on
  }
  KEEL_RETURN_IF_ERROR(LibraryCallStatus(ConvThenEpilogue(args[0], args[1], bias, res, y, choice_, dev_.workspace()))
                           .WithContext("kernel " + name_));
  dev_.EndLaunch(call_conv_, name_);
  return Status::Ok();
}

// ---- pool2d --------------------------------------------------------------------

class CudnnPool final : public CudaLaunchState {
 public:
  CudnnPool(CudaDevice& dev, std::string name) : dev_(dev), name_(std::move(name)) {}
  ~CudnnPool() override { cl::DestroyPoolDescriptors(d_); }
  Status Plan(const KernelEntry& k);
  Status Launch(void* const* args) override {
    dev_.Bind();
    dev_.BeginOp();
    KEEL_RETURN_IF_ERROR(LibraryCallStatus(cl::PoolForward(h_, d_, args[0], args[1])).WithContext("kernel " + name_));
    dev_.EndLaunch(call_, name_);
    return Status::Ok();
  }

 private:
  CudaDevice& dev_;
  std::string name_;
  cudnnHandle_t h_ = nullptr;
  cl::PoolDescriptors d_;
  std::string call_;
};

Status CudnnPool::Plan(const KernelEntry& k) {
  AttrReader at(k);
  KEEL_ASSIGN_OR_RETURN(const std::string mode, at.Str(lo::attr::kMode, nullptr, {lo::value::kPoolMax, lo::value::kPoolAvg,
                                                                                   lo::value::kPoolAvgExcludePad}));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> kernel, at.Ints(lo::attr::kKernel, 2, {}, 1, INT32_MAX));
  if (kernel.empty()) return at.Error(lo::attr::kKernel, "is required");
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> pads, at.Ints(lo::attr::kPads, 4, {0, 0, 0, 0}, 0, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> strides, at.Ints(lo::attr::kStrides, 2, {1, 1}, 1, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(const bool nhwc, ReadLayout(at));
  KEEL_RETURN_IF_ERROR(at.Finish());
  if (k.args.size() != 2) return ShapeError(k, "expected 2 arguments (X, Y), got " + std::to_string(k.args.size()));
  // X and Y in one type: f32, f16 or bf16 (pooling computes in f32; alpha/beta are f32 for every type).
  KEEL_ASSIGN_OR_RETURN(const LibraryDType dtype, LibraryDTypeOfArg(k, 0, "X"));
  KEEL_RETURN_IF_ERROR(CheckRank4(k, 0, "X", dtype));
  KEEL_RETURN_IF_ERROR(CheckRank4(k, 1, "Y", dtype));
  if (pads[0] != pads[2] || pads[1] != pads[3]) {
    return Unsupported("kernel " + k.name + " (cudnn.pool2d): asymmetric pads " + ShapeString(pads));
  }
  const cudnnPoolingMode_t m = mode == lo::value::kPoolMax ? CUDNN_POOLING_MAX
                               : mode == lo::value::kPoolAvg ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                             : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  KEEL_ASSIGN_OR_RETURN(h_, dev_.CudnnHandle());
  // Channels-first dims whatever the storage order.
  const auto xs = nhwc ? common::ChannelsFirstShape(k.args[0].shape) : k.args[0].shape;
  const auto ys = nhwc ? common::ChannelsFirstShape(k.args[1].shape) : k.args[1].shape;
  // CheckRank4 bounded every dimension to int32, the attributes' reader the rest.
  const int x[4] = {static_cast<int>(xs[0]), static_cast<int>(xs[1]), static_cast<int>(xs[2]), static_cast<int>(xs[3])};
  const int y[4] = {static_cast<int>(ys[0]), static_cast<int>(ys[1]), static_cast<int>(ys[2]), static_cast<int>(ys[3])};
  const int window[2] = {static_cast<int>(kernel[0]), static_cast<int>(kernel[1])};
  const int begin_pads[2] = {static_cast<int>(pads[0]), static_cast<int>(pads[1])};
  const int step[2] = {static_cast<int>(strides[0]), static_cast<int>(strides[1])};
  int out[4] = {0, 0, 0, 0};
  KEEL_RETURN_IF_ERROR(
      LibraryCallStatus(cl::CreatePoolDescriptors(x, y, m, window, begin_pads, step, dtype.element, nhwc, &d_, out)));
  if (out[0] != ys[0] || out[1] != ys[1] || out[2] != ys[2] || out[3] != ys[3]) {
    return ShapeError(k, "Y is " + ShapeString(ys) + " but the pooling gives " +
                             ShapeString({out[0], out[1], out[2], out[3]}));
  }
  call_ = "cudnnPoolingForward mode=" + mode + (nhwc ? " layout=nhwc" : "");
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<CudaLaunchState>> MakeCudnnConv2d(CudaDevice& dev, const KernelEntry& kernel) {
  auto c = std::make_unique<CudnnConv>(dev, kernel.name);
  KEEL_RETURN_IF_ERROR(c->Plan(kernel));
  return std::unique_ptr<CudaLaunchState>(std::move(c));
}

Result<std::unique_ptr<CudaLaunchState>> MakeCudnnPool2d(CudaDevice& dev, const KernelEntry& kernel) {
  auto p = std::make_unique<CudnnPool>(dev, kernel.name);
  KEEL_RETURN_IF_ERROR(p->Plan(kernel));
  return std::unique_ptr<CudaLaunchState>(std::move(p));
}

#endif  // KEEL_HAVE_CUDNN

}  // namespace keel::vm_internal
