/* keel/kernel_abi.h — the contract between the VM and a kernel library (model.keel.so).
 *
 * A kernel library is a shared object produced by keelc (or, for tests, by CMake).
 * The VM dlopen()s it at load and resolves, by name, every kernel the executable's
 * kernel table lists. Every exported symbol below uses C linkage.
 *
 * Required exports:
 *   const uint32_t keel_kernel_abi_version;   equal to KEEL_KERNEL_ABI_VERSION
 *   const char     keel_kernel_library_id[];  NUL-terminated; must equal the
 *                                             executable's kernel_library_id
 * CPU kernels (KernelKind cpu_generated): one exported function per kernel,
 *   named as in the kernel table, of type keel_cpu_kernel_fn.
 * CUDA code (KernelKind cuda_generated), optional:
 *   const unsigned char keel_cuda_cubin[]; const uint64_t keel_cuda_cubin_size;
 *   const char          keel_cuda_ptx[];   const uint64_t keel_cuda_ptx_size;
 *   (cubin for the compile-time arch, PTX for the others; kernels are functions
 *   of that module, taking one device pointer per argument, in signature order.)
 *
 * Thread-safety: a CPU kernel must be reentrant: it keeps no state between calls
 * and may run concurrently on distinct arguments (one VM per thread).
 */
#ifndef KEEL_KERNEL_ABI_H_
#define KEEL_KERNEL_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KEEL_KERNEL_ABI_VERSION 1u

/* Body of a parallel loop: handles iterations [begin, end). */
typedef void (*keel_parallel_body_fn)(void* closure, int64_t begin, int64_t end);

/* Services the VM offers to CPU kernels. */
typedef struct keel_cpu_kernel_ctx {
  /* Runs body over [0, n) split into chunks across the VM's worker threads and
   * returns when every chunk is done. Never NULL (it may run serially). */
  void (*parallel_for)(void* pool, int64_t n, keel_parallel_body_fn body, void* closure);
  void* pool;
} keel_cpu_kernel_ctx;

/* A CPU kernel: `args` holds one data pointer per kernel argument (inputs and
 * outputs, in the kernel table's order). Shapes are static and known to the
 * kernel. Returns 0 on success, non-zero on failure. */
typedef int32_t (*keel_cpu_kernel_fn)(void* const* args, const keel_cpu_kernel_ctx* ctx);

#ifdef __cplusplus
}
#endif

#endif /* KEEL_KERNEL_ABI_H_ */
