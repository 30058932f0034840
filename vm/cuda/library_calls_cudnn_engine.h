// vm/cuda/library_calls_cudnn_engine.h — a convolution forward through the cuDNN
// backend ("graph") API, the alternative to the legacy cudnnConvolutionForward
// algorithms of library_calls_cudnn.h; shared verbatim by the VM
// (vm/cuda/cudnn_engine_conv.h owns what these functions create;
// vm/cuda/cudnn_kernels.cc chooses) and keelc --emit=cuda-host programs (see
// library_calls.h for why and how), so the program builds, finds and runs the
// very engine configuration the VM chose.
//
// Why engines: the legacy API exposes eight algorithm families; the backend API
// exposes every engine (and knob setting) cuDNN has, among them the fast NHWC
// grouped and depthwise kernels the legacy API does not reach.
//
// What is here, in the order a convolution uses it:
//   * Which convolutions hold the engine competition (EnginesConsidered,
//     VmOptions::cudnn_engines): kCompete and kForce every forward 2-D/3-D one,
//     kAuto (the default) grouped convolutions in half precision or channels-last,
//     kOff none.
//   * The one-operation graph (X, W -> Y, CONVOLUTION_FORWARD; f32 compute; NCHW
//     strides, or NHWC for 2-D): BuildEngineGraph.
//   * The candidates (EngineCandidates): the configurations engine heuristics
//     modes A, B and FALLBACK offer, in that order, and with EngineSearch::all
//     every engine of the library by global index with default knobs; dropped
//     when their numerical notes break accuracy (f32 without TF32: TENSOR_CORE,
//     DOWN_CONVERT_INPUTS, REDUCED_PRECISION_REDUCTION; half data runs on tensor
//     cores but never reduces in half), when they compile their kernel at run
//     time (RUNTIME_COMPILATION, NVRTC for a second or more each: only with
//     EngineSearch::rtc), when the plan does not finalize or needs more than the
//     workspace bound, or when an earlier one has the same identity.
//   * One configuration by identity (EnginePlanOf: library_calls_engine_choice.h),
//     what a tuning entry records; refused when cuDNN does not offer it.
//   * Execution (EngineExecute): a variant pack of X, W, Y and the workspace,
//     rebuilt only when a pointer changes. Bias, residual and activation are not
//     part of the graph: the VM's epilogue kernel follows (BiasActivation), and
//     a convolution whose residual is Y itself, or whose pointers are not 16-byte
//     aligned (the tensors' declared alignment), takes the legacy call instead
//     (EngineUsable).
//
// Ownership: EngineGraph, EnginePlan and EngineVariantPack hold descriptors the
// caller destroys with their Destroy* function (safe on partly built ones).
// Errors: CallStatus naming the failing call and attribute; EngineExecute
// returns the raw cudnnStatus_t.
#ifndef KEEL_VM_CUDA_LIBRARY_CALLS_CUDNN_ENGINE_H_
#define KEEL_VM_CUDA_LIBRARY_CALLS_CUDNN_ENGINE_H_

#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "vm/cuda/library_calls.h"
#include "vm/cuda/library_calls_cudnn.h"
#include "vm/cuda/library_calls_engine_choice.h"

