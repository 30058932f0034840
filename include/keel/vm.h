// keel/vm.h — the public C++ API of the Keel runtime: load an executable, run it.
//
// Two objects:
//   * keel::Executable — a loaded, verified and decoded model.keel (+ its kernel
//     library). Immutable after load; share it (std::shared_ptr<const Executable>)
//     between any number of VMs and threads.
//   * keel::VirtualMachine — the mutable state needed to run an Executable on one
//     device: arenas, registers, input/output buffers, a CPU thread pool. One VM
//     is used by one thread at a time; create one VM per concurrent caller.
//
// Typical use:
//   KEEL_ASSIGN_OR_RETURN(auto exe, keel::Executable::LoadFile("model.keel"));
//   KEEL_ASSIGN_OR_RETURN(auto vm, keel::VirtualMachine::Create(exe));
//   KEEL_RETURN_IF_ERROR(vm->SetInput("x", data, bytes, shape, keel::DataType::kF32));
//   KEEL_RETURN_IF_ERROR(vm->Run());
//   KEEL_ASSIGN_OR_RETURN(keel::TensorView y, vm->GetOutput(0));
//
// Errors are values (keel/status.h); nothing here throws or aborts on bad input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "keel/data_type.h"
#include "keel/export.h"
#include "keel/memory.h"
#include "keel/status.h"

namespace keel {

// Element types (DataType, DataTypeName, DataTypeSize, ...) come from keel/data_type.h.

// The embedder's memory (keel/memory.h, shared with the C API). An Allocator whose
// `allocate` is null means the runtime's own (aligned_alloc / cudaMalloc).
using Allocator = keel_allocator_t;
// What one VM needs for its host memory: Executable::memory_requirements.
using MemoryRequirements = keel_memory_requirements_t;

// Devices; same numbering as keel.fb.DeviceKind.
enum class DeviceType : uint8_t { kCpu = 0, kCuda = 1 };
KEEL_API const char* DeviceTypeName(DeviceType d);  // "cpu", "cuda"

// Static description of a function parameter or result.
struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  DataType dtype = DataType::kF32;
  DeviceType device = DeviceType::kCpu;
  uint64_t byte_size = 0;  // product(shape) * DataTypeSize(dtype)
};

// A non-owning view of a tensor held by a VM. `data` is a pointer on `device`
// (a host pointer for kCpu). `shape` points into the Executable.
struct TensorView {
  const void* data = nullptr;
  std::span<const int64_t> shape;
  DataType dtype = DataType::kF32;
  DeviceType device = DeviceType::kCpu;
  uint64_t byte_size = 0;
};

// ---- tracing ----------------------------------------------------------------

enum class OpCode : uint8_t {
  kAllocStorage = 0, kAllocTensor = 1, kLoadConst = 2, kCopy = 3, kInvoke = 4, kFreeStorage = 5, kRet = 6,
};
KEEL_API const char* OpCodeName(OpCode op);  // "alloc_storage", ...

// What an instruction asked of the device.
enum class DeviceOpKind : uint8_t {
  kNone = 0,        // nothing (alloc_tensor, load_const, ret)
  kArenaSlice = 1,  // alloc_storage on a static plan: a slice of an arena, no allocation
  kAllocate = 2,    // a real device allocation (dynamic plan)
  kFree = 3,
  kCopy = 4,
  kLaunch = 5,      // a kernel call / launch
  // A launch that only warms a cache (VmOptions::cuda_l2_prefetch), made by an
  // instruction besides its own operation: reported as an event of its own before
  // the instruction's event, with the same index.
  kPrefetch = 6,
};
KEEL_API const char* DeviceOpKindName(DeviceOpKind k);

enum class CopyDirection : uint8_t { kHostToHost = 0, kHostToDevice = 1, kDeviceToHost = 2, kDeviceToDevice = 3 };
KEEL_API const char* CopyDirectionName(CopyDirection d);  // "host->host", ...

struct DeviceOp {
  DeviceOpKind kind = DeviceOpKind::kNone;
  uint64_t bytes = 0;              // allocated/freed/copied/prefetched bytes (launch: 0)
  const void* address = nullptr;   // allocated/freed/sliced/prefetched address
  CopyDirection direction = CopyDirection::kHostToHost;
  std::string_view call;           // the device call made: "aligned_alloc", "memcpy", "cudaMemcpyAsync", ...
  std::string_view kernel;         // kLaunch, kPrefetch: the kernel's name
  // CUDA, while tracing outside graph capture: the device time of this operation
  // measured with cudaEvents (0: not measured).
  uint64_t device_ns = 0;
};

