// compiler/driver/cuda_host_emitter_prelude.cc — the fixed part of every program
// that keelc --emit=cuda-host writes (see cuda_host_emitter.h).
//
// The prelude holds what does not depend on the model: includes, the checking
// macros, the memory helpers that mirror the VM's devices (vm/cuda/cuda_device.cc
// Allocate/Free, vm/cpu/cpu_device.cc Allocate), the trace
// printer, files, the command line, the kernel library and the device. The VM's
// runtime kernels' source and the library-kernel prelude
// (cuda_host_emitter_prelude_library.cc) follow it, then the model-specific part
// (kernel resolution with literal descriptors, arenas, constants, the instruction
// stream). Keep it in step with vm/: the generated program must make the VM's
// calls with the VM's arguments, or its outputs stop being bit-identical.
#include <string>

namespace keel::driver {

const char* CudaHostPrelude() {
  return R"KEELPRELUDE(
#include <cublasLt.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

// ---- checked calls: every failing call is printed with its text and the library's error string ----
#define CUDA_CHECK(call)                                                                              \
  do {                                                                                                \
    const cudaError_t e_ = (call);                                                                    \
    if (e_ != cudaSuccess) {                                                                          \
      std::fflush(stdout);                                                                            \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,                  \
                   cudaGetErrorString(e_), cudaGetErrorName(e_));                                     \
      std::exit(1);                                                                                   \
    }                                                                                                 \
  } while (0)
#define CU_CHECK(call)                                                                                \
  do {                                                                                                \
    const CUresult e_ = (call);                                                                       \
    if (e_ != CUDA_SUCCESS) {                                                                         \
      std::fflush(stdout);                                                                            \
      const char* s_ = nullptr;                                                                       \
      cuGetErrorString(e_, &s_);                                                                      \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, s_ ? s_ : "?");       \
      std::exit(1);                                                                                   \
    }                                                                                                 \
  } while (0)
#define CUBLAS_CHECK(call)                                                                            \
  do {                                                                                                \
    const cublasStatus_t e_ = (call);                                                                 \
    if (e_ != CUBLAS_STATUS_SUCCESS) {                                                                \
      std::fflush(stdout);                                                                            \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                       \
                   cublasLtGetStatusString(e_));                                                        \
      std::exit(1);                                                                                   \
    }                                                                                                 \
  } while (0)
#define CUDNN_CHECK(call)                                                                             \
  do {                                                                                                \
    const cudnnStatus_t e_ = (call);                                                                  \
    if (e_ != CUDNN_STATUS_SUCCESS) {                                                                 \
      std::fflush(stdout);                                                                            \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                       \
                   cudnnGetErrorString(e_));                                                          \
      std::exit(1);                                                                                   \
    }                                                                                                 \
  } while (0)

[[maybe_unused]] static void Die(const std::string& message) {
  std::fflush(stdout);  // keep the trace and the error in order in a shared log
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::exit(1);
}

// ---- process state (one device, one stream: the VM's CudaDevice) ----
[[maybe_unused]] static CUcontext g_ctx = nullptr;
[[maybe_unused]] static cudaStream_t g_stream = nullptr;
[[maybe_unused]] static CUmodule g_module = nullptr;
[[maybe_unused]] static cublasLtHandle_t g_lt = nullptr;
[[maybe_unused]] static cudnnHandle_t g_cudnn = nullptr;
[[maybe_unused]] static void* g_workspace = nullptr;  // the library workspace (ReserveWorkspace)
[[maybe_unused]] static uint64_t g_workspace_bytes = 0;
[[maybe_unused]] static int g_cc = 0;         // compute capability, e.g. 90 (CudaDevice::compute_capability)
[[maybe_unused]] static int g_num_sms = 132;  // multiprocessors (CudaDevice::num_sms)
[[maybe_unused]] static bool g_allow_tf32 = false;  // VmOptions::allow_tf32 (keel-run --allow-tf32)
[[maybe_unused]] static bool g_trace = false;       // print keel-run --trace's lines (without times and addresses)

// cudaMalloc/cudaFree counts: the VM's set-up (what keel-run --trace reports as "setup": the
// conv kernels' zero biases, arenas, constants, inputs), the library workspace (not traced by
// the VM), and the run.
struct MallocCount {
  uint64_t mallocs = 0, bytes = 0, frees = 0;
};
[[maybe_unused]] static MallocCount g_load, g_lib, g_run;
[[maybe_unused]] static MallocCount* g_count = &g_load;
[[maybe_unused]] static std::vector<std::pair<void*, void*>> g_over_aligned;  // aligned pointer -> cudaMalloc base

