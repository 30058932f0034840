// vm/cuda/autotune.h — load-time measurement helpers for the library kernels.
//
// cuBLASLt and cuDNN heuristics pick an algorithm from a model of the GPU; on
// small and odd shapes (batch-1 inference, depthwise convolutions) that pick is
// often several times slower than the best one. The library kernels therefore
// time their candidates once, at VM creation, on scratch buffers, and keep the
// fastest (cached per VM by problem key, CudaDevice::FindTuning).
//
// Environment knobs (diagnostics, read once per process):
//   KEEL_CUDA_AUTOTUNE=0      keep the heuristics' first choice (no timing)
//   KEEL_CUDA_AUTOTUNE_LOG=1  print every candidate's time to stderr
//
// Thread-safety: as CudaDevice (one thread at a time). Errors: Status values
// naming the failing CUDA call; a candidate that fails to enqueue is not an
// error, it is skipped (TimeOnStream returns a negative time).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "keel/status.h"

namespace keel::vm_internal {

bool AutotuneEnabled();
bool AutotuneLog();

// Mean device time in microseconds of one `enqueue` on `stream`: one untimed
// plain call (lazy library initialization), then `spin` (runtime kernel
// keel_spin) holds the GPU while the host queues `reps` calls, timed with
// cudaEvents: device time without per-call host overhead, as in the VM's graph
// replay. `enqueue` returns false when the candidate cannot run; the result is
// then -1 (and the stream's sticky error state is clean).
Result<double> TimeOnStream(cudaStream_t stream, CUfunction spin, int reps, const std::function<bool()>& enqueue);

// Index of the fastest candidate among `us` (negative entries are skipped),
// preferring the earliest (the heuristics' order) within 3% of the fastest, so
// that near-ties resolve the same way from one process to the next. -1 if none.
int PickFastest(const std::vector<double>& us);

// Device buffers for timing, zero-filled, freed with the object.
class ScratchBuffers {
 public:
  ScratchBuffers() = default;
  ~ScratchBuffers();
  ScratchBuffers(const ScratchBuffers&) = delete;
  ScratchBuffers& operator=(const ScratchBuffers&) = delete;
  // A new zeroed buffer of `bytes` (at least 1); kOutOfMemory on failure.
  Result<void*> Get(uint64_t bytes);

 private:
  std::vector<void*> blocks_;
};

}  // namespace keel::vm_internal