// One executed instruction. The string_views stay valid while the Executable lives.
struct TraceEvent {
  uint32_t instruction_index = 0;
  OpCode opcode = OpCode::kRet;
  std::string_view debug_name;  // source node(s); may be empty
  DeviceOp op;
  uint64_t duration_ns = 0;     // wall time of the instruction (device-async work excluded)
};

// Receives one event per executed instruction, on the thread calling Run().
// The VM does not own the observer; it must outlive its registration.
class KEEL_API TraceObserver {
 public:
  virtual ~TraceObserver() = default;
  virtual void OnInstruction(const TraceEvent& event) = 0;
  // Device operations made while a VM is created with VmOptions::trace set: arena
  // allocations, weight uploads, input buffers, host pinning. `what` names the
  // object ("arena 0", "constant conv1.weight", "input x"). Default: ignored.
  virtual void OnSetup(std::string_view what, const DeviceOp& op) {
    (void)what;
    (void)op;
  }
};

// One line: "setup [arena 0] allocate cudaMalloc 4654080 bytes at 0x7f.. 21000 ns".
KEEL_API std::string FormatSetupEvent(std::string_view what, const DeviceOp& op);

// One line: "#3 invoke [conv1] launch kernel=fused_conv_relu 1234 ns".
KEEL_API std::string FormatTraceEvent(const TraceEvent& event);

// ---- executable ---------------------------------------------------------------

class VirtualMachine;

// Trust: loading a kernel library is trusting it. The library is native code:
// dlopen runs its constructors and Run() calls its kernels in this process, with
// this process's rights. The executable is data (fully verified at load; a
// malformed one is refused with kInvalidExecutable), but the library cannot be
// verified for behaviour, only for identity: keelc records the library's byte
// size and SHA-256 in the executable (format 1.1), and the loader refuses a
// library of another size or hash before dlopen. That catches damaged, truncated
// and mixed-up files; it does not make an untrusted executable + library pair
// safe (whoever wrote the executable chose the hash), nor protect against a
// process that can rewrite the library between the check and dlopen. Load only
// pairs from a source you trust; `keel-run --verify model.keel` checks a pair
// offline without loading the library (docs/SECURITY.md).
struct LoadOptions {
  // Kernel library (model.keel.so). Empty: for LoadFile, "<path>.so" next to the
  // executable; for LoadMemory, none. Only opened when the executable names a
  // kernel_library_id; an executable without cpu_generated kernels needs none.
  // It must be a regular file whose size and SHA-256 match what the executable
  // records (when it records them), checked before it is opened.
  std::string library_path;
  // LoadMemory only: false (default) copies the bytes into a 64-byte aligned
  // buffer owned by the Executable; true borrows them: the caller keeps the
  // buffer alive and unchanged for the whole life of the Executable and of every
  // VM created from it (constants point into it), and should align it to 64 bytes.
  bool borrow_buffer = false;
  // LoadMemory without borrow_buffer: the copy of the bytes is allocated here
  // (default: aligned_alloc). Must outlive the Executable.
  Allocator host_allocator{};
};

class KEEL_API Executable {
 public:
  // Maps the file read-only (constants are used in place, no copy), verifies,
  // decodes and resolves kernels. Errors: kNotFound/kIoError (file or library),
  // kInvalidExecutable (malformed file, wrong library id/ABI, library size or
  // SHA-256 different from the recorded ones), kUnsupported
  // (newer major version), kNotFound (kernel symbol missing from the library).
  static Result<std::shared_ptr<const Executable>> LoadFile(const std::string& path,
                                                            const LoadOptions& options = {});
  // Same from bytes in memory (copied unless options.borrow_buffer).
  static Result<std::shared_ptr<const Executable>> LoadMemory(std::span<const uint8_t> bytes,
                                                              const LoadOptions& options = {});

  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  size_t num_inputs() const;
  size_t num_outputs() const;
  const TensorInfo& input(size_t index) const;   // index < num_inputs()
  const TensorInfo& output(size_t index) const;  // index < num_outputs()
  // kNotFound naming the unknown name and listing the known ones.
  Result<size_t> FindInput(std::string_view name) const;
  Result<size_t> FindOutput(std::string_view name) const;

  size_t num_instructions() const;        // of the entry function
  std::string_view plan_strategy() const;  // memory plan strategy name
  std::string_view producer() const;
  // Compiled with keelc --precision tf32: VMs let cuBLAS/cuDNN use TF32 for f32
  // unless VmOptions::allow_tf32 says otherwise (false for older executables).
  bool allow_tf32() const;
  const std::string& library_path() const;  // empty when no library was opened
  // The size and alignment of a caller-owned buffer that holds all the host memory
  // of one VM of this executable (VmOptions::arena_buffer): every host arena of the
  // static memory plan and every host input buffer. bytes == 0: none is needed.
  MemoryRequirements memory_requirements() const;

