// vm/cuda/device_memory.cc — see device_memory.h.
#include "vm/cuda/device_memory.h"

#include <cuda_runtime.h>

#include <string>

namespace keel::vm_internal {

Result<void*> DeviceMalloc(const keel_allocator_t& allocator, uint64_t bytes, uint64_t alignment,
                           const std::string& what) {
  const uint64_t request = bytes == 0 ? 1 : bytes;
  if (allocator.allocate != nullptr) {
    void* p = allocator.allocate(allocator.context, static_cast<size_t>(request), static_cast<size_t>(alignment));
    if (p == nullptr) {
      return OutOfMemory("the device allocator could not allocate " + std::to_string(bytes) + " bytes " + what);
    }
    if (reinterpret_cast<uintptr_t>(p) % alignment != 0) {
      allocator.deallocate(allocator.context, p);
      return InvalidArgument("the device allocator returned a block not aligned to " + std::to_string(alignment) +
                             " bytes (" + std::to_string(bytes) + " bytes " + what + ")");
    }
    return p;
  }
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, request);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it so later calls do not see it
    const std::string m = "cudaMalloc of " + std::to_string(bytes) + " bytes " + what + " failed: " + cudaGetErrorString(e);
    if (e == cudaErrorMemoryAllocation) return OutOfMemory(m);
    return DeviceError(m);
  }
  return p;
}

void DeviceFree(const keel_allocator_t& allocator, void* ptr) {
  if (ptr == nullptr) return;
  if (allocator.allocate != nullptr) {
    allocator.deallocate(allocator.context, ptr);
  } else {
    (void)cudaFree(ptr);
  }
}

}  // namespace keel::vm_internal
