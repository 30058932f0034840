// vm/cuda/cudnn_engine_conv.cc — see cudnn_engine_conv.h.
//
// The backend API is a generic attribute store: every object is a descriptor
// whose attributes are set (typed arrays), then finalized. The helpers below keep
// that to one line per attribute and turn failures into Status values naming the
// attribute, since "CUDNN_STATUS_BAD_PARAM" alone does not say which one.
#include "vm/cuda/cudnn_engine_conv.h"

#ifdef KEEL_HAVE_CUDNN

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "vm/cuda/cuda_errors.h"

namespace keel::vm_internal {

namespace {

// Tensor unique ids in the graph and the variant pack.
constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;
// Declared alignment of X/W/Y: the VM's buffers are 256-byte aligned (CUDA
// plans) and the caller checks 16 at run time before using a plan.
constexpr int64_t kAlignment = 16;

Status Fail(cudnnStatus_t s, const std::string& what) {
  return CudnnStatus(s, what.c_str());
}

Status Set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, int64_t n,
           const void* v, const char* what) {
  const cudnnStatus_t s = cudnnBackendSetAttribute(d, a, t, n, v);
  if (s != CUDNN_STATUS_SUCCESS) return Fail(s, std::string("cudnnBackendSetAttribute(") + what + ")");
  return Status::Ok();
}

Status Finalize(cudnnBackendDescriptor_t d, const char* what) {
  const cudnnStatus_t s = cudnnBackendFinalize(d);
  if (s != CUDNN_STATUS_SUCCESS) return Fail(s, std::string("cudnnBackendFinalize(") + what + ")");
  return Status::Ok();
}

// Owns one descriptor until released (for the short-lived heuristics objects).
struct Desc {
  cudnnBackendDescriptor_t d = nullptr;
  Desc() = default;
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  Desc(Desc&& o) noexcept : d(o.d) { o.d = nullptr; }
  ~Desc() {
    if (d != nullptr) (void)cudnnBackendDestroyDescriptor(d);
  }
  cudnnStatus_t Create(cudnnBackendDescriptorType_t t) { return cudnnBackendCreateDescriptor(t, &d); }
  cudnnBackendDescriptor_t release() {
    cudnnBackendDescriptor_t r = d;
    d = nullptr;
    return r;
  }
};

std::vector<int64_t> PackedStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) s[i - 1] = s[i] * dims[i];
  return s;
}

// Strides of channels-first `dims` [N,C,H,W] stored [N,H,W,C].
std::vector<int64_t> ChannelsLastStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  int64_t step = dims[1];  // C is innermost
  for (size_t i = dims.size(); i-- > 2;) {
    s[i] = step;
    step *= dims[i];
  }
  s[0] = step;
  return s;
}

const char* NoteName(cudnnBackendNumericalNote_t n) {
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

}  // namespace

Result<std::unique_ptr<CudnnEngineConv>> CudnnEngineConv::Create(cudnnHandle_t handle, const EngineConvProblem& p,
                                                                  bool allow_tf32, uint64_t max_workspace,
                                                                  EngineSearch search) {
  const size_t rank = p.x.size();
  if (p.nhwc && rank != 4) return Unsupported("cuDNN engines: NHWC is 2-D only");
  if ((rank != 4 && rank != 5) || p.w.size() != rank || p.y.size() != rank || p.pads.size() != 2 * (rank - 2) ||
      p.strides.size() != rank - 2 || p.dilations.size() != rank - 2) {
    return Unsupported("cuDNN engines: only 2-D and 3-D convolutions (tensors of rank 4 or 5)");
  }
  const bool half = p.dtype == CUDNN_DATA_HALF || p.dtype == CUDNN_DATA_BFLOAT16;
  std::unique_ptr<CudnnEngineConv> c(new CudnnEngineConv(handle, search, half));
  KEEL_RETURN_IF_ERROR(c->Build(p, allow_tf32, max_workspace));
  if (c->plans_.empty()) return Unsupported("cuDNN engines: no usable engine configuration (" + c->summary_ + ")");
  return c;
}

