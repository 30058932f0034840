// vm/cuda/cuda_device.h — the NVIDIA GPU implementation of vm/device.h.
//
// One CudaDevice per VM. It owns a non-blocking CUDA stream on which every copy,
// kernel launch, cuBLAS and cuDNN call of the VM is queued, so a run is one
// ordered stream of work that the interpreter waits for once (Synchronize).
//
//   * Memory: Allocate/Free are cudaMalloc/cudaFree. The interpreter calls them
//     for the static plan's arenas, constants (weights, uploaded once) and input
//     buffers at VM creation, and at run time only for dynamic-plan storages.
//     A failed cudaMalloc is kOutOfMemory naming the bytes and the device, so an
//     executable whose arena exceeds the GPU fails at VM creation.
//   * Copies: cudaMemcpyAsync on the stream. PinHostMemory (cudaHostRegister)
//     page-locks the VM's host arenas and input buffers so those copies are truly
//     asynchronous and can be captured into a CUDA graph.
//   * Kernels: cuda_generated kernels come from the kernel library's embedded
//     module (keel_cuda_cubin, else keel_cuda_ptx JIT-compiled by the driver),
//     loaded once with cuModuleLoadData; each kernel's CUfunction is resolved at
//     VM creation (kNotFound naming it) and launched with cuLaunchKernel with the
//     kernel table's grid/block/shared bytes and one device pointer per argument.
//     When the library exports keel_cuda_grid_dependency = 1 (its kernels begin
//     with griddepcontrol.wait; sm_90+) they are launched with cuLaunchKernelEx
//     and programmatic stream serialization, which hides most of the launch gap
//     between dependent kernels (VmOptions::cuda_pdl = false turns this off).
//   * Runtime kernels: the VM's own few kernels (vm/cuda/runtime_kernels.cu,
//     embedded as an sm_90 cubin + compute_80 PTX): conv epilogues and the
//     autotuner's spin kernel (RuntimeFunction, LaunchRuntimeKernel).
//     Library kernels (cublas.gemm, cudnn.*; serialization/library_ops.h) are
//     planned at VM creation by vm/cuda/cublas_kernels.h and cudnn_kernels.h.
//   * Workspace: one device buffer per VM sized to the largest need of the
//     library kernels' chosen algorithms, grown only while kernels are resolved
//     (VM creation), never during a run.
//   * CUDA graphs: BeginRecording/EndRecording capture the stream
//     (cudaStreamCaptureModeThreadLocal) into a graph that is instantiated once
//     and launched; Replay launches it again (cudaGraphLaunch). With
//     VmOptions::cuda_l2_prefetch, the recording also prefetches the GEMMs' weights
//     into L2 on a side branch (l2_prefetch.h).
//   * Tuning file: VmOptions::tuning_file is read at creation (a malformed file
//     is kInvalidArgument naming the line) and rewritten atomically after the
//     kernels are resolved when autotuning added choices (vm/cuda/autotune.h).
//   * Tracing: while a trace hook is set, every operation is reported with its
//     call ("cudaMalloc", "cudaMemcpyAsync", "cuLaunchKernel grid=(..) block=(..)",
//     "cublasLtMatmul algo=..", "cudnnConvolutionForward algo=..",
//     "cudaGraphLaunch") and, outside capture, its device time from a pair of
//     cudaEvents (each traced operation then waits for the GPU). Without a hook
//     no event is recorded.
//
// Ownership: owns the stream, events, module, library handles, workspace, the
// resolved kernels' launch states and the recorded graph. Everything is released
// in the destructor (after the stream is drained).
// Thread-safety: one thread at a time (the VM's); any thread may be that thread:
// every entry point makes the device's primary context current first.
// Errors: Status values naming the failing call; never throws or aborts.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "vm/cuda/cuda_driver.h"
#include "vm/cuda/l2_prefetch.h"
#include "vm/cuda/library_calls.h"
#include "vm/device.h"

#ifdef KEEL_HAVE_CUDNN
#include <cudnn.h>

#include "vm/cuda/cudnn_engine_conv.h"
#endif
#include <cublasLt.h>

