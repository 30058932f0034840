// vm/host_memory.h — host memory through the embedder's allocator, and the layout
// of a VM's host memory in one caller-owned buffer.
//
// HostAllocate/HostFree: every host block the runtime allocates for data (an
// executable copied from memory, arenas, input buffers, dynamic storages) goes
// through these: the embedder's keel_allocator_t when one was given
// (allocate != nullptr), aligned_alloc/free otherwise.
//
// HostBlockLayout: where each host arena of the static plan and each host input
// buffer lies in one block (the caller-owned buffer of VmOptions::arena_buffer),
// computed once at load (vm/decoder.cc) and read both by
// Executable::memory_requirements and by VM creation, so the size the embedder is
// told and the offsets the VM uses cannot disagree.
//
// Thread-safety: pure functions (the allocator's own thread-safety aside).
#pragma once

#include <cstdint>
#include <new>
#include <vector>

#include "keel/memory.h"
#include "keel/status.h"

namespace keel::vm_internal {

struct LoadedExecutable;  // vm/executable.h

// `alignment`: a power of two (raised to at least 64). `what` completes "cannot
// allocate N bytes ..." ("on cpu"). kOutOfMemory names `bytes` and `what`; a block the allocator returns misaligned is given back and refused
// (kInvalidArgument: the allocator broke its contract).
Result<void*> HostAllocate(const keel_allocator_t& allocator, uint64_t bytes, uint64_t alignment, const char* what);
// Frees a HostAllocate block of the same allocator; null is ignored.
void HostFree(const keel_allocator_t& allocator, void* ptr);
// kInvalidArgument when only one of allocate/deallocate is set.
Status CheckAllocator(const keel_allocator_t& allocator, const char* which);

// Runs `body` (returning a Status or Result); a std::bad_alloc from the C++ heap
// (decoded tables, registers, strings) becomes kOutOfMemory. The public entry
// points that allocate (load, VM creation) run inside it, so heap exhaustion is
// an error value there, never an exception (the message fits std::string's
// in-place buffer: making it allocates nothing).
template <typename F>
auto CatchHeapExhaustion(F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory");
  }
}

inline constexpr uint64_t kNotInHostBlock = ~uint64_t{0};

struct HostBlockLayout {
  uint64_t bytes = 0;       // the block's size (0: the executable needs no host memory)
  uint64_t alignment = 64;  // its alignment (the largest of its parts', at least 64)
  std::vector<uint64_t> arena_offset;  // per arena: offset, or kNotInHostBlock (device arena)
  std::vector<uint64_t> input_offset;  // per input: offset, or kNotInHostBlock (device input)
};

// Host arenas in order, then host input buffers, each at its alignment (64 at
// least). kInvalidExecutable when the total overflows 64 bits.
Result<HostBlockLayout> LayOutHostBlock(const LoadedExecutable& exe);

}  // namespace keel::vm_internal
