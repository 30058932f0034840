// vm/cuda/cuda_device.cc — see cuda_device.h.
#include "vm/cuda/cuda_device.h"

#include <cstdlib>
#include <cstring>

#include "serialization/format.h"
#include "vm/cuda/autotune.h"
#include "serialization/library_ops.h"
#include "vm/cuda/attention_kernel.h"
#include "vm/cuda/conv_kernel.h"
#include "vm/cuda/cublas_kernels.h"
#include "vm/cuda/cuda_errors.h"
#include "vm/cuda/graph_rewrite.h"
#include "vm/cuda/cudnn_kernels.h"
#include "vm/cuda/device_memory.h"
#include "vm/executable.h"
#include "vm/kernel_library.h"

namespace keel::vm_internal {

// vm/cuda/runtime_kernels.cu, embedded by vm/cuda/embed_runtime_module.cmake.
extern const unsigned char kKeelRuntimeCubin[];
extern const unsigned long long kKeelRuntimeCubin_size;
extern const unsigned char kKeelRuntimePtx[];
extern const unsigned long long kKeelRuntimePtx_size;

namespace {

// A cuda_generated kernel: its CUfunction and launch configuration. With
// `dependent` (the library's kernels start with griddepcontrol.wait, sm_90+),
// it is launched with programmatic stream serialization: the GPU may start it
// while the previous kernel drains, and the kernel itself waits for that
// kernel's results before touching memory, so only launch latency is hidden.
class GeneratedKernel final : public CudaLaunchState {
 public:
  GeneratedKernel(CudaDevice& dev, const KernelEntry& k, CUfunction fn, bool dependent)
      : dev_(dev), name_(k.name), fn_(fn), shared_(k.shared_bytes), params_(k.args.size()), dependent_(dependent) {
    for (int d = 0; d < 3; ++d) {
      grid_[d] = k.grid[d];
      block_[d] = k.block[d];
    }
    call_ = "cuLaunchKernel grid=(" + std::to_string(grid_[0]) + "," + std::to_string(grid_[1]) + "," +
            std::to_string(grid_[2]) + ") block=(" + std::to_string(block_[0]) + "," + std::to_string(block_[1]) +
            "," + std::to_string(block_[2]) + ")" + (dependent ? " programmatic" : "");
  }
  Status Launch(void* const* args) override {
    // cuLaunchKernel takes the address of each argument value (the device pointers).
    for (size_t i = 0; i < params_.size(); ++i) params_[i] = const_cast<void**>(&args[i]);
    dev_.Bind();
    dev_.BeginOp();
    CUresult r;
    if (dependent_) {
      // The configuration is the one the emitted host programs use (vm/cuda/library_calls.h).
      cuda_lib::ProgrammaticLaunch pl(grid_, block_, shared_, reinterpret_cast<CUstream>(dev_.stream()));
      r = Driver().LaunchKernelEx(&pl.cfg, fn_, params_.data(), nullptr);
    } else {
      r = Driver().LaunchKernel(fn_, grid_[0], grid_[1], grid_[2], block_[0], block_[1], block_[2], shared_,
                                reinterpret_cast<CUstream>(dev_.stream()), params_.data(), nullptr);
    }
    if (r != CUDA_SUCCESS) return CuStatus(r, "cuLaunchKernel").WithContext("kernel " + name_);
    dev_.EndLaunch(call_, name_);
    return Status::Ok();
  }

