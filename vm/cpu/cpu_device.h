// vm/cpu/cpu_device.h — the host implementation of vm/device.h.
//
// Memory comes from the embedder's host allocator (VmOptions::host_allocator) or
// aligned_alloc (vm/host_memory.h; alignment at least 64 bytes), copies are
// memcpy, kernels of kind cpu_generated are called directly through the pointer
// the executable resolved from the kernel library, with a keel_cpu_kernel_ctx
// whose parallel_for runs on this device's ThreadPool.
//
// Ownership: the device owns its ThreadPool (threads created in the constructor,
// joined in the destructor). Thread-safety: one VM thread at a time.
#pragma once

#include <memory>

#include "vm/cpu/thread_pool.h"
#include "vm/device.h"

namespace keel::vm_internal {

class CpuDevice final : public Device {
 public:
  CpuDevice(int num_threads, const keel_allocator_t& allocator);

  DeviceType type() const override { return DeviceType::kCpu; }
  std::string_view name() const override { return "cpu"; }
  Result<void*> Allocate(uint64_t bytes, uint64_t alignment) override;
  void Free(void* ptr) override;
  Status CopyHostToDevice(void* dst, const void* src, uint64_t bytes) override;
  Status CopyDeviceToHost(void* dst, const void* src, uint64_t bytes) override;
  Status CopyDeviceToDevice(void* dst, const void* src, uint64_t bytes) override;
  Status Synchronize() override { return Status::Ok(); }
  Result<KernelCallable> ResolveKernel(const KernelEntry& kernel) override;
  const keel_cpu_kernel_ctx* cpu_kernel_ctx() const override { return &ctx_; }

  int num_threads() const { return pool_.num_threads(); }

 private:
  Status Copy(void* dst, const void* src, uint64_t bytes);
  keel_allocator_t allocator_;
  ThreadPool pool_;
  keel_cpu_kernel_ctx ctx_;
};

}  // namespace keel::vm_internal
