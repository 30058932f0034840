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
#include "vm/cuda/library_dtypes.h"

namespace keel::vm_internal {

#ifndef KEEL_HAVE_CUDNN

Result<std::unique_ptr<CudaLaunchState>> MakeCudnnConv2d(CudaDevice&, const KernelEntry& k) {
  return Unsupported("kernel " + k.name + " (cudnn.conv2d): this Keel runtime was built without cuDNN");
}
Result<std::unique_ptr<CudaLaunchState>> MakeCudnnPool2d(CudaDevice&, const KernelEntry& k) {
  return Unsupported("kernel " + k.name + " (cudnn.pool2d): this Keel runtime was built without cuDNN");
}

#else

namespace {

namespace lo = ser::library_ops;

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

// `s` is channels-first [N,C,H,W] whatever the storage order (`nhwc`).
Status SetTensor4d(cudnnTensorDescriptor_t d, const std::vector<int64_t>& s, const LibraryDType& t, bool nhwc) {
  KEEL_CUDNN_RETURN(cudnnSetTensor4dDescriptor, d, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, CudnnDataTypeOf(t),
                    static_cast<int>(s[0]), static_cast<int>(s[1]), static_cast<int>(s[2]), static_cast<int>(s[3]));
  return Status::Ok();
}

// The library attribute "layout" (serialization/library_ops.h): true for "nhwc".
Result<bool> ReadLayout(AttrReader& at) {
  KEEL_ASSIGN_OR_RETURN(const std::string layout,
                        at.Str(lo::attr::kLayout, lo::value::kLayoutNchw, {lo::value::kLayoutNchw, lo::value::kLayoutNhwc}));
  return layout == lo::value::kLayoutNhwc;
}

// Values the geometry check bounded to int32 (common/conv_geometry.h).
std::vector<int> Int32s(const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); }

// A dense tensor of any rank in type `t`: `dims` channels-first, stored
// row-major in that order or, `nhwc`, with the channels last (fewer than 2^31
// elements: MakeCudnnConvGeometry checked).
Status SetTensorNd(cudnnTensorDescriptor_t d, const std::vector<int64_t>& dims, const LibraryDType& t, bool nhwc) {
  std::vector<int64_t> order(dims.size());  // storage order of the axes, outermost first
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  if (nhwc) std::rotate(order.begin() + 1, order.begin() + 2, order.end());  // N, spatial..., C
  std::vector<int64_t> packed(dims.size(), 1);
  int64_t step = 1;
  for (size_t i = order.size(); i-- > 0;) {
    packed[static_cast<size_t>(order[i])] = step;
    step *= dims[static_cast<size_t>(order[i])];
  }
  const std::vector<int> n = Int32s(dims), stride = Int32s(packed);
  KEEL_CUDNN_RETURN(cudnnSetTensorNdDescriptor, d, CudnnDataTypeOf(t), static_cast<int>(n.size()), n.data(),
                    stride.data());
  return Status::Ok();
}

// The backend API's pads (ONNX order, begins then ends) for the cuDNN view.
std::vector<int64_t> LiftedPads(const common::CudnnConvGeometry& g) {
  std::vector<int64_t> p = g.pads;
  p.insert(p.end(), g.pads.begin(), g.pads.end());
  return p;
}

const char* ConvAlgoName(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "?";
  }
}

// ---- conv2d --------------------------------------------------------------------

// How a conv2d runs: cuDNN's fused conv+bias+activation call, or the plain
// convolution followed (when there is anything to add or clamp) by the VM's
// one-pass bias/residual/activation kernel (vm/cuda/runtime_kernels.cu).
enum class ConvMode : int64_t { kFused = 0, kConvEpilogue = 1 };

// Largest workspace a candidate algorithm may ask for (the VM keeps the largest
// chosen one for its lifetime).
constexpr size_t kMaxConvWorkspace = size_t{256} << 20;

class CudnnConv final : public CudaLaunchState {
 public:
  CudnnConv(CudaDevice& dev, std::string name) : dev_(dev), name_(std::move(name)) {}
  ~CudnnConv() override {
    if (x_) (void)cudnnDestroyTensorDescriptor(x_);
    if (y_) (void)cudnnDestroyTensorDescriptor(y_);
    if (b_) (void)cudnnDestroyTensorDescriptor(b_);
    if (w_) (void)cudnnDestroyFilterDescriptor(w_);
    if (conv_) (void)cudnnDestroyConvolutionDescriptor(conv_);
    if (act_) (void)cudnnDestroyActivationDescriptor(act_);
    if (zero_bias_) dev_.Free(zero_bias_);
  }
  Status Plan(const KernelEntry& k);
  Status Launch(void* const* args) override;

