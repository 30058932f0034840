// vm/cuda/library_calls_cudnn.h — the cuDNN calls of "cudnn.conv2d" and
// "cudnn.pool2d" kernels, shared verbatim by the VM (vm/cuda/cudnn_kernels.cc)
// and keelc --emit=cuda-host programs (see library_calls.h for why and how).
//
// A convolution runs in one of two modes: cuDNN's fused conv+bias+activation
// call, or the plain convolution followed (when there is anything to add or
// clamp) by the VM's one-pass bias/residual/activation kernel
// keel_bias_act_<type> (vm/cuda/runtime_kernels.cu). The candidates come from
// cudnnGetConvolutionForwardAlgorithm_v7 in its order; the VM may time them,
// the program (and the VM with KEEL_CUDA_AUTOTUNE=0) takes the first. Data in
// f32, f16 or bf16, computing in f32: f32 uses FMA math unless TF32 is
// allowed, half data tensor-op math.
//
// A transposed convolution ("cudnn.conv_transpose") is the adjoint of a forward
// one: the problem describes that forward convolution (x, w, y) and the kernel
// computes its data gradient, reading a y-shaped input and writing an x-shaped
// output (cudnnConvolutionBackwardData, candidates from
// cudnnGetConvolutionBackwardDataAlgorithm_v7), always followed by the epilogue
// kernel; the descriptors are the forward problem's.
//
// Ownership: ConvDescriptors / PoolDescriptors hold cuDNN objects the caller
// destroys with Destroy*Descriptors (safe on a partly created set).
// Errors: CallStatus.
#ifndef KEEL_VM_CUDA_LIBRARY_CALLS_CUDNN_H_
#define KEEL_VM_CUDA_LIBRARY_CALLS_CUDNN_H_

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "vm/cuda/library_calls.h"
#include "vm/cuda/library_calls_tuning.h"

