/* apps/embed_c/embed_c.c — embedding Keel from C with keel/c_api.h only.
 *
 *   keel_embed_c model.keel [input.bin]
 *
 * Loads the model (kernel library: model.keel.so next to it), creates a VM whose
 * host memory is one buffer this program owns (sized by
 * keel_executable_memory_requirements: the VM allocates no host memory for a
 * static plan), sets input 0 from input.bin when given and every other input
 * from generated values, runs once and prints the first values of each f32
 * output and how the memory was provided. Exit code 0 on success, 1 with the
 * runtime's message on any error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel/c_api.h"

static int fail(const char* what, keel_status_t status) {
  fprintf(stderr, "embed_c: %s failed: %s: %s\n", what, keel_status_name(status), keel_last_error_message());
  return 1;
}

/* Reads exactly `size` bytes of `path` into `buf`; 0 on success. */
static int read_file(const char* path, void* buf, size_t size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return -1;
  size_t got = fread(buf, 1, size, f);
  int extra = fgetc(f);
  fclose(f);
  return (got == size && extra == EOF) ? 0 : -1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s model.keel [input.bin]\n", argv[0]);
    return 2;
  }
  keel_executable_t* exe = NULL;
  keel_vm_t* vm = NULL;
  keel_status_t st = keel_executable_load_file(argv[1], NULL, &exe);
  if (st != KEEL_OK) return fail("load", st);
  /* The VM's host memory: one caller-owned buffer of the size and alignment the
   * executable's memory plan asks for (a static array would do as well). */
  keel_memory_requirements_t req;
  keel_executable_memory_requirements(exe, &req);
  void* arena = NULL;
  if (req.bytes > 0) {
    size_t size = (size_t)((req.bytes + req.alignment - 1) / req.alignment * req.alignment);
    arena = aligned_alloc((size_t)req.alignment, size);
    if (arena == NULL) {
      fprintf(stderr, "embed_c: cannot allocate the %zu-byte arena buffer\n", size);
      keel_executable_release(exe);
      return 1;
    }
  }
  keel_vm_options_t options;
  keel_vm_options_init(&options);
  options.num_threads = 1;
  options.arena_buffer = arena;
  options.arena_buffer_size = (size_t)req.bytes;
  st = keel_vm_create(exe, "cpu", &options, &vm);
  if (st != KEEL_OK) {
    free(arena);
    keel_executable_release(exe);
    return fail("vm_create", st);
  }
  printf("arena buffer: %llu bytes, aligned to %llu, owned by embed_c\n", (unsigned long long)req.bytes,
         (unsigned long long)req.alignment);

  size_t num_inputs = 0, num_outputs = 0;
  keel_executable_num_inputs(exe, &num_inputs);
  keel_executable_num_outputs(exe, &num_outputs);
  int rc = 0;
  for (size_t i = 0; i < num_inputs && rc == 0; ++i) {
    const char* name = NULL;
    const int64_t* dims = NULL;
    size_t rank = 0, bytes = 0;
    keel_dtype_t dtype;
    keel_executable_input_name(exe, i, &name);
    keel_executable_input_shape(exe, i, &dims, &rank);
    keel_executable_input_dtype(exe, i, &dtype);
    keel_executable_input_size(exe, i, &bytes);
    unsigned char* data = (unsigned char*)malloc(bytes ? bytes : 1);
    if (data == NULL) return 1;
    if (i == 0 && argc > 2) {
      if (read_file(argv[2], data, bytes) != 0) {
        fprintf(stderr, "embed_c: %s must hold exactly %zu bytes for input %s\n", argv[2], bytes, name);
        rc = 1;
      }
    } else if (dtype == KEEL_F32) {
      float* f = (float*)data;
      for (size_t k = 0; k < bytes / sizeof(float); ++k) f[k] = (float)(k % 10) * 0.5f - 2.0f;
    } else {
      memset(data, 1, bytes);
    }
    if (rc == 0) {
      st = keel_vm_set_input(vm, i, data, bytes, dims, rank, dtype);
      if (st != KEEL_OK) rc = fail("set_input", st);
    }
    free(data);
  }
  if (rc == 0) {
    st = keel_vm_run(vm);
    if (st != KEEL_OK) rc = fail("run", st);
  }
  for (size_t i = 0; i < num_outputs && rc == 0; ++i) {
    const char* name = NULL;
    const void* data = NULL;
    size_t bytes = 0;
    keel_dtype_t dtype;
    keel_executable_output_name(exe, i, &name);
    keel_executable_output_dtype(exe, i, &dtype);
    st = keel_vm_get_output(vm, i, &data, &bytes);
    if (st != KEEL_OK) {
      rc = fail("get_output", st);
      break;
    }
    printf("%s:", name);
    if (dtype == KEEL_F32) {
      const float* f = (const float*)data;
      for (size_t k = 0; k < bytes / sizeof(float) && k < 8; ++k) printf(" %g", (double)f[k]);
    } else {
      printf(" (%zu bytes)", bytes);
    }
    printf("\n");
  }
  keel_vm_release(vm); /* before the buffer it uses */
  free(arena);
  keel_executable_release(exe);
  return rc;
}
