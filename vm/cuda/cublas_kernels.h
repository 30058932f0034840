// vm/cuda/cublas_kernels.h — "cublas.gemm" library kernels (serialization/library_ops.h).
//
// MakeCublasGemm validates the kernel's attributes and arguments, builds the
// cuBLASLt matmul descriptor and matrix layouts for the row-major problem (as
// the column-major transposed problem, see library_ops.h), asks the cuBLASLt
// heuristics for an algorithm once (for 16-byte aligned pointers and, as a
// fallback, for 4-byte aligned ones), reserves the algorithm's workspace in the
// device's workspace buffer, and returns the launch state that calls
// cublasLtMatmul on the device's stream at every invoke. The "row" bias and the
// relu / gelu_tanh epilogue are fused through cuBLASLt epilogues; a "full" bias
// is cuBLASLt's C matrix with beta. A, B, bias and Y are all f32, all f16 or
// all bf16 (the arguments' serialized dtypes, vm/cuda/library_dtypes.h). Compute
// type is FP32 with f32 alpha/beta in every case: half operands run on the
// tensor cores accumulating in f32; f32 operands use TF32 only with
// DeviceOptions::allow_tf32. The fallback algorithm needs one element's
// alignment (4 bytes in f32, 2 in half).
//
// Errors: kInvalidExecutable for bad attributes/arguments, kUnsupported when no
// algorithm exists or a combination is not implemented, kDeviceError for cuBLAS
// failures (naming the call). Thread-safety: as CudaDevice.
#pragma once

#include <memory>

#include "vm/cuda/cuda_device.h"
#include "vm/executable.h"

namespace keel::vm_internal {

Result<std::unique_ptr<CudaLaunchState>> MakeCublasGemm(CudaDevice& dev, const KernelEntry& kernel);

}  // namespace keel::vm_internal