// CudaDevice::Allocate: cudaMalloc gives 256-byte aligned blocks; larger alignments over-allocate.
[[maybe_unused]] static void* DeviceMalloc(uint64_t bytes, uint64_t alignment) {
  const uint64_t extra = alignment > 256 ? alignment : 0;
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, (bytes == 0 ? 1 : bytes) + extra));
  g_count->mallocs += 1;
  g_count->bytes += bytes;
  if (extra == 0) return p;
  void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(p) + alignment - 1) &
                                          ~static_cast<uintptr_t>(alignment - 1));
  g_over_aligned.emplace_back(aligned, p);
  return aligned;
}

// CudaDevice::Free.
[[maybe_unused]] static void DeviceFree(void* ptr) {
  if (ptr == nullptr) return;
  void* base = ptr;
  for (size_t i = 0; i < g_over_aligned.size(); ++i) {
    if (g_over_aligned[i].first == ptr) {
      base = g_over_aligned[i].second;
      g_over_aligned.erase(g_over_aligned.begin() + static_cast<long>(i));
      break;
    }
  }
  g_count->frees += 1;
  CUDA_CHECK(cudaFree(base));
}

// CpuDevice::Allocate: aligned_alloc of a multiple of the alignment (at least 64).
[[maybe_unused]] static void* HostMalloc(uint64_t bytes, uint64_t alignment) {
  if (alignment < 64) alignment = 64;
  uint64_t rounded = (bytes + alignment - 1) / alignment * alignment;
  if (rounded == 0) rounded = alignment;
  void* p = std::aligned_alloc(alignment, rounded);
  if (p == nullptr) Die("aligned_alloc of " + std::to_string(bytes) + " bytes failed");
  return p;
}

// The VM's library handles are created on first use (CudaDevice::LtHandle / CudnnHandle).
[[maybe_unused]] static cublasLtHandle_t LtHandle() {
  if (g_lt == nullptr) CUBLAS_CHECK(cublasLtCreate(&g_lt));
  return g_lt;
}
[[maybe_unused]] static cudnnHandle_t CudnnHandle() {
  if (g_cudnn == nullptr) {
    CUDNN_CHECK(cudnnCreate(&g_cudnn));
    CUDNN_CHECK(cudnnSetStream(g_cudnn, g_stream));
  }
  return g_cudnn;
}

// ---- trace: keel-run --trace's line for one instruction, less its times and addresses ----
[[maybe_unused]] static void Trace(unsigned index, const char* opcode, const char* debug, const std::string& what) {
  if (!g_trace) return;
  std::printf("trace #%u %s", index, opcode);
  if (debug[0] != '\0') std::printf(" [%s]", debug);
  std::printf("%s\n", what.c_str());
}
// keel-run --trace's set-up line (an allocation or upload Create makes), less the address.
[[maybe_unused]] static void TraceSetup(const char* what, const std::string& op) {
  if (g_trace) std::printf("trace setup [%s]%s\n", what, op.c_str());
}

// ---- files ----
struct MappedFile {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
};
// The executable is mapped read-only, as the VM maps it: weights are read in place at
// the offsets baked into this program (data segment offset + constant offset).
[[maybe_unused]] static MappedFile MapFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) Die("cannot open " + path);
  struct stat st {};
  if (fstat(fd, &st) != 0) Die("cannot stat " + path);
  MappedFile f;
  f.size = static_cast<uint64_t>(st.st_size);
  void* p = mmap(nullptr, f.size == 0 ? 1 : f.size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) Die("cannot map " + path);
  f.data = static_cast<const uint8_t*>(p);
  return f;
}

[[maybe_unused]] static std::vector<uint8_t> ReadWholeFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) Die("cannot read " + path);
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + n);
  std::fclose(f);
  return bytes;
}

[[maybe_unused]] static std::string SafeFileName(const std::string& name) {
  std::string s = name.empty() ? "output" : name;
  for (char& c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  }
  return s;
}