CudnnEngineConv::~CudnnEngineConv() {
  if (pack_ != nullptr) (void)cudnnBackendDestroyDescriptor(pack_);
  for (Plan& p : plans_) (void)cudnnBackendDestroyDescriptor(p.plan);
  // Graph before the operation and tensors it refers to.
  for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) (void)cudnnBackendDestroyDescriptor(*it);
}

Status CudnnEngineConv::Build(const EngineConvProblem& p, bool allow_tf32, uint64_t max_workspace) {
  auto make = [&](cudnnBackendDescriptorType_t t, const char* what) -> Result<cudnnBackendDescriptor_t> {
    Desc d;
    const cudnnStatus_t s = d.Create(t);
    if (s != CUDNN_STATUS_SUCCESS) return Fail(s, std::string("cudnnBackendCreateDescriptor(") + what + ")");
    owned_.push_back(d.release());
    return owned_.back();
  };
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  auto tensor = [&](const std::vector<int64_t>& dims, int64_t uid, const char* what) -> Result<cudnnBackendDescriptor_t> {
    KEEL_ASSIGN_OR_RETURN(cudnnBackendDescriptor_t t, make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, what));
    const std::vector<int64_t> strides = p.nhwc ? ChannelsLastStrides(dims) : PackedStrides(dims);
    KEEL_RETURN_IF_ERROR(Set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &p.dtype, "TENSOR_DATA_TYPE"));
    const int64_t rank = static_cast<int64_t>(dims.size());
    KEEL_RETURN_IF_ERROR(Set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank, dims.data(), "TENSOR_DIMENSIONS"));
    KEEL_RETURN_IF_ERROR(Set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank, strides.data(), "TENSOR_STRIDES"));
    KEEL_RETURN_IF_ERROR(Set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "TENSOR_UNIQUE_ID"));
    KEEL_RETURN_IF_ERROR(
        Set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kAlignment, "TENSOR_BYTE_ALIGNMENT"));
    KEEL_RETURN_IF_ERROR(Finalize(t, what));
    return t;
  };
  KEEL_ASSIGN_OR_RETURN(cudnnBackendDescriptor_t x, tensor(p.x, kUidX, "tensor X"));
  KEEL_ASSIGN_OR_RETURN(cudnnBackendDescriptor_t w, tensor(p.w, kUidW, "tensor W"));
  KEEL_ASSIGN_OR_RETURN(cudnnBackendDescriptor_t y, tensor(p.y, kUidY, "tensor Y"));

  KEEL_ASSIGN_OR_RETURN(cudnnBackendDescriptor_t conv, make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "convolution"));
  const int64_t dims = static_cast<int64_t>(p.strides.size());
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::vector<int64_t> pre(p.pads.begin(), p.pads.begin() + dims), post(p.pads.begin() + dims, p.pads.end());
  KEEL_RETURN_IF_ERROR(Set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, "COMP_TYPE"));
  KEEL_RETURN_IF_ERROR(Set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, "CONV_MODE"));
  KEEL_RETURN_IF_ERROR(Set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims, "SPATIAL_DIMS"));
  KEEL_RETURN_IF_ERROR(
      Set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dims, p.dilations.data(), "DILATIONS"));
  KEEL_RETURN_IF_ERROR(
      Set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, dims, p.strides.data(), "FILTER_STRIDES"));
  KEEL_RETURN_IF_ERROR(Set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, dims, pre.data(), "PRE_PADDINGS"));
  KEEL_RETURN_IF_ERROR(
      Set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, dims, post.data(), "POST_PADDINGS"));
  KEEL_RETURN_IF_ERROR(Finalize(conv, "convolution"));

  KEEL_ASSIGN_OR_RETURN(cudnnBackendDescriptor_t op,
                        make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, "convolution forward"));
  const float alpha = 1.f, beta = 0.f;
  KEEL_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "FWD_X"));
  KEEL_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w, "FWD_W"));
  KEEL_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "FWD_Y"));
  KEEL_RETURN_IF_ERROR(
      Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv, "FWD_CONV"));
  KEEL_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha, "FWD_ALPHA"));
  KEEL_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta, "FWD_BETA"));
  KEEL_RETURN_IF_ERROR(Finalize(op, "convolution forward"));

  KEEL_ASSIGN_OR_RETURN(graph_, make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph"));
  KEEL_RETURN_IF_ERROR(Set(graph_, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op, "GRAPH_OPS"));
  // The handle attribute is deprecated in cuDNN 9 (device properties replace it;
  // spelled by value to stay clear of the deprecation) but older 9.x releases
  // still need it to finalize. A release that refuses it fails at Finalize if it
  // mattered, so its own status is not checked.
  (void)cudnnBackendSetAttribute(graph_, static_cast<cudnnBackendAttributeName_t>(800), CUDNN_TYPE_HANDLE, 1, &h_);
  KEEL_RETURN_IF_ERROR(Finalize(graph_, "operation graph"));

  std::vector<std::string> seen;
  KEEL_RETURN_IF_ERROR(AddCandidates(CUDNN_HEUR_MODE_A, "heurA", allow_tf32, max_workspace, &seen));
  KEEL_RETURN_IF_ERROR(AddCandidates(CUDNN_HEUR_MODE_B, "heurB", allow_tf32, max_workspace, &seen));
  KEEL_RETURN_IF_ERROR(AddCandidates(CUDNN_HEUR_MODE_FALLBACK, "fallback", allow_tf32, max_workspace, &seen));
  if (search_.all) KEEL_RETURN_IF_ERROR(AddAllEngines(allow_tf32, max_workspace, &seen));
  return Status::Ok();
}

