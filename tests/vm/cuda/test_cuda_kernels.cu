// tests/vm/cuda/test_cuda_kernels.cu — tiny CUDA kernels for the CUDA VM tests.
//
// Compiled by nvcc at build time to a cubin (sm_90) and to PTX, both embedded in
// the test kernel library (keel/kernel_abi.h: keel_cuda_cubin / keel_cuda_ptx).
// Kernels follow the generated-kernel ABI: one device pointer per argument, in
// signature order; the element count is static (baked into the kernel).
#define KEEL_TEST_N 1000

// y = max(a + b, 0)
extern "C" __global__ void keel_test_add_relu_1000(const float* a, const float* b, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < KEEL_TEST_N) {
    const float v = a[i] + b[i];
    y[i] = v > 0.f ? v : 0.f;
  }
}

// y = 2x + 1
extern "C" __global__ void keel_test_scale_1000(const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < KEEL_TEST_N) y[i] = 2.f * x[i] + 1.f;
}