// keel-run's deterministic fill for inputs not given (values in [-0.5, 0.5) for floats).
// dtype codes as in executable.fbs: f32 0, f64 3, i32 6, i64 7.
[[maybe_unused]] static void FillPattern(int dtype, uint8_t* buf, uint64_t bytes) {
  const uint64_t es = dtype == 3 || dtype == 7 ? 8 : dtype == 0 || dtype == 6 ? 4 : 1;
  const uint64_t n = bytes / es;
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t k = static_cast<int64_t>((i * 37) % 101);
    switch (dtype) {
      case 0: reinterpret_cast<float*>(buf)[i] = static_cast<float>(k) / 101.0f - 0.5f; break;
      case 3: reinterpret_cast<double*>(buf)[i] = static_cast<double>(k) / 101.0 - 0.5; break;
      case 6: reinterpret_cast<int32_t*>(buf)[i] = static_cast<int32_t>(k % 7); break;
      case 7: reinterpret_cast<int64_t*>(buf)[i] = k % 7; break;
      default: break;
    }
  }
  if (dtype != 0 && dtype != 3 && dtype != 6 && dtype != 7) {
    for (uint64_t i = 0; i < bytes; ++i) buf[i] = static_cast<uint8_t>((i * 37) % 7);
  }
}

// ---- command line ----
struct Options {
  std::string keel, library, output_dir, tuning_file;
  std::vector<std::pair<std::string, std::string>> inputs;  // name=file
};

[[maybe_unused]] static Options ParseArgs(int argc, char** argv, const char* default_keel, const char* default_library) {
  Options o;
  o.keel = default_keel;
  o.library = default_library;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--keel") o.keel = value();
    else if (a == "--library") o.library = value();
    else if (a == "--output-dir") o.output_dir = value();
    else if (a == "--tuning-file") o.tuning_file = value();
    else if (a == "--trace") g_trace = true;
    else if (a == "--allow-tf32") g_allow_tf32 = true;
    else if (a == "--no-tf32") g_allow_tf32 = false;
    else if (a == "--input") {
      const std::string v = value();
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) Die("--input expects name=file.bin, got " + v);
      o.inputs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: %s [--keel model.keel] [--library model.keel.so] [--input name=file.bin ...]\n"
                  "          [--output-dir DIR] [--trace] [--allow-tf32|--no-tf32] [--tuning-file PATH]\n"
                  "  --tuning-file  read (never write) the cuDNN/cuBLASLt choices keel-run recorded there\n"
                  "                 (vm/cuda/autotune.h); without it: the heuristics' choices, as\n"
                  "                 keel-run with KEEL_CUDA_AUTOTUNE=0. KEEL_CUDA_PDL=0: plain launches.\n",
                  argv[0]);
      std::exit(0);
    } else {
      Die("unknown argument " + a + " (see --help)");
    }
  }
  return o;
}

// ---- the kernel library and the device ----
[[maybe_unused]] static void* g_library = nullptr;

// The kernel library (vm/kernel_library.cc): ABI version and library id checked.
[[maybe_unused]] static void OpenLibrary(const std::string& path, const char* library_id) {
  g_library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (g_library == nullptr) Die("cannot open kernel library " + path + ": " + dlerror());
  const auto* abi = static_cast<const uint32_t*>(dlsym(g_library, "keel_kernel_abi_version"));
  const char* id = static_cast<const char*>(dlsym(g_library, "keel_kernel_library_id"));
  if (abi == nullptr || *abi != 1u || id == nullptr || std::strcmp(id, library_id) != 0) {
    Die("kernel library " + path + " does not match this program (ABI 1, id " + library_id + ")");
  }
}

// The library's CUDA module: the cubin, else its PTX JIT-compiled (CudaDevice::LoadModule).
[[maybe_unused]] static void LoadModule() {
  const auto* cubin = static_cast<const unsigned char*>(dlsym(g_library, "keel_cuda_cubin"));
  const auto* cubin_size = static_cast<const uint64_t*>(dlsym(g_library, "keel_cuda_cubin_size"));
  const auto* ptx = static_cast<const char*>(dlsym(g_library, "keel_cuda_ptx"));
  const auto* ptx_size = static_cast<const uint64_t*>(dlsym(g_library, "keel_cuda_ptx_size"));
  if (cubin != nullptr && cubin_size != nullptr && *cubin_size != 0 &&
      cuModuleLoadData(&g_module, cubin) == CUDA_SUCCESS) {
    return;
  }
  g_module = nullptr;
  if (ptx == nullptr || ptx_size == nullptr || *ptx_size == 0) Die("the kernel library has no usable CUDA code");
  const std::string text(ptx, ptx + *ptx_size);  // NUL-terminated for the JIT
  CU_CHECK(cuModuleLoadData(&g_module, text.c_str()));
}

