// vm/cuda/library_dtypes.cc — see library_dtypes.h.
#include "vm/cuda/library_dtypes.h"

#include <string>

namespace keel::vm_internal {

Result<LibraryDType> LibraryDTypeOf(DataType t) {
  switch (t) {
    case DataType::kF32: return LibraryDType{t, CUDA_R_32F, 4, false, DataTypeName(t)};
    case DataType::kF16: return LibraryDType{t, CUDA_R_16F, 2, true, DataTypeName(t)};
    case DataType::kBF16: return LibraryDType{t, CUDA_R_16BF, 2, true, DataTypeName(t)};
    default:
      return Unsupported(std::string("the CUDA library kernels take f32, f16 or bf16, not ") + DataTypeName(t));
  }
}

Result<LibraryDType> LibraryDTypeOfArg(const KernelEntry& k, size_t arg, const char* what) {
  if (arg >= k.args.size()) {
    return InvalidExecutable("kernel " + k.name + " (" + k.library_op + "): no argument " + std::to_string(arg));
  }
  Result<LibraryDType> t = LibraryDTypeOf(k.args[arg].dtype);
  if (!t.ok()) {
    return Unsupported("kernel " + k.name + " (" + k.library_op + "): " + what + " is " +
                       DataTypeName(k.args[arg].dtype) + "; only f32, f16 and bf16 are implemented");
  }
  return t;
}

Status RequireDType(const KernelEntry& k, size_t arg, const char* what, const LibraryDType& t) {
  if (arg >= k.args.size()) {
    return InvalidExecutable("kernel " + k.name + " (" + k.library_op + "): no argument " + std::to_string(arg));
  }
  if (k.args[arg].dtype != t.dtype) {
    return Unsupported("kernel " + k.name + " (" + k.library_op + "): " + what + " is " +
                       DataTypeName(k.args[arg].dtype) + " but the kernel's data is " + t.name +
                       " (library kernels take every tensor in one type)");
  }
  return Status::Ok();
}

#ifdef KEEL_HAVE_CUDNN
cudnnDataType_t CudnnDataTypeOf(const LibraryDType& t) {
  switch (t.cuda) {
    case CUDA_R_16F: return CUDNN_DATA_HALF;
    case CUDA_R_16BF: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;  // LibraryDTypeOf makes no other type
  }
}
#endif

}  // namespace keel::vm_internal
