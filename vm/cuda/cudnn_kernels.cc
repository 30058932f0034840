// vm/cuda/cudnn_kernels.cc — see cudnn_kernels.h.
#include "vm/cuda/cudnn_kernels.h"

#include <string>
#include <vector>

#include "serialization/library_ops.h"
#include "vm/cuda/cuda_errors.h"
#include "vm/cuda/library_attrs.h"

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

Status CheckF32Rank4(const KernelEntry& k, size_t arg, const char* what) {
  const KernelArgEntry& a = k.args[arg];
  if (a.dtype != DataType::kF32) {
    return Unsupported("kernel " + k.name + " (" + k.library_op + "): " + what + " is " + DataTypeName(a.dtype) +
                       "; only f32 is implemented");
  }
  if (a.shape.size() != 4) return ShapeError(k, std::string(what) + " must be NCHW (rank 4), got " + ShapeString(a.shape));
  for (int64_t d : a.shape) {
    if (d < 1 || d > INT32_MAX) return ShapeError(k, std::string(what) + " has a bad dimension " + ShapeString(a.shape));
  }
  return Status::Ok();
}

Status SetTensor4d(cudnnTensorDescriptor_t d, const std::vector<int64_t>& s) {
  KEEL_CUDNN_RETURN(cudnnSetTensor4dDescriptor, d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(s[0]),
                    static_cast<int>(s[1]), static_cast<int>(s[2]), static_cast<int>(s[3]));
  return Status::Ok();
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
  Status Unfused(void* const* args);

  CudaDevice& dev_;
  std::string name_;
  cudnnHandle_t h_ = nullptr;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, b_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnActivationDescriptor_t act_ = nullptr;  // null: no activation
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  uint64_t ws_ = 0;
  bool fused_ = false;  // relu: cudnnConvolutionBiasActivationForward
  bool has_bias_ = false, has_residual_ = false;
  int bias_arg_ = -1, res_arg_ = -1, y_arg_ = 2;
  uint64_t y_bytes_ = 0;
  void* zero_bias_ = nullptr;
  std::string call_fused_, call_conv_;
};