// CudaDevice::Init: the primary context of device 0 and one non-blocking stream.
[[maybe_unused]] static void InitDevice() {
  CU_CHECK(cuInit(0));
  CUdevice dev = 0;
  CU_CHECK(cuDeviceGet(&dev, 0));
  CU_CHECK(cuDevicePrimaryCtxRetain(&g_ctx, dev));
  CU_CHECK(cuCtxSetCurrent(g_ctx));
  CUDA_CHECK(cudaSetDevice(0));
  int major = 0, minor = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
  g_cc = major * 10 + minor;
  CUDA_CHECK(cudaDeviceGetAttribute(&g_num_sms, cudaDevAttrMultiProcessorCount, 0));
  CUDA_CHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
}

// ---- inputs and outputs (the tables come with the model) ----
struct ParamInfo {
  const char* name;
  int dtype;  // executable.fbs numbering
  uint64_t bytes;
  bool host;
};
struct ResultInfo {
  const char* name;
  const char* shape;
  int dtype;
  uint64_t bytes;
  bool host;
};

// keel-run's SetInput for every parameter: the file's bytes (or the pattern) copied into the
// VM's input buffer (a host copy, or an upload and a wait).
[[maybe_unused]] static void ReadInputsInto(const Options& o, const ParamInfo* params, size_t n,
                                            uint8_t* const* buffers) {
  for (const auto& in : o.inputs) {
    bool known = false;
    for (size_t i = 0; i < n; ++i) known = known || in.first == params[i].name;
    if (!known) Die("no input named " + in.first);
  }
  for (size_t i = 0; i < n; ++i) {
    const ParamInfo& p = params[i];
    std::vector<uint8_t> bytes;
    bool given = false;
    for (const auto& in : o.inputs) {
      if (in.first != p.name) continue;
      bytes = ReadWholeFile(in.second);
      given = true;
      if (bytes.size() != p.bytes) {
        Die("input " + in.first + ": file " + in.second + " has " + std::to_string(bytes.size()) +
            " bytes, expected " + std::to_string(p.bytes));
      }
    }
    if (!given) {
      bytes.assign(p.bytes, 0);
      FillPattern(p.dtype, bytes.data(), p.bytes);
      std::printf("input %s: not given, filled with a deterministic pattern\n", p.name);
    }
    if (p.host) {
      if (p.bytes != 0) std::memcpy(buffers[i], bytes.data(), p.bytes);
    } else {
      CUDA_CHECK(cudaMemcpyAsync(buffers[i], bytes.data(), p.bytes, cudaMemcpyHostToDevice, g_stream));
      CUDA_CHECK(cudaStreamSynchronize(g_stream));
    }
  }
}

// keel-run's output handling: a checksum line per output, and <output-dir>/<name>.bin.
[[maybe_unused]] static void WriteOutputsFrom(const Options& o, const ResultInfo* results, size_t n,
                                              uint8_t* const* outputs) {
  for (size_t j = 0; j < n; ++j) {
    const ResultInfo& r = results[j];
    std::vector<uint8_t> host(r.bytes);
    if (r.host) {
      if (r.bytes != 0) std::memcpy(host.data(), outputs[j], r.bytes);
    } else {
      CUDA_CHECK(cudaMemcpyAsync(host.data(), outputs[j], r.bytes, cudaMemcpyDeviceToHost, g_stream));
      CUDA_CHECK(cudaStreamSynchronize(g_stream));
    }
    if (r.dtype == 0) {
      double sum = 0, l2 = 0;
      for (uint64_t i = 0; i < r.bytes / 4; ++i) {
        float v;
        std::memcpy(&v, host.data() + 4 * i, 4);
        sum += v;
        l2 += double(v) * v;
      }
      std::printf("output %s %s f32 sum=%.6g l2=%.6g\n", r.name, r.shape, sum, std::sqrt(l2));
    } else {
      std::printf("output %s %s (dtype %d)\n", r.name, r.shape, r.dtype);
    }
    if (o.output_dir.empty()) continue;
    std::error_code ec;  // keel-run creates the folder too
    std::filesystem::create_directories(o.output_dir, ec);
    if (ec) Die("cannot create " + o.output_dir + ": " + ec.message());
    const std::string path = o.output_dir + "/" + SafeFileName(r.name) + ".bin";
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr || std::fwrite(host.data(), 1, host.size(), f) != host.size()) Die("cannot write " + path);
    std::fclose(f);
  }
}
)KEELPRELUDE";
}

}  // namespace keel::driver