 private:
  // The fused call can run: relu (any algorithm), or identity with bias/residual
  // (IMPLICIT_PRECOMP_GEMM only); clipped ReLU never.
  bool FusedAllowed(cudnnConvolutionFwdAlgo_t algo) const {
    if (act_kind_ == 1) return true;
    return act_kind_ == 0 && (has_bias_ || has_residual_) && algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  }
  cudnnStatus_t Fused(const void* x, const void* w, const void* bias, const void* res, void* y,
                      cudnnConvolutionFwdAlgo_t algo, void* ws, size_t ws_bytes);
  Status ConvThenEpilogue(const void* x, const void* w, const void* bias, const void* res, void* y,
                          cudnnConvolutionFwdAlgo_t algo, void* ws, size_t ws_bytes, bool* refused);
  // The VM's bias/residual/activation pass in place on Y (nothing to do: no launch).
  Status Epilogue(void* y, const void* bias, const void* res);
  Status Choose(const KernelEntry& k, const std::string& key);
  // Zeroed scratch X, W, Y, workspace (and bias/residual when the kernel has them)
  // for timing candidates at load; owned by `scratch`.
  struct TimingArgs {
    void *x, *w, *y, *ws, *bias = nullptr, *res = nullptr;
  };
  Result<TimingArgs> AllocateTimingArgs(ScratchBuffers& scratch, uint64_t ws_bytes) const;
  // VmOptions::cudnn_engines (cudnn_engine_conv.h): backend-API engines timed against
  // the legacy choice; engine_ is set when one is kept.
  Status ChooseEngine(const std::string& key, const EngineConvProblem& problem);
  bool EngineUsable(const void* x, const void* w, const void* res, const void* y) const {
    return engine_ != nullptr && !(res != nullptr && res == y) &&
           ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(w) | reinterpret_cast<uintptr_t>(y)) & 15u) == 0;
  }

  CudaDevice& dev_;
  std::string name_;
  cudnnHandle_t h_ = nullptr;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, b_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnActivationDescriptor_t act_ = nullptr;  // relu, clipped relu or identity (fused call)
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  uint64_t ws_ = 0;
  ConvMode mode_ = ConvMode::kConvEpilogue;
  bool has_bias_ = false, has_residual_ = false;
  bool nhwc_ = false;  // layout "nhwc": X, residual, Y channels-last, W [K,R,S,C/g]
  int act_kind_ = 0;  // 0 none, 1 relu, 2 clip (runtime_kernels.cu numbering)
  float clip_max_ = 0.f;
  int bias_arg_ = -1, res_arg_ = -1, y_arg_ = 2;
  uint64_t y_bytes_ = 0, x_bytes_ = 0, w_bytes_ = 0;
  int64_t y_elems_ = 0, channels_ = 0, hw_ = 0;  // hw_: consecutive elements of one channel
  LibraryDType dtype_;  // X, W, bias, residual and Y alike
  CUfunction epi_ = nullptr, epi4_ = nullptr;  // epi4_: f32 only (float4 moves)
  void* zero_bias_ = nullptr;
  std::string call_fused_, call_conv_, call_engine_;
  std::unique_ptr<CudnnEngineConv> engine_;
};

cudnnStatus_t CudnnConv::Fused(const void* x, const void* w, const void* bias, const void* res, void* y,
                               cudnnConvolutionFwdAlgo_t algo, void* ws, size_t ws_bytes) {
  const float one = 1.f, alpha2 = res ? 1.f : 0.f;
  return cudnnConvolutionBiasActivationForward(h_, &one, x_, x, w_, w, conv_, algo, ws, ws_bytes, &alpha2, y_,
                                               res ? res : y, b_, bias ? bias : zero_bias_, act_, y_, y);
}

Status CudnnConv::ConvThenEpilogue(const void* x, const void* w, const void* bias, const void* res, void* y,
                                   cudnnConvolutionFwdAlgo_t algo, void* ws, size_t ws_bytes, bool* refused) {
  const float one = 1.f;
  float beta = 0.f;
  if (res == y) {  // residual already in Y (same register): accumulate into it
    beta = 1.f;
    res = nullptr;
  }
  const cudnnStatus_t s = cudnnConvolutionForward(h_, &one, x_, x, w_, w, conv_, algo, ws, ws_bytes, &beta, y_, y);
  if (s != CUDNN_STATUS_SUCCESS) {
    if (refused != nullptr) {
      *refused = true;
      return Status::Ok();
    }
    return CudnnStatus(s, "cudnnConvolutionForward").WithContext("kernel " + name_);
  }
  return Epilogue(y, bias, res);
}

