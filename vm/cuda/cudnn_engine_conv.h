// vm/cuda/cudnn_engine_conv.h — a convolution forward (f32, f16 or bf16 data
// with f32 compute; NCHW, or NHWC for 2-D) through the cuDNN backend ("graph")
// API, as an alternative to the legacy cudnnConvolutionForward algorithms
// (vm/cuda/cudnn_kernels.h): the VM's owner of what the shared calls create.
//
// The calls themselves (the graph, the heuristics' candidates and their filters,
// a configuration by identity, the variant pack and execution) are
// vm/cuda/library_calls_cudnn_engine.h's, which keelc --emit=cuda-host programs
// paste verbatim, so a program builds the very configuration the VM chose; this
// class holds the descriptors and turns the shared calls' errors into Status.
//
// Two ways to make one: Create builds every candidate (the caller, CudnnConv in
// cudnn_kernels.cc, times them against its legacy choice and keeps one: Keep);
// CreateFor builds the one configuration a tuning entry names
// (library_calls_engine_choice.h). Bias, residual and activation are NOT part of
// the graph: they stay the VM's epilogue kernel after the convolution.
//
// EngineSearch::all (VmOptions::cudnn_engines_all) also tries every engine of the
// library by global index with default knobs (what the heuristics leave out; an
// exploration knob). Engines that compile their kernel at run time (behavior note
// RUNTIME_COMPILATION: NVRTC at plan finalization, a second or more each) are
// skipped unless EngineSearch::rtc (VmOptions::cudnn_engines_rtc).
//
// Used when VmOptions::cudnn_engines says so for the problem
// (cuda_lib::EnginesConsidered: kCompete and kForce always, kAuto, the default,
// for grouped half or channels-last convolutions).
//
// Ownership: owns every backend descriptor it creates (destroyed with it). The
// cudnnHandle_t is borrowed and must outlive the object; its stream is whatever
// the handle's owner set (the VM's stream).
// Thread-safety: none (one thread at a time, like CudaDevice).
// Errors: Create returns kUnsupported when the problem is outside this path
// (cuda_lib::EngineProblemSupported) or cuDNN offers no usable engine, and
// kDeviceError naming the cuDNN call when building the graph fails; CreateFor
// returns kUnsupported naming the configuration and the refusing call when this
// cuDNN does not offer it. Run returns the raw cudnnStatus_t so that the caller
// can fall back.
#pragma once

#ifdef KEEL_HAVE_CUDNN
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "keel/status.h"
#include "vm/cuda/library_calls_cudnn_engine.h"

namespace keel::vm_internal {

// Which engines Create considers beyond the heuristics' configurations.
using EngineSearch = cuda_lib::EngineSearch;

class CudnnEngineConv {
 public:
  // Builds the graph of `problem` (its allow_tf32 keeps tensor-core engines for
  // f32) and every usable plan; `max_workspace` bounds a plan's workspace.
  // Pointers passed later must be 16-byte aligned (cuda_lib::EngineUsable).
  static Result<std::unique_ptr<CudnnEngineConv>> Create(cudnnHandle_t handle, const cuda_lib::ConvProblem& problem,
                                                          uint64_t max_workspace, EngineSearch search = {});
  // Builds the graph and the one plan of configuration `id`.
  static Result<std::unique_ptr<CudnnEngineConv>> CreateFor(cudnnHandle_t handle, const cuda_lib::ConvProblem& problem,
                                                             uint64_t max_workspace, const cuda_lib::EngineId& id);
  ~CudnnEngineConv();
  CudnnEngineConv(const CudnnEngineConv&) = delete;
  CudnnEngineConv& operator=(const CudnnEngineConv&) = delete;

  // Candidates, in the heuristics' order (mode A first), each identity once.
  size_t size() const { return plans_.size(); }
  uint64_t workspace(size_t i) const { return plans_[i].workspace; }
  const cuda_lib::EngineId& id(size_t i) const { return plans_[i].id; }
  // "engine=<global index> knobs=<...> <source> [notes] ws=<bytes>" for logs.
  std::string describe(size_t i) const { return cuda_lib::EngineIdText(plans_[i].id) + plans_[i].notes; }

  // Queues candidate `i` (y = conv(x, w)) on the handle's stream. `ws` must hold
  // workspace(i) bytes. The variant pack is rebuilt only when a pointer changes,
  // so a static-plan program pays its creation once.
  cudnnStatus_t Run(size_t i, const void* x, const void* w, void* y, void* ws) {
    if (i >= plans_.size()) return CUDNN_STATUS_BAD_PARAM;
    return cuda_lib::EngineExecute(h_, plans_[i].plan, &pack_, x, w, y, ws);
  }

  // What the heuristics offered and why configurations were dropped, e.g.
  // "heurA 12 offered: 6 kept, 3 tf32-only, 0 runtime-compiled, 1 not finalized, 0 over workspace, 2 duplicate, 0 unreadable; ...".
  const std::string& summary() const { return summary_; }

  // Drops every candidate but `i` (which becomes candidate 0).
  void Keep(size_t i);

 private:
  explicit CudnnEngineConv(cudnnHandle_t h) : h_(h) {}
  Status BuildGraph(const cuda_lib::ConvProblem& p);

  cudnnHandle_t h_;
  cuda_lib::EngineGraph graph_;
  std::vector<cuda_lib::EnginePlan> plans_;
  std::string summary_;
  cuda_lib::EngineVariantPack pack_;  // of the last Run
};

}  // namespace keel::vm_internal

#endif  // KEEL_HAVE_CUDNN
