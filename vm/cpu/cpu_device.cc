// vm/cpu/cpu_device.cc — see cpu_device.h.
#include "vm/cpu/cpu_device.h"

#include <cstdlib>
#include <cstring>

#include "serialization/format.h"
#include "vm/executable.h"

namespace keel::vm_internal {

CpuDevice::CpuDevice(int num_threads) : pool_(num_threads) {
  ctx_.parallel_for = &ThreadPool::ParallelForThunk;
  ctx_.pool = &pool_;
}

Result<void*> CpuDevice::Allocate(uint64_t bytes, uint64_t alignment) {
  if (alignment < 64) alignment = 64;
  if (alignment & (alignment - 1)) return InvalidArgument("alignment " + std::to_string(alignment) + " is not a power of two");
  // aligned_alloc wants a multiple of the alignment; a zero-byte request still
  // gets a unique non-null block.
  uint64_t rounded = 0;
  if (__builtin_add_overflow(bytes, alignment - 1, &rounded)) {
    return OutOfMemory("cannot allocate " + std::to_string(bytes) + " bytes on cpu");
  }
  rounded = rounded / alignment * alignment;
  if (rounded == 0) rounded = alignment;
  void* p = std::aligned_alloc(alignment, rounded);
  if (p == nullptr) return OutOfMemory("cannot allocate " + std::to_string(bytes) + " bytes on cpu");
  Report(DeviceOp{DeviceOpKind::kAllocate, bytes, p, CopyDirection::kHostToHost, "aligned_alloc", {}});
  return p;
}

void CpuDevice::Free(void* ptr) {
  if (ptr == nullptr) return;
  Report(DeviceOp{DeviceOpKind::kFree, 0, ptr, CopyDirection::kHostToHost, "free", {}});
  std::free(ptr);
}

Status CpuDevice::Copy(void* dst, const void* src, uint64_t bytes) {
  if (bytes != 0) std::memcpy(dst, src, bytes);
  Report(DeviceOp{DeviceOpKind::kCopy, bytes, dst, CopyDirection::kHostToHost, "memcpy", {}});
  return Status::Ok();
}
Status CpuDevice::CopyHostToDevice(void* dst, const void* src, uint64_t bytes) { return Copy(dst, src, bytes); }
Status CpuDevice::CopyDeviceToHost(void* dst, const void* src, uint64_t bytes) { return Copy(dst, src, bytes); }
Status CpuDevice::CopyDeviceToDevice(void* dst, const void* src, uint64_t bytes) { return Copy(dst, src, bytes); }

Result<KernelCallable> CpuDevice::ResolveKernel(const KernelEntry& kernel) {
  if (kernel.kind == static_cast<uint8_t>(ser::KernelKind::kCpuGenerated) && kernel.host_fn != nullptr) {
    KernelCallable c;
    c.host_fn = kernel.host_fn;
    return c;
  }
  return Unsupported("kernel " + kernel.name + " of kind " +
                     ser::KernelKindName(static_cast<ser::KernelKind>(kernel.kind)) +
                     " cannot run on the cpu device");
}

}  // namespace keel::vm_internal
