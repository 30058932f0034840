/* tests/vm/test_kernels.c — a hand-written kernel library for the VM tests and
 * benchmarks, built by CMake as a shared object the way keelc builds
 * model.keel.so (keel/kernel_abi.h). KEEL_TEST_LIBRARY_ID and
 * KEEL_TEST_ABI_VERSION are compile definitions so that CMake can also build
 * deliberately mismatched variants. */
#include <stddef.h>

#include "keel/kernel_abi.h"

#ifndef KEEL_TEST_LIBRARY_ID
#define KEEL_TEST_LIBRARY_ID "keel-test-kernels"
#endif
#ifndef KEEL_TEST_ABI_VERSION
#define KEEL_TEST_ABI_VERSION KEEL_KERNEL_ABI_VERSION
#endif

#define EXPORT __attribute__((visibility("default")))

EXPORT const uint32_t keel_kernel_abi_version = KEEL_TEST_ABI_VERSION;
EXPORT const char keel_kernel_library_id[] = KEEL_TEST_LIBRARY_ID;

/* out[4] = a[4] + b[4] */
EXPORT int32_t test_add_f32_4(void* const* args, const keel_cpu_kernel_ctx* ctx) {
  (void)ctx;
  const float* a = (const float*)args[0];
  const float* b = (const float*)args[1];
  float* out = (float*)args[2];
  for (int i = 0; i < 4; ++i) out[i] = a[i] + b[i];
  return 0;
}

/* out[4] = max(x[4], 0) */
EXPORT int32_t test_relu_f32_4(void* const* args, const keel_cpu_kernel_ctx* ctx) {
  (void)ctx;
  const float* x = (const float*)args[0];
  float* out = (float*)args[1];
  for (int i = 0; i < 4; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
  return 0;
}

/* c[2,2] = a[2,3] @ b[3,2] */
EXPORT int32_t test_matmul_f32_2x3x2(void* const* args, const keel_cpu_kernel_ctx* ctx) {
  (void)ctx;
  const float* a = (const float*)args[0];
  const float* b = (const float*)args[1];
  float* c = (float*)args[2];
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      float s = 0.0f;
      for (int k = 0; k < 3; ++k) s += a[i * 3 + k] * b[k * 2 + j];
      c[i * 2 + j] = s;
    }
  }
  return 0;
}

/* Does nothing: measures dispatch cost. */
EXPORT int32_t test_empty(void* const* args, const keel_cpu_kernel_ctx* ctx) {
  (void)args;
  (void)ctx;
  return 0;
}

/* Always fails: the VM must turn the code into an error. */
EXPORT int32_t test_fail(void* const* args, const keel_cpu_kernel_ctx* ctx) {
  (void)args;
  (void)ctx;
  return 7;
}

struct scale_closure {
  const float* x;
  float* out;
};

static void scale_body(void* closure, int64_t begin, int64_t end) {
  struct scale_closure* c = (struct scale_closure*)closure;
  for (int64_t i = begin; i < end; ++i) c->out[i] = c->x[i] * 2.0f + 1.0f;
}

/* out[1024] = 2 * x[1024] + 1, through the VM's parallel_for. */
EXPORT int32_t test_scale_parallel_f32_1024(void* const* args, const keel_cpu_kernel_ctx* ctx) {
  struct scale_closure c;
  c.x = (const float*)args[0];
  c.out = (float*)args[1];
  ctx->parallel_for(ctx->pool, 1024, scale_body, &c);
  return 0;
}