namespace keel::cuda_lib {

inline cudnnDataType_t CudnnDataTypeOf(ElementType t) {
  switch (t) {
    case ElementType::kF16: return CUDNN_DATA_HALF;
    case ElementType::kBF16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

// ---- conv2d ----

// Largest workspace a candidate algorithm may ask for.
constexpr size_t kMaxConvWorkspace = size_t{256} << 20;

enum class ConvMode : int64_t { kFused = 0, kConvEpilogue = 1 };
enum ConvActivation : int { kActNone = 0, kActRelu = 1, kActClip = 2 };  // runtime_kernels.cu numbering

// One convolution in cuDNN's view (common/conv_geometry.h CudnnConvGeometry:
// rank 4 or 5, a 1-D problem lifted to a unit height; symmetric pads).
struct ConvProblem {
  std::vector<int> x, w, y;                   // dense NC... dims
  std::vector<int> pads, strides, dilations;  // one per spatial dim of the lifted problem
  int group = 1;
  bool has_bias = false, has_residual = false;
  int activation = kActNone;
  double clip_max = 0;  // kActClip: clip to [0, clip_max]
  ElementType type = ElementType::kF32;
  bool allow_tf32 = false;
  // Layout "nhwc" (2-D or 3-D): X, residual and Y stored channels-last, W as
  // KRSC (KTRSC); the dims above stay channels-first.
  bool nhwc = false;
  // cudnn.conv_transpose: the kernel reads a y-shaped input and writes the
  // x-shaped output (the forward problem's data gradient).
  bool transposed = false;
  // The dims of what the kernel writes (the bias, residual and epilogue's shape).
  const std::vector<int>& out() const { return transposed ? x : y; }
};

struct ConvDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, b = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;  // relu, clipped relu or identity (fused call)
};

inline void DestroyConvDescriptors(ConvDescriptors& d) {
  if (d.x) (void)cudnnDestroyTensorDescriptor(d.x);
  if (d.y) (void)cudnnDestroyTensorDescriptor(d.y);
  if (d.b) (void)cudnnDestroyTensorDescriptor(d.b);
  if (d.w) (void)cudnnDestroyFilterDescriptor(d.w);
  if (d.conv) (void)cudnnDestroyConvolutionDescriptor(d.conv);
  if (d.act) (void)cudnnDestroyActivationDescriptor(d.act);
  d = ConvDescriptors{};
}

// A dense tensor: channels-first `dims`, stored row-major in that order or, with
// `nhwc`, channels last (N, spatial..., C).
inline CallStatus SetDenseTensor(cudnnTensorDescriptor_t d, const std::vector<int>& dims, ElementType t,
                                 bool nhwc = false) {
  std::vector<int> stride(dims.size(), 1);
  if (nhwc) {
    int step = dims[1];  // C innermost
    for (size_t i = dims.size(); i-- > 2;) {
      stride[i] = step;
      step *= dims[i];
    }
    stride[0] = step;
  } else {
    for (size_t i = dims.size() - 1; i > 0; --i) stride[i - 1] = stride[i] * dims[i];
  }
  KEEL_LIB_CUDNN(cudnnSetTensorNdDescriptor, d, CudnnDataTypeOf(t), static_cast<int>(dims.size()), dims.data(),
                 stride.data());
  return {};
}

// X, Y, the bias ([1,C,1,...]), W and the convolution (group count, math type),
// in the VM's order; *out gets cuDNN's output dims for the caller to compare
// with Y (each side words its own error).
inline CallStatus CreateConvDescriptors(const ConvProblem& p, ConvDescriptors* d, std::vector<int>* out) {
  KEEL_LIB_CUDNN(cudnnCreateTensorDescriptor, &d->x);
  KEEL_LIB_CUDNN(cudnnCreateTensorDescriptor, &d->y);
  KEEL_LIB_CUDNN(cudnnCreateTensorDescriptor, &d->b);
  KEEL_LIB_CUDNN(cudnnCreateFilterDescriptor, &d->w);
  KEEL_LIB_CUDNN(cudnnCreateConvolutionDescriptor, &d->conv);
  std::vector<int> bias_dims(p.x.size(), 1);
  bias_dims[1] = p.out()[1];  // the output channels
  KEEL_LIB_RETURN_IF_FAILED(SetDenseTensor(d->x, p.x, p.type, p.nhwc));
  KEEL_LIB_RETURN_IF_FAILED(SetDenseTensor(d->y, p.y, p.type, p.nhwc));
  KEEL_LIB_RETURN_IF_FAILED(SetDenseTensor(d->b, bias_dims, p.type));
  const int rank = static_cast<int>(p.x.size());
  KEEL_LIB_CUDNN(cudnnSetFilterNdDescriptor, d->w, CudnnDataTypeOf(p.type), p.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                 rank, p.w.data());
  // Compute type FLOAT for every data type: f32 accumulation (for half data this
  // is cuDNN's PSEUDO_HALF / PSEUDO_BFLOAT16 configuration).
  KEEL_LIB_CUDNN(cudnnSetConvolutionNdDescriptor, d->conv, rank - 2, p.pads.data(), p.strides.data(),
                 p.dilations.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  KEEL_LIB_CUDNN(cudnnSetConvolutionGroupCount, d->conv, p.group);
  // Half data: tensor-op math (the tensor cores, f32 accumulation). f32 data:
  // FMA math unless TF32 is allowed (tensor ops on f32 would be TF32).
  const cudnnMathType_t math = InfoOf(p.type).half ? CUDNN_TENSOR_OP_MATH
                               : p.allow_tf32      ? CUDNN_DEFAULT_MATH
                                                   : CUDNN_FMA_MATH;
  KEEL_LIB_CUDNN(cudnnSetConvolutionMathType, d->conv, math);
  out->assign(p.y.size(), 0);
  KEEL_LIB_CUDNN(cudnnGetConvolutionNdForwardOutputDim, d->conv, d->x, d->w, rank, out->data());
  return {};
}

// The fused call's activation: relu, clipped relu or identity.
inline CallStatus CreateConvActivation(const ConvProblem& p, ConvDescriptors* d) {
  KEEL_LIB_CUDNN(cudnnCreateActivationDescriptor, &d->act);
  KEEL_LIB_CUDNN(cudnnSetActivationDescriptor, d->act,
                 p.activation == kActRelu   ? CUDNN_ACTIVATION_RELU
                 : p.activation == kActClip ? CUDNN_ACTIVATION_CLIPPED_RELU
                                            : CUDNN_ACTIVATION_IDENTITY,
                 CUDNN_PROPAGATE_NAN, p.activation == kActClip ? p.clip_max : 0.0);
  return {};
}

// The fused call can run: relu (any algorithm), or identity with bias/residual
// (IMPLICIT_PRECOMP_GEMM only); clipped ReLU never.
inline bool ConvFusedAllowed(const ConvProblem& p, cudnnConvolutionFwdAlgo_t algo) {
  if (p.activation == kActRelu) return true;
  return p.activation == kActNone && (p.has_bias || p.has_residual) &&
         algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
}

struct ConvCandidate {
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  ConvMode mode = ConvMode::kConvEpilogue;
  size_t workspace = 0;
  // A transposed problem's algorithm (mode is then always kConvEpilogue).
  cudnnConvolutionBwdDataAlgo_t data_algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
};

// Tensor-op math on f32 would be TF32; half data: any math.
inline bool ConvMathAllowed(const ConvProblem& p, cudnnMathType_t math) {
  return InfoOf(p.type).half || p.allow_tf32 || math == CUDNN_FMA_MATH || math == CUDNN_DEFAULT_MATH;
}

// A transposed problem's candidates (ConvCandidates calls it): the data-gradient
// heuristics' order, the same filters, and deterministic algorithms only (ALGO_0
// accumulates with atomics: the same input would give different bits from run to
// run) unless cuDNN offers none.
inline CallStatus ConvTransposeCandidates(cudnnHandle_t h, const ConvProblem& p, const ConvDescriptors& d,
                                          std::vector<ConvCandidate>* cands) {
  int max_algos = 0;
  KEEL_LIB_CUDNN(cudnnGetConvolutionBackwardDataAlgorithmMaxCount, h, &max_algos);
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(max_algos > 1 ? max_algos : 1));
  int got = 0;
  KEEL_LIB_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7, h, d.w, d.y, d.conv, d.x, static_cast<int>(perf.size()),
                 &got, perf.data());
  bool deterministic = false;
  for (int i = 0; i < got; ++i) {
    deterministic = deterministic || (perf[i].status == CUDNN_STATUS_SUCCESS && ConvMathAllowed(p, perf[i].mathType) &&
                                      perf[i].determinism == CUDNN_DETERMINISTIC);
  }
  for (int i = 0; i < got; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || !ConvMathAllowed(p, perf[i].mathType)) continue;
    if (deterministic && perf[i].determinism != CUDNN_DETERMINISTIC) continue;
    size_t bytes = 0;
    if (cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x, perf[i].algo, &bytes) !=
            CUDNN_STATUS_SUCCESS ||
        bytes > kMaxConvWorkspace)
      continue;
    bool dup = false;
    for (const ConvCandidate& c : *cands) dup = dup || c.data_algo == perf[i].algo;
    if (dup) continue;
    ConvCandidate c;
    c.data_algo = perf[i].algo;
    c.workspace = bytes;
    cands->push_back(c);
  }
  return {};
}

