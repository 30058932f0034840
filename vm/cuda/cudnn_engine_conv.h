// vm/cuda/cudnn_engine_conv.h — a convolution forward (f32, f16 or bf16 data
// with f32 compute; NCHW, or NHWC for 2-D) through the cuDNN backend ("graph")
// API, as an alternative to the legacy cudnnConvolutionForward algorithms
// (vm/cuda/cudnn_kernels.h).
//
// Why: the legacy API exposes eight algorithm families; cuDNN's backend API
// exposes every engine (and knob setting) cuDNN has, and frameworks that use it
// (PyTorch with cudnn.benchmark) reach faster kernels for some shapes. This file
// builds the one-operation graph (X, W -> Y, CUDNN_BACKEND_OPERATION_CONVOLUTION_
// FORWARD_DESCRIPTOR), asks the engine heuristics (modes A, B and FALLBACK) for
// engine configurations, drops the ones whose numerical notes break f32 accuracy
// when TF32 is not allowed (TENSOR_CORE, DOWN_CONVERT_INPUTS, REDUCED_PRECISION_
// REDUCTION; half data runs on tensor cores but never reduces in half),
// finalizes an execution plan for each (dropping the ones that fail,
// or that need more than `max_workspace` bytes), and keeps them as candidates.
// The caller (CudnnConv in cudnn_kernels.cc) times them against its legacy choice
// and keeps one (Keep). Bias, residual and activation are NOT part of the graph:
// they stay the VM's epilogue kernel after the convolution.
//
// EngineSearch::all (VmOptions::cudnn_engines_all) also tries every engine of the
// library by global index with default knobs (what the heuristics leave out; an
// exploration knob). Engines that compile their kernel at run time (behavior note
// RUNTIME_COMPILATION: NVRTC at plan finalization, a second or more each) are
// skipped unless EngineSearch::rtc (VmOptions::cudnn_engines_rtc).
//
// Used when VmOptions::cudnn_engines is kCompete (engines compete with the
// legacy algorithm; the faster one runs), kForce (the fastest engine runs
// whenever one exists; for tests) or kAuto (the default: compete for grouped
// half or channels-last convolutions, whose fast kernels, e.g. NHWC depthwise,
// the legacy API does not reach; the rest stays legacy, which the CUDA
// host-code emitter mirrors).
//
// Ownership: owns every backend descriptor it creates (destroyed with it). The
// cudnnHandle_t is borrowed and must outlive the object; its stream is whatever
// the handle's owner set (the VM's stream).
// Thread-safety: none (one thread at a time, like CudaDevice).
// Errors: Create returns kUnsupported when the problem is outside this path
// (ranks other than 4 and 5, NHWC beyond rank 4, dimensions beyond int32) or cuDNN offers no usable engine, and
// kDeviceError naming the cuDNN call when building the graph fails. Run returns
// the raw cudnnStatus_t so that the caller can fall back.
#pragma once

#ifdef KEEL_HAVE_CUDNN
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "keel/status.h"

namespace keel::vm_internal {

// Which engines Create considers beyond the heuristics' configurations.
struct EngineSearch {
  bool all = false;  // every engine of the library too
  bool rtc = false;  // runtime-compiled engines too
};

// One 2-D or 3-D convolution problem, packed tensors, symmetric or not pads (a
// 1-D problem arrives lifted to 2-D: common/conv_geometry.h). Dims are always
// channels-first; `nhwc` says the tensors are stored channels-last (W as KRSC).
struct EngineConvProblem {
  std::vector<int64_t> x, w, y;  // [N,C,(D,)H,W], [K,C/group,(T,)R,S], [N,K,(O,)P,Q]
  std::vector<int64_t> pads;     // every spatial axis' begin, then every end (ONNX order)
  std::vector<int64_t> strides, dilations;  // one per spatial axis
  int64_t group = 1;  // implied by the channel counts (cuDNN reads it from C / W's C)
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;  // of X, W, Y (compute is f32)
  bool nhwc = false;
};

class CudnnEngineConv {
 public:
  // Builds the graph and every usable plan. `allow_tf32` keeps tensor-core
  // (TF32) engines; `max_workspace` bounds a plan's workspace. Pointers passed
  // later must be 16-byte aligned (the tensors' declared alignment).
  static Result<std::unique_ptr<CudnnEngineConv>> Create(cudnnHandle_t handle, const EngineConvProblem& problem,
                                                          bool allow_tf32, uint64_t max_workspace,
                                                          EngineSearch search = {});
  ~CudnnEngineConv();
  CudnnEngineConv(const CudnnEngineConv&) = delete;
  CudnnEngineConv& operator=(const CudnnEngineConv&) = delete;

  // Candidates, in the heuristics' order (mode A first), deduplicated.
  size_t size() const { return plans_.size(); }
  uint64_t workspace(size_t i) const { return plans_[i].workspace; }
  // "engine=<global index> <heuristics mode> [notes]" for logs and traces.
  const std::string& describe(size_t i) const { return plans_[i].tag; }

  // Queues candidate `i` (y = conv(x, w)) on the handle's stream. `ws` must hold
  // workspace(i) bytes. The variant pack is rebuilt only when a pointer changes,
  // so a static-plan program pays its creation once.
  cudnnStatus_t Run(size_t i, const void* x, const void* w, void* y, void* ws);

  // What the heuristics offered and why configurations were dropped, e.g.
  // "heurA 12 offered: 6 kept, 3 tf32-only, 0 runtime-compiled, 1 not finalized, 0 over workspace, 2 duplicate; ...".
  const std::string& summary() const { return summary_; }

  // Drops every candidate but `i` (which becomes candidate 0).
  void Keep(size_t i);

 private:
  struct Plan {
    cudnnBackendDescriptor_t plan = nullptr;
    uint64_t workspace = 0;
    std::string tag;
  };
  CudnnEngineConv(cudnnHandle_t h, EngineSearch search, bool half) : h_(h), search_(search), half_(half) {}
  Status Build(const EngineConvProblem& p, bool allow_tf32, uint64_t max_workspace);
  // Why configurations were dropped (summary()).
  struct Tally {
    int kept = 0, tf32_only = 0, runtime_compiled = 0, not_finalized = 0, too_big = 0, duplicate = 0, unreadable = 0;
    std::string ToString() const;
  };
  Status AddCandidates(cudnnBackendHeurMode_t mode, const char* mode_name, bool allow_tf32, uint64_t max_workspace,
                       std::vector<std::string>* seen);
  Status AddAllEngines(bool allow_tf32, uint64_t max_workspace, std::vector<std::string>* seen);
  void Consider(cudnnBackendDescriptor_t* cfg_owned, const char* source, bool allow_tf32, uint64_t max_workspace,
                std::vector<std::string>* seen, Tally* t);

  cudnnHandle_t h_;
  EngineSearch search_;
  bool half_;  // f16/bf16 data: tensor cores always, reductions in half never
  std::vector<cudnnBackendDescriptor_t> owned_;  // tensors, conv, op, graph
  cudnnBackendDescriptor_t graph_ = nullptr;
  std::vector<Plan> plans_;
  std::string summary_;
  // Cached variant pack (the pointers it was built for, and which plan).
  cudnnBackendDescriptor_t pack_ = nullptr;
  const void* pack_ptrs_[4] = {nullptr, nullptr, nullptr, nullptr};
};

}  // namespace keel::vm_internal

#endif  // KEEL_HAVE_CUDNN
