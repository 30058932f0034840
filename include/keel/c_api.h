/* keel/c_api.h — the C interface of the Keel runtime (C99 and later, C++).
 *
 * Mirrors keel/vm.h with opaque handles:
 *   keel_executable_t  a loaded model (immutable; share it between VMs/threads)
 *   keel_vm_t          the state to run it on one device (one thread at a time)
 *
 * Errors: every function returns a keel_status_t (KEEL_OK == 0; the other values
 * equal keel::StatusCode). On failure keel_last_error_message() returns a message
 * describing the last error on the calling thread (valid until that thread's
 * next failing call). No exception or abort escapes this API; null handles and
 * null out-pointers are reported as KEEL_INVALID_ARGUMENT.
 *
 * Lifetime: a VM keeps its executable alive, so keel_executable_release may be
 * called while VMs created from it still exist. Strings and shape arrays
 * returned by the query functions are owned by the executable and valid while it
 * (or a VM created from it) lives.
 *
 * Options structs (keel_load_options_t, keel_vm_options_t) start with struct_size
 * and are filled by their init function, so that they can grow without breaking
 * callers: a program built against an older header passes a smaller struct (the
 * runtime reads only the fields it has), one built against a newer header a
 * larger one (the runtime refuses, KEEL_UNSUPPORTED, when a field it does not know
 * differs from its default). Always call the init function, then set fields.
 *
 * Memory: keel/memory.h (the embedder's allocators, and a caller-owned arena
 * buffer sized by keel_executable_memory_requirements).
 */
#ifndef KEEL_C_API_H_
#define KEEL_C_API_H_

#include <stddef.h>
#include <stdint.h>

#include "keel/export.h"
#include "keel/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum keel_status_t {
  KEEL_OK = 0,
  KEEL_INVALID_ARGUMENT = 1,
  KEEL_INVALID_EXECUTABLE = 2,
  KEEL_UNSUPPORTED = 3,
  KEEL_NOT_FOUND = 4,
  KEEL_OUT_OF_MEMORY = 5,
  KEEL_DEVICE_ERROR = 6,
  KEEL_IO_ERROR = 7,
  KEEL_INTERNAL = 8,
  KEEL_FAILED_PRECONDITION = 9
} keel_status_t;

/* Element types: the list in keel/dtype_list.h (same numbering as the executable format). */
typedef enum keel_dtype_t {
  KEEL_F32 = 0, KEEL_F16 = 1, KEEL_BF16 = 2, KEEL_F64 = 3,
  KEEL_I8 = 4, KEEL_I16 = 5, KEEL_I32 = 6, KEEL_I64 = 7,
  KEEL_U8 = 8, KEEL_BOOL = 9, KEEL_U16 = 10, KEEL_U32 = 11, KEEL_U64 = 12
} keel_dtype_t;

typedef struct keel_executable keel_executable_t;
typedef struct keel_vm keel_vm_t;

/* Loading (keel_executable_load_file_with_options / _load_memory_with_options). */
typedef struct keel_load_options_t {
  size_t struct_size;       /* set by keel_load_options_init */
  const char* library_path; /* the kernel library; NULL: "<path>.so" for a file, none for memory */
  int32_t borrow;           /* memory: 0 copies the bytes, 1 uses them in place (see load_memory) */
  keel_allocator_t host_allocator; /* memory, borrow == 0: the copy (allocate NULL: aligned_alloc) */
} keel_load_options_t;

/* cuDNN backend-API engines for convolutions (keel_vm_options_t.cudnn_engines). */
typedef enum keel_cudnn_engines_t {
  KEEL_CUDNN_ENGINES_OFF = 0,     /* the legacy API only */
  KEEL_CUDNN_ENGINES_COMPETE = 1, /* engines timed against the legacy choice */
  KEEL_CUDNN_ENGINES_FORCE = 2,   /* engines only (tests) */
  KEEL_CUDNN_ENGINES_AUTO = 3     /* default: compete for grouped half / channels-last convolutions */
} keel_cudnn_engines_t;