namespace keel::cuda_lib {

// ---- which convolutions take engines ----

// VmOptions::CudnnEngines by value (cudnn_kernels.cc checks they agree).
enum class EnginePolicy : int { kOff = 0, kCompete = 1, kForce = 2, kAuto = 3 };

// What to consider beyond the heuristics' configurations.
struct EngineSearch {
  bool all = false;  // every engine of the library too (VmOptions::cudnn_engines_all)
  bool rtc = false;  // runtime-compiled engines too (VmOptions::cudnn_engines_rtc)
};

// What decides which numerical notes a problem's engines may carry: its data
// type and whether f32 may run as TF32. A convolution's (ConvProblem converts)
// or an attention's (library_calls_cudnn_attention.h).
struct EngineNumerics {
  ElementType type = ElementType::kF32;
  bool allow_tf32 = false;
  EngineNumerics(ElementType t, bool tf32) : type(t), allow_tf32(tf32) {}
  EngineNumerics(const ConvProblem& p) : type(p.type), allow_tf32(p.allow_tf32) {}  // NOLINT: implicit by design
};

// The graph takes forward 2-D and 3-D problems (a 1-D one arrives lifted to
// 2-D), channels-last in 2-D only.
inline bool EngineProblemSupported(const ConvProblem& p) {
  const size_t rank = p.x.size();
  return !p.transposed && (rank == 4 || rank == 5) && (!p.nhwc || rank == 4);
}

// kAuto: grouped half or channels-last problems, where the legacy API misses
// cuDNN's fast kernels (NHWC grouped: MobileNetV2 at batch 32 in fp16 1.86 ->
// 1.36 ms on an H200 while its depthwise convolutions were cuDNN's). Dense ones
// stay legacy: their isolated timings favoured engines that made ResNet-50
// slower end to end.
inline bool EnginesConsidered(EnginePolicy m, const ConvProblem& p) {
  if (!EngineProblemSupported(p)) return false;
  switch (m) {
    case EnginePolicy::kCompete:
    case EnginePolicy::kForce: return true;
    case EnginePolicy::kAuto: return (InfoOf(p.type).half || p.nhwc) && p.group > 1;
    default: return false;
  }
}

// ---- the operation graph ----

// Tensor unique ids in the graph and the variant pack.
constexpr int64_t kEngineUidX = 1, kEngineUidW = 2, kEngineUidY = 3;
// Declared alignment of X, W, Y (the VM's buffers are 256-byte aligned; EngineUsable checks 16).
constexpr int64_t kEngineAlignment = 16;

struct EngineGraph {
  std::vector<cudnnBackendDescriptor_t> owned;  // tensors, convolution, operation, graph (creation order)
  cudnnBackendDescriptor_t graph = nullptr;
};

inline void DestroyEngineGraph(EngineGraph& g) {
  // The graph before the operation and tensors it refers to.
  for (auto it = g.owned.rbegin(); it != g.owned.rend(); ++it) (void)cudnnBackendDestroyDescriptor(*it);
  g = EngineGraph{};
}

// One attribute; `what` (a literal) names the call and attribute in errors.
inline CallStatus SetEngineAttr(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a,
                                cudnnBackendAttributeType_t t, int64_t n, const void* v, const char* what) {
  const cudnnStatus_t s = cudnnBackendSetAttribute(d, a, t, n, v);
  if (s != CUDNN_STATUS_SUCCESS) return {CallStatus::kCudnn, static_cast<int>(s), what};
  return {};
}
inline CallStatus FinalizeEngineDesc(cudnnBackendDescriptor_t d, const char* what) {
  const cudnnStatus_t s = cudnnBackendFinalize(d);
  if (s != CUDNN_STATUS_SUCCESS) return {CallStatus::kCudnn, static_cast<int>(s), what};
  return {};
}

// Strides of channels-first `dims` stored row-major or, `nhwc`, channels last.
inline std::vector<int64_t> EngineStrides(const std::vector<int>& dims, bool nhwc) {
  std::vector<int64_t> s(dims.size(), 1);
  if (nhwc) {
    int64_t step = dims[1];  // C innermost
    for (size_t i = dims.size(); i-- > 2;) {
      s[i] = step;
      step *= dims[i];
    }
    s[0] = step;
  } else {
    for (size_t i = dims.size() - 1; i > 0; --i) s[i - 1] = s[i] * dims[i];
  }
  return s;
}

// A descriptor of type `t` owned by *g (created, not finalized).
inline CallStatus AddEngineDescriptor(EngineGraph* g, cudnnBackendDescriptorType_t t, cudnnBackendDescriptor_t* out) {
  KEEL_LIB_CUDNN(cudnnBackendCreateDescriptor, t, out);
  g->owned.push_back(*out);
  return {};
}

// A finalized tensor descriptor owned by *g: `dims` with `strides`, unique id
// `uid`, kEngineAlignment; `is_virtual` (an intermediate the graph never
// stores), `by_value` (a scalar the variant pack passes by host pointer).
inline CallStatus AddEngineTensor(EngineGraph* g, cudnnDataType_t dtype, const std::vector<int64_t>& dims,
                                  const std::vector<int64_t>& strides, int64_t uid, bool is_virtual, bool by_value,
                                  cudnnBackendDescriptor_t* t) {
  KEEL_LIB_RETURN_IF_FAILED(AddEngineDescriptor(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, t));
  const int64_t rank = static_cast<int64_t>(dims.size());
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dtype,
                                          "cudnnBackendSetAttribute(TENSOR_DATA_TYPE)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank, dims.data(),
                                          "cudnnBackendSetAttribute(TENSOR_DIMENSIONS)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank, strides.data(),
                                          "cudnnBackendSetAttribute(TENSOR_STRIDES)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid,
                                          "cudnnBackendSetAttribute(TENSOR_UNIQUE_ID)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kEngineAlignment,
                                          "cudnnBackendSetAttribute(TENSOR_BYTE_ALIGNMENT)"));
  if (is_virtual) {
    const bool yes = true;
    KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes,
                                            "cudnnBackendSetAttribute(TENSOR_IS_VIRTUAL)"));
  }
  if (by_value) {
    const bool yes = true;
    KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(*t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes,
                                            "cudnnBackendSetAttribute(TENSOR_IS_BY_VALUE)"));
  }
  return FinalizeEngineDesc(*t, "cudnnBackendFinalize(tensor)");
}

