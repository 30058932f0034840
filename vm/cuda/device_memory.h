// vm/cuda/device_memory.h — device memory through the embedder's allocator
// (VmOptions::device_allocator, keel/memory.h) or cudaMalloc.
//
// Every device block the CUDA device allocates (arenas, constants, input buffers,
// library workspaces, autotuning scratch) goes through these two functions, so an
// embedder's device allocator sees all of them and a failing one is an error
// value wherever it happens (tests/vm/alloc_failure_test.cc).
//
// Thread-safety: the allocator's own; call with the VM's device current.
#pragma once

#include <cstdint>
#include <string>

#include "keel/memory.h"
#include "keel/status.h"

namespace keel::vm_internal {

// `bytes` (at least 1 is asked for) with `alignment` (a power of two <= 256:
// cudaMalloc's guarantee; the device over-allocates for more). `what` completes
// "cudaMalloc of N bytes ..." in the error (kOutOfMemory; kDeviceError for a
// CUDA error other than out-of-memory; kInvalidArgument when the embedder's
// allocator returns a misaligned block, which is given back).
Result<void*> DeviceMalloc(const keel_allocator_t& allocator, uint64_t bytes, uint64_t alignment, const std::string& what);
// Frees a DeviceMalloc block of the same allocator; null is ignored.
void DeviceFree(const keel_allocator_t& allocator, void* ptr);

}  // namespace keel::vm_internal