/* VM creation; the fields mirror keel::VmOptions (keel/vm.h), where each is documented. */
typedef struct keel_vm_options_t {
  size_t struct_size;  /* set by keel_vm_options_init */
  int32_t num_threads; /* CPU worker threads: 0 = hardware concurrency, 1 = serial */
  int32_t cuda_graph;  /* CUDA: record and replay runs as a CUDA graph (default 1) */
  int32_t allow_tf32;  /* CUDA: TF32 tensor cores for f32 library calls: 1 on, 0 off, -1 (default)
                          the executable's choice (keelc --precision tf32) */
  const char* tuning_file; /* CUDA: autotuning file, or NULL */
  keel_allocator_t host_allocator;   /* arenas, input buffers, dynamic storages (allocate NULL: aligned_alloc) */
  keel_allocator_t device_allocator; /* CUDA device memory (allocate NULL: cudaMalloc) */
  void* arena_buffer;       /* caller-owned buffer for all host memory of the VM, or NULL */
  size_t arena_buffer_size; /* >= keel_executable_memory_requirements().bytes */
  int32_t cuda_autotune;     /* CUDA: time candidate algorithms at creation (default 1) */
  int32_t cuda_autotune_log; /* CUDA: print the timings to stderr (default 0) */
  int32_t cuda_pdl;          /* CUDA: programmatic dependent launches on sm_90+ (default 1) */
  int32_t cudnn_engines;     /* CUDA: a keel_cudnn_engines_t (default KEEL_CUDNN_ENGINES_AUTO) */
  int32_t cudnn_engines_all; /* CUDA: with engines, every engine of the library (default 0) */
  int32_t cudnn_engines_rtc; /* CUDA: with engines, runtime-compiled ones too (default 0) */
  int32_t cuda_l2_prefetch;  /* CUDA: recorded runs prefetch each GEMM's weights into L2 this many
                                GEMMs ahead (default 0: off; at most 64) */
} keel_vm_options_t;

/* The runtime's version, "MAJOR.MINOR.PATCH" (the CMake package's version). */
KEEL_API const char* keel_version(void);
/* Default options. `struct_size` is sizeof the struct as the caller sees it; use
 * the inline wrappers below, which pass it. */
KEEL_API keel_status_t keel_load_options_init_size(keel_load_options_t* options, size_t struct_size);
KEEL_API keel_status_t keel_vm_options_init_size(keel_vm_options_t* options, size_t struct_size);
static inline keel_status_t keel_load_options_init(keel_load_options_t* options) {
  return keel_load_options_init_size(options, sizeof(keel_load_options_t));
}
static inline keel_status_t keel_vm_options_init(keel_vm_options_t* options) {
  return keel_vm_options_init_size(options, sizeof(keel_vm_options_t));
}

/* Thread-local message of the last failing call on this thread ("" if none). */
KEEL_API const char* keel_last_error_message(void);
/* "OK", "INVALID_ARGUMENT", ... */
KEEL_API const char* keel_status_name(keel_status_t status);
/* Bytes per element of a dtype (0 when out of range). */
KEEL_API size_t keel_dtype_size(keel_dtype_t dtype);

/* Loads model.keel (mmapped read-only). library_path: the kernel library, or NULL
 * for "<path>.so". */
KEEL_API keel_status_t keel_executable_load_file(const char* path, const char* library_path, keel_executable_t** out);
/* Loads from memory. borrow == 0 copies the bytes; borrow != 0 uses them in
 * place: the caller keeps them alive and unchanged until the executable and every
 * VM created from it are released. library_path may be NULL when the executable
 * needs no kernel library. */
KEEL_API keel_status_t keel_executable_load_memory(const void* data, size_t size, const char* library_path, int borrow,
                                          keel_executable_t** out);
/* The same with options (NULL: the defaults; `options->library_path` replaces the
 * library_path argument of the functions above). */
KEEL_API keel_status_t keel_executable_load_file_with_options(const char* path, const keel_load_options_t* options,
                                                              keel_executable_t** out);
KEEL_API keel_status_t keel_executable_load_memory_with_options(const void* data, size_t size,
                                                                const keel_load_options_t* options,
                                                                keel_executable_t** out);