namespace keel::vm_internal {

// A resolved GPU kernel: what KernelCallable::state points to.
class CudaLaunchState {
 public:
  virtual ~CudaLaunchState() = default;
  // `args`: one device pointer per kernel argument, in signature order.
  virtual Status Launch(void* const* args) = 0;
  static Status Thunk(void* state, void* const* args) { return static_cast<CudaLaunchState*>(state)->Launch(args); }
};

class CudaDevice final : public Device {
 public:
  // Use CreateCudaDevice (vm/device.h). Errors: kUnsupported when no GPU is
  // present, kInvalidArgument for an ordinal past the device count, kDeviceError.
  static Result<std::unique_ptr<CudaDevice>> Create(int ordinal, const DeviceOptions& options);
  ~CudaDevice() override;

  DeviceType type() const override { return DeviceType::kCuda; }
  std::string_view name() const override { return name_; }
  Result<void*> Allocate(uint64_t bytes, uint64_t alignment) override;
  void Free(void* ptr) override;
  Status CopyHostToDevice(void* dst, const void* src, uint64_t bytes) override;
  Status CopyDeviceToHost(void* dst, const void* src, uint64_t bytes) override;
  Status CopyDeviceToDevice(void* dst, const void* src, uint64_t bytes) override;
  Status Synchronize() override;
  Result<KernelCallable> ResolveKernel(const KernelEntry& kernel) override;
  const keel_cpu_kernel_ctx* cpu_kernel_ctx() const override { return nullptr; }

  Status PinHostMemory(void* ptr, uint64_t bytes) override;
  void UnpinHostMemory(void* ptr) override;
  bool SupportsRecording() const override { return true; }
  Status BeginRecording() override;
  Status EndRecording(bool keep) override;
  bool has_recording() const override { return graph_exec_ != nullptr; }
  Status Replay() override;

  // ---- services for the library kernels (vm/cuda/cublas_kernels.h, cudnn_kernels.h) ----
  cudaStream_t stream() const { return stream_; }
  bool allow_tf32() const { return allow_tf32_; }
  // The VM's CUDA knobs (VmOptions: cuda_autotune, cuda_autotune_log, cudnn_engines*).
  bool autotune() const { return options_.autotune; }
  bool autotune_log() const { return options_.autotune_log; }
  VmOptions::CudnnEngines cudnn_engines() const { return options_.cudnn_engines; }
#ifdef KEEL_HAVE_CUDNN
  EngineSearch engine_search() const { return EngineSearch{options_.cudnn_engines_all, options_.cudnn_engines_rtc}; }
#endif
  // Where device memory comes from (VmOptions::device_allocator; null allocate: cudaMalloc).
  const keel_allocator_t& device_allocator() const { return options_.device_allocator; }
  int compute_capability() const { return cc_major_ * 10 + cc_minor_; }
  // The library workspace (cuda_lib::WorkspaceLayout), grown while kernels are resolved (VM
  // creation only): ReserveWorkspace grows its shared part to at least `bytes`;
  // ReservePrivateWorkspace adds a slice for one call alone and returns its offset, whose
  // address private_workspace gives at launch time (the allocation moves while it grows).
  Status ReserveWorkspace(uint64_t bytes);
  Result<uint64_t> ReservePrivateWorkspace(uint64_t bytes);
  void* workspace() const { return workspace_; }
  void* private_workspace(uint64_t offset) const {
    return static_cast<char*>(workspace_) + workspace_layout_.PrivateStart() + offset;
  }
  Result<cublasLtHandle_t> LtHandle();
#ifdef KEEL_HAVE_CUDNN
  Result<cudnnHandle_t> CudnnHandle();
#endif
  // Tracing around one launch: BeginOp before queueing it, EndLaunch after (reports
  // it, with device time when measurable). Both cost one branch when not tracing.
  void BeginOp() {
    if (trace_hook_ != nullptr) [[unlikely]] RecordStart();
  }
  void EndLaunch(std::string_view call, std::string_view kernel) {
    if (trace_hook_ != nullptr) [[unlikely]] ReportTimed(DeviceOp{DeviceOpKind::kLaunch, 0, nullptr, {}, call, kernel});
  }
  // The VM's own CUDA kernels (vm/cuda/runtime_kernels.cu, embedded at build
  // time): the function `name`, loading the module on first use. kNotFound for an
  // unknown name, kDeviceError when neither the cubin nor the PTX loads.
  Result<CUfunction> RuntimeFunction(const char* name);
  int num_sms() const { return num_sms_; }
  // Launches a runtime kernel on the stream; as a programmatic dependent of the
  // previous operation when the GPU supports it (sm_90+, cuLaunchKernelEx; the
  // runtime kernels wait for their predecessor first) and VmOptions::cuda_pdl is on.
  CUresult LaunchRuntimeKernel(CUfunction fn, unsigned grid, unsigned block, void** params, unsigned shared = 0);
  // Load-time autotuning results shared by the VM's library kernels: identical
  // problems (same key) are measured once per VM. Keys are built by the kernels:
  // "conv|..." and "gemm|..." problems (vm/cuda/autotune.h ConvProblemKey,
  // GemmProblemKey) are tagged with this GPU's compute capability and the
  // library's version, read from VmOptions::tuning_file at creation and written
  // back to it (KernelsResolved) when any was stored with autotuning on; other
  // keys are per-VM only.
  const std::vector<int64_t>* FindTuning(const std::string& key) const;
  void StoreTuning(const std::string& key, std::vector<int64_t> value);
  // Library plans shared by the VM's kernels of one problem: a kernel that
  // builds a plan under `key` (a problem key as for FindTuning; its prefix
  // names the stored type, which the caller casts back to) stores it, and later
  // kernels of the same problem take it instead of finalizing their own (a
  // fused attention engine compiles its kernel, NVRTC, at every finalization).
  // The device holds a reference until its destructor, where the plans go
  // before the library handles. Null when none is stored.
  std::shared_ptr<void> FindSharedPlan(const std::string& key) const;
  void StoreSharedPlan(const std::string& key, std::shared_ptr<void> plan) { shared_plans_[key] = std::move(plan); }
  // Writes the tuning file when a choice was added by timing (see above).
  Status KernelsResolved() override;
  void ConstantsPlaced(const void* data, uint64_t bytes) override;
  // Around the launch of a library GEMM whose operands are `operands` (`bytes` each): while
  // recording, the first one that is a constant is prefetched into L2 ahead of it
  // (l2_prefetch.h; VmOptions::cuda_l2_prefetch), and its end is marked for later GEMMs.
  void BeforeGemm(const void* const* operands, const uint64_t* bytes, size_t count);
  void AfterGemm();
  // Makes the device's primary context current on the calling thread.
  void Bind() const { Driver().CtxSetCurrent(ctx_); }