Result<CudnnConv::TimingArgs> CudnnConv::AllocateTimingArgs(ScratchBuffers& scratch, uint64_t ws_bytes) const {
  TimingArgs a;
  KEEL_ASSIGN_OR_RETURN(a.x, scratch.Get(x_bytes_));
  KEEL_ASSIGN_OR_RETURN(a.w, scratch.Get(w_bytes_));
  KEEL_ASSIGN_OR_RETURN(a.y, scratch.Get(y_bytes_));
  KEEL_ASSIGN_OR_RETURN(a.ws, scratch.Get(ws_bytes));
  if (has_bias_) { KEEL_ASSIGN_OR_RETURN(a.bias, scratch.Get(dtype_.bytes * static_cast<uint64_t>(channels_))); }
  if (has_residual_) { KEEL_ASSIGN_OR_RETURN(a.res, scratch.Get(y_bytes_)); }
  return a;
}

Status CudnnConv::Epilogue(void* y, const void* bias, const void* res) {
  if (!bias && !res && act_kind_ == 0) return Status::Ok();
  const bool vec = epi4_ != nullptr && hw_ % 4 == 0 &&
                   ((reinterpret_cast<uintptr_t>(y) | reinterpret_cast<uintptr_t>(res)) & 15u) == 0;
  long long total = vec ? y_elems_ / 4 : y_elems_;
  long long hw = vec ? hw_ / 4 : hw_;
  int channels = static_cast<int>(channels_);
  int act = act_kind_;
  float clip = clip_max_;
  void* yp = y;
  const void* bp = bias;
  const void* rp = res;
  void* params[] = {&yp, &bp, &rp, &total, &hw, &channels, &act, &clip};
  const long long blocks = std::min<long long>((total + 255) / 256, static_cast<long long>(dev_.num_sms()) * 8);
  const CUresult r =
      dev_.LaunchRuntimeKernel(vec ? epi4_ : epi_, static_cast<unsigned>(std::max(1LL, blocks)), 256, params);
  if (r != CUDA_SUCCESS) {
    const std::string call = std::string("cuLaunchKernel(keel_bias_act_") + dtype_.name + ")";
    return CuStatus(r, call.c_str()).WithContext("kernel " + name_);
  }
  return Status::Ok();
}