// The graph of `p` (EngineProblemSupported) into *g (DestroyEngineGraph after,
// also on failure). Symmetric pads (ConvProblem's): pre and post paddings alike.
inline CallStatus BuildEngineGraph(cudnnHandle_t h, const ConvProblem& p, EngineGraph* g) {
  auto make = [&](cudnnBackendDescriptorType_t t, cudnnBackendDescriptor_t* out) {
    return AddEngineDescriptor(g, t, out);
  };
  const cudnnDataType_t dtype = CudnnDataTypeOf(p.type), f32 = CUDNN_DATA_FLOAT;
  auto tensor = [&](const std::vector<int>& dims, int64_t uid, cudnnBackendDescriptor_t* t) -> CallStatus {
    return AddEngineTensor(g, dtype, std::vector<int64_t>(dims.begin(), dims.end()), EngineStrides(dims, p.nhwc), uid,
                           false, false, t);
  };
  cudnnBackendDescriptor_t x = nullptr, w = nullptr, y = nullptr, conv = nullptr, op = nullptr;
  KEEL_LIB_RETURN_IF_FAILED(tensor(p.x, kEngineUidX, &x));
  KEEL_LIB_RETURN_IF_FAILED(tensor(p.w, kEngineUidW, &w));
  KEEL_LIB_RETURN_IF_FAILED(tensor(p.y, kEngineUidY, &y));

  KEEL_LIB_RETURN_IF_FAILED(make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv));
  const int64_t dims = static_cast<int64_t>(p.strides.size());
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::vector<int64_t> pads(p.pads.begin(), p.pads.end()), strides(p.strides.begin(), p.strides.end()),
      dilations(p.dilations.begin(), p.dilations.end());
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32,
                                          "cudnnBackendSetAttribute(CONVOLUTION_COMP_TYPE)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode,
                                          "cudnnBackendSetAttribute(CONVOLUTION_CONV_MODE)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims,
                                          "cudnnBackendSetAttribute(CONVOLUTION_SPATIAL_DIMS)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dims,
                                          dilations.data(), "cudnnBackendSetAttribute(CONVOLUTION_DILATIONS)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, dims,
                                          strides.data(), "cudnnBackendSetAttribute(CONVOLUTION_FILTER_STRIDES)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, dims,
                                          pads.data(), "cudnnBackendSetAttribute(CONVOLUTION_PRE_PADDINGS)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, dims,
                                          pads.data(), "cudnnBackendSetAttribute(CONVOLUTION_POST_PADDINGS)"));
  KEEL_LIB_RETURN_IF_FAILED(FinalizeEngineDesc(conv, "cudnnBackendFinalize(convolution)"));

  KEEL_LIB_RETURN_IF_FAILED(make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op));
  const float alpha = 1.f, beta = 0.f;
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "cudnnBackendSetAttribute(FORWARD_X)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w, "cudnnBackendSetAttribute(FORWARD_W)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "cudnnBackendSetAttribute(FORWARD_Y)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv,
                                          "cudnnBackendSetAttribute(FORWARD_CONV_DESC)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1,
                                          &alpha, "cudnnBackendSetAttribute(FORWARD_ALPHA)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1,
                                          &beta, "cudnnBackendSetAttribute(FORWARD_BETA)"));
  KEEL_LIB_RETURN_IF_FAILED(FinalizeEngineDesc(op, "cudnnBackendFinalize(convolution forward)"));

  KEEL_LIB_RETURN_IF_FAILED(make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->graph));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                          &op, "cudnnBackendSetAttribute(OPERATIONGRAPH_OPS)"));
  // The handle attribute is deprecated in cuDNN 9 (device properties replace it;
  // spelled by value to stay clear of the deprecation) but older 9.x releases
  // still need it to finalize. A release that refuses it fails at Finalize if it
  // mattered, so its own status is not checked.
  (void)cudnnBackendSetAttribute(g->graph, static_cast<cudnnBackendAttributeName_t>(800), CUDNN_TYPE_HANDLE, 1, &h);
  return FinalizeEngineDesc(g->graph, "cudnnBackendFinalize(operation graph)");
}

// ---- plans ----

// One finalized configuration: the plan and what it was made from (the config
// and, when the caller configured the engine itself, the engine), all owned.
struct EnginePlan {
  cudnnBackendDescriptor_t plan = nullptr, cfg = nullptr, engine = nullptr;
  uint64_t workspace = 0;
  EngineId id;
  std::string notes;  // " tensor_core winograd ..." and " rtc" (logs)
};

inline void DestroyEnginePlan(EnginePlan& p) {
  if (p.plan) (void)cudnnBackendDestroyDescriptor(p.plan);
  if (p.cfg) (void)cudnnBackendDestroyDescriptor(p.cfg);
  if (p.engine) (void)cudnnBackendDestroyDescriptor(p.engine);
  p = EnginePlan{};
}