// Appends the finalizable, accuracy-preserving plans the heuristics of `mode`
// offer. A mode the library does not support for this graph adds nothing: that
// is not an error (FALLBACK alone usually still answers).
Status CudnnEngineConv::AddCandidates(cudnnBackendHeurMode_t mode, const char* mode_name, bool allow_tf32,
                                      uint64_t max_workspace, std::vector<std::string>* seen) {
  Desc heur;
  if (heur.Create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR) != CUDNN_STATUS_SUCCESS) {
    return DeviceError("cudnnBackendCreateDescriptor(engine heuristics) failed");
  }
  KEEL_RETURN_IF_ERROR(Set(heur.d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph_,
                           "ENGINEHEUR_OPERATION_GRAPH"));
  KEEL_RETURN_IF_ERROR(Set(heur.d, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "ENGINEHEUR_MODE"));
  if (!summary_.empty()) summary_ += "; ";
  summary_ += mode_name;
  if (const cudnnStatus_t s = cudnnBackendFinalize(heur.d); s != CUDNN_STATUS_SUCCESS) {
    summary_ += std::string(" refused: ") + cudnnGetErrorString(s);
    return Status::Ok();
  }
  int64_t count = 0;
  if (cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0) {
    summary_ += " 0 offered";
    return Status::Ok();
  }
  // The results are copied into engine-config descriptors we create.
  std::vector<Desc> cfgs(static_cast<size_t>(count));
  std::vector<cudnnBackendDescriptor_t> raw(cfgs.size());
  for (size_t i = 0; i < cfgs.size(); ++i) {
    if (cfgs[i].Create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) != CUDNN_STATUS_SUCCESS) {
      return DeviceError("cudnnBackendCreateDescriptor(engine config) failed");
    }
    raw[i] = cfgs[i].d;
  }
  int64_t got = 0;
  if (cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                               raw.data()) != CUDNN_STATUS_SUCCESS) {
    summary_ += " results unreadable";
    return Status::Ok();
  }
  Tally t;
  for (int64_t i = 0; i < std::min(got, count); ++i) {
    Consider(&cfgs[static_cast<size_t>(i)].d, mode_name, allow_tf32, max_workspace, seen, &t);
  }
  summary_ += " " + std::to_string(count) + " offered: " + t.ToString();
  return Status::Ok();
}

