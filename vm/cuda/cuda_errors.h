// vm/cuda/cuda_errors.h — CUDA runtime/driver, cuBLAS and cuDNN error codes as Status.
//
// Every failing vendor call in vm/cuda/ becomes a Status whose message names the
// call and the library's own error string ("cudaMemcpyAsync failed: invalid
// argument"), with kDeviceError, or kOutOfMemory for allocation failures.
// Header-only, stateless, thread-safe.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <string>

#include "keel/status.h"
#include "vm/cuda/cuda_driver.h"
#include "vm/cuda/library_calls.h"

#ifdef KEEL_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace keel::vm_internal {

inline Status CudaStatus(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return Status::Ok();
  std::string m = std::string(call) + " failed: " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
  if (e == cudaErrorMemoryAllocation) return OutOfMemory(std::move(m));
  return DeviceError(std::move(m));
}

inline Status CuStatus(CUresult e, const char* call) {
  if (e == CUDA_SUCCESS) return Status::Ok();
  const char* s = nullptr;
  const char* n = nullptr;
  if (Driver().GetErrorString != nullptr) Driver().GetErrorString(e, &s);
  if (Driver().GetErrorName != nullptr) Driver().GetErrorName(e, &n);
  std::string m = std::string(call) + " failed: " + (s ? s : "unknown error") + " (" + (n ? n : "?") + ")";
  if (e == CUDA_ERROR_OUT_OF_MEMORY) return OutOfMemory(std::move(m));
  return DeviceError(std::move(m));
}

inline Status CublasStatus(cublasStatus_t e, const char* call) {
  if (e == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  std::string m = std::string(call) + " failed: " + cublasGetStatusString(e);
  if (e == CUBLAS_STATUS_ALLOC_FAILED) return OutOfMemory(std::move(m));
  if (e == CUBLAS_STATUS_NOT_SUPPORTED) return Unsupported(std::move(m));
  return DeviceError(std::move(m));
}

#ifdef KEEL_HAVE_CUDNN
inline Status CudnnStatus(cudnnStatus_t e, const char* call) {
  if (e == CUDNN_STATUS_SUCCESS) return Status::Ok();
  std::string m = std::string(call) + " failed: " + cudnnGetErrorString(e);
  if (e == CUDNN_STATUS_NOT_SUPPORTED) return Unsupported(std::move(m));
  return DeviceError(std::move(m));
}
#endif

// A shared library call's outcome (vm/cuda/library_calls.h) as the Status the
// VM's own calls give for the same failure.
inline Status LibraryCallStatus(const cuda_lib::CallStatus& c) {
  switch (c.library) {
    case cuda_lib::CallStatus::kOk: return Status::Ok();
    case cuda_lib::CallStatus::kCublas: return CublasStatus(static_cast<cublasStatus_t>(c.code), c.call);
#ifdef KEEL_HAVE_CUDNN
    case cuda_lib::CallStatus::kCudnn: return CudnnStatus(static_cast<cudnnStatus_t>(c.code), c.call);
#endif
    case cuda_lib::CallStatus::kCuda: return CuStatus(static_cast<CUresult>(c.code), c.call);
    default: break;
  }
  return DeviceError(std::string(c.call) + " failed (library code " + std::to_string(c.code) + ")");
}

}  // namespace keel::vm_internal

// KEEL_CUDA_RETURN(cudaMemcpyAsync, dst, src, n, kind, stream): calls fn(args...) and
// returns the error Status (naming fn) from the enclosing function on failure.
#define KEEL_CUDA_RETURN(fn, ...) KEEL_RETURN_IF_ERROR(::keel::vm_internal::CudaStatus(fn(__VA_ARGS__), #fn))
#define KEEL_CU_RETURN(fn, ...) \
  KEEL_RETURN_IF_ERROR(::keel::vm_internal::CuStatus(::keel::vm_internal::Driver().fn(__VA_ARGS__), "cu" #fn))
#define KEEL_CUBLAS_RETURN(fn, ...) KEEL_RETURN_IF_ERROR(::keel::vm_internal::CublasStatus(fn(__VA_ARGS__), #fn))
#define KEEL_CUDNN_RETURN(fn, ...) KEEL_RETURN_IF_ERROR(::keel::vm_internal::CudnnStatus(fn(__VA_ARGS__), #fn))
