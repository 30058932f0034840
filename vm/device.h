// vm/device.h — the one small interface the interpreter uses to talk to a device.
//
// The interpreter (vm/interpreter.h) never knows which device it drives: it
// allocates, frees and copies through Device, and calls kernels through the
// KernelCallable each device resolves for every kernel-table entry at VM
// creation. The CPU implementation lives in vm/cpu/; a CUDA implementation
// (vm/cuda/) adds itself by implementing this interface and CreateCudaDevice
// below, without touching the interpreter.
//
// Thread-safety: a Device belongs to one VM and is used by the thread running
// that VM; implementations need not be thread-safe.
// Errors: Status values (kOutOfMemory naming the byte count, kDeviceError naming
// the failing call); implementations never throw or abort.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "keel/kernel_abi.h"
#include "keel/status.h"
#include "keel/vm.h"

namespace keel::vm_internal {

struct KernelEntry;  // vm/executable.h

// Receives every device operation while set (tracing). A device reports each
// allocate/free/copy/launch it performs; the interpreter turns the last one of an
// instruction into TraceEvent::op.
class DeviceTraceHook {
 public:
  virtual ~DeviceTraceHook() = default;
  virtual void OnDeviceOp(const DeviceOp& op) = 0;
};

// A kernel resolved for one device: either a direct host call (CPU kernels: the
// fastest path, one indirect call) or a device-specific launch through an opaque
// state owned by the Device (CUDA: CUfunction + launch config; library kernels:
// a cuBLAS/cuDNN plan). Exactly one of host_fn / launch is set.
struct KernelCallable {
  keel_cpu_kernel_fn host_fn = nullptr;
  // Returns a Status naming the kernel on failure. `args` holds one device
  // pointer per kernel argument, in signature order.
  Status (*launch)(void* state, void* const* args) = nullptr;
  void* state = nullptr;  // owned by the Device; valid while the Device lives
};

class Device {
 public:
  virtual ~Device() = default;

  virtual DeviceType type() const = 0;
  virtual std::string_view name() const = 0;  // "cpu", "cuda:0"

  // `alignment` is a power of two; the result is never null on success.
  // kOutOfMemory names the byte count.
  virtual Result<void*> Allocate(uint64_t bytes, uint64_t alignment) = 0;
  // Frees memory from Allocate of this device; null is ignored.
  virtual void Free(void* ptr) = 0;

  // Asynchronous on the device's stream for devices that have one; the CPU copies
  // synchronously. Host buffers must stay valid until Synchronize() returns.
  virtual Status CopyHostToDevice(void* dst, const void* src, uint64_t bytes) = 0;
  virtual Status CopyDeviceToHost(void* dst, const void* src, uint64_t bytes) = 0;
  virtual Status CopyDeviceToDevice(void* dst, const void* src, uint64_t bytes) = 0;
  // Waits for all work queued on this device.
  virtual Status Synchronize() = 0;

  // Resolves kernel-table entry `kernel` (one per KernelKind this device supports;
  // kUnsupported naming the kernel and its kind otherwise). Called once per
  // kernel at VM creation; the result is used for every Run.
  virtual Result<KernelCallable> ResolveKernel(const KernelEntry& kernel) = 0;

  // The context passed to host kernels (thread pool). Valid while the Device lives.
  virtual const keel_cpu_kernel_ctx* cpu_kernel_ctx() const = 0;

  // Called once by VM creation after every kernel is resolved (CUDA: writes the
  // tuning file when anything was tuned). Errors end VM creation.
  virtual Status KernelsResolved() { return Status::Ok(); }
  // Called by VM creation once the device's constants (weights) are placed: they
  // occupy [data, data + bytes) for the VM's lifetime (CUDA: prefetched into L2
  // ahead of the GEMMs that read them in recorded runs, l2_prefetch.h).
  virtual void ConstantsPlaced(const void* /*data*/, uint64_t /*bytes*/) {}

  // ---- whole-run recording (CUDA graphs); the defaults mean "not supported" ----
  // Page-locks host memory the interpreter copies to or from this device (host
  // arenas, input buffers) so that copies stay asynchronous and can be recorded.
  // Called at VM creation; UnpinHostMemory before that memory is freed.
  virtual Status PinHostMemory(void* /*ptr*/, uint64_t /*bytes*/) { return Status::Ok(); }
  virtual void UnpinHostMemory(void* /*ptr*/) {}
  // True when this device can record the work of one run and replay it.
  virtual bool SupportsRecording() const { return false; }
  // Starts recording: work queued until EndRecording is recorded, not run.
  virtual Status BeginRecording() { return Unsupported("recording is not supported by this device"); }
  // Ends recording. keep == false discards it (the run failed). On success the
  // recorded work is launched once (this run's results).
  virtual Status EndRecording(bool /*keep*/) { return Unsupported("recording is not supported by this device"); }
  virtual bool has_recording() const { return false; }
  // Launches the recorded work again (reported as one launch while tracing).
  virtual Status Replay() { return Unsupported("recording is not supported by this device"); }

  // Tracing: null disables reporting (one branch per operation).
  void set_trace_hook(DeviceTraceHook* hook) { trace_hook_ = hook; }

 protected:
  void Report(const DeviceOp& op) const {
    if (trace_hook_ != nullptr) [[unlikely]] trace_hook_->OnDeviceOp(op);
  }
  DeviceTraceHook* trace_hook_ = nullptr;
};

class KernelLibrary;  // vm/kernel_library.h

// What a device is created with: VmOptions' device-related fields.
struct DeviceOptions {
  int num_threads = 0;  // CPU worker threads (0: hardware concurrency)
  // CUDA: the executable's kernel library (embedded cubin/PTX), or null; must
  // outlive the device (the Executable owns it).
  const KernelLibrary* library = nullptr;
  keel_allocator_t host_allocator{};    // CPU: VmOptions::host_allocator
  keel_allocator_t device_allocator{};  // CUDA: VmOptions::device_allocator
  bool allow_tf32 = false;  // CUDA: VmOptions::allow_tf32
  std::string tuning_file;  // CUDA: VmOptions::tuning_file (empty: none)
  bool autotune = true;       // CUDA: VmOptions::cuda_autotune
  bool autotune_log = false;  // CUDA: VmOptions::cuda_autotune_log
  bool pdl = true;            // CUDA: VmOptions::cuda_pdl
  int l2_prefetch = 0;        // CUDA: VmOptions::cuda_l2_prefetch
  VmOptions::CudnnEngines cudnn_engines = VmOptions::CudnnEngines::kAuto;  // CUDA
  bool cudnn_engines_all = false;  // CUDA: VmOptions::cudnn_engines_all
  bool cudnn_engines_rtc = false;  // CUDA: VmOptions::cudnn_engines_rtc
};

// Parses "cpu", "cuda", "cuda:N" and creates the device. kInvalidArgument for an
// unknown string, kUnsupported for "cuda" in a build without the CUDA device.
Result<std::unique_ptr<Device>> CreateDevice(std::string_view spec, const DeviceOptions& options);

// Implemented by vm/cuda/ when it is built (KEEL_VM_WITH_CUDA).
Result<std::unique_ptr<Device>> CreateCudaDevice(int ordinal, const DeviceOptions& options);

}  // namespace keel::vm_internal
