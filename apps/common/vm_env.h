// apps/common/vm_env.h — the environment variables the tools (keel-run,
// keel-bench, the CUDA timing tools and the CUDA test helpers) turn into
// VmOptions fields. The runtime library itself never reads the environment
// (issue 9): two VMs in one process may differ, and an embedding application
// decides its own knobs. These names stay as documented overrides for the GPU
// scripts (scripts/*gpu*.sh, bench/cuda/*):
//
//   KEEL_CUDA_AUTOTUNE=0        cuda_autotune = false (heuristics' first choice)
//   KEEL_CUDA_AUTOTUNE_LOG=1    cuda_autotune_log = true
//   KEEL_CUDA_PDL=0             cuda_pdl = false
//   KEEL_CUDA_L2_PREFETCH=N     cuda_l2_prefetch = N (0: off)
//   KEEL_CUDNN_ENGINES=1|force  cudnn_engines = kCompete | kForce (0: kOff)
//   KEEL_CUDNN_ENGINES_ALL=1    cudnn_engines_all = true
//   KEEL_CUDNN_ENGINES_RTC=1    cudnn_engines_rtc = true
//
// An unset variable leaves the field as it is. Programs written by keelc
// --emit=cuda-host read KEEL_CUDA_PDL and the KEEL_CUDNN_ENGINES* names the same
// way (compiler/driver/cuda_host_emitter_prelude_library.cc), so one environment
// steers both sides of scripts/cuda-host-check.sh. Header-only; reentrant (getenv).
#pragma once

#include <cstdlib>
#include <cstring>

#include "keel/vm.h"

namespace keel::tools {

inline void ApplyEnvironmentOverrides(VmOptions& o) {
  auto is = [](const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v != nullptr && std::strcmp(v, value) == 0;
  };
  auto set = [](const char* name) { return std::getenv(name) != nullptr; };
  if (set("KEEL_CUDA_AUTOTUNE")) o.cuda_autotune = !is("KEEL_CUDA_AUTOTUNE", "0");
  if (set("KEEL_CUDA_AUTOTUNE_LOG")) o.cuda_autotune_log = is("KEEL_CUDA_AUTOTUNE_LOG", "1");
  if (set("KEEL_CUDA_PDL")) o.cuda_pdl = !is("KEEL_CUDA_PDL", "0");
  if (set("KEEL_CUDA_L2_PREFETCH")) o.cuda_l2_prefetch = std::atoi(std::getenv("KEEL_CUDA_L2_PREFETCH"));
  if (set("KEEL_CUDNN_ENGINES")) {
    o.cudnn_engines = is("KEEL_CUDNN_ENGINES", "1")       ? VmOptions::CudnnEngines::kCompete
                      : is("KEEL_CUDNN_ENGINES", "force") ? VmOptions::CudnnEngines::kForce
                      : is("KEEL_CUDNN_ENGINES", "auto")  ? VmOptions::CudnnEngines::kAuto
                                                          : VmOptions::CudnnEngines::kOff;
  }
  if (set("KEEL_CUDNN_ENGINES_ALL")) o.cudnn_engines_all = is("KEEL_CUDNN_ENGINES_ALL", "1");
  if (set("KEEL_CUDNN_ENGINES_RTC")) o.cudnn_engines_rtc = is("KEEL_CUDNN_ENGINES_RTC", "1");
}

}  // namespace keel::tools