// The candidates, best first: the heuristics' order, f32 without TF32 only on
// FMA or default (non-tensor-op) math, workspace <= kMaxConvWorkspace, each
// algorithm once, its fused call before its conv+epilogue where allowed.
inline CallStatus ConvCandidates(cudnnHandle_t h, const ConvProblem& p, const ConvDescriptors& d,
                                 std::vector<ConvCandidate>* cands) {
  cands->clear();
  if (p.transposed) return ConvTransposeCandidates(h, p, d, cands);
  int max_algos = 0;
  KEEL_LIB_CUDNN(cudnnGetConvolutionForwardAlgorithmMaxCount, h, &max_algos);
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(max_algos > 1 ? max_algos : 1));
  int got = 0;
  KEEL_LIB_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7, h, d.x, d.w, d.conv, d.y, static_cast<int>(perf.size()), &got,
                 perf.data());
  for (int i = 0; i < got; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || !ConvMathAllowed(p, perf[i].mathType)) continue;
    size_t bytes = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, perf[i].algo, &bytes) !=
        CUDNN_STATUS_SUCCESS)
      continue;
    if (bytes > kMaxConvWorkspace) continue;
    bool dup = false;
    for (const ConvCandidate& c : *cands) dup = dup || c.algo == perf[i].algo;
    if (dup) continue;
    if (ConvFusedAllowed(p, perf[i].algo)) cands->push_back({perf[i].algo, ConvMode::kFused, bytes});
    cands->push_back({perf[i].algo, ConvMode::kConvEpilogue, bytes});
  }
  return {};
}

// A tuning entry's legacy choice (autotune.h: algorithm, mode, workspace; an
// engine verdict may follow, library_calls_engine_choice.h); false for a
// shorter entry.
inline bool ConvCandidateFromTuning(const ConvProblem& p, const std::vector<int64_t>& entry, ConvCandidate* c) {
  if (entry.size() < kConvTuningLegacyValues) return false;
  if (p.transposed) {
    c->data_algo = static_cast<cudnnConvolutionBwdDataAlgo_t>(entry[0]);
  } else {
    c->algo = static_cast<cudnnConvolutionFwdAlgo_t>(entry[0]);
  }
  c->mode = p.transposed ? ConvMode::kConvEpilogue : static_cast<ConvMode>(entry[1]);
  c->workspace = static_cast<size_t>(entry[2]);
  return true;
}

