// vm/cuda/library_dtypes.h — the element types the library kernels (cuBLASLt,
// cuDNN) take, and the one mapping from Keel's dtype to the libraries' types.
//
// Library kernels (cublas.gemm, cudnn.conv2d, cudnn.pool2d) run in f32, f16 or
// bf16: the dtype is the one serialized with each kernel argument
// (KernelArgEntry::dtype), never an attribute. LibraryDTypeOf is the single
// source of truth for Keel dtype -> library type in the VM: it looks the dtype's
// name up in cuda_lib's element-type table (vm/cuda/library_calls.h, shared
// with keelc --emit=cuda-host programs), which maps to cudaDataType_t (cuBLASLt
// matrices and bias) and cudnnDataType_t. Half types always compute
// in f32 (cuBLASLt CUBLAS_COMPUTE_32F with f32 scale; cuDNN convolution compute
// type CUDNN_DATA_FLOAT): the kernels decide that, this file only names types.
//
// Errors: kUnsupported naming the kernel, the argument and its dtype for any
// other type. Thread-safety: pure functions.
#pragma once

#include <library_types.h>

#include <cstddef>
#include <cstdint>

#include "keel/status.h"
#include "vm/cuda/library_calls.h"
#include "vm/executable.h"

namespace keel::vm_internal {

struct LibraryDType {
  DataType dtype = DataType::kF32;
  cuda_lib::ElementType element = cuda_lib::ElementType::kF32;  // the shared calls' name for it
  cudaDataType_t cuda = CUDA_R_32F;  // cuBLASLt matrix / bias type
  uint32_t bytes = 4;                // one element
  bool half = false;                 // f16 or bf16
  const char* name = "f32";          // DataTypeName: also the suffix of the VM's per-dtype epilogue kernels
};

// f32, f16 and bf16; anything else kUnsupported.
Result<LibraryDType> LibraryDTypeOf(DataType t);

// The dtype of argument `arg` of library kernel `k`; kUnsupported names the
// kernel, `what` (e.g. "X") and the dtype when the libraries cannot take it.
Result<LibraryDType> LibraryDTypeOfArg(const KernelEntry& k, size_t arg, const char* what);

// kUnsupported unless argument `arg` of `k` has exactly dtype `t` (library
// kernels take every tensor in one type: no mixed I/O).
Status RequireDType(const KernelEntry& k, size_t arg, const char* what, const LibraryDType& t);

}  // namespace keel::vm_internal