// Every engine of the library for this graph, by global index, with default
// knobs: what the heuristics leave out (VmOptions::cudnn_engines_all; exploration).
Status CudnnEngineConv::AddAllEngines(bool allow_tf32, uint64_t max_workspace, std::vector<std::string>* seen) {
  int64_t count = 0, n = 0;
  if (cudnnBackendGetAttribute(graph_, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, &n,
                               &count) != CUDNN_STATUS_SUCCESS) {
    summary_ += "; all: count unreadable";
    return Status::Ok();
  }
  Tally t;
  int64_t supported = 0;
  for (int64_t index = 0; index < count; ++index) {
    Desc engine, cfg;
    if (engine.Create(CUDNN_BACKEND_ENGINE_DESCRIPTOR) != CUDNN_STATUS_SUCCESS ||
        cfg.Create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) != CUDNN_STATUS_SUCCESS) {
      return DeviceError("cudnnBackendCreateDescriptor(engine) failed");
    }
    if (cudnnBackendSetAttribute(engine.d, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &graph_) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendSetAttribute(engine.d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &index) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(engine.d) != CUDNN_STATUS_SUCCESS) {
      continue;  // this engine does not support the graph
    }
    ++supported;
    if (cudnnBackendSetAttribute(cfg.d, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &engine.d) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(cfg.d) != CUDNN_STATUS_SUCCESS) {
      ++t.unreadable;
      continue;
    }
    // The config refers to the engine: both live as long as a plan made from them.
    const size_t before = plans_.size();
    Consider(&cfg.d, "all", allow_tf32, max_workspace, seen, &t);
    if (plans_.size() > before) owned_.push_back(engine.release());
  }
  summary_ += "; all " + std::to_string(count) + " engines, " + std::to_string(supported) +
              " support the graph: " + t.ToString();
  return Status::Ok();
}

std::string CudnnEngineConv::Tally::ToString() const {
  return std::to_string(kept) + " kept, " + std::to_string(tf32_only) + " tf32-only, " +
         std::to_string(runtime_compiled) + " runtime-compiled, " + std::to_string(not_finalized) +
         " not finalized, " + std::to_string(too_big) + " over workspace, " + std::to_string(duplicate) +
         " duplicate, " + std::to_string(unreadable) + " unreadable";
}

