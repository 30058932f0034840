// vm/cuda/l2_prefetch.h — weights fetched into L2 ahead of the GEMMs that read them, in
// recorded CUDA graphs.
//
// Why: a transformer's weights do not stay in L2 between replays (BERT-base: 170 MB of half
// weights against 50 MB of L2), so each GEMM first reads its weights from HBM. Timed alone on
// scratch buffers BERT-base's four GEMMs take 7.8 / 5.1 / 10.4 / 9.3 us at batch 8, in the model
// 9.3 / 5.5 / 11.3 / 10.5 (H200). The attention and LayerNorm kernels between them leave HBM
// nearly idle. So while a run is recorded, each cuBLASLt GEMM whose operand is a constant gets a
// prefetch of that operand on a side branch of the graph: a one-warp runtime kernel
// (`keel_prefetch_l2`: bulk L2 prefetches, cp.async.bulk.prefetch.L2, on sm_90; line prefetches
// on older GPUs) that starts when the GEMM `distance` GEMMs earlier ends. Nothing waits for it
// but the graph's end: it only warms L2 (prefetches never fault and change no data), so results
// are bit-identical with and without it.
//
// Measured on an H200 (docs/PRECISION.md), BERT-base fp16, latency against no prefetch: at
// batch 8 distance 2 / 3 / 6 -3.7% / -2.5% / +3%, at batch 1 +7% / +1% / -2%. A prefetch that
// overlaps a GEMM still reading its own weights from HBM slows it (batch 1's GEMMs are bound by
// those reads), so the best distance depends on the model and the batch, and the default is off
// (VmOptions::cuda_l2_prefetch = 0) until the VM chooses it by timing, as it does the GEMMs'
// algorithms.
//
// Plain (unrecorded) runs, and so keelc --emit=cuda-host programs, which mirror them, do
// none of this.
// Ownership: owns its side stream and events. They are created by the recording run (the first
// Run, which allocates the graph anyway): the stream once, an event per GEMM of the program; replays
// create nothing. Destroyed with it.
// Thread-safety: as CudaDevice (one thread at a time).
// Errors: none returned: a CUDA call that fails leaves the prefetch out (the graph is still
// complete and correct), and the failure is cleared.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace keel::vm_internal {

class L2Prefetcher {
 public:
  // `distance`: GEMMs ahead (VmOptions::cuda_l2_prefetch; 0 turns this off).
  explicit L2Prefetcher(int distance) : distance_(distance) {}
  ~L2Prefetcher();
  L2Prefetcher(const L2Prefetcher&) = delete;
  L2Prefetcher& operator=(const L2Prefetcher&) = delete;

  // A recording starts on `main`: GEMMs are counted from here.
  void BeginRecording();
  // Before GEMM number n of the recording is queued on `main`: when n >= distance, a launch of
  // `kernel` (keel_prefetch_l2's signature) for [data, data + bytes) on the side branch after
  // GEMM n - distance. Returns whether it was queued (for the trace).
  bool BeforeGemm(CUfunction kernel, const void* data, uint64_t bytes);
  // After that GEMM is queued on `main`: marks its end for a later GEMM's prefetch.
  void AfterGemm(cudaStream_t main);
  // Before the capture of `main` ends: the side branch joins it.
  void EndRecording(cudaStream_t main);

  // keel_prefetch_l2's launch shape: blocks of one warp.
  static constexpr unsigned kBlocks = 2, kThreads = 32;

 private:
  int distance_;
  cudaStream_t side_ = nullptr;
  std::vector<cudaEvent_t> gemm_ends_;  // one per GEMM of the recording, reused by later ones
  size_t gemms_ = 0;
  bool side_used_ = false;
};

}  // namespace keel::vm_internal
