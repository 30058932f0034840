/* keel/memory.h — memory an embedder gives the Keel runtime (C and C++).
 *
 * keel_allocator_t: the embedder's allocator. Given to a load (LoadOptions /
 * keel_load_options_t: the copy of an executable loaded from memory) or to a VM
 * (VmOptions / keel_vm_options_t: host arenas, input buffers and dynamic-plan
 * storages; a second one for device memory), it replaces aligned_alloc (host) or
 * cudaMalloc (device) for every such block the runtime allocates. The runtime's
 * own small bookkeeping (decoded tables, registers, strings) stays on the C++ heap.
 *
 * keel_memory_requirements_t: what one VM needs for its host memory (every host
 * arena of the static memory plan and every host input buffer), read from the
 * executable before the VM exists (keel_executable_memory_requirements,
 * Executable::memory_requirements). A caller-owned buffer of that size and
 * alignment, given to VM creation, holds all of it: the VM then allocates no host
 * memory for the plan at all (only dynamic-plan storages, if the plan has any).
 *
 * Thread-safety: the runtime calls an allocator from the thread creating, running
 * or releasing the VM (or loading / releasing the executable) it was given to; an
 * allocator shared between VMs used on several threads must be thread-safe.
 */
#ifndef KEEL_MEMORY_H_
#define KEEL_MEMORY_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct keel_allocator_t {
  /* Returns `bytes` bytes aligned to `alignment` (a power of two, at least 64), or
   * NULL when it cannot; the runtime then fails with an out-of-memory error naming
   * the block. `bytes` may be 0 (return a distinct pointer or NULL). A device
   * allocator returns memory of the VM's device (e.g. from cudaMalloc), called
   * with that device current. */
  void* (*allocate)(void* context, size_t bytes, size_t alignment);
  /* Releases a block `allocate` returned (never NULL). */
  void (*deallocate)(void* context, void* ptr);
  /* Passed to both; not owned. The allocator (and its context) must outlive every
   * object it was given to. */
  void* context;
} keel_allocator_t;

typedef struct keel_memory_requirements_t {
  uint64_t bytes;     /* size of a caller-owned buffer holding the VM's host memory (0: none needed) */
  uint64_t alignment; /* alignment the buffer's address must have (a power of two, at least 64) */
} keel_memory_requirements_t;

#ifdef __cplusplus
}
#endif

#endif /* KEEL_MEMORY_H_ */