inline const char* EngineNoteName(cudnnBackendNumericalNote_t n) {
  switch (n) {
    case CUDNN_NUMERICAL_NOTE_TENSOR_CORE: return "tensor_core";
    case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS: return "down_convert";
    case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION: return "reduced_precision";
    case CUDNN_NUMERICAL_NOTE_FFT: return "fft";
    case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC: return "nondeterministic";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD: return "winograd";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4: return "winograd4x4";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6: return "winograd6x6";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13: return "winograd13x13";
    case CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP: return "strict_nan";
    default: return "?";
  }
}

// Why a configuration was kept or dropped (the order of EngineTally's counts).
enum class EngineVerdict : int {
  kKept = 0, kTf32Only, kRuntimeCompiled, kNotFinalized, kOverWorkspace, kDuplicate, kUnreadable, kCount
};

struct EngineTally {
  int count[static_cast<int>(EngineVerdict::kCount)] = {};
  void Add(EngineVerdict v) { ++count[static_cast<int>(v)]; }
  // "6 kept, 3 tf32-only, 0 runtime-compiled, 1 not finalized, 0 over workspace, 2 duplicate, 0 unreadable"
  std::string ToString() const {
    static const char* const kNames[] = {" kept, ",          " tf32-only, ",  " runtime-compiled, ", " not finalized, ",
                                         " over workspace, ", " duplicate, ", " unreadable"};
    std::string s;
    for (int i = 0; i < static_cast<int>(EngineVerdict::kCount); ++i) s += std::to_string(count[i]) + kNames[i];
    return s;
  }
};

// The engine of `cfg`, copied into *engine (created here; the caller destroys it).
inline CallStatus EngineOfConfig(cudnnBackendDescriptor_t cfg, cudnnBackendDescriptor_t* engine) {
  KEEL_LIB_CUDNN(cudnnBackendCreateDescriptor, CUDNN_BACKEND_ENGINE_DESCRIPTOR, engine);
  int64_t n = 0;
  KEEL_LIB_CUDNN(cudnnBackendGetAttribute, cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                 engine);
  return {};
}

// The identity of `cfg` (its engine's global index, its knob choices sorted by type).
inline CallStatus ReadEngineId(cudnnBackendDescriptor_t cfg, cudnnBackendDescriptor_t engine, EngineId* id) {
  int64_t n = 0;
  KEEL_LIB_CUDNN(cudnnBackendGetAttribute, engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                 &id->index);
  // The choices are copied into knob-choice descriptors we create (one per knob type at most).
  std::vector<cudnnBackendDescriptor_t> choices(CUDNN_KNOB_TYPE_COUNTS, nullptr);
  CallStatus st;
  for (cudnnBackendDescriptor_t& c : choices) {
    if (st.ok() && cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &c) != CUDNN_STATUS_SUCCESS) {
      st = {CallStatus::kCudnn, static_cast<int>(CUDNN_STATUS_ALLOC_FAILED), "cudnnBackendCreateDescriptor(knob choice)"};
    }
  }
  int64_t count = 0;
  if (st.ok()) {
    const cudnnStatus_t s = cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS, &count,
                                                     choices.data());
    if (s != CUDNN_STATUS_SUCCESS) st = {CallStatus::kCudnn, static_cast<int>(s), "cudnnBackendGetAttribute(KNOB_CHOICES)"};
  }
  id->knobs.clear();
  for (int64_t i = 0; st.ok() && i < std::min<int64_t>(count, CUDNN_KNOB_TYPE_COUNTS); ++i) {
    cudnnBackendKnobType_t type{};
    int64_t value = 0;
    if (cudnnBackendGetAttribute(choices[static_cast<size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE,
                                 1, &n, &type) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(choices[static_cast<size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1,
                                 &n, &value) != CUDNN_STATUS_SUCCESS) {
      st = {CallStatus::kCudnn, static_cast<int>(CUDNN_STATUS_BAD_PARAM), "cudnnBackendGetAttribute(KNOB_CHOICE)"};
      break;
    }
    id->knobs.emplace_back(static_cast<int64_t>(type), value);
  }
  for (cudnnBackendDescriptor_t c : choices) {
    if (c != nullptr) (void)cudnnBackendDestroyDescriptor(c);
  }
  std::sort(id->knobs.begin(), id->knobs.end());
  return st;
}

// f32 on tensor cores is TF32 (10-bit mantissa): only when allowed. Half data is
// meant for tensor cores, but accumulates in f32 (library_ops.h).
inline bool EngineNoteAllowed(const EngineNumerics& p, cudnnBackendNumericalNote_t note) {
  if (InfoOf(p.type).half) return note != CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION;
  return p.allow_tf32 || (note != CUDNN_NUMERICAL_NOTE_TENSOR_CORE && note != CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS &&
                          note != CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION);
}

// `engine`'s notes: *allowed (EngineNoteAllowed for each), *rtc, and their names
// appended to *notes. False when the numerical notes cannot be read (unknown
// numerics: not trusted).
inline bool ReadEngineNotes(const EngineNumerics& p, cudnnBackendDescriptor_t engine, bool* allowed, bool* rtc,
                            std::string* notes) {
  cudnnBackendNumericalNote_t numerical[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t nn = 0;
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &nn, numerical) != CUDNN_STATUS_SUCCESS) {
    return false;
  }
  *allowed = true;
  for (int64_t j = 0; j < std::min<int64_t>(nn, CUDNN_NUMERICAL_NOTE_TYPE_COUNT); ++j) {
    *allowed = *allowed && EngineNoteAllowed(p, numerical[j]);
    *notes += std::string(" ") + EngineNoteName(numerical[j]);
  }
  cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  int64_t nb = 0;
  *rtc = false;
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &nb, behavior) == CUDNN_STATUS_SUCCESS) {
    for (int64_t j = 0; j < std::min<int64_t>(nb, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT); ++j) {
      *rtc = *rtc || behavior[j] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
    }
  }
  if (*rtc) *notes += " rtc";
  return true;
}