 private:
  CudaDevice& dev_;
  std::string name_;
  CUfunction fn_;
  unsigned grid_[3], block_[3];
  unsigned shared_;
  std::vector<void*> params_;
  bool dependent_;
  std::string call_;
};

// Programmatic dependent launch of generated kernels: the library says its
// kernels wait for their predecessor (keel_cuda_grid_dependency), the GPU and
// driver support it, and VmOptions::cuda_pdl is on (a diagnostic switch;
// KEEL_CUDA_PDL=0 for the tools).
bool ProgrammaticLaunchAvailable(bool enabled, int cc) {
  return cuda_lib::ProgrammaticLaunchAvailable(enabled, cc, Driver().LaunchKernelEx != nullptr);
}

bool UseProgrammaticLaunch(bool enabled, const KernelLibrary* library, int cc) {
  if (!ProgrammaticLaunchAvailable(enabled, cc) || library == nullptr) return false;
  const auto* flag = static_cast<const uint32_t*>(library->FindData("keel_cuda_grid_dependency"));
  return flag != nullptr && *flag == 1;
}

// The trace's call for a prefetch launch (l2_prefetch.h's launch shape).
const std::string kPrefetchCall = "cuLaunchKernel grid=(" + std::to_string(L2Prefetcher::kBlocks) + ",1,1) block=(" +
                                  std::to_string(L2Prefetcher::kThreads) + ",1,1)";

uint64_t ElapsedNs(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  if (cudaEventSynchronize(b) != cudaSuccess || cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  const double ns = static_cast<double>(ms) * 1e6;
  return ns < 1.0 ? 1 : static_cast<uint64_t>(ns);
}

}  // namespace

Result<std::unique_ptr<Device>> CreateCudaDevice(int ordinal, const DeviceOptions& options) {
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<CudaDevice> d, CudaDevice::Create(ordinal, options));
  return std::unique_ptr<Device>(std::move(d));
}

CudaDevice::CudaDevice(int ordinal, const DeviceOptions& options)
    : ordinal_(ordinal), name_("cuda:" + std::to_string(ordinal)), library_(options.library),
      allow_tf32_(options.allow_tf32), options_(options),
      l2_prefetch_(std::make_unique<L2Prefetcher>(options.l2_prefetch)), tuning_file_(options.tuning_file) {}

Result<std::unique_ptr<CudaDevice>> CudaDevice::Create(int ordinal, const DeviceOptions& options) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaSuccess && count > 0 && !Driver().status.ok()) return Driver().status;
  if (e != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return Unsupported(std::string("no CUDA device is available") +
                       (e != cudaSuccess ? std::string(" (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")" : ""));
  }
  if (ordinal >= count) {
    return InvalidArgument("device cuda:" + std::to_string(ordinal) + " does not exist (" + std::to_string(count) +
                           " CUDA device(s))");
  }
  std::unique_ptr<CudaDevice> d(new CudaDevice(ordinal, options));
  KEEL_RETURN_IF_ERROR(d->Init().WithContext(d->name_));
  return d;
}

Status CudaDevice::Init() {
  KEEL_CU_RETURN(Init, 0);
  CUdevice dev = 0;
  KEEL_CU_RETURN(DeviceGet, &dev, ordinal_);
  KEEL_CU_RETURN(PrimaryCtxRetain, &ctx_, dev);
  ctx_retained_ = true;
  Bind();
  KEEL_CUDA_RETURN(cudaSetDevice, ordinal_);
  KEEL_CUDA_RETURN(cudaDeviceGetAttribute, &cc_major_, cudaDevAttrComputeCapabilityMajor, ordinal_);
  KEEL_CUDA_RETURN(cudaDeviceGetAttribute, &cc_minor_, cudaDevAttrComputeCapabilityMinor, ordinal_);
  KEEL_CUDA_RETURN(cudaDeviceGetAttribute, &num_sms_, cudaDevAttrMultiProcessorCount, ordinal_);
  KEEL_CUDA_RETURN(cudaStreamCreateWithFlags, &stream_, cudaStreamNonBlocking);
  KEEL_CUDA_RETURN(cudaEventCreate, &ev_start_);
  KEEL_CUDA_RETURN(cudaEventCreate, &ev_end_);
  // Tuning entries are valid for one GPU architecture and library version.
#ifdef KEEL_HAVE_CUDNN
  cudnn_tag_ = TuningKey(compute_capability(), "cudnn", static_cast<uint64_t>(cudnnGetVersion()), "");
#else
  cudnn_tag_ = TuningKey(compute_capability(), "cudnn", 0, "");
#endif
  lt_tag_ = TuningKey(compute_capability(), "cublasLt", static_cast<uint64_t>(cublasLtGetVersion()), "");
  if (!tuning_file_.empty()) {
    KEEL_ASSIGN_OR_RETURN(tuning_, ReadTuningFile(tuning_file_));
  }
  return Status::Ok();
}

// ---- tuning -------------------------------------------------------------------

namespace {
// The persisted form of a kernel's key: device tag + problem, or empty for keys
// that stay per-VM.
std::string PersistedKey(const std::string& key, const std::string& cudnn_tag, const std::string& lt_tag) {
  if (key.rfind("conv|", 0) == 0 || key.rfind("conv_transpose|", 0) == 0 || key.rfind("attention|", 0) == 0) {
    return cudnn_tag + key;
  }
  if (key.rfind("gemm|", 0) == 0) return lt_tag + key;
  return std::string();
}
}  // namespace

const std::vector<int64_t>* CudaDevice::FindTuning(const std::string& key) const {
  const std::string full = PersistedKey(key, cudnn_tag_, lt_tag_);
  auto it = tuning_.find(full.empty() ? key : full);
  return it == tuning_.end() ? nullptr : &it->second;
}

void CudaDevice::StoreTuning(const std::string& key, std::vector<int64_t> value) {
  const std::string full = PersistedKey(key, cudnn_tag_, lt_tag_);
  // Heuristic choices (cuda_autotune off) are not written: the file records timing.
  if (!full.empty() && options_.autotune) tuning_dirty_ = true;
  tuning_[full.empty() ? key : full] = std::move(value);
}

std::shared_ptr<void> CudaDevice::FindSharedPlan(const std::string& key) const {
  auto it = shared_plans_.find(key);
  return it == shared_plans_.end() ? nullptr : it->second;
}

Status CudaDevice::KernelsResolved() {
  if (tuning_file_.empty() || !tuning_dirty_) return Status::Ok();
  KEEL_RETURN_IF_ERROR(WriteTuningFile(tuning_file_, tuning_));
  tuning_dirty_ = false;
  return Status::Ok();
}

CudaDevice::~CudaDevice() {
  if (ctx_ == nullptr) return;
  Bind();
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  states_.clear();  // cuDNN/cuBLASLt descriptors before their handles
  l2_prefetch_.reset();
  shared_plans_.clear();
  if (graph_exec_ != nullptr) (void)cudaGraphExecDestroy(graph_exec_);
#ifdef KEEL_HAVE_CUDNN
  if (cudnn_ != nullptr) (void)cudnnDestroy(cudnn_);
#endif
  if (lt_ != nullptr) (void)cublasLtDestroy(lt_);
  DeviceFree(options_.device_allocator, workspace_);
  if (module_ != nullptr) (void)Driver().ModuleUnload(module_);
  if (runtime_module_ != nullptr) (void)Driver().ModuleUnload(runtime_module_);
  if (ev_start_ != nullptr) (void)cudaEventDestroy(ev_start_);
  if (ev_end_ != nullptr) (void)cudaEventDestroy(ev_end_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  (void)cudaGetLastError();
  if (ctx_retained_) {
    CUdevice dev = 0;
    if (Driver().DeviceGet(&dev, ordinal_) == CUDA_SUCCESS) (void)Driver().PrimaryCtxRelease(dev);
  }
}

// ---- tracing ------------------------------------------------------------------

void CudaDevice::RecordStart() {
  timing_started_ = !capturing_ && cudaEventRecord(ev_start_, stream_) == cudaSuccess;
}

void CudaDevice::ReportTimed(DeviceOp op) {
  if (timing_started_ && cudaEventRecord(ev_end_, stream_) == cudaSuccess) {
    op.device_ns = ElapsedNs(ev_start_, ev_end_);
  }
  timing_started_ = false;
  Report(op);
}

// ---- memory -------------------------------------------------------------------

Result<void*> CudaDevice::Allocate(uint64_t bytes, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return InvalidArgument("alignment " + std::to_string(alignment) + " is not a power of two");
  }
  Bind();
  // Blocks come 256-byte aligned (cudaMalloc's guarantee, asked of the embedder's
  // allocator too); larger alignments over-allocate.
  const uint64_t extra = alignment > 256 ? alignment : 0;
  uint64_t request = 0;
  if (__builtin_add_overflow(bytes == 0 ? 1 : bytes, extra, &request)) {
    return OutOfMemory("cannot allocate " + std::to_string(bytes) + " bytes on " + name_);
  }
  KEEL_ASSIGN_OR_RETURN(void* p, DeviceMalloc(options_.device_allocator, request, 256, "on " + name_));
  void* aligned = p;
  if (extra != 0) {
    const uintptr_t a = (reinterpret_cast<uintptr_t>(p) + alignment - 1) & ~static_cast<uintptr_t>(alignment - 1);
    aligned = reinterpret_cast<void*>(a);
    try {
      over_aligned_.emplace(aligned, p);
    } catch (...) {  // std::bad_alloc: the block is not lost
      DeviceFree(options_.device_allocator, p);
      throw;
    }
  }
  Report(DeviceOp{DeviceOpKind::kAllocate, bytes, aligned, CopyDirection::kHostToHost,
                  options_.device_allocator.allocate != nullptr ? "device_allocator" : "cudaMalloc", {}});
  return aligned;
}

void CudaDevice::Free(void* ptr) {
  if (ptr == nullptr) return;
  Bind();
  Report(DeviceOp{DeviceOpKind::kFree, 0, ptr, CopyDirection::kHostToHost,
                  options_.device_allocator.allocate != nullptr ? "device_allocator" : "cudaFree", {}});
  void* base = ptr;
  if (auto it = over_aligned_.find(ptr); it != over_aligned_.end()) {
    base = it->second;
    over_aligned_.erase(it);
  }
  DeviceFree(options_.device_allocator, base);
}

Status CudaDevice::PinHostMemory(void* ptr, uint64_t bytes) {
  Bind();
  KEEL_CUDA_RETURN(cudaHostRegister, ptr, bytes, cudaHostRegisterDefault);
  return Status::Ok();
}

void CudaDevice::UnpinHostMemory(void* ptr) {
  Bind();
  if (cudaHostUnregister(ptr) != cudaSuccess) (void)cudaGetLastError();
}

Status CudaDevice::ReserveWorkspace(uint64_t bytes) {
  workspace_layout_.ReserveShared(bytes);
  return GrowWorkspace();
}

Result<uint64_t> CudaDevice::ReservePrivateWorkspace(uint64_t bytes) {
  const uint64_t offset = workspace_layout_.ReservePrivate(bytes);
  KEEL_RETURN_IF_ERROR(GrowWorkspace());
  return offset;
}

Status CudaDevice::GrowWorkspace() {
  const uint64_t bytes = workspace_layout_.Bytes();
  if (bytes <= workspace_bytes_) return Status::Ok();
  Bind();
  if (workspace_ != nullptr) {
    KEEL_CUDA_RETURN(cudaStreamSynchronize, stream_);
    DeviceFree(options_.device_allocator, workspace_);
    workspace_ = nullptr;
    workspace_bytes_ = 0;
  }
  KEEL_ASSIGN_OR_RETURN(workspace_, DeviceMalloc(options_.device_allocator, bytes, 256,
                                                 "for a library workspace on " + name_));
  workspace_bytes_ = bytes;
  return Status::Ok();
}

// ---- copies -------------------------------------------------------------------

Status CudaDevice::Copy(void* dst, const void* src, uint64_t bytes, cudaMemcpyKind kind, CopyDirection dir) {
  Bind();
  BeginOp();
  if (bytes != 0) KEEL_CUDA_RETURN(cudaMemcpyAsync, dst, src, bytes, kind, stream_);
  if (trace_hook_ != nullptr) [[unlikely]] {
    ReportTimed(DeviceOp{DeviceOpKind::kCopy, bytes, dst, dir, "cudaMemcpyAsync", {}});
  }
  return Status::Ok();
}
Status CudaDevice::CopyHostToDevice(void* dst, const void* src, uint64_t bytes) {
  return Copy(dst, src, bytes, cudaMemcpyHostToDevice, CopyDirection::kHostToDevice);
}
Status CudaDevice::CopyDeviceToHost(void* dst, const void* src, uint64_t bytes) {
  return Copy(dst, src, bytes, cudaMemcpyDeviceToHost, CopyDirection::kDeviceToHost);
}
Status CudaDevice::CopyDeviceToDevice(void* dst, const void* src, uint64_t bytes) {
  // cudaMemcpyDefault: with unified addressing the driver tells device from host
  // memory, so a host->host "copy" issued on this device also works.
  return Copy(dst, src, bytes, cudaMemcpyDefault, CopyDirection::kDeviceToDevice);
}

Status CudaDevice::Synchronize() {
  Bind();
  KEEL_CUDA_RETURN(cudaStreamSynchronize, stream_);
  return Status::Ok();
}

// ---- CUDA graphs --------------------------------------------------------------

Status CudaDevice::BeginRecording() {
  Bind();
  if (graph_exec_ != nullptr) {
    (void)cudaGraphExecDestroy(graph_exec_);
    graph_exec_ = nullptr;
  }
  KEEL_CUDA_RETURN(cudaStreamBeginCapture, stream_, cudaStreamCaptureModeThreadLocal);
  capturing_ = true;
  l2_prefetch_->BeginRecording();
  return Status::Ok();
}

void CudaDevice::ConstantsPlaced(const void* data, uint64_t bytes) {
  constants_ = static_cast<const char*>(data);
  constants_bytes_ = bytes;
}

void CudaDevice::BeforeGemm(const void* const* operands, const uint64_t* bytes, size_t count) {
  if (!capturing_ || constants_ == nullptr || options_.l2_prefetch <= 0) return;
  for (size_t i = 0; i < count; ++i) {
    const char* p = static_cast<const char*>(operands[i]);
    if (p < constants_ || p >= constants_ + constants_bytes_) continue;
    Result<CUfunction> fn = RuntimeFunction("keel_prefetch_l2");
    if (!fn.ok()) return;  // another GPU whose runtime module did not load: no prefetches
    if (l2_prefetch_->BeforeGemm(*fn, p, bytes[i])) {
      Report(DeviceOp{DeviceOpKind::kPrefetch, bytes[i], p, CopyDirection::kHostToHost, kPrefetchCall,
                      "keel_prefetch_l2"});
    }
    return;
  }
}

void CudaDevice::AfterGemm() {
  if (capturing_) l2_prefetch_->AfterGemm(stream_);
}

Status CudaDevice::EndRecording(bool keep) {
  Bind();
  l2_prefetch_->EndRecording(stream_);
  cudaGraph_t graph = nullptr;
  const cudaError_t e = cudaStreamEndCapture(stream_, &graph);
  capturing_ = false;
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    return keep ? CudaStatus(e, "cudaStreamEndCapture") : Status::Ok();
  }
  if (!keep) {
    (void)cudaGraphDestroy(graph);
    return Status::Ok();
  }
  // Library memsets as kernel nodes (graph_rewrite.h). Without the runtime kernels (another GPU
  // whose JIT failed) the graph keeps them.
  Result<CUfunction> fill = RuntimeFunction("keel_fill");
  const uint64_t slices = workspace_layout_.private_bytes;
  const Status rewritten =
      MemsetNodesAsKernels(graph, fill.ok() ? *fill : nullptr, slices != 0 ? private_workspace(0) : nullptr,
                           slices != 0 ? private_workspace(slices) : nullptr, nullptr, nullptr);
  if (!rewritten.ok()) {
    (void)cudaGraphDestroy(graph);
    return rewritten.WithContext("recording a run on " + name_);
  }
  const cudaError_t ie = cudaGraphInstantiate(&graph_exec_, graph, 0);
  (void)cudaGraphDestroy(graph);
  if (ie != cudaSuccess) {
    graph_exec_ = nullptr;
    return CudaStatus(ie, "cudaGraphInstantiate");
  }
  KEEL_CUDA_RETURN(cudaGraphUpload, graph_exec_, stream_);
  return Replay();  // the captured work has not run yet: this is the first run
}