/* NULL is accepted (no-op). */
KEEL_API keel_status_t keel_executable_release(keel_executable_t* exe);

KEEL_API keel_status_t keel_executable_num_inputs(const keel_executable_t* exe, size_t* out);
KEEL_API keel_status_t keel_executable_num_outputs(const keel_executable_t* exe, size_t* out);
KEEL_API keel_status_t keel_executable_input_name(const keel_executable_t* exe, size_t index, const char** out);
KEEL_API keel_status_t keel_executable_output_name(const keel_executable_t* exe, size_t index, const char** out);
/* *dims points at *rank int64 values owned by the executable. */
KEEL_API keel_status_t keel_executable_input_shape(const keel_executable_t* exe, size_t index, const int64_t** dims,
                                          size_t* rank);
KEEL_API keel_status_t keel_executable_output_shape(const keel_executable_t* exe, size_t index, const int64_t** dims,
                                           size_t* rank);
KEEL_API keel_status_t keel_executable_input_dtype(const keel_executable_t* exe, size_t index, keel_dtype_t* out);
KEEL_API keel_status_t keel_executable_output_dtype(const keel_executable_t* exe, size_t index, keel_dtype_t* out);
/* Byte size of an input/output (product of the shape times the dtype size). */
KEEL_API keel_status_t keel_executable_input_size(const keel_executable_t* exe, size_t index, size_t* out);
KEEL_API keel_status_t keel_executable_output_size(const keel_executable_t* exe, size_t index, size_t* out);
KEEL_API keel_status_t keel_executable_find_input(const keel_executable_t* exe, const char* name, size_t* index);
KEEL_API keel_status_t keel_executable_find_output(const keel_executable_t* exe, const char* name, size_t* index);
/* Size and alignment of a caller-owned buffer for all the host memory of one VM
 * of this executable (keel_vm_options_t.arena_buffer); bytes == 0: none needed. */
KEEL_API keel_status_t keel_executable_memory_requirements(const keel_executable_t* exe,
                                                          keel_memory_requirements_t* out);

/* device: "cpu" (NULL means "cpu"), "cuda", "cuda:N". options may be NULL (the
 * defaults); otherwise initialised with keel_vm_options_init. With an arena
 * buffer the VM allocates no host memory for a static plan; the buffer must stay
 * valid until keel_vm_release. */
KEEL_API keel_status_t keel_vm_create(keel_executable_t* exe, const char* device, const keel_vm_options_t* options,
                             keel_vm_t** out);
/* NULL is accepted (no-op). */
KEEL_API keel_status_t keel_vm_release(keel_vm_t* vm);

/* Copies an input into the VM. shape/rank/dtype must match the input exactly
 * (KEEL_INVALID_ARGUMENT naming the input, expected and actual shape otherwise). */
KEEL_API keel_status_t keel_vm_set_input(keel_vm_t* vm, size_t index, const void* data, size_t bytes, const int64_t* shape,
                                size_t rank, keel_dtype_t dtype);
/* Zero copy: Run reads the caller's buffer, which must stay valid and unchanged
 * until it is re-bound or replaced by keel_vm_set_input. */
KEEL_API keel_status_t keel_vm_bind_input(keel_vm_t* vm, size_t index, const void* data, size_t bytes, const int64_t* shape,
                                 size_t rank, keel_dtype_t dtype);
/* After each run, output `index` is copied into `data` (bytes must equal its size);
 * data == NULL unbinds. */
KEEL_API keel_status_t keel_vm_bind_output(keel_vm_t* vm, size_t index, void* data, size_t bytes);
KEEL_API keel_status_t keel_vm_run(keel_vm_t* vm);
/* The output of the last successful run, on the VM's device; valid until the next
 * run / set_input / bind_input / release. */
KEEL_API keel_status_t keel_vm_get_output(const keel_vm_t* vm, size_t index, const void** data, size_t* bytes);
/* Copies the output of the last run into host memory. */
KEEL_API keel_status_t keel_vm_copy_output(const keel_vm_t* vm, size_t index, void* data, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* KEEL_C_API_H_ */