// The execution plan of `cfg` into *plan (finalized; plan->workspace set), or the
// verdict that drops it: kNotFinalized, kOverWorkspace.
inline EngineVerdict FinalizeEnginePlan(cudnnHandle_t h, cudnnBackendDescriptor_t cfg, uint64_t max_workspace,
                                        EnginePlan* plan) {
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan->plan) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendSetAttribute(plan->plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                               &cfg) != CUDNN_STATUS_SUCCESS) {
    return EngineVerdict::kNotFinalized;
  }
  // The handle (CUDNN_ATTR_EXECUTION_PLAN_HANDLE, by value: see BuildEngineGraph).
  (void)cudnnBackendSetAttribute(plan->plan, static_cast<cudnnBackendAttributeName_t>(400), CUDNN_TYPE_HANDLE, 1, &h);
  if (cudnnBackendFinalize(plan->plan) != CUDNN_STATUS_SUCCESS) return EngineVerdict::kNotFinalized;
  int64_t n = 0, ws = 0;
  if (cudnnBackendGetAttribute(plan->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws) !=
          CUDNN_STATUS_SUCCESS ||
      ws < 0 || static_cast<uint64_t>(ws) > max_workspace) {
    return EngineVerdict::kOverWorkspace;
  }
  plan->workspace = static_cast<uint64_t>(ws);
  return EngineVerdict::kKept;
}

// One configuration, *cfg owned by the caller: appended to *plans as a candidate
// (the config, and `*engine` when not null, then move there: set to null) unless
// its numerics, run-time compilation, plan, workspace or identity rule it out.
inline EngineVerdict ConsiderEngineConfig(cudnnHandle_t h, const EngineNumerics& p, const EngineSearch& search,
                                          uint64_t max_workspace, cudnnBackendDescriptor_t* cfg,
                                          cudnnBackendDescriptor_t* engine, const char* source,
                                          std::vector<EnginePlan>* plans) {
  EnginePlan c;
  c.notes = std::string(" ") + source;
  cudnnBackendDescriptor_t copy = nullptr;  // the config's engine, read back
  auto drop = [&](EngineVerdict v) {
    if (copy) (void)cudnnBackendDestroyDescriptor(copy);
    if (c.plan) (void)cudnnBackendDestroyDescriptor(c.plan);
    return v;
  };
  bool allowed = false, rtc = false;
  if (!EngineOfConfig(*cfg, &copy).ok() || !ReadEngineId(*cfg, copy, &c.id).ok() ||
      !ReadEngineNotes(p, copy, &allowed, &rtc, &c.notes)) {
    return drop(EngineVerdict::kUnreadable);
  }
  if (!allowed) return drop(EngineVerdict::kTf32Only);
  if (rtc && !search.rtc) return drop(EngineVerdict::kRuntimeCompiled);
  for (const EnginePlan& q : *plans) {
    if (q.id == c.id) return drop(EngineVerdict::kDuplicate);  // the same config from another source
  }
  const EngineVerdict v = FinalizeEnginePlan(h, *cfg, max_workspace, &c);
  if (v != EngineVerdict::kKept) return drop(v);
  (void)cudnnBackendDestroyDescriptor(copy);
  c.notes += " ws=" + std::to_string(c.workspace);
  // The plan was finalized from this config (and engine): they live as long as it.
  c.cfg = *cfg;
  *cfg = nullptr;
  if (engine != nullptr) {
    c.engine = *engine;
    *engine = nullptr;
  }
  plans->push_back(std::move(c));
  return EngineVerdict::kKept;
}