Status CudaDevice::Replay() {
  if (graph_exec_ == nullptr) return FailedPrecondition("no recorded run to replay on " + name_);
  Bind();
  BeginOp();
  KEEL_CUDA_RETURN(cudaGraphLaunch, graph_exec_, stream_);
  EndLaunch("cudaGraphLaunch", "cuda_graph");
  return Status::Ok();
}

// ---- kernels ------------------------------------------------------------------

Status CudaDevice::LoadModule() {
  if (module_tried_) return module_status_;
  module_tried_ = true;
  module_status_ = [&]() -> Status {
    if (library_ == nullptr) return InvalidExecutable("cuda_generated kernels need a kernel library");
    const auto* cubin = static_cast<const unsigned char*>(library_->FindData("keel_cuda_cubin"));
    const auto* cubin_size = static_cast<const uint64_t*>(library_->FindData("keel_cuda_cubin_size"));
    const auto* ptx = static_cast<const char*>(library_->FindData("keel_cuda_ptx"));
    const auto* ptx_size = static_cast<const uint64_t*>(library_->FindData("keel_cuda_ptx_size"));
    Bind();
    std::string cubin_error;
    // The cubin is built for one architecture; the driver rejects it on another
    // (CUDA_ERROR_NO_BINARY_FOR_GPU) and the PTX is then JIT-compiled instead.
    if (cubin != nullptr && cubin_size != nullptr && *cubin_size != 0) {
      const CUresult r = Driver().ModuleLoadData(&module_, cubin);
      if (r == CUDA_SUCCESS) return Status::Ok();
      module_ = nullptr;
      cubin_error = CuStatus(r, "cuModuleLoadData(keel_cuda_cubin)").message();
    }
    if (ptx != nullptr && ptx_size != nullptr && *ptx_size != 0) {
      // The PTX text must be NUL-terminated for the JIT; the export need not be.
      std::string text(ptx, ptx + *ptx_size);
      const CUresult r = Driver().ModuleLoadData(&module_, text.c_str());
      if (r == CUDA_SUCCESS) return Status::Ok();
      module_ = nullptr;
      Status s = CuStatus(r, "cuModuleLoadData(keel_cuda_ptx)");
      return cubin_error.empty() ? s : s.WithContext(cubin_error);
    }
    if (!cubin_error.empty()) return DeviceError(cubin_error + " and the library has no PTX to fall back on");
    return InvalidExecutable("kernel library " + library_->path() +
                             " exports no CUDA code (keel_cuda_cubin / keel_cuda_ptx)");
  }();
  return module_status_;
}