 private:
  CudaDevice(int ordinal, const DeviceOptions& options);
  Status Init();
  Status LoadModule();
  Status Copy(void* dst, const void* src, uint64_t bytes, cudaMemcpyKind kind, CopyDirection dir);
  void RecordStart();
  void ReportTimed(DeviceOp op);

  int ordinal_;
  std::string name_;
  const KernelLibrary* library_;
  bool allow_tf32_;
  DeviceOptions options_;  // the knobs and allocators above
  int cc_major_ = 0, cc_minor_ = 0;
  CUcontext ctx_ = nullptr;
  bool ctx_retained_ = false;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ev_start_ = nullptr, ev_end_ = nullptr;
  bool timing_started_ = false;
  bool capturing_ = false;
  const char* constants_ = nullptr;  // the constant block (ConstantsPlaced)
  uint64_t constants_bytes_ = 0;
  std::unique_ptr<L2Prefetcher> l2_prefetch_;
  CUmodule module_ = nullptr;
  CUmodule runtime_module_ = nullptr;
  bool runtime_cubin_ = false;  // the runtime module came from the sm_90 cubin
  int num_sms_ = 132;
  std::map<std::string, std::vector<int64_t>> tuning_;  // full key -> choice (autotune.h)
  std::string tuning_file_;
  bool tuning_dirty_ = false;       // a persisted choice was added since the file was read
  std::string cudnn_tag_, lt_tag_;  // "sm90-cudnn91400 ", "sm90-cublasLt130100 "
  bool module_tried_ = false;
  Status module_status_;
  Status GrowWorkspace();
  void* workspace_ = nullptr;
  uint64_t workspace_bytes_ = 0;  // allocated
  cuda_lib::WorkspaceLayout workspace_layout_;
  cublasLtHandle_t lt_ = nullptr;
#ifdef KEEL_HAVE_CUDNN
  cudnnHandle_t cudnn_ = nullptr;
#endif
  cudaGraphExec_t graph_exec_ = nullptr;
  std::vector<std::unique_ptr<CudaLaunchState>> states_;
  std::map<std::string, std::shared_ptr<void>> shared_plans_;  // FindSharedPlan
  // Over-aligned allocations (alignment > 256): aligned pointer -> cudaMalloc base.
  std::unordered_map<void*, void*> over_aligned_;
};

}  // namespace keel::vm_internal