// Appends the candidates heuristics `mode` offers; *summary gets "<name> N
// offered: <tally>". A mode the library refuses for this graph adds nothing: not
// an error (FALLBACK alone usually still answers).
inline CallStatus AddHeuristicEngines(cudnnHandle_t h, const EngineNumerics& p, const EngineGraph& g,
                                      cudnnBackendHeurMode_t mode, const char* name, const EngineSearch& search,
                                      uint64_t max_workspace, std::vector<EnginePlan>* plans, std::string* summary) {
  *summary += (summary->empty() ? "" : "; ") + std::string(name);
  cudnnBackendDescriptor_t heur = nullptr;
  KEEL_LIB_CUDNN(cudnnBackendCreateDescriptor, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur);
  std::vector<cudnnBackendDescriptor_t> cfgs;
  auto done = [&](CallStatus st) {
    for (cudnnBackendDescriptor_t c : cfgs) {
      if (c != nullptr) (void)cudnnBackendDestroyDescriptor(c);
    }
    (void)cudnnBackendDestroyDescriptor(heur);
    return st;
  };
  CallStatus st = SetEngineAttr(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g.graph,
                                "cudnnBackendSetAttribute(ENGINEHEUR_OPERATION_GRAPH)");
  if (st.ok()) {
    st = SetEngineAttr(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode,
                       "cudnnBackendSetAttribute(ENGINEHEUR_MODE)");
  }
  if (!st.ok()) return done(st);
  if (const cudnnStatus_t s = cudnnBackendFinalize(heur); s != CUDNN_STATUS_SUCCESS) {
    *summary += std::string(" refused: ") + cudnnGetErrorString(s);
    return done({});
  }
  int64_t count = 0;
  if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0) {
    *summary += " 0 offered";
    return done({});
  }
  // The results are copied into engine-config descriptors we create.
  cfgs.assign(static_cast<size_t>(count), nullptr);
  for (cudnnBackendDescriptor_t& c : cfgs) {
    if (const cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &c);
        s != CUDNN_STATUS_SUCCESS) {
      return done({CallStatus::kCudnn, static_cast<int>(s), "cudnnBackendCreateDescriptor(engine config)"});
    }
  }
  int64_t got = 0;
  if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                               cfgs.data()) != CUDNN_STATUS_SUCCESS) {
    *summary += " results unreadable";
    return done({});
  }
  EngineTally t;
  for (int64_t i = 0; i < std::min(got, count); ++i) {
    t.Add(ConsiderEngineConfig(h, p, search, max_workspace, &cfgs[static_cast<size_t>(i)], nullptr, name, plans));
  }
  *summary += " " + std::to_string(count) + " offered: " + t.ToString();
  return done({});
}

// `engine` (created by the caller) as engine `index` of graph `g`; fails when
// the library has no such engine for this graph.
inline CallStatus EngineOfIndex(const EngineGraph& g, int64_t index, cudnnBackendDescriptor_t engine) {
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                          &g.graph, "cudnnBackendSetAttribute(ENGINE_OPERATION_GRAPH)"));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &index,
                                          "cudnnBackendSetAttribute(ENGINE_GLOBAL_INDEX)"));
  return FinalizeEngineDesc(engine, "cudnnBackendFinalize(engine)");
}

// *cfg (created here; the caller destroys it, also on failure) configuring the
// finalized `engine` with `knobs` (ascending types); fails when the library
// refuses a knob choice.
inline CallStatus ConfigureEngine(cudnnBackendDescriptor_t engine, const std::vector<std::pair<int64_t, int64_t>>& knobs,
                                  cudnnBackendDescriptor_t* cfg) {
  KEEL_LIB_CUDNN(cudnnBackendCreateDescriptor, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, cfg);
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(*cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &engine,
                                          "cudnnBackendSetAttribute(ENGINECFG_ENGINE)"));
  std::vector<cudnnBackendDescriptor_t> choices;
  CallStatus st;
  for (const auto& [type, value] : knobs) {
    cudnnBackendDescriptor_t c = nullptr;
    if (const cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &c);
        s != CUDNN_STATUS_SUCCESS) {
      st = {CallStatus::kCudnn, static_cast<int>(s), "cudnnBackendCreateDescriptor(knob choice)"};
      break;
    }
    choices.push_back(c);
    const cudnnBackendKnobType_t knob = static_cast<cudnnBackendKnobType_t>(type);
    st = SetEngineAttr(c, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &knob,
                       "cudnnBackendSetAttribute(KNOB_CHOICE_KNOB_TYPE)");
    if (st.ok()) {
      st = SetEngineAttr(c, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &value,
                         "cudnnBackendSetAttribute(KNOB_CHOICE_KNOB_VALUE)");
    }
    if (st.ok()) st = FinalizeEngineDesc(c, "cudnnBackendFinalize(knob choice)");
    if (!st.ok()) break;
  }
  if (st.ok() && !choices.empty()) {
    st = SetEngineAttr(*cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                       static_cast<int64_t>(choices.size()), choices.data(),
                       "cudnnBackendSetAttribute(ENGINECFG_KNOB_CHOICES)");
  }
  if (st.ok()) st = FinalizeEngineDesc(*cfg, "cudnnBackendFinalize(engine config)");
  // The config holds its own copies of the choices.
  for (cudnnBackendDescriptor_t c : choices) (void)cudnnBackendDestroyDescriptor(c);
  return st;
}