Result<KernelCallable> CudaDevice::ResolveKernel(const KernelEntry& k) {
  Bind();
  std::unique_ptr<CudaLaunchState> state;
  if (k.kind == static_cast<uint8_t>(ser::KernelKind::kCudaGenerated)) {
    KEEL_RETURN_IF_ERROR(LoadModule().WithContext("kernel " + k.name));
    CUfunction fn = nullptr;
    const CUresult r = Driver().ModuleGetFunction(&fn, module_, k.name.c_str());
    if (r == CUDA_ERROR_NOT_FOUND) {
      return NotFound("CUDA kernel " + k.name + " is not in the kernel library's module (" +
                      (library_ ? library_->path() : std::string("?")) + ")");
    }
    KEEL_RETURN_IF_ERROR(CuStatus(r, "cuModuleGetFunction").WithContext("kernel " + k.name));
    if (k.shared_bytes > 48 * 1024) {
      KEEL_RETURN_IF_ERROR(CuStatus(Driver().FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                       static_cast<int>(k.shared_bytes)),
                                    "cuFuncSetAttribute")
                               .WithContext("kernel " + k.name));
    }
    state = std::make_unique<GeneratedKernel>(*this, k, fn, UseProgrammaticLaunch(options_.pdl, library_, compute_capability()));
  } else if (k.kind == static_cast<uint8_t>(ser::KernelKind::kLibrary)) {
    namespace lo = ser::library_ops;
    if (k.library_op == lo::kCublasGemm) {
      KEEL_ASSIGN_OR_RETURN(state, MakeCublasGemm(*this, k));
    } else if (k.library_op == lo::kCudnnConv2d || k.library_op == lo::kCudnnConvTranspose) {
      KEEL_ASSIGN_OR_RETURN(state, MakeCudnnConv2d(*this, k));
    } else if (k.library_op == lo::kCudnnPool2d) {
      KEEL_ASSIGN_OR_RETURN(state, MakeCudnnPool2d(*this, k));
    } else if (k.library_op == lo::kKeelAttention) {
      KEEL_ASSIGN_OR_RETURN(state, MakeKeelAttention(*this, k));
    } else if (k.library_op == lo::kKeelConv2d) {
      KEEL_ASSIGN_OR_RETURN(state, MakeKeelConv(*this, k));
    } else {
      return Unsupported("kernel " + k.name + ": unknown library op \"" + k.library_op + "\" on " + name_);
    }
  } else {
    return Unsupported("kernel " + k.name + " of kind " + ser::KernelKindName(static_cast<ser::KernelKind>(k.kind)) +
                       " cannot run on " + name_);
  }
  KernelCallable c;
  c.launch = &CudaLaunchState::Thunk;
  c.state = state.get();
  states_.push_back(std::move(state));
  return c;
}