// One engine configuration (*cfg_owned, owned by the caller): kept as a
// candidate plan (ownership of the config then moves here, *cfg_owned = null) unless its numerics, build, workspace or identity rule it
// out; `t` counts why.
void CudnnEngineConv::Consider(cudnnBackendDescriptor_t* cfg_owned, const char* source, bool allow_tf32, uint64_t max_workspace,
                               std::vector<std::string>* seen, Tally* t) {
  cudnnBackendDescriptor_t cfg = *cfg_owned;
  Desc engine;
  if (engine.Create(CUDNN_BACKEND_ENGINE_DESCRIPTOR) != CUDNN_STATUS_SUCCESS) return;
  int64_t n = 0;
  if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine.d) !=
      CUDNN_STATUS_SUCCESS) {
    ++t->unreadable;
    return;
  }
  int64_t index = -1;
  (void)cudnnBackendGetAttribute(engine.d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index);
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t nn = 0;
  if (cudnnBackendGetAttribute(engine.d, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &nn, notes) != CUDNN_STATUS_SUCCESS) {
    ++t->unreadable;
    return;  // unknown numerics: not trusted
  }
  bool reject = false;
  std::string tag = "engine=" + std::to_string(index) + " " + source;
  for (int64_t j = 0; j < std::min<int64_t>(nn, CUDNN_NUMERICAL_NOTE_TYPE_COUNT); ++j) {
    const cudnnBackendNumericalNote_t note = notes[j];
    // f32 on tensor cores is TF32 (10-bit mantissa): only when allowed. Half
    // data is meant for tensor cores, but accumulates in f32 (library_ops.h).
    if (!allow_tf32 && !half_ &&
        (note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
         note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)) {
      reject = true;
    }
    if (half_ && note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) reject = true;
    tag += std::string(" ") + NoteName(note);
  }
  if (reject) {
    ++t->tf32_only;
    return;
  }
  // Runtime-compiled engines build their kernel with NVRTC when the plan is
  // finalized (a second or more each, at every VM creation): only on request.
  cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  int64_t nb = 0;
  if (cudnnBackendGetAttribute(engine.d, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &nb, behavior) == CUDNN_STATUS_SUCCESS) {
    bool rtc = false;
    for (int64_t j = 0; j < std::min<int64_t>(nb, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT); ++j) {
      rtc = rtc || behavior[j] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
    }
    if (rtc && !search_.rtc) {
      ++t->runtime_compiled;
      return;
    }
    if (rtc) tag += " rtc";
  }

  Desc plan;
  if (plan.Create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) != CUDNN_STATUS_SUCCESS) return;
  if (cudnnBackendSetAttribute(plan.d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                               &cfg) != CUDNN_STATUS_SUCCESS) {
    ++t->not_finalized;
    return;
  }
  (void)cudnnBackendSetAttribute(plan.d, static_cast<cudnnBackendAttributeName_t>(400), CUDNN_TYPE_HANDLE, 1, &h_);
  if (cudnnBackendFinalize(plan.d) != CUDNN_STATUS_SUCCESS) {
    ++t->not_finalized;
    return;
  }
  int64_t ws = 0;
  if (cudnnBackendGetAttribute(plan.d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws) !=
          CUDNN_STATUS_SUCCESS ||
      ws < 0 || static_cast<uint64_t>(ws) > max_workspace) {
    ++t->too_big;
    return;
  }
  // Identity of a plan: its JSON (engine + knob choices); the same config can
  // come from several sources.
  std::string key = tag.substr(0, tag.find(' '));
  int64_t json_len = 0;
  if (cudnnBackendGetAttribute(plan.d, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, 0, &json_len,
                               nullptr) == CUDNN_STATUS_SUCCESS &&
      json_len > 0 && json_len < (1 << 20)) {
    std::string json(static_cast<size_t>(json_len), '\0');
    if (cudnnBackendGetAttribute(plan.d, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, json_len,
                                 &json_len, json.data()) == CUDNN_STATUS_SUCCESS) {
      key = json;
    }
  } else {
    key += "#" + std::to_string(plans_.size());  // no identity available: keep it
  }
  if (std::find(seen->begin(), seen->end(), key) != seen->end()) {
    ++t->duplicate;
    return;
  }
  ++t->kept;
  seen->push_back(key);
  tag += " ws=" + std::to_string(ws);
  plans_.push_back(Plan{plan.release(), static_cast<uint64_t>(ws), std::move(tag)});
  // The plan was finalized from this config: keep the config for its lifetime.
  owned_.push_back(cfg);
  *cfg_owned = nullptr;
}

cudnnStatus_t CudnnEngineConv::Run(size_t i, const void* x, const void* w, void* y, void* ws) {
  if (i >= plans_.size()) return CUDNN_STATUS_BAD_PARAM;
  const void* ptrs[4] = {x, w, y, ws};
  if (pack_ == nullptr || std::memcmp(ptrs, pack_ptrs_, sizeof(ptrs)) != 0) {
    if (pack_ != nullptr) {
      (void)cudnnBackendDestroyDescriptor(pack_);
      pack_ = nullptr;
    }
    cudnnBackendDescriptor_t vp = nullptr;
    cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    const int64_t uids[3] = {kUidX, kUidW, kUidY};
    void* data[3] = {const_cast<void*>(x), const_cast<void*>(w), y};
    s = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
    if (s == CUDNN_STATUS_SUCCESS) {
      s = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, data);
    }
    if (s == CUDNN_STATUS_SUCCESS) {
      s = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    }
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendFinalize(vp);
    if (s != CUDNN_STATUS_SUCCESS) {
      (void)cudnnBackendDestroyDescriptor(vp);
      return s;
    }
    pack_ = vp;
    std::memcpy(pack_ptrs_, ptrs, sizeof(ptrs));
  }
  return cudnnBackendExecute(h_, plans_[i].plan, pack_);
}

void CudnnEngineConv::Keep(size_t i) {
  if (i >= plans_.size()) return;
  for (size_t j = 0; j < plans_.size(); ++j) {
    if (j != i) (void)cudnnBackendDestroyDescriptor(plans_[j].plan);
  }
  Plan kept = std::move(plans_[i]);
  plans_.clear();
  plans_.push_back(std::move(kept));
}

}  // namespace keel::vm_internal

#endif  // KEEL_HAVE_CUDNN