// Every engine of the library for this graph by global index, default knobs
// (EngineSearch::all: what the heuristics leave out; exploration).
inline CallStatus AddEveryEngine(cudnnHandle_t h, const EngineNumerics& p, const EngineGraph& g,
                                 const EngineSearch& search, uint64_t max_workspace, std::vector<EnginePlan>* plans,
                                 std::string* summary) {
  int64_t count = 0, n = 0;
  if (cudnnBackendGetAttribute(g.graph, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, &n,
                               &count) != CUDNN_STATUS_SUCCESS) {
    *summary += "; all: count unreadable";
    return {};
  }
  EngineTally t;
  int64_t supported = 0;
  for (int64_t index = 0; index < count; ++index) {
    cudnnBackendDescriptor_t engine = nullptr, cfg = nullptr;
    KEEL_LIB_CUDNN(cudnnBackendCreateDescriptor, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine);
    if (EngineOfIndex(g, index, engine).ok()) {  // else this engine does not support the graph
      ++supported;
      if (ConfigureEngine(engine, {}, &cfg).ok()) {
        t.Add(ConsiderEngineConfig(h, p, search, max_workspace, &cfg, &engine, "all", plans));
      } else {
        t.Add(EngineVerdict::kUnreadable);
      }
    }
    if (cfg != nullptr) (void)cudnnBackendDestroyDescriptor(cfg);
    if (engine != nullptr) (void)cudnnBackendDestroyDescriptor(engine);
  }
  *summary += "; all " + std::to_string(count) + " engines, " + std::to_string(supported) +
              " support the graph: " + t.ToString();
  return {};
}

// The candidates for `p` on graph `g`, best first by the heuristics (modes A, B,
// FALLBACK, then with search.all every engine), each identity once; *summary
// says what was offered and why configurations were dropped, e.g.
// "heurA 12 offered: 6 kept, 3 tf32-only, ...; heurB ...; fallback ...".
inline CallStatus EngineCandidates(cudnnHandle_t h, const EngineNumerics& p, const EngineGraph& g, uint64_t max_workspace,
                                   const EngineSearch& search, std::vector<EnginePlan>* plans, std::string* summary) {
  KEEL_LIB_RETURN_IF_FAILED(
      AddHeuristicEngines(h, p, g, CUDNN_HEUR_MODE_A, "heurA", search, max_workspace, plans, summary));
  KEEL_LIB_RETURN_IF_FAILED(
      AddHeuristicEngines(h, p, g, CUDNN_HEUR_MODE_B, "heurB", search, max_workspace, plans, summary));
  KEEL_LIB_RETURN_IF_FAILED(
      AddHeuristicEngines(h, p, g, CUDNN_HEUR_MODE_FALLBACK, "fallback", search, max_workspace, plans, summary));
  if (search.all) KEEL_LIB_RETURN_IF_FAILED(AddEveryEngine(h, p, g, search, max_workspace, plans, summary));
  return {};
}

// The plan of the configuration `id` names (a tuning entry's) into *plan
// (DestroyEnginePlan after, also on failure). Fails, naming the refusing call,
// when this cuDNN does not offer that configuration for the graph; and with the
// pseudo-calls "engine numerics" (its notes break this problem's accuracy) or
// "engine plan workspace" (not finalized, or over `max_workspace`).
// Runtime-compiled engines are built: the choice was made already.
inline CallStatus EnginePlanOf(cudnnHandle_t h, const EngineNumerics& p, const EngineGraph& g, const EngineId& id,
                               uint64_t max_workspace, EnginePlan* plan) {
  plan->id = id;
  plan->notes = " tuned";
  KEEL_LIB_CUDNN(cudnnBackendCreateDescriptor, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &plan->engine);
  KEEL_LIB_RETURN_IF_FAILED(EngineOfIndex(g, id.index, plan->engine));
  KEEL_LIB_RETURN_IF_FAILED(ConfigureEngine(plan->engine, id.knobs, &plan->cfg));
  bool allowed = false, rtc = false;
  if (!ReadEngineNotes(p, plan->engine, &allowed, &rtc, &plan->notes) || !allowed) {
    return {CallStatus::kCudnn, static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED), "engine numerics"};
  }
  const EngineVerdict v = FinalizeEnginePlan(h, plan->cfg, max_workspace, plan);
  if (v != EngineVerdict::kKept) {
    return {CallStatus::kCudnn, static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED), "engine plan workspace"};
  }
  plan->notes += " ws=" + std::to_string(plan->workspace);
  return {};
}

