// vm/cuda/autotune.cc — see autotune.h.
#include "vm/cuda/autotune.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "vm/cuda/cuda_driver.h"
#include "vm/cuda/cuda_errors.h"

namespace keel::vm_internal {

bool AutotuneEnabled() {
  static const bool on = [] {
    const char* v = std::getenv("KEEL_CUDA_AUTOTUNE");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

bool AutotuneLog() {
  static const bool on = [] {
    const char* v = std::getenv("KEEL_CUDA_AUTOTUNE_LOG");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

Result<double> TimeOnStream(cudaStream_t stream, CUfunction spin, int reps, const std::function<bool()>& enqueue) {
  // Host overhead per library call (tens of microseconds for cuDNN) would
  // dominate batch-1 timings of back-to-back calls, while the VM replays a CUDA
  // graph where it does not exist. So the GPU first spins while the host queues
  // all `reps` calls; the events around them then see device time only. (Graph
  // capture of each candidate would do the same, but some cuDNN algorithms hang
  // or crash when captured before they ever ran in the process.)
  auto clean = [&]() {
    (void)cudaStreamSynchronize(stream);
    (void)cudaGetLastError();  // a refused candidate must not poison later calls
  };
  // One plain call first: the libraries' lazy initialization is not timed.
  if (!enqueue() || cudaStreamSynchronize(stream) != cudaSuccess) {
    clean();
    return -1.0;
  }
  cudaEvent_t start = nullptr, end = nullptr;
  if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&end) != cudaSuccess) {
    if (start != nullptr) (void)cudaEventDestroy(start);
    clean();
    return DeviceError("cudaEventCreate failed while autotuning");
  }
  double us = -1;
  unsigned long long spin_ns = 300000ull + 100000ull * static_cast<unsigned long long>(reps);
  void* params[] = {&spin_ns};
  bool ok = Driver().LaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(stream), params, nullptr) ==
            CUDA_SUCCESS;
  ok = ok && cudaEventRecord(start, stream) == cudaSuccess;
  for (int i = 0; i < reps && ok; ++i) ok = enqueue();
  float ms = 0;
  if (ok && cudaEventRecord(end, stream) == cudaSuccess && cudaEventSynchronize(end) == cudaSuccess &&
      cudaEventElapsedTime(&ms, start, end) == cudaSuccess) {
    us = 1000.0 * ms / reps;
  }
  clean();
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(end);
  return us;
}

int PickFastest(const std::vector<double>& us) {
  double best = -1;
  for (double t : us)
    if (t >= 0 && (best < 0 || t < best)) best = t;
  if (best < 0) return -1;
  for (size_t i = 0; i < us.size(); ++i)
    if (us[i] >= 0 && us[i] <= best * 1.03) return static_cast<int>(i);
  return -1;
}

ScratchBuffers::~ScratchBuffers() {
  for (void* p : blocks_) (void)cudaFree(p);
  (void)cudaGetLastError();
}

Result<void*> ScratchBuffers::Get(uint64_t bytes) {
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return OutOfMemory("cudaMalloc of " + std::to_string(bytes) + " bytes for autotuning failed: " +
                       cudaGetErrorString(e));
  }
  blocks_.push_back(p);
  if (cudaMemset(p, 0, bytes == 0 ? 1 : bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return DeviceError("cudaMemset of an autotuning buffer failed");
  }
  return p;
}

}  // namespace keel::vm_internal
