// vm/cuda/library_dtypes.cc — see library_dtypes.h.
#include "vm/cuda/library_dtypes.h"

#include <string>

namespace keel::vm_internal {

Result<LibraryDType> LibraryDTypeOf(DataType t) {
  cuda_lib::ElementType e;
  if (!cuda_lib::ElementTypeNamed(DataTypeName(t), &e)) {
    return Unsupported(std::string("the CUDA library kernels take f32, f16 or bf16, not ") + DataTypeName(t));
  }
  const cuda_lib::ElementTypeInfo& info = cuda_lib::InfoOf(e);
  return LibraryDType{t, e, info.cuda, info.bytes, info.half, DataTypeName(t)};
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

}  // namespace keel::vm_internal
