// vm/cuda/library_calls.h — the one source of the library-kernel calls that
// both the VM and keelc --emit=cuda-host programs make: element types, the
// call-status type, and programmatic dependent launch set-up.
//
// Why a separate, self-contained layer: the emitted host program must make the
// VM's CUDA calls with the VM's arguments, call for call, or its outputs and
// trace stop matching keel-run's. Rather than restating the VM's set-up in the
// emitter's string literals, the files library_calls*.h are compiled into the
// VM (vm/cuda/cublas_kernels.cc, cudnn_kernels.cc, cudnn_engine_conv.cc,
// autotune.cc, cuda_device.cc include them) and pasted verbatim into every emitted program at keelc's build time
// (compiler/driver/cuda_host_emitter_embed.cmake; only the lines including
// each other, `#include "vm/cuda/library_calls...`, are dropped there, as the
// program holds them all in order). So they depend on nothing but the CUDA
// headers and the C++ standard library: no Status, no VM types, no driver API
// calls (the VM reaches libcuda through vm/cuda/cuda_driver.h's function
// pointers, the program links it: launches are passed in as callables).
// Include guards, not #pragma once: in the program this text is the main file.
//
// Errors: functions return CallStatus (the failing call's name and library
// code); the VM turns it into a Status (vm/cuda/cuda_errors.h LibraryCallStatus),
// the program prints it and exits. Thread-safety: pure functions, or functions
// on caller-owned descriptors (one thread per descriptor set, as the VM).
#ifndef KEEL_VM_CUDA_LIBRARY_CALLS_H_
#define KEEL_VM_CUDA_LIBRARY_CALLS_H_

#include <cuda.h>
#include <library_types.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>