CUresult CudaDevice::LaunchRuntimeKernel(CUfunction fn, unsigned grid, unsigned block, void** params,
                                         unsigned shared) {
  const CUstream s = reinterpret_cast<CUstream>(stream_);
  // Only the sm_90 cubin's kernels wait for their predecessor (the compute_80
  // PTX fallback cannot): programmatic launch needs the cubin.
  if (!runtime_cubin_ || !ProgrammaticLaunchAvailable(options_.pdl, compute_capability())) {
    return Driver().LaunchKernel(fn, grid, 1, 1, block, 1, 1, shared, s, params, nullptr);
  }
  const unsigned grid3[3] = {grid, 1, 1}, block3[3] = {block, 1, 1};
  cuda_lib::ProgrammaticLaunch pl(grid3, block3, shared, s);
  return Driver().LaunchKernelEx(&pl.cfg, fn, params, nullptr);
}

Result<CUfunction> CudaDevice::RuntimeFunction(const char* name) {
  Bind();
  if (runtime_module_ == nullptr) {
    CUresult r = CUDA_ERROR_INVALID_IMAGE;
    if (kKeelRuntimeCubin_size != 0) r = Driver().ModuleLoadData(&runtime_module_, kKeelRuntimeCubin);
    runtime_cubin_ = r == CUDA_SUCCESS;
    if (r != CUDA_SUCCESS && kKeelRuntimePtx_size != 0) {
      // Another architecture: the driver JIT-compiles the PTX (NUL-terminated).
      std::string text(reinterpret_cast<const char*>(kKeelRuntimePtx), kKeelRuntimePtx_size);
      runtime_module_ = nullptr;
      r = Driver().ModuleLoadData(&runtime_module_, text.c_str());
    }
    if (r != CUDA_SUCCESS) {
      runtime_module_ = nullptr;
      return CuStatus(r, "cuModuleLoadData(keel runtime kernels)");
    }
  }
  CUfunction fn = nullptr;
  const CUresult r = Driver().ModuleGetFunction(&fn, runtime_module_, name);
  if (r == CUDA_ERROR_NOT_FOUND) return NotFound(std::string("runtime CUDA kernel ") + name + " does not exist");
  KEEL_RETURN_IF_ERROR(CuStatus(r, "cuModuleGetFunction").WithContext(name));
  return fn;
}

// ---- library handles ----------------------------------------------------------

Result<cublasLtHandle_t> CudaDevice::LtHandle() {
  if (lt_ == nullptr) {
    Bind();
    KEEL_CUBLAS_RETURN(cublasLtCreate, &lt_);
  }
  return lt_;
}

#ifdef KEEL_HAVE_CUDNN
Result<cudnnHandle_t> CudaDevice::CudnnHandle() {
  if (cudnn_ == nullptr) {
    Bind();
    KEEL_CUDNN_RETURN(cudnnCreate, &cudnn_);
    KEEL_CUDNN_RETURN(cudnnSetStream, cudnn_, stream_);
  }
  return cudnn_;
}
#endif

}  // namespace keel::vm_internal
