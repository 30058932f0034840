// compiler/driver/cuda_host_emitter_internal.h — the pieces of keelc
// --emit=cuda-host (cuda_host_emitter.h) shared by its source files; not a
// public interface.
//
// The emitter is one object (Emitter) writing the program in the VM's load order;
// its methods live in three files by concept:
//   cuda_host_emitter.cc          the whole program: header, load (arenas,
//                                 constants, inputs, pinning), outputs, main
//   cuda_host_emitter_kernels.cc  kernel resolution (generated kernels, cuBLASLt
//                                 and cuDNN descriptors with literal attributes)
//   cuda_host_emitter_run.cc      the instruction stream of `main`
// and the program's fixed text in two preludes (cuda_host_emitter_prelude.cc:
// process, memory, trace, files, command line; cuda_host_emitter_prelude_library.cc:
// the glue that plans and launches library kernels, the tuning file,
// programmatic launch) plus the VM's own sources, embedded verbatim at build
// time by cuda_host_emitter_embed.cmake: its runtime kernels
// (vm/cuda/runtime_kernels.cu) and its library calls (vm/cuda/library_calls*.h).
//
// Thread-safety: an Emitter is used by one thread; the helpers are pure.
#pragma once

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/conv_geometry.h"
#include "compiler/driver/cuda_host_emitter.h"
#include "keel/status.h"
#include "serialization/executable_reader.h"

namespace keel::driver::cuda_host {

namespace fb = keel::fb;

// ---- text helpers (cuda_host_emitter.cc) ----
// A C++ string literal (octal escapes for anything unprintable; `?` escaped against trigraphs).
std::string Lit(std::string_view s);
// Text safe inside a // comment: no control characters, no backslash.
std::string Com(std::string_view s);
std::string Str(const flatbuffers::String* s);
std::vector<int64_t> Shape(const flatbuffers::Vector<int64_t>* v);
std::string ShapeText(const std::vector<int64_t>& s);
uint64_t ByteSize(const std::vector<int64_t>& shape, fb::DType dtype);
// Exact float/double literals (hex), so the program uses the VM's very values.
// kUnsupported for non-finite values.
Result<std::string> FloatLit(double v, bool single);
std::string U64(uint64_t v);
// cudnn.conv2d or cudnn.conv_transpose: one plan and run (ConvKernel).
bool IsCudnnConv(const std::string& library_op);

// The VM's runtime kernels (vm/cuda/runtime_kernels.cu) and library calls
// (vm/cuda/library_calls.h, library_calls_cublaslt.h, library_calls_engine_choice.h,
// library_calls_tuning.h, library_calls_cudnn.h, library_calls_cudnn_engine.h) as
// text; generated at build time from those files (cuda_host_emitter_embed.cmake).
const char* CudaHostRuntimeKernelsSource();
const char* CudaHostLibraryCallsSource();
const char* CudaHostCublasLtCallsSource();
const char* CudaHostCudnnCallsSource();
const char* CudaHostEngineChoiceSource();
const char* CudaHostTuningSource();
const char* CudaHostCudnnAttentionCallsSource();
const char* CudaHostCudnnEngineCallsSource();
const char* CudaHostAttentionCallsSource();
const char* CudaHostAttentionKernelSource();
const char* CudaHostConvCallsSource();
const char* CudaHostMmaPrimitivesSource();
const char* CudaHostConvKernelSource();
// The library-kernel part of the prelude (cuda_host_emitter_prelude_library.cc).
const char* CudaHostLibraryPrelude();

// Per-kernel facts the run needs (argument positions, what the launch does).
struct KernelPlan {
  std::string name, op;
  fb::KernelKind kind = fb::KernelKind::cuda_generated;
  // library kernels: argument positions
  bool has_bias = false, full_bias = false, has_residual = false, has_mask = false;
  int bias_arg = -1, y_arg = 2, res_arg = -1;
  // generated
  std::string launch_call;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, shared = 0;
};

class Emitter {
 public:
  Emitter(const ser::ExecutableView& view, const CudaHostOptions& options) : v_(view), opt_(options) {}
  Result<std::string> Emit();

 private:
  Status Check();
  // cuda_host_emitter_kernels.cc
  Status EmitKernels();
  Status EmitGemm(size_t index, const fb::Kernel& k, KernelPlan& p);
  Status EmitConv(size_t index, const fb::Kernel& k, KernelPlan& p);
  Status EmitPool(size_t index, const fb::Kernel& k, KernelPlan& p);
  Status EmitAttention(size_t index, const fb::Kernel& k, KernelPlan& p);
  Status EmitKeelConv(size_t index, const common::CudnnConvGeometry& g, int act_kind, const std::string& clip_lit,
                      const std::string& type, bool nhwc, KernelPlan& p);
  // cuda_host_emitter.cc
  void EmitLoad();
  void EmitOutputsAndMain();
  // cuda_host_emitter_run.cc
  Status EmitRun();
  Status EmitInvoke(uint32_t pc, const std::string& dbg, const fb::Invoke& op);

  const fb::Executable& root() const { return *v_.root; }
  const fb::Function& main_fn() const { return *v_.main(); }

  const ser::ExecutableView& v_;
  const CudaHostOptions& opt_;
  std::ostringstream o_;
  std::vector<KernelPlan> plans_;
  bool needs_library_ = false;
  size_t tuned_problems_ = 0;  // cudnn.conv2d + cublas.gemm kernels (tuning-file lookups)
  // Register facts during the run's emission: device (0 cpu, 1 cuda) and bytes.
  std::vector<uint8_t> reg_device_;
  std::vector<uint64_t> reg_bytes_;
  std::vector<int32_t> reg_dynamic_slot_;  // storage registers owning a live dynamic storage: plan slot
};

}  // namespace keel::driver::cuda_host