namespace keel::cuda_lib {

// A library call's outcome: ok, or which library failed, its status code and
// the call's name (a string literal).
struct CallStatus {
  enum Library : int { kOk = 0, kCublas = 1, kCudnn = 2, kCuda = 3 };
  Library library = kOk;
  int code = 0;
  const char* call = "";
  bool ok() const { return library == kOk; }
};

// Returns the CallStatus from the enclosing function when `expr` (a cuBLAS /
// cuDNN call) fails; `fn` names it.
#define KEEL_LIB_CUBLAS(fn, ...)                                                                           \
  do {                                                                                                      \
    const cublasStatus_t keel_s_ = fn(__VA_ARGS__);                                                         \
    if (keel_s_ != CUBLAS_STATUS_SUCCESS) {                                                                 \
      return ::keel::cuda_lib::CallStatus{::keel::cuda_lib::CallStatus::kCublas, static_cast<int>(keel_s_), \
                                          #fn};                                                             \
    }                                                                                                       \
  } while (0)
#define KEEL_LIB_CUDNN(fn, ...)                                                                           \
  do {                                                                                                     \
    const cudnnStatus_t keel_s_ = fn(__VA_ARGS__);                                                         \
    if (keel_s_ != CUDNN_STATUS_SUCCESS) {                                                                 \
      return ::keel::cuda_lib::CallStatus{::keel::cuda_lib::CallStatus::kCudnn, static_cast<int>(keel_s_), \
                                          #fn};                                                            \
    }                                                                                                      \
  } while (0)
#define KEEL_LIB_RETURN_IF_FAILED(expr)              \
  do {                                               \
    const ::keel::cuda_lib::CallStatus keel_c_ = (expr); \
    if (!keel_c_.ok()) return keel_c_;               \
  } while (0)

// ---- element types ----
// The library kernels (cublas.gemm, cudnn.conv2d, cudnn.pool2d) take every
// tensor in one of these; half types always compute in f32. The single table
// from Keel's dtype names (DataTypeName) to the libraries' types: the VM's
// vm/cuda/library_dtypes.h and the emitted program both look types up here.
enum class ElementType : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

struct ElementTypeInfo {
  ElementType type;
  const char* name;              // Keel's dtype name; also the suffix of keel_bias_act_<name>
  cudaDataType_t cuda;           // cuBLASLt matrix / bias type
  uint32_t bytes;                // one element
  bool half;                     // f16 or bf16
  const char* bias_act_launch;   // the epilogue launch's call name in errors
};

inline const ElementTypeInfo& InfoOf(ElementType t) {
  static const ElementTypeInfo kTable[] = {
      {ElementType::kF32, "f32", CUDA_R_32F, 4, false, "cuLaunchKernel(keel_bias_act_f32)"},
      {ElementType::kF16, "f16", CUDA_R_16F, 2, true, "cuLaunchKernel(keel_bias_act_f16)"},
      {ElementType::kBF16, "bf16", CUDA_R_16BF, 2, true, "cuLaunchKernel(keel_bias_act_bf16)"},
  };
  return kTable[static_cast<int>(t)];
}

// The element type named `name` ("f32", "f16", "bf16"); false for any other.
inline bool ElementTypeNamed(const char* name, ElementType* out) {
  for (ElementType t : {ElementType::kF32, ElementType::kF16, ElementType::kBF16}) {
    if (std::strcmp(InfoOf(t).name, name) == 0) {
      *out = t;
      return true;
    }
  }
  return false;
}

// ---- programmatic dependent launch ----
// Launches as programmatic dependents (the GPU may start a kernel while its
// predecessor drains; the kernel waits with griddepcontrol.wait) need sm_90+,
// cuLaunchKernelEx and the switch on (VmOptions::cuda_pdl, KEEL_CUDA_PDL != 0).
inline bool ProgrammaticLaunchAvailable(bool enabled, int compute_capability, bool have_launch_ex) {
  return enabled && compute_capability >= 90 && have_launch_ex;
}

// The cuLaunchKernelEx configuration of a programmatic dependent launch; `attr`
// must outlive the launch (cfg points at it).
struct ProgrammaticLaunch {
  CUlaunchAttribute attr{};
  CUlaunchConfig cfg{};
  ProgrammaticLaunch(const unsigned grid[3], const unsigned block[3], unsigned shared_bytes, CUstream stream) {
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    cfg.gridDimX = grid[0];
    cfg.gridDimY = grid[1];
    cfg.gridDimZ = grid[2];
    cfg.blockDimX = block[0];
    cfg.blockDimY = block[1];
    cfg.blockDimZ = block[2];
    cfg.sharedMemBytes = shared_bytes;
    cfg.hStream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  }
  ProgrammaticLaunch(const ProgrammaticLaunch&) = delete;
  ProgrammaticLaunch& operator=(const ProgrammaticLaunch&) = delete;
};

// ---- the library workspace ----
// One device allocation per VM (and per program) holds every library call's scratch. Its
// shared part, at the start, serves any call (calls run one after another on the stream).
// After it come private slices, each used by one call alone: a clear the library records
// into its own slice may then run before the calls ahead of it (vm/cuda/graph_rewrite.h).
// The allocation is replaced, never copied, when a reservation outgrows it (nothing in a
// workspace outlives a call); slice offsets stay valid, their addresses are taken at launch.
struct WorkspaceLayout {
  uint64_t shared = 0;         // the shared part's reservation
  uint64_t private_bytes = 0;  // the private slices', each a multiple of 256 bytes
  uint64_t PrivateStart() const { return (shared + 255) / 256 * 256; }
  // The allocation's size: the shared part alone while there are no slices.
  uint64_t Bytes() const { return private_bytes == 0 ? shared : PrivateStart() + private_bytes; }
  void ReserveShared(uint64_t bytes) { shared = bytes > shared ? bytes : shared; }
  // A slice of `bytes`; returns its offset from PrivateStart().
  uint64_t ReservePrivate(uint64_t bytes) {
    const uint64_t offset = private_bytes;
    private_bytes += (bytes + 255) / 256 * 256;
    return offset;
  }
};

}  // namespace keel::cuda_lib

#endif  // KEEL_VM_CUDA_LIBRARY_CALLS_H_
