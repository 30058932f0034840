// vm/cpu/cpu_device.cc — see cpu_device.h.
#include "vm/cpu/cpu_device.h"

#include <cstdlib>
#include <cstring>

#include "serialization/format.h"
#include "vm/executable.h"
#include "vm/host_memory.h"

namespace keel::vm_internal {

CpuDevice::CpuDevice(int num_threads, const keel_allocator_t& allocator) : allocator_(allocator), pool_(num_threads) {
  ctx_.parallel_for = &ThreadPool::ParallelForThunk;
  ctx_.pool = &pool_;
}

Result<void*> CpuDevice::Allocate(uint64_t bytes, uint64_t alignment) {
  KEEL_ASSIGN_OR_RETURN(void* p, HostAllocate(allocator_, bytes, alignment, "on cpu"));
  const bool own = allocator_.allocate != nullptr;
  Report(DeviceOp{DeviceOpKind::kAllocate, bytes, p, CopyDirection::kHostToHost, own ? "host_allocator" : "aligned_alloc",
                  {}});
  return p;
}

void CpuDevice::Free(void* ptr) {
  if (ptr == nullptr) return;
  const bool own = allocator_.allocate != nullptr;
  Report(DeviceOp{DeviceOpKind::kFree, 0, ptr, CopyDirection::kHostToHost, own ? "host_allocator" : "free", {}});
  HostFree(allocator_, ptr);
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