// The tuning entry of a choice (ConvCandidateFromTuning's inverse).
inline std::vector<int64_t> ConvTuningEntry(const ConvProblem& p, const ConvCandidate& c) {
  return {p.transposed ? static_cast<int64_t>(c.data_algo) : static_cast<int64_t>(c.algo), static_cast<int64_t>(c.mode),
          static_cast<int64_t>(c.workspace)};
}

static_assert(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED == 7 && CUDNN_CONVOLUTION_FWD_ALGO_COUNT == 8 &&
                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED == 5 && CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT == 6,
              "library_calls_tuning.h names the algorithms by these values");
inline const char* ConvAlgoName(cudnnConvolutionFwdAlgo_t a) { return TuningAlgoName(false, static_cast<int64_t>(a)); }
inline const char* ConvDataAlgoName(cudnnConvolutionBwdDataAlgo_t a) { return TuningAlgoName(true, static_cast<int64_t>(a)); }

// A candidate's algorithm as cuDNN names it (less the enum's prefix).
inline const char* ConvCandidateName(const ConvProblem& p, const ConvCandidate& c) {
  return p.transposed ? ConvDataAlgoName(c.data_algo) : ConvAlgoName(c.algo);
}

// The trace names of the two modes for a chosen algorithm.
inline std::string ConvFusedCallName(const ConvProblem& p, const ConvCandidate& c) {
  return std::string("cudnnConvolutionBiasActivationForward algo=") + ConvAlgoName(c.algo) +
         " workspace=" + std::to_string(c.workspace) + (p.nhwc ? " layout=nhwc" : "");
}
inline std::string ConvEpilogueCallName(const ConvProblem& p, const ConvCandidate& c) {
  return std::string(p.transposed ? "cudnnConvolutionBackwardData algo=" : "cudnnConvolutionForward algo=") +
         ConvCandidateName(p, c) +
         " workspace=" + std::to_string(c.workspace) + (p.nhwc ? " layout=nhwc" : "") +
         (p.has_bias || p.has_residual || p.activation != kActNone ? " + keel_bias_act" : "");
}

// cuDNN's fused call: Y = act(conv(X, W) + alpha2 * residual + bias). It always
// adds a bias: `bias` is the kernel's or the caller's zeros.
inline cudnnStatus_t ConvFused(cudnnHandle_t h, const ConvDescriptors& d, const void* x, const void* w,
                               const void* bias, const void* res, void* y, cudnnConvolutionFwdAlgo_t algo, void* ws,
                               size_t ws_bytes) {
  const float one = 1.f, alpha2 = res ? 1.f : 0.f;
  return cudnnConvolutionBiasActivationForward(h, &one, d.x, x, d.w, w, d.conv, algo, ws, ws_bytes, &alpha2, d.y,
                                               res ? res : y, d.b, bias, d.act, d.y, y);
}

// The VM's bias/residual/activation pass in place on Y: which kernel and its
// arguments. `vec4` (float4 moves, f32 only) may be null.
struct BiasActKernels {
  CUfunction scalar = nullptr, vec4 = nullptr;
};

// The epilogue after a plain convolution; nothing to do (no launch) without
// bias, residual or activation. `launch(fn, grid, block, params)` launches a
// runtime kernel on the caller's stream as the caller launches them (CUresult).
template <class LaunchRuntimeKernel>
CallStatus BiasActivation(const ConvProblem& p, const BiasActKernels& k, int num_sms, void* y, const void* bias,
                          const void* res, LaunchRuntimeKernel&& launch) {
  if (!bias && !res && p.activation == kActNone) return {};
  const std::vector<int>& out = p.out();
  long long y_elems = 1;
  for (int v : out) y_elems *= v;
  long long spatial = 1;  // consecutive elements of one channel (NHWC: 1)
  for (size_t i = 2; i < out.size() && !p.nhwc; ++i) spatial *= out[i];
  const bool vec = k.vec4 != nullptr && spatial % 4 == 0 &&
                   ((reinterpret_cast<uintptr_t>(y) | reinterpret_cast<uintptr_t>(res)) & 15u) == 0;
  long long total = vec ? y_elems / 4 : y_elems;
  long long hw = vec ? spatial / 4 : spatial;
  int channels = out[1];
  int act = p.activation;
  float clip = static_cast<float>(p.clip_max);
  void* yp = y;
  const void* bp = bias;
  const void* rp = res;
  void* params[] = {&yp, &bp, &rp, &total, &hw, &channels, &act, &clip};
  long long blocks = (total + 255) / 256;
  if (blocks > static_cast<long long>(num_sms) * 8) blocks = static_cast<long long>(num_sms) * 8;
  if (blocks < 1) blocks = 1;
  const CUresult r = launch(vec ? k.vec4 : k.scalar, static_cast<unsigned>(blocks), 256u, params);
  if (r != CUDA_SUCCESS) return {CallStatus::kCuda, static_cast<int>(r), InfoOf(p.type).bias_act_launch};
  return {};
}

