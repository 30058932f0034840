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
 */
#ifndef KEEL_C_API_H_
#define KEEL_C_API_H_

#include <stddef.h>
#include <stdint.h>

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

typedef struct keel_vm_options_t {
  int32_t num_threads; /* CPU worker threads: 0 = hardware concurrency, 1 = serial */
} keel_vm_options_t;

/* Thread-local message of the last failing call on this thread ("" if none). */
const char* keel_last_error_message(void);
/* "OK", "INVALID_ARGUMENT", ... */
const char* keel_status_name(keel_status_t status);
/* Bytes per element of a dtype (0 when out of range). */
size_t keel_dtype_size(keel_dtype_t dtype);

/* Loads model.keel (mmapped read-only). library_path: the kernel library, or NULL
 * for "<path>.so". */
keel_status_t keel_executable_load_file(const char* path, const char* library_path, keel_executable_t** out);
/* Loads from memory. borrow == 0 copies the bytes; borrow != 0 uses them in
 * place: the caller keeps them alive and unchanged until the executable and every
 * VM created from it are released. library_path may be NULL when the executable
 * needs no kernel library. */
keel_status_t keel_executable_load_memory(const void* data, size_t size, const char* library_path, int borrow,
                                          keel_executable_t** out);
/* NULL is accepted (no-op). */
keel_status_t keel_executable_release(keel_executable_t* exe);

keel_status_t keel_executable_num_inputs(const keel_executable_t* exe, size_t* out);
keel_status_t keel_executable_num_outputs(const keel_executable_t* exe, size_t* out);
keel_status_t keel_executable_input_name(const keel_executable_t* exe, size_t index, const char** out);
keel_status_t keel_executable_output_name(const keel_executable_t* exe, size_t index, const char** out);
/* *dims points at *rank int64 values owned by the executable. */
keel_status_t keel_executable_input_shape(const keel_executable_t* exe, size_t index, const int64_t** dims,
                                          size_t* rank);
keel_status_t keel_executable_output_shape(const keel_executable_t* exe, size_t index, const int64_t** dims,
                                           size_t* rank);
keel_status_t keel_executable_input_dtype(const keel_executable_t* exe, size_t index, keel_dtype_t* out);
keel_status_t keel_executable_output_dtype(const keel_executable_t* exe, size_t index, keel_dtype_t* out);
/* Byte size of an input/output (product of the shape times the dtype size). */
keel_status_t keel_executable_input_size(const keel_executable_t* exe, size_t index, size_t* out);
keel_status_t keel_executable_output_size(const keel_executable_t* exe, size_t index, size_t* out);
keel_status_t keel_executable_find_input(const keel_executable_t* exe, const char* name, size_t* index);
keel_status_t keel_executable_find_output(const keel_executable_t* exe, const char* name, size_t* index);

/* device: "cpu" (NULL means "cpu"), "cuda", "cuda:N". options may be NULL. */
keel_status_t keel_vm_create(keel_executable_t* exe, const char* device, const keel_vm_options_t* options,
                             keel_vm_t** out);
/* NULL is accepted (no-op). */
keel_status_t keel_vm_release(keel_vm_t* vm);

/* Copies an input into the VM. shape/rank/dtype must match the input exactly
 * (KEEL_INVALID_ARGUMENT naming the input, expected and actual shape otherwise). */
keel_status_t keel_vm_set_input(keel_vm_t* vm, size_t index, const void* data, size_t bytes, const int64_t* shape,
                                size_t rank, keel_dtype_t dtype);
/* Zero copy: Run reads the caller's buffer, which must stay valid and unchanged
 * until it is re-bound or replaced by keel_vm_set_input. */
keel_status_t keel_vm_bind_input(keel_vm_t* vm, size_t index, const void* data, size_t bytes, const int64_t* shape,
                                 size_t rank, keel_dtype_t dtype);
/* After each run, output `index` is copied into `data` (bytes must equal its size);
 * data == NULL unbinds. */
keel_status_t keel_vm_bind_output(keel_vm_t* vm, size_t index, void* data, size_t bytes);
keel_status_t keel_vm_run(keel_vm_t* vm);
/* The output of the last successful run, on the VM's device; valid until the next
 * run / set_input / bind_input / release. */
keel_status_t keel_vm_get_output(const keel_vm_t* vm, size_t index, const void** data, size_t* bytes);
/* Copies the output of the last run into host memory. */
keel_status_t keel_vm_copy_output(const keel_vm_t* vm, size_t index, void* data, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* KEEL_C_API_H_ */
