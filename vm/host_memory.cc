// vm/host_memory.cc — see host_memory.h.
#include "vm/host_memory.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "vm/executable.h"

namespace keel::vm_internal {
namespace {

// Blocks of at least this many bytes from aligned_alloc are placed on 2 MiB boundaries and
// advised into transparent huge pages (Linux, where THP is "madvise" by default): a model's
// arena of several MiB is walked by every layer, and on 4 KiB pages a convolution's rows
// thousands of bytes apart each take a TLB entry (ResNet-50/18, SqueezeNet and MobileNetV2
// 5-6% faster at 2 threads; docs/MEASUREMENTS.md, "Huge pages for the arena"). The block's
// size is rounded up to whole huge pages, which costs at most one partly used huge page of
// memory per block.
constexpr uint64_t kHugePage = uint64_t{2} << 20;

}  // namespace

Result<void*> HostAllocate(const keel_allocator_t& allocator, uint64_t bytes, uint64_t alignment, const char* what) {
  alignment = std::max<uint64_t>(alignment, 64);
  if ((alignment & (alignment - 1)) != 0) {
    return InvalidArgument("alignment " + std::to_string(alignment) + " is not a power of two");
  }
  // aligned_alloc wants a multiple of the alignment; a zero-byte request still
  // gets a unique non-null block. The embedder's allocator is asked for `bytes`.
  uint64_t rounded = 0;
  if (__builtin_add_overflow(bytes, alignment - 1, &rounded) || rounded > SIZE_MAX) {
    return OutOfMemory("cannot allocate " + std::to_string(bytes) + " bytes " + what);
  }
  uint64_t huge_rounded = 0;
  const bool huge = allocator.allocate == nullptr && bytes >= kHugePage && alignment <= kHugePage &&
                    !__builtin_add_overflow(bytes, kHugePage - 1, &huge_rounded);
  if (huge) {
    alignment = kHugePage;
    rounded = huge_rounded;
  }
  rounded = std::max(rounded / alignment * alignment, alignment);
  void* p = allocator.allocate != nullptr ? allocator.allocate(allocator.context, bytes, alignment)
                                          : std::aligned_alloc(alignment, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (huge && p != nullptr) madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure changes nothing
#endif
  if (p == nullptr) {
    return OutOfMemory("cannot allocate " + std::to_string(bytes) + " bytes " + what);
  }
  if (reinterpret_cast<uintptr_t>(p) % alignment != 0) {
    HostFree(allocator, p);
    return InvalidArgument("the host allocator returned a block not aligned to " + std::to_string(alignment) +
                           " bytes (asked for " + std::to_string(bytes) + " bytes " + what + ")");
  }
  return p;
}

void HostFree(const keel_allocator_t& allocator, void* ptr) {
  if (ptr == nullptr) return;
  if (allocator.allocate != nullptr) {
    allocator.deallocate(allocator.context, ptr);
  } else {
    std::free(ptr);
  }
}

Status CheckAllocator(const keel_allocator_t& allocator, const char* which) {
  if ((allocator.allocate == nullptr) != (allocator.deallocate == nullptr)) {
    return InvalidArgument(std::string(which) + ": allocate and deallocate must both be set (or both null)");
  }
  return Status::Ok();
}

Result<HostBlockLayout> LayOutHostBlock(const LoadedExecutable& exe) {
  HostBlockLayout out;
  uint64_t cursor = 0;
  auto place = [&](uint64_t bytes, uint64_t alignment, uint64_t* offset) -> bool {
    alignment = std::max<uint64_t>(alignment, 64);
    out.alignment = std::max(out.alignment, alignment);
    uint64_t start = 0;
    if (__builtin_add_overflow(cursor, alignment - 1, &start)) return false;
    start = start / alignment * alignment;
    if (__builtin_add_overflow(start, bytes, &cursor)) return false;
    *offset = start;
    return true;
  };
  out.arena_offset.assign(exe.arenas.size(), kNotInHostBlock);
  for (size_t i = 0; i < exe.arenas.size(); ++i) {
    const ArenaEntry& a = exe.arenas[i];
    if (a.device == DeviceType::kCpu && !place(a.size, a.alignment, &out.arena_offset[i])) {
      return InvalidExecutable("the host arenas' total size overflows");
    }
  }
  out.input_offset.assign(exe.inputs.size(), kNotInHostBlock);
  for (size_t i = 0; i < exe.inputs.size(); ++i) {
    const TensorInfo& in = exe.inputs[i];
    if (in.device == DeviceType::kCpu && !place(in.byte_size, 64, &out.input_offset[i])) {
      return InvalidExecutable("the host arenas' and inputs' total size overflows");
    }
  }
  out.bytes = cursor;
  return out;
}

}  // namespace keel::vm_internal