// The plain convolution (transposed: its data gradient), then the epilogue in
// place on Y. `x` is the kernel's input, `y` its output. A residual already in Y
// (the same register) is accumulated by the convolution (beta 1) instead.
template <class LaunchRuntimeKernel>
CallStatus ConvThenEpilogue(cudnnHandle_t h, const ConvProblem& p, const ConvDescriptors& d, const BiasActKernels& k,
                            int num_sms, const void* x, const void* w, const void* bias, const void* res, void* y,
                            const ConvCandidate& c, void* ws, LaunchRuntimeKernel&& launch) {
  const float one = 1.f;
  float beta = 0.f;
  if (res == y) {
    beta = 1.f;
    res = nullptr;
  }
  if (p.transposed) {
    KEEL_LIB_CUDNN(cudnnConvolutionBackwardData, h, &one, d.w, w, d.y, x, d.conv, c.data_algo, ws, c.workspace, &beta,
                   d.x, y);
  } else {
    KEEL_LIB_CUDNN(cudnnConvolutionForward, h, &one, d.x, x, d.w, w, d.conv, c.algo, ws, c.workspace, &beta, d.y, y);
  }
  return BiasActivation(p, k, num_sms, y, bias, res, launch);
}

// ---- pool2d ----

struct PoolDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnPoolingDescriptor_t p = nullptr;
};

inline void DestroyPoolDescriptors(PoolDescriptors& d) {
  if (d.x) (void)cudnnDestroyTensorDescriptor(d.x);
  if (d.y) (void)cudnnDestroyTensorDescriptor(d.y);
  if (d.p) (void)cudnnDestroyPoolingDescriptor(d.p);
  d = PoolDescriptors{};
}

// X and Y (channels-first dims [N,C,H,W], stored NCHW or, `nhwc`, NHWC), the
// 2-D pooling (symmetric pads: pads[0..1] are the begins); out[4] gets cuDNN's
// output dims (channels-first) for the caller to compare with Y.
inline CallStatus CreatePoolDescriptors(const int x[4], const int y[4], cudnnPoolingMode_t mode, const int kernel[2],
                                        const int pads[2], const int strides[2], ElementType t, bool nhwc,
                                        PoolDescriptors* d, int out[4]) {
  KEEL_LIB_CUDNN(cudnnCreateTensorDescriptor, &d->x);
  KEEL_LIB_CUDNN(cudnnCreateTensorDescriptor, &d->y);
  KEEL_LIB_CUDNN(cudnnCreatePoolingDescriptor, &d->p);
  const cudnnTensorFormat_t format = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  KEEL_LIB_CUDNN(cudnnSetTensor4dDescriptor, d->x, format, CudnnDataTypeOf(t), x[0], x[1], x[2], x[3]);
  KEEL_LIB_CUDNN(cudnnSetTensor4dDescriptor, d->y, format, CudnnDataTypeOf(t), y[0], y[1], y[2], y[3]);
  KEEL_LIB_CUDNN(cudnnSetPooling2dDescriptor, d->p, mode, CUDNN_PROPAGATE_NAN, kernel[0], kernel[1], pads[0], pads[1],
                 strides[0], strides[1]);
  KEEL_LIB_CUDNN(cudnnGetPooling2dForwardOutputDim, d->p, d->x, &out[0], &out[1], &out[2], &out[3]);
  return {};
}

// Pooling computes in f32: alpha/beta are f32 for every element type.
inline CallStatus PoolForward(cudnnHandle_t h, const PoolDescriptors& d, const void* x, void* y) {
  const float one = 1.f, zero = 0.f;
  KEEL_LIB_CUDNN(cudnnPoolingForward, h, d.p, &one, d.x, x, &zero, d.y, y);
  return {};
}

}  // namespace keel::cuda_lib

#endif  // KEEL_VM_CUDA_LIBRARY_CALLS_CUDNN_H_