 private:
  friend class VirtualMachine;  // runs the decoded program
  struct KEEL_LOCAL Impl;       // the decoded program (runtime-private)
  KEEL_LOCAL explicit Executable(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---- virtual machine ----------------------------------------------------------

struct VmOptions {
  std::string device = "cpu";  // "cpu", "cuda", "cuda:1"
  // CPU worker threads for keel_cpu_kernel_ctx.parallel_for, created with the VM:
  // 0 = std::thread::hardware_concurrency(), 1 = serial (no thread created).
  int num_threads = 0;
  // Optional, not owned: receives OnSetup events during Create and OnInstruction
  // events during Run (until SetTraceObserver replaces it).
  TraceObserver* trace = nullptr;
  // CUDA only. A static-plan program whose device work is all on the GPU is
  // captured into a CUDA graph on its first Run and replayed by later Runs
  // (inputs bound with BindInput are then copied into the VM's own staging
  // buffers at each Run, so the graph's addresses stay fixed). Memsets the
  // libraries record (cuDNN's attention clears 4 bytes per call) become kernel
  // nodes in the graph, which start sooner after the kernel before them
  // (vm/cuda/graph_rewrite.h). false: never.
  bool cuda_graph = true;
  // CUDA only: let cuBLAS/cuDNN use TF32 tensor cores for f32 (faster, ~1e-3
  // relative error). Unset: what the executable was compiled for
  // (Executable::allow_tf32(): keelc --precision tf32; otherwise off, and f32
  // results then match an f32 reference); true/false overrides it.
  std::optional<bool> allow_tf32;
  // CUDA only: a tuning file (format: vm/cuda/autotune.h); empty = none. The
  // library kernels' load-time choices (cuDNN algorithm and fused/epilogue mode,
  // cuBLASLt algorithm) recorded there for this GPU and library versions are
  // used without timing; the others are timed (unless KEEL_CUDA_AUTOTUNE=0) and,
  // if any was, the file is rewritten atomically at the end of Create with them
  // added. Errors from Create: kInvalidArgument naming the line of a malformed
  // file, kIoError when it cannot be read or written.
  std::string tuning_file;

  // ---- memory (keel/memory.h) ----
  // Host memory for arenas, input buffers and dynamic-plan storages (default:
  // aligned_alloc). Must outlive the VM.
  Allocator host_allocator{};
  // CUDA only: device memory for arenas, constants, input buffers, library
  // workspaces and autotuning scratch (default: cudaMalloc). Must outlive the VM.
  Allocator device_allocator{};
  // A caller-owned buffer for all the VM's host memory, at least
  // executable->memory_requirements().bytes long and aligned to its .alignment
  // (kInvalidArgument naming both otherwise). The VM then allocates no host
  // memory for the static plan; it does not own the buffer, which must stay valid
  // and be used by nothing else until the VM is destroyed. Null: none.
  void* arena_buffer = nullptr;
  uint64_t arena_buffer_size = 0;

  // ---- CUDA tuning knobs (per VM; keel-run and keel-bench read the environment
  // variables named here into them, the library never reads the environment) ----
  // Time the library kernels' candidate algorithms at creation (false: the
  // heuristics' first choice, and no cuDNN engine competition unless the tuning
  // file records its verdict; KEEL_CUDA_AUTOTUNE=0).
  bool cuda_autotune = true;
  // Print every timed candidate to stderr (KEEL_CUDA_AUTOTUNE_LOG=1).
  bool cuda_autotune_log = false;
  // Programmatic dependent launches between kernels on sm_90+ (KEEL_CUDA_PDL=0: off).
  bool cuda_pdl = true;
  // Recorded runs (cuda_graph): each cuBLASLt GEMM reading a constant (its weights)
  // gets a prefetch of it into L2 on a side branch of the graph that starts when
  // the GEMM this many GEMMs earlier ends (0, the default: none; at most
  // kMaxL2PrefetchDistance, else kInvalidArgument; KEEL_CUDA_L2_PREFETCH=N).
  // Results are unchanged; the best distance depends on the model and batch
  // (vm/cuda/l2_prefetch.h: BERT-base fp16 on an H200, 2 gains 3.7% at batch 8
  // and loses 7% at batch 1).
  static constexpr int kMaxL2PrefetchDistance = 64;
  int cuda_l2_prefetch = 0;
  // cuDNN backend-API engines for convolutions (KEEL_CUDNN_ENGINES): kOff ("0":
  // the legacy API only), kCompete ("1": engines timed against the legacy
  // choice), kForce ("force": engines only, for tests), kAuto (default: compete
  // for grouped half-precision or channels-last convolutions, where the legacy
  // API lacks cuDNN's fast kernels, e.g. depthwise NHWC; legacy for the rest).
  // The verdict (an engine configuration's identity, or legacy) is recorded in
  // the tuning file beside the legacy choice, and keelc --emit=cuda-host programs
  // follow it (kForce verdicts are not recorded).
  enum class CudnnEngines : uint8_t { kOff = 0, kCompete = 1, kForce = 2, kAuto = 3 };
  CudnnEngines cudnn_engines = CudnnEngines::kAuto;
  // With engines: also every engine of the library, not only the heuristics'
  // (KEEL_CUDNN_ENGINES_ALL=1), and runtime-compiled engines (KEEL_CUDNN_ENGINES_RTC=1).
  bool cudnn_engines_all = false;
  bool cudnn_engines_rtc = false;
};

class KEEL_API VirtualMachine {
 public:
  // Allocates everything a static-plan Run needs (arenas, registers, input and
  // output buffers, the thread pool) so that Run allocates nothing.
  // Errors: kInvalidArgument (device string, arena buffer too small or misaligned,
  // half-set allocator), kUnsupported (device not built in, or a device the
  // executable needs is not the VM's), kOutOfMemory (naming bytes; also when the
  // C++ heap is exhausted). On any error everything allocated so far is freed.
  static Result<std::unique_ptr<VirtualMachine>> Create(std::shared_ptr<const Executable> executable,
                                                        const VmOptions& options = {});
  ~VirtualMachine();
  VirtualMachine(const VirtualMachine&) = delete;
  VirtualMachine& operator=(const VirtualMachine&) = delete;

  const Executable& executable() const;

  // Copies `bytes` from host memory `data` into the VM's buffer for input `index`.
  // shape/dtype must equal the parameter's; errors are kInvalidArgument naming the
  // input with the expected and actual shape/dtype. Cancels a BindInput.
  Status SetInput(size_t index, const void* data, uint64_t bytes, std::span<const int64_t> shape,
                  DataType dtype);
  Status SetInput(std::string_view name, const void* data, uint64_t bytes, std::span<const int64_t> shape,
                  DataType dtype);
  // Zero copy: Run reads input `index` directly from `data`, which must be memory
  // on the input's device (TensorInfo::device; host memory for every program keelc
  // writes, CUDA ones included: their uploads are copy instructions), stay valid and unchanged during
  // every Run until it is re-bound or SetInput is called, and be aligned to the
  // element size (64 bytes recommended). Same checks as SetInput.
  Status BindInput(size_t index, const void* data, uint64_t bytes, std::span<const int64_t> shape,
                   DataType dtype);
  Status BindInput(std::string_view name, const void* data, uint64_t bytes, std::span<const int64_t> shape,
                   DataType dtype);

  // After each successful Run, output `index` is copied into host memory `data`
  // (`bytes` must equal the output's byte size). `data` must stay valid until it
  // is unbound (BindOutput(index, nullptr, 0)) or the VM is destroyed.
  Status BindOutput(size_t index, void* data, uint64_t bytes);
  Status BindOutput(std::string_view name, void* data, uint64_t bytes);

  // Interprets the entry function. Every input must have been set or bound
  // (kFailedPrecondition otherwise). On a static plan, performs no host heap
  // allocation. Errors: kInternal/kDeviceError when a kernel reports failure,
  // kOutOfMemory when a dynamic-plan allocation fails.
  Status Run();

  // The result of the last successful Run as a view on the VM's device; valid
  // until the next Run, SetInput/BindInput or the VM's destruction.
  // kFailedPrecondition before the first successful Run.
  Result<TensorView> GetOutput(size_t index) const;
  Result<TensorView> GetOutput(std::string_view name) const;
  // Copies output `index` of the last Run into host memory (any device).
  Status CopyOutputToHost(size_t index, void* data, uint64_t bytes) const;

  // nullptr disables tracing (then the cost is one branch per Run).
  void SetTraceObserver(TraceObserver* observer);

  int num_threads() const;  // CPU worker count actually used (>= 1)

 private:
  class KEEL_LOCAL Impl;  // the interpreter (runtime-private)
  KEEL_LOCAL explicit VirtualMachine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace keel