Status CudnnConv::Plan(const KernelEntry& k) {
  // The spatial rank comes from X: the attributes' lengths must match it.
  const size_t spatial = k.args.empty() ? 0 : common::ConvSpatialDims(k.args[0].shape.size());
  if (spatial == 0) {
    return ShapeError(k, "X must have 1 to 3 spatial dims (rank 3 to 5), got " +
                             (k.args.empty() ? std::string("no arguments") : ShapeString(k.args[0].shape)));
  }
  AttrReader at(k);
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> pads,
                        at.Ints(lo::attr::kPads, 2 * spatial, std::vector<int64_t>(2 * spatial, 0), 0, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> strides,
                        at.Ints(lo::attr::kStrides, spatial, std::vector<int64_t>(spatial, 1), 1, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> dil,
                        at.Ints(lo::attr::kDilations, spatial, std::vector<int64_t>(spatial, 1), 1, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(const int64_t group, at.Int(lo::attr::kGroup, 1, 1, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(const int64_t has_bias, at.Int(lo::attr::kHasBias, 0, 0, 1));
  KEEL_ASSIGN_OR_RETURN(const int64_t has_res, at.Int(lo::attr::kHasResidual, 0, 0, 1));
  KEEL_ASSIGN_OR_RETURN(const std::string act,
                        at.Str(lo::attr::kActivation, "", {lo::value::kActivationNone, lo::value::kActivationRelu,
                                                           lo::value::kActivationClip}));
  const bool clip = act == lo::value::kActivationClip;
  KEEL_ASSIGN_OR_RETURN(const double clip_min, at.Float(lo::attr::kClipMin, 0.0));
  KEEL_ASSIGN_OR_RETURN(const double clip_max, at.Float(lo::attr::kClipMax, 6.0));
  KEEL_ASSIGN_OR_RETURN(nhwc_, ReadLayout(at));
  KEEL_RETURN_IF_ERROR(at.Finish());
  if (nhwc_ && spatial != 2) {
    return Unsupported("kernel " + k.name + " (cudnn.conv2d): layout nhwc needs 2 spatial dims, got " +
                       std::to_string(spatial));
  }

  has_bias_ = has_bias != 0;
  has_residual_ = has_res != 0;
  int next = 2;
  bias_arg_ = has_bias_ ? next++ : -1;
  res_arg_ = has_residual_ ? next++ : -1;
  y_arg_ = next++;
  const size_t nargs = static_cast<size_t>(next) + (k.workspace_bytes > 0 ? 1 : 0);
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
  auto first = [this](const std::vector<int64_t>& s) { return nhwc_ ? common::ChannelsFirstShape(s) : s; };
  // Ranks, channels, groups, Y's shape and pad symmetry: one check shared with
  // the compiler and the host-program emitter (common/conv_geometry.h), on the
  // channels-first shapes.
  Result<common::CudnnConvGeometry> geometry =
      common::MakeCudnnConvGeometry(first(xs), first(ws), first(ys), pads, strides, dil, group);
  if (!geometry.ok()) return geometry.status().WithContext("kernel " + k.name + " (" + k.library_op + ")");
  const common::CudnnConvGeometry& g = *geometry;
  y_bytes_ = k.args[y_arg_].bytes;
  x_bytes_ = k.args[0].bytes;
  w_bytes_ = k.args[1].bytes;
  y_elems_ = g.y_elements();
  channels_ = g.channels();
  hw_ = nhwc_ ? 1 : g.spatial_size();  // NHWC: the channel changes with every element
  if (has_bias_ && (k.args[bias_arg_].dtype != dtype_.dtype ||
                    k.args[bias_arg_].bytes != dtype_.bytes * static_cast<uint64_t>(ws[0]))) {
    return ShapeError(k, std::string("bias must be ") + dtype_.name + " [" + std::to_string(ws[0]) + "]");
  }
  if (has_residual_ && (k.args[res_arg_].dtype != dtype_.dtype || k.args[res_arg_].shape != ys)) {
    return ShapeError(k, std::string("residual must be ") + dtype_.name + " " + ShapeString(ys));
  }
  if (clip && clip_min != 0.0) {
    return Unsupported("kernel " + k.name + " (cudnn.conv2d): clip_min " + std::to_string(clip_min) +
                       " (only clip_min 0 maps onto cuDNN's clipped ReLU)");
  }
  act_kind_ = act == lo::value::kActivationRelu ? 1 : clip ? 2 : 0;
  clip_max_ = static_cast<float>(clip_max);

  KEEL_ASSIGN_OR_RETURN(h_, dev_.CudnnHandle());
  // The VM's epilogue kernel of this type (vm/cuda/runtime_kernels.cu).
  const std::string epilogue_kernel = std::string("keel_bias_act_") + dtype_.name;
  KEEL_ASSIGN_OR_RETURN(epi_, dev_.RuntimeFunction(epilogue_kernel.c_str()));
  if (!dtype_.half) { KEEL_ASSIGN_OR_RETURN(epi4_, dev_.RuntimeFunction("keel_bias_act_f32x4")); }
  KEEL_CUDNN_RETURN(cudnnCreateTensorDescriptor, &x_);
  KEEL_CUDNN_RETURN(cudnnCreateTensorDescriptor, &y_);
  KEEL_CUDNN_RETURN(cudnnCreateTensorDescriptor, &b_);
  KEEL_CUDNN_RETURN(cudnnCreateFilterDescriptor, &w_);
  KEEL_CUDNN_RETURN(cudnnCreateConvolutionDescriptor, &conv_);
  // N-d descriptors (rank 4 or 5: 1-D problems arrive lifted to a unit height).
  std::vector<int64_t> bias_dims(g.x.size(), 1);
  bias_dims[1] = g.channels();
  KEEL_RETURN_IF_ERROR(SetTensorNd(x_, g.x, dtype_, nhwc_));
  KEEL_RETURN_IF_ERROR(SetTensorNd(y_, g.y, dtype_, nhwc_));
  KEEL_RETURN_IF_ERROR(SetTensorNd(b_, bias_dims, dtype_, false));
  const std::vector<int> wd = Int32s(g.w), pd = Int32s(g.pads), sd = Int32s(g.strides), dd = Int32s(g.dilations);
  KEEL_CUDNN_RETURN(cudnnSetFilterNdDescriptor, w_, CudnnDataTypeOf(dtype_), nhwc_ ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                    g.rank(), wd.data());
  // Compute type FLOAT for every data type: f32 accumulation (for half data this
  // is cuDNN's PSEUDO_HALF / PSEUDO_BFLOAT16 configuration).
  KEEL_CUDNN_RETURN(cudnnSetConvolutionNdDescriptor, conv_, g.rank() - 2, pd.data(), sd.data(), dd.data(),
                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  KEEL_CUDNN_RETURN(cudnnSetConvolutionGroupCount, conv_, static_cast<int>(group));
  // Half data: tensor-op math (the tensor cores, f32 accumulation). f32 data:
  // FMA math unless TF32 is allowed (tensor ops on f32 would be TF32).
  const cudnnMathType_t math = dtype_.half         ? CUDNN_TENSOR_OP_MATH
                               : dev_.allow_tf32() ? CUDNN_DEFAULT_MATH
                                                   : CUDNN_FMA_MATH;
  KEEL_CUDNN_RETURN(cudnnSetConvolutionMathType, conv_, math);
  std::vector<int> out(g.y.size(), 0);
  KEEL_CUDNN_RETURN(cudnnGetConvolutionNdForwardOutputDim, conv_, x_, w_, g.rank(), out.data());
  if (std::vector<int64_t>(out.begin(), out.end()) != g.y) {
    return ShapeError(k, "Y is " + ShapeString(ys) + " but cuDNN's convolution gives " +
                             ShapeString(std::vector<int64_t>(out.begin(), out.end())));
  }
  KEEL_CUDNN_RETURN(cudnnCreateActivationDescriptor, &act_);
  KEEL_CUDNN_RETURN(cudnnSetActivationDescriptor, act_,
                    act_kind_ == 1 ? CUDNN_ACTIVATION_RELU : act_kind_ == 2 ? CUDNN_ACTIVATION_CLIPPED_RELU
                                                                            : CUDNN_ACTIVATION_IDENTITY,
                    CUDNN_PROPAGATE_NAN, act_kind_ == 2 ? clip_max : 0.0);
  if (!has_bias_) {
    // The fused call always adds a bias: give it zeros.
    const uint64_t bytes = dtype_.bytes * static_cast<uint64_t>(ws[0]);
    KEEL_ASSIGN_OR_RETURN(zero_bias_, dev_.Allocate(bytes, 256));
    KEEL_CUDA_RETURN(cudaMemsetAsync, zero_bias_, 0, bytes, dev_.stream());
    KEEL_CUDA_RETURN(cudaStreamSynchronize, dev_.stream());
  }

  // The tuning-file key (autotune.h): one format shared with the tests and the
  // generated host code, so a tuning file serves every path.
  const std::string key = ConvProblemKey(xs, ws, ys, pads, strides, dil, group, has_bias_, has_residual_, act_kind_,
                                         dev_.allow_tf32(), dtype_.dtype, nhwc_);
  KEEL_RETURN_IF_ERROR(Choose(k, key));
  // The backend-API engines (cudnn_engine_conv.h): on request, and by default
  // (kAuto) for grouped half or channels-last problems, where the legacy API
  // misses cuDNN's fast kernels (NHWC depthwise: MobileNetV2 at batch 32 in
  // fp16 1.86 -> 1.36 ms on an H200). Dense ones stay legacy: their isolated
  // timings favoured engines that made ResNet-50 slower end to end.
  const VmOptions::CudnnEngines engines = dev_.cudnn_engines();
  if (engines == VmOptions::CudnnEngines::kCompete || engines == VmOptions::CudnnEngines::kForce ||
      (engines == VmOptions::CudnnEngines::kAuto && (dtype_.half || nhwc_) && group > 1)) {
    EngineConvProblem problem{g.x, g.w, g.y, LiftedPads(g), g.strides, g.dilations, group};
    problem.dtype = CudnnDataTypeOf(dtype_);
    problem.nhwc = nhwc_;
    KEEL_RETURN_IF_ERROR(ChooseEngine(key, problem));
  }
  KEEL_RETURN_IF_ERROR(dev_.ReserveWorkspace(std::max<uint64_t>(ws_, engine_ ? engine_->workspace(0) : 0)));
  const std::string algo = std::string(" algo=") + ConvAlgoName(algo_) + " workspace=" + std::to_string(ws_) +
                           (nhwc_ ? " layout=nhwc" : "");
  call_fused_ = "cudnnConvolutionBiasActivationForward" + algo;
  call_conv_ = "cudnnConvolutionForward" + algo + (has_bias_ || has_residual_ || act_kind_ ? " + keel_bias_act" : "");
  return Status::Ok();
}

// Picks algorithm and mode: from the per-VM cache, else by timing every
// candidate the heuristics offer (cuda_autotune off: the first usable one).
Status CudnnConv::Choose(const KernelEntry& k, const std::string& key) {
  if (const std::vector<int64_t>* t = dev_.FindTuning(key); t != nullptr && t->size() == 3) {
    algo_ = static_cast<cudnnConvolutionFwdAlgo_t>((*t)[0]);
    mode_ = static_cast<ConvMode>((*t)[1]);
    ws_ = static_cast<uint64_t>((*t)[2]);
    return Status::Ok();
  }
  int max_algos = 0;
  KEEL_CUDNN_RETURN(cudnnGetConvolutionForwardAlgorithmMaxCount, h_, &max_algos);
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(std::max(1, max_algos)));
  int got = 0;
  KEEL_CUDNN_RETURN(cudnnGetConvolutionForwardAlgorithm_v7, h_, x_, w_, conv_, y_, static_cast<int>(perf.size()), &got,
                    perf.data());
  struct Candidate {
    cudnnConvolutionFwdAlgo_t algo;
    ConvMode mode;
    size_t ws;
  };
  std::vector<Candidate> cands;
  for (int i = 0; i < got; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    // f32 without TF32: only FMA (or default, non-tensor-op) math: tensor-op math
    // on f32 would be TF32. Half data: any math (tensor ops are the point).
    if (!dtype_.half && !dev_.allow_tf32() && perf[i].mathType != CUDNN_FMA_MATH &&
        perf[i].mathType != CUDNN_DEFAULT_MATH)
      continue;
    size_t bytes = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(h_, x_, w_, conv_, y_, perf[i].algo, &bytes) != CUDNN_STATUS_SUCCESS)
      continue;
    if (bytes > kMaxConvWorkspace) continue;
    bool dup = false;
    for (const Candidate& c : cands) dup = dup || c.algo == perf[i].algo;
    if (dup) continue;
    if (FusedAllowed(perf[i].algo)) cands.push_back({perf[i].algo, ConvMode::kFused, bytes});
    cands.push_back({perf[i].algo, ConvMode::kConvEpilogue, bytes});
  }
  if (cands.empty()) {
    return Unsupported("kernel " + k.name + " (cudnn.conv2d): cuDNN offers no algorithm for X " +
                       ShapeString(k.args[0].shape) + ", W " + ShapeString(k.args[1].shape) + " in " + dtype_.name);
  }
  int pick = 0;
  if (dev_.autotune() && cands.size() > 1) {
    ScratchBuffers scratch(dev_.device_allocator());
    size_t max_ws = 0;
    for (const Candidate& c : cands) max_ws = std::max(max_ws, c.ws);
    KEEL_ASSIGN_OR_RETURN(const TimingArgs args, AllocateTimingArgs(scratch, max_ws));
    void *x = args.x, *w = args.w, *y = args.y, *wsp = args.ws, *bias = args.bias, *res = args.res;
    KEEL_ASSIGN_OR_RETURN(CUfunction spin, dev_.RuntimeFunction("keel_spin"));
    std::vector<double> us;
    for (const Candidate& c : cands) {
      Result<double> t = TimeOnStream(dev_.stream(), spin, 5, [&]() {
        if (c.mode == ConvMode::kFused) return Fused(x, w, bias, res, y, c.algo, wsp, c.ws) == CUDNN_STATUS_SUCCESS;
        bool refused = false;
        Status s = ConvThenEpilogue(x, w, bias, res, y, c.algo, wsp, c.ws, &refused);
        return s.ok() && !refused;
      });
      if (!t.ok()) return t.status();
      us.push_back(*t);
      if (dev_.autotune_log()) {
        std::fprintf(stderr, "keel autotune %s %s %s ws=%zu: %.2f us\n", name_.c_str(), ConvAlgoName(c.algo),
                     c.mode == ConvMode::kFused ? "fused" : "conv+epilogue", c.ws, *t);
      }
    }
    pick = PickFastest(us);
    if (pick < 0) {
      return Unsupported("kernel " + k.name + " (cudnn.conv2d): no cuDNN algorithm ran for X " +
                         ShapeString(k.args[0].shape) + ", W " + ShapeString(k.args[1].shape));
    }
  }
  algo_ = cands[static_cast<size_t>(pick)].algo;
  mode_ = cands[static_cast<size_t>(pick)].mode;
  ws_ = cands[static_cast<size_t>(pick)].ws;
  dev_.StoreTuning(key, {static_cast<int64_t>(algo_), static_cast<int64_t>(mode_), static_cast<int64_t>(ws_)});
  return Status::Ok();
}

// Builds the backend-API candidates (cudnn_engine_conv.h) and keeps the fastest
// engine, each timed with the VM's epilogue after it, when it beats the legacy
// choice by more than 3% (cudnn_engines kCompete; near-ties stay on the legacy
// path, which the host-code emitter mirrors) or whenever one runs (=force). The
// verdict is cached per VM: the engine's index in the candidate list (the same
// list for the same problem in one process) or -1 for the legacy path. Engines
// that cannot be built are not an error: the legacy path stays.
Status CudnnConv::ChooseEngine(const std::string& key, const EngineConvProblem& problem) {
  const VmOptions::CudnnEngines mode = dev_.cudnn_engines();
  const std::string ekey = "engine|" + std::to_string(static_cast<int>(mode)) + "|" + key;
  const std::vector<int64_t>* cached = dev_.FindTuning(ekey);
  if (cached != nullptr && (cached->empty() || (*cached)[0] < 0)) return Status::Ok();
  Result<std::unique_ptr<CudnnEngineConv>> made =
      CudnnEngineConv::Create(h_, problem, dev_.allow_tf32(), kMaxConvWorkspace, dev_.engine_search());
  if (!made.ok()) {
    if (dev_.autotune_log()) std::fprintf(stderr, "keel engines %s: %s\n", name_.c_str(), made.status().ToString().c_str());
    dev_.StoreTuning(ekey, {-1});
    return Status::Ok();
  }
  std::unique_ptr<CudnnEngineConv> e = std::move(*made);
  int64_t pick = -1;
  if (cached != nullptr) {
    pick = (*cached)[0] < static_cast<int64_t>(e->size()) ? (*cached)[0] : -1;
  } else {
    ScratchBuffers scratch(dev_.device_allocator());
    uint64_t max_ws = ws_;
    for (size_t i = 0; i < e->size(); ++i) max_ws = std::max(max_ws, e->workspace(i));
    KEEL_ASSIGN_OR_RETURN(const TimingArgs args, AllocateTimingArgs(scratch, max_ws));
    void *x = args.x, *w = args.w, *y = args.y, *wsp = args.ws, *bias = args.bias, *res = args.res;
    KEEL_ASSIGN_OR_RETURN(CUfunction spin, dev_.RuntimeFunction("keel_spin"));
    std::vector<double> us;
    for (size_t i = 0; i < e->size(); ++i) {
      KEEL_ASSIGN_OR_RETURN(const double t, TimeOnStream(dev_.stream(), spin, 5, [&]() {
        return e->Run(i, x, w, y, wsp) == CUDNN_STATUS_SUCCESS && Epilogue(y, bias, res).ok();
      }));
      us.push_back(t);
      if (dev_.autotune_log()) std::fprintf(stderr, "keel engines %s %s: %.2f us\n", name_.c_str(), e->describe(i).c_str(), t);
    }
    double legacy = -1;
    if (mode != VmOptions::CudnnEngines::kForce) {
      KEEL_ASSIGN_OR_RETURN(legacy, TimeOnStream(dev_.stream(), spin, 5, [&]() {
        if (mode_ == ConvMode::kFused) return Fused(x, w, bias, res, y, algo_, wsp, ws_) == CUDNN_STATUS_SUCCESS;
        bool refused = false;
        Status s = ConvThenEpilogue(x, w, bias, res, y, algo_, wsp, ws_, &refused);
        return s.ok() && !refused;
      }));
    }
    const int best = PickFastest(us);
    if (best >= 0 && (legacy < 0 || us[static_cast<size_t>(best)] < 0.97 * legacy)) pick = best;
    if (dev_.autotune_log()) {
      std::fprintf(stderr, "keel engines %s: legacy %s %.2f us -> %s (%s)\n", name_.c_str(), ConvAlgoName(algo_),
                   legacy, pick >= 0 ? e->describe(static_cast<size_t>(pick)).c_str() : "legacy",
                   e->summary().c_str());
    }
    dev_.StoreTuning(ekey, {pick});
  }
  if (pick < 0) return Status::Ok();
  e->Keep(static_cast<size_t>(pick));
  engine_ = std::move(e);
  call_engine_ = "cudnnBackendExecute " + engine_->describe(0) +
                 (has_bias_ || has_residual_ || act_kind_ ? " + keel_bias_act" : "");
  return Status::Ok();
}

Status CudnnConv::Launch(void* const* args) {
  dev_.Bind();
  const void* bias = has_bias_ ? args[bias_arg_] : nullptr;
  const void* res = has_residual_ ? args[res_arg_] : nullptr;
  void* y = args[y_arg_];
  dev_.BeginOp();
  if (EngineUsable(args[0], args[1], res, y)) {
    const cudnnStatus_t s = engine_->Run(0, args[0], args[1], y, dev_.workspace());
    if (s != CUDNN_STATUS_SUCCESS) return CudnnStatus(s, "cudnnBackendExecute").WithContext("kernel " + name_);
    KEEL_RETURN_IF_ERROR(Epilogue(y, bias, res));
    dev_.EndLaunch(call_engine_, name_);
    return Status::Ok();
  }
  if (mode_ == ConvMode::kFused) {
    const cudnnStatus_t s = Fused(args[0], args[1], bias, res, y, algo_, dev_.workspace(), ws_);
    if (s == CUDNN_STATUS_SUCCESS) {
      dev_.EndLaunch(call_fused_, name_);
      return Status::Ok();
    }
    if (s != CUDNN_STATUS_NOT_SUPPORTED) {
      return CudnnStatus(s, "cudnnConvolutionBiasActivationForward").WithContext("kernel " + name_);
    }
    mode_ = ConvMode::kConvEpilogue;  // no fused kernel after all: the sequence from now on
  }
  KEEL_RETURN_IF_ERROR(ConvThenEpilogue(args[0], args[1], bias, res, y, algo_, dev_.workspace(), ws_, nullptr));
  dev_.EndLaunch(call_conv_, name_);
  return Status::Ok();
}

// ---- pool2d --------------------------------------------------------------------

class CudnnPool final : public CudaLaunchState {
 public:
  CudnnPool(CudaDevice& dev, std::string name) : dev_(dev), name_(std::move(name)) {}
  ~CudnnPool() override {
    if (x_) (void)cudnnDestroyTensorDescriptor(x_);
    if (y_) (void)cudnnDestroyTensorDescriptor(y_);
    if (p_) (void)cudnnDestroyPoolingDescriptor(p_);
  }
  Status Plan(const KernelEntry& k);
  Status Launch(void* const* args) override {
    const float one = 1.f, zero = 0.f;
    dev_.Bind();
    dev_.BeginOp();
    const cudnnStatus_t s = cudnnPoolingForward(h_, p_, &one, x_, args[0], &zero, y_, args[1]);
    if (s != CUDNN_STATUS_SUCCESS) return CudnnStatus(s, "cudnnPoolingForward").WithContext("kernel " + name_);
    dev_.EndLaunch(call_, name_);
    return Status::Ok();
  }

 private:
  CudaDevice& dev_;
  std::string name_;
  cudnnHandle_t h_ = nullptr;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnPoolingDescriptor_t p_ = nullptr;
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
  KEEL_CUDNN_RETURN(cudnnCreateTensorDescriptor, &x_);
  KEEL_CUDNN_RETURN(cudnnCreateTensorDescriptor, &y_);
  KEEL_CUDNN_RETURN(cudnnCreatePoolingDescriptor, &p_);
  const auto xs = nhwc ? common::ChannelsFirstShape(k.args[0].shape) : k.args[0].shape;
  const auto ys = nhwc ? common::ChannelsFirstShape(k.args[1].shape) : k.args[1].shape;
  KEEL_RETURN_IF_ERROR(SetTensor4d(x_, xs, dtype, nhwc));
  KEEL_RETURN_IF_ERROR(SetTensor4d(y_, ys, dtype, nhwc));
  KEEL_CUDNN_RETURN(cudnnSetPooling2dDescriptor, p_, m, CUDNN_PROPAGATE_NAN, static_cast<int>(kernel[0]),
                    static_cast<int>(kernel[1]), static_cast<int>(pads[0]), static_cast<int>(pads[1]),
                    static_cast<int>(strides[0]), static_cast<int>(strides[1]));
  int n = 0, c = 0, h = 0, w = 0;
  KEEL_CUDNN_RETURN(cudnnGetPooling2dForwardOutputDim, p_, x_, &n, &c, &h, &w);
  if (n != ys[0] || c != ys[1] || h != ys[2] || w != ys[3]) {
    return ShapeError(k, "Y is " + ShapeString(ys) + " but the pooling gives " + ShapeString({n, c, h, w}));
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