Status CudnnConv::Plan(const KernelEntry& k) {
  AttrReader at(k);
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> pads, at.Ints(lo::attr::kPads, 4, {0, 0, 0, 0}, 0, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> strides, at.Ints(lo::attr::kStrides, 2, {1, 1}, 1, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> dil, at.Ints(lo::attr::kDilations, 2, {1, 1}, 1, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(const int64_t group, at.Int(lo::attr::kGroup, 1, 1, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(const int64_t has_bias, at.Int(lo::attr::kHasBias, 0, 0, 1));
  KEEL_ASSIGN_OR_RETURN(const int64_t has_res, at.Int(lo::attr::kHasResidual, 0, 0, 1));
  KEEL_ASSIGN_OR_RETURN(const std::string act,
                        at.Str(lo::attr::kActivation, "", {lo::value::kActivationNone, lo::value::kActivationRelu,
                                                           lo::value::kActivationClip}));
  const bool clip = act == lo::value::kActivationClip;
  KEEL_ASSIGN_OR_RETURN(const double clip_min, at.Float(lo::attr::kClipMin, 0.0));
  KEEL_ASSIGN_OR_RETURN(const double clip_max, at.Float(lo::attr::kClipMax, 6.0));
  KEEL_RETURN_IF_ERROR(at.Finish());

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
  KEEL_RETURN_IF_ERROR(CheckF32Rank4(k, 0, "X"));
  KEEL_RETURN_IF_ERROR(CheckF32Rank4(k, 1, "W"));
  KEEL_RETURN_IF_ERROR(CheckF32Rank4(k, y_arg_, "Y"));
  const auto& xs = k.args[0].shape;
  const auto& ws = k.args[1].shape;
  const auto& ys = k.args[y_arg_].shape;
  y_bytes_ = k.args[y_arg_].bytes;
  if (xs[1] % group != 0 || ws[0] % group != 0 || ws[1] * group != xs[1] || ws[0] != ys[1] || xs[0] != ys[0]) {
    return ShapeError(k, "X " + ShapeString(xs) + ", W " + ShapeString(ws) + ", Y " + ShapeString(ys) +
                             " do not match group " + std::to_string(group));
  }
  if (has_bias_ && (k.args[bias_arg_].dtype != DataType::kF32 || k.args[bias_arg_].bytes != 4 * static_cast<uint64_t>(ws[0]))) {
    return ShapeError(k, "bias must be f32 [" + std::to_string(ws[0]) + "]");
  }
  if (has_residual_ && (k.args[res_arg_].dtype != DataType::kF32 || k.args[res_arg_].shape != ys)) {
    return ShapeError(k, "residual must be f32 " + ShapeString(ys));
  }
  if (pads[0] != pads[2] || pads[1] != pads[3]) {
    return Unsupported("kernel " + k.name + " (cudnn.conv2d): asymmetric pads " + ShapeString(pads) +
                       " (cuDNN pads symmetrically; pad explicitly)");
  }
  if (clip && clip_min != 0.0) {
    return Unsupported("kernel " + k.name + " (cudnn.conv2d): clip_min " + std::to_string(clip_min) +
                       " (only clip_min 0 maps onto cuDNN's clipped ReLU)");
  }

  KEEL_ASSIGN_OR_RETURN(h_, dev_.CudnnHandle());
  KEEL_CUDNN_RETURN(cudnnCreateTensorDescriptor, &x_);
  KEEL_CUDNN_RETURN(cudnnCreateTensorDescriptor, &y_);
  KEEL_CUDNN_RETURN(cudnnCreateTensorDescriptor, &b_);
  KEEL_CUDNN_RETURN(cudnnCreateFilterDescriptor, &w_);
  KEEL_CUDNN_RETURN(cudnnCreateConvolutionDescriptor, &conv_);
  KEEL_RETURN_IF_ERROR(SetTensor4d(x_, xs));
  KEEL_RETURN_IF_ERROR(SetTensor4d(y_, ys));
  KEEL_RETURN_IF_ERROR(SetTensor4d(b_, {1, ws[0], 1, 1}));
  KEEL_CUDNN_RETURN(cudnnSetFilter4dDescriptor, w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(ws[0]),
                    static_cast<int>(ws[1]), static_cast<int>(ws[2]), static_cast<int>(ws[3]));
  KEEL_CUDNN_RETURN(cudnnSetConvolution2dDescriptor, conv_, static_cast<int>(pads[0]), static_cast<int>(pads[1]),
                    static_cast<int>(strides[0]), static_cast<int>(strides[1]), static_cast<int>(dil[0]),
                    static_cast<int>(dil[1]), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  KEEL_CUDNN_RETURN(cudnnSetConvolutionGroupCount, conv_, static_cast<int>(group));
  const cudnnMathType_t math = dev_.allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  KEEL_CUDNN_RETURN(cudnnSetConvolutionMathType, conv_, math);
  int on = 0, oc = 0, oh = 0, ow = 0;
  KEEL_CUDNN_RETURN(cudnnGetConvolution2dForwardOutputDim, conv_, x_, w_, &on, &oc, &oh, &ow);
  if (on != ys[0] || oc != ys[1] || oh != ys[2] || ow != ys[3]) {
    return ShapeError(k, "Y is " + ShapeString(ys) + " but the convolution gives " +
                             ShapeString({on, oc, oh, ow}));
  }
  if (act == lo::value::kActivationRelu || clip) {
    KEEL_CUDNN_RETURN(cudnnCreateActivationDescriptor, &act_);
    KEEL_CUDNN_RETURN(cudnnSetActivationDescriptor, act_, clip ? CUDNN_ACTIVATION_CLIPPED_RELU : CUDNN_ACTIVATION_RELU,
                      CUDNN_PROPAGATE_NAN, clip ? clip_max : 0.0);
  }
  fused_ = act == lo::value::kActivationRelu;

  // Algorithm: the heuristics' best that uses FMA math when TF32 is off.
  int max_algos = 0;
  KEEL_CUDNN_RETURN(cudnnGetConvolutionForwardAlgorithmMaxCount, h_, &max_algos);
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(std::max(1, max_algos)));
  int got = 0;
  KEEL_CUDNN_RETURN(cudnnGetConvolutionForwardAlgorithm_v7, h_, x_, w_, conv_, y_, static_cast<int>(perf.size()), &got,
                    perf.data());
  int chosen = -1;
  for (int pass = 0; pass < 2 && chosen < 0; ++pass) {
    for (int i = 0; i < got; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      if (pass == 0 && !dev_.allow_tf32() && perf[i].mathType != CUDNN_FMA_MATH) continue;
      size_t bytes = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(h_, x_, w_, conv_, y_, perf[i].algo, &bytes) !=
          CUDNN_STATUS_SUCCESS) {
        continue;
      }
      chosen = i;
      ws_ = bytes;
      break;
    }
  }
  if (chosen < 0) {
    return Unsupported("kernel " + k.name + " (cudnn.conv2d): cuDNN offers no algorithm for X " + ShapeString(xs) +
                       ", W " + ShapeString(ws));
  }
  algo_ = perf[chosen].algo;
  KEEL_CUDNN_RETURN(cudnnSetConvolutionMathType, conv_, dev_.allow_tf32() ? perf[chosen].mathType : CUDNN_FMA_MATH);
  KEEL_RETURN_IF_ERROR(dev_.ReserveWorkspace(ws_));
  const std::string algo = std::string(" algo=") + ConvAlgoName(algo_) + " workspace=" + std::to_string(ws_);
  call_fused_ = "cudnnConvolutionBiasActivationForward" + algo;
  call_conv_ = "cudnnConvolutionForward" + algo;
  if (fused_ && !has_bias_) {
    // The fused call always adds a bias: give it zeros.
    const uint64_t bytes = 4 * static_cast<uint64_t>(ws[0]);
    KEEL_ASSIGN_OR_RETURN(zero_bias_, dev_.Allocate(bytes, 256));
    KEEL_CUDA_RETURN(cudaMemsetAsync, zero_bias_, 0, bytes, dev_.stream());
    KEEL_CUDA_RETURN(cudaStreamSynchronize, dev_.stream());
  }
  return Status::Ok();
}

Status CudnnConv::Launch(void* const* args) {
  dev_.Bind();
  if (fused_) {
    const float one = 1.f, alpha2 = has_residual_ ? 1.f : 0.f;
    void* y = args[y_arg_];
    const void* z = has_residual_ ? args[res_arg_] : y;
    const void* bias = has_bias_ ? args[bias_arg_] : zero_bias_;
    dev_.BeginOp();
    const cudnnStatus_t s = cudnnConvolutionBiasActivationForward(
        h_, &one, x_, args[0], w_, args[1], conv_, algo_, dev_.workspace(), ws_, &alpha2, y_, z, b_, bias, act_, y_,
        y);
    if (s == CUDNN_STATUS_SUCCESS) {
      dev_.EndLaunch(call_fused_, name_);
      return Status::Ok();
    }
    if (s != CUDNN_STATUS_NOT_SUPPORTED) {
      return CudnnStatus(s, "cudnnConvolutionBiasActivationForward").WithContext("kernel " + name_);
    }
    fused_ = false;  // this configuration has no fused kernel: use the sequence from now on
  }
  return Unfused(args);
}

Status CudnnConv::Unfused(void* const* args) {
  void* y = args[y_arg_];
  const float one = 1.f;
  float beta = 0.f;
  dev_.BeginOp();
  if (has_residual_) {
    if (args[res_arg_] != y) KEEL_CUDA_RETURN(cudaMemcpyAsync, y, args[res_arg_], y_bytes_, cudaMemcpyDeviceToDevice, dev_.stream());
    beta = 1.f;
  }
  KEEL_RETURN_IF_ERROR(CudnnStatus(cudnnConvolutionForward(h_, &one, x_, args[0], w_, args[1], conv_, algo_,
                                                           dev_.workspace(), ws_, &beta, y_, y),
                                   "cudnnConvolutionForward")
                           .WithContext("kernel " + name_));
  if (has_bias_) {
    KEEL_RETURN_IF_ERROR(CudnnStatus(cudnnAddTensor(h_, &one, b_, args[bias_arg_], &one, y_, y), "cudnnAddTensor")
                             .WithContext("kernel " + name_));
  }
  if (act_ != nullptr) {
    const float zero = 0.f;
    KEEL_RETURN_IF_ERROR(CudnnStatus(cudnnActivationForward(h_, act_, &one, y_, y, &zero, y_, y),
                                     "cudnnActivationForward")
                             .WithContext("kernel " + name_));
  }
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
  KEEL_RETURN_IF_ERROR(at.Finish());
  if (k.args.size() != 2) return ShapeError(k, "expected 2 arguments (X, Y), got " + std::to_string(k.args.size()));
  KEEL_RETURN_IF_ERROR(CheckF32Rank4(k, 0, "X"));
  KEEL_RETURN_IF_ERROR(CheckF32Rank4(k, 1, "Y"));
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
  KEEL_RETURN_IF_ERROR(SetTensor4d(x_, k.args[0].shape));
  KEEL_RETURN_IF_ERROR(SetTensor4d(y_, k.args[1].shape));
  KEEL_CUDNN_RETURN(cudnnSetPooling2dDescriptor, p_, m, CUDNN_PROPAGATE_NAN, static_cast<int>(kernel[0]),
                    static_cast<int>(kernel[1]), static_cast<int>(pads[0]), static_cast<int>(pads[1]),
                    static_cast<int>(strides[0]), static_cast<int>(strides[1]));
  int n = 0, c = 0, h = 0, w = 0;
  KEEL_CUDNN_RETURN(cudnnGetPooling2dForwardOutputDim, p_, x_, &n, &c, &h, &w);
  const auto& ys = k.args[1].shape;
  if (n != ys[0] || c != ys[1] || h != ys[2] || w != ys[3]) {
    return ShapeError(k, "Y is " + ShapeString(ys) + " but the pooling gives " + ShapeString({n, c, h, w}));
  }
  call_ = "cudnnPoolingForward mode=" + mode;
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
