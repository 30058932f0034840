// tests/vm/cuda/autotune_timing_test.cc — TimeInGraph (vm/cuda/autotune.h): a
// candidate timed inside a captured CUDA graph gives a positive time; one that
// fails to enqueue, or breaks the capture, gives -1 and leaves the stream out of
// capture mode with no sticky error, so the next candidate times normally.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include "tests/vm/cuda/cuda_test_programs.h"
#include "vm/cuda/autotune.h"

namespace keel {
namespace {

using vm_internal::TimeInGraph;
using vm_internal::TimingsSoFar;

class TimeInGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KEEL_SKIP_WITHOUT_GPU();
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&buffer_, kBytes), cudaSuccess);
  }
  void TearDown() override {
    if (buffer_ != nullptr) (void)cudaFree(buffer_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }
  // The stream is not capturing and no error is pending.
  void ExpectClean() {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
    EXPECT_EQ(cudaStreamIsCapturing(stream_, &status), cudaSuccess);
    EXPECT_EQ(status, cudaStreamCaptureStatusNone);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  }
  bool Fill() { return cudaMemsetAsync(buffer_, 7, kBytes, stream_) == cudaSuccess; }

  static constexpr size_t kBytes = size_t{1} << 24;
  cudaStream_t stream_ = nullptr;
  void* buffer_ = nullptr;
};

TEST_F(TimeInGraphTest, TimesCapturedCallsAndRunsThem) {
  ASSERT_EQ(cudaMemset(buffer_, 0, kBytes), cudaSuccess);
  const uint64_t before = TimingsSoFar();
  auto us = TimeInGraph(stream_, 4, [&] { return Fill(); });
  ASSERT_TRUE(us.ok()) << us.status().ToString();
  EXPECT_GT(*us, 0.0);
  EXPECT_EQ(TimingsSoFar(), before + 1);
  ExpectClean();
  unsigned char last = 0;  // the graph ran: the buffer holds the fill
  ASSERT_EQ(cudaMemcpy(&last, static_cast<unsigned char*>(buffer_) + kBytes - 1, 1, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(last, 7);
}

TEST_F(TimeInGraphTest, RefusedCandidateIsMinusOneAndLeavesTheStreamClean) {
  int calls = 0;
  auto refused = TimeInGraph(stream_, 4, [&] { return ++calls < 2 && Fill(); });
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(*refused, -1.0);
  EXPECT_EQ(calls, 2);  // stops at the first refusal
  ExpectClean();
  auto next = TimeInGraph(stream_, 2, [&] { return Fill(); });
  ASSERT_TRUE(next.ok());
  EXPECT_GT(*next, 0.0);
}

TEST_F(TimeInGraphTest, CandidateThatBreaksTheCaptureIsMinusOne) {
  // Synchronizing a capturing stream is illegal and invalidates the capture,
  // although this candidate reports success.
  auto broken = TimeInGraph(stream_, 2, [&] {
    (void)Fill();
    (void)cudaStreamSynchronize(stream_);
    return true;
  });
  ASSERT_TRUE(broken.ok()) << broken.status().ToString();
  EXPECT_EQ(*broken, -1.0);
  ExpectClean();
  auto next = TimeInGraph(stream_, 2, [&] { return Fill(); });
  ASSERT_TRUE(next.ok());
  EXPECT_GT(*next, 0.0);
}

}  // namespace
}  // namespace keel