// ---- execution ----

// The engine path runs when a plan was chosen, the residual (if any) is not Y
// itself (the graph has no beta: the legacy call accumulates into Y instead) and
// X, W and Y have the graph's declared 16-byte alignment.
inline bool EngineUsable(const void* x, const void* w, const void* res, const void* y) {
  return !(res != nullptr && res == y) &&
         ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(w) | reinterpret_cast<uintptr_t>(y)) & 15u) == 0;
}

// The trace name of the engine call, e.g. "cudnnBackendExecute engine=12
// knobs=3:1,5:0 workspace=1024 layout=nhwc + keel_bias_act": the configuration's
// identity, never where it came from, so a run that chose by timing and one that
// read the choice from a tuning file trace alike.
inline std::string EngineCallName(const ConvProblem& p, const EngineId& id, uint64_t workspace) {
  return "cudnnBackendExecute " + EngineIdText(id) + " workspace=" + std::to_string(workspace) +
         (p.nhwc ? " layout=nhwc" : "") +
         (p.has_bias || p.has_residual || p.activation != kActNone ? " + keel_bias_act" : "");
}

// The variant pack of the last execution and what it was built from: its
// tensors' unique ids and pointers, then the workspace.
constexpr int kEngineMaxTensors = 8;
struct EngineVariantPack {
  cudnnBackendDescriptor_t pack = nullptr;
  int n = 0;
  int64_t uids[kEngineMaxTensors] = {};
  const void* ptrs[kEngineMaxTensors + 1] = {};
};

inline void DestroyEngineVariantPack(EngineVariantPack& v) {
  if (v.pack) (void)cudnnBackendDestroyDescriptor(v.pack);
  v = EngineVariantPack{};
}

// Queues `plan` on the handle's stream with the n (at most kEngineMaxTensors)
// tensors `uids` at `data` (a by-value tensor's pointer is to its host value,
// which must stay where it is while the pack lives) and `ws` holding the plan's
// workspace. The pack is rebuilt only when something changes, so a static-plan
// program pays its creation once.
inline cudnnStatus_t EngineExecuteTensors(cudnnHandle_t h, cudnnBackendDescriptor_t plan, EngineVariantPack* vp, int n,
                                          const int64_t* uids, void* const* data, void* ws) {
  if (n < 0 || n > kEngineMaxTensors) return CUDNN_STATUS_BAD_PARAM;
  const void* ptrs[kEngineMaxTensors + 1] = {};
  for (int i = 0; i < n; ++i) ptrs[i] = data[i];
  ptrs[n] = ws;
  if (vp->pack == nullptr || vp->n != n || std::memcmp(uids, vp->uids, sizeof(int64_t) * static_cast<size_t>(n)) != 0 ||
      std::memcmp(ptrs, vp->ptrs, sizeof(ptrs)) != 0) {
    DestroyEngineVariantPack(*vp);
    cudnnBackendDescriptor_t d = nullptr;
    cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &d);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    s = cudnnBackendSetAttribute(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    if (s == CUDNN_STATUS_SUCCESS) {
      s = cudnnBackendSetAttribute(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, data);
    }
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendSetAttribute(d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendFinalize(d);
    if (s != CUDNN_STATUS_SUCCESS) {
      (void)cudnnBackendDestroyDescriptor(d);
      return s;
    }
    vp->pack = d;
    vp->n = n;
    std::memcpy(vp->uids, uids, sizeof(int64_t) * static_cast<size_t>(n));
    std::memcpy(vp->ptrs, ptrs, sizeof(ptrs));
  }
  return cudnnBackendExecute(h, plan, vp->pack);
}

// Queues y = conv(x, w) with `plan` (EngineExecuteTensors).
inline cudnnStatus_t EngineExecute(cudnnHandle_t h, cudnnBackendDescriptor_t plan, EngineVariantPack* vp,
                                   const void* x, const void* w, void* y, void* ws) {
  const int64_t uids[3] = {kEngineUidX, kEngineUidW, kEngineUidY};
  void* data[3] = {const_cast<void*>(x), const_cast<void*>(w), y};
  return EngineExecuteTensors(h, plan, vp, 3, uids, data, ws);
}

}  // namespace keel::cuda_lib

#endif  // KEEL_VM_CUDA_LIBRARY_CALLS_CUDNN_ENGINE_H_
