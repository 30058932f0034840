// vm/cuda/l2_prefetch.cc — see l2_prefetch.h.
#include "vm/cuda/l2_prefetch.h"

#include "vm/cuda/cuda_driver.h"

namespace keel::vm_internal {

L2Prefetcher::~L2Prefetcher() {
  for (cudaEvent_t e : gemm_ends_) (void)cudaEventDestroy(e);
  if (side_ != nullptr) (void)cudaStreamDestroy(side_);
  (void)cudaGetLastError();
}

void L2Prefetcher::BeginRecording() {
  gemms_ = 0;
  side_used_ = false;
}

bool L2Prefetcher::BeforeGemm(CUfunction kernel, const void* data, uint64_t bytes) {
  if (distance_ <= 0 || kernel == nullptr || data == nullptr || gemms_ < static_cast<size_t>(distance_)) return false;
  if (side_ == nullptr && cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking) != cudaSuccess) {
    side_ = nullptr;
    (void)cudaGetLastError();
    return false;
  }
  // The side stream joins the capture at the end of GEMM n - distance.
  if (cudaStreamWaitEvent(side_, gemm_ends_[gemms_ - static_cast<size_t>(distance_)], 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  side_used_ = true;
  unsigned long long n = bytes;
  void* params[] = {&data, &n};
  const CUresult r = Driver().LaunchKernel(kernel, kBlocks, 1, 1, kThreads, 1, 1, 0,
                                           reinterpret_cast<CUstream>(side_), params, nullptr);
  return r == CUDA_SUCCESS;
}

void L2Prefetcher::AfterGemm(cudaStream_t main) {
  if (distance_ <= 0) return;
  if (gemm_ends_.size() <= gemms_) {
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
      (void)cudaGetLastError();
      distance_ = 0;  // no events: no prefetches from here on
      return;
    }
    gemm_ends_.push_back(e);
  }
  if (cudaEventRecord(gemm_ends_[gemms_], main) != cudaSuccess) {
    (void)cudaGetLastError();
    distance_ = 0;
    return;
  }
  ++gemms_;
}

void L2Prefetcher::EndRecording(cudaStream_t main) {
  if (!side_used_) return;
  side_used_ = false;
  // A capture ends only when every stream it forked has joined the origin stream again.
  cudaEvent_t joined = gemm_ends_.empty() ? nullptr : gemm_ends_.back();
  if (joined == nullptr || cudaEventRecord(joined, side_) != cudaSuccess ||
      cudaStreamWaitEvent(main, joined, 0) != cudaSuccess) {
    (void)cudaGetLastError();  // the capture then fails (unjoined work) and the VM reports it
  }
}

}  // namespace keel::vm_internal
