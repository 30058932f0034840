// tests/vm/cuda/device_alloc_failure_test.cc — on a GPU, every device and host
// allocation of load and VM creation fails in turn (issue 12): the VM's device
// allocator (VmOptions::device_allocator, here a cudaMalloc wrapper) and host
// allocator fail at their n-th call for n = 0, 1, ... until creation succeeds.
// Each failure must be a clean kOutOfMemory and, once everything is released,
// no block may still be live in either allocator. Programs: a cuDNN convolution
// with bias (arenas, device constants, workspace, autotuning scratch) and the
// same with autotuning off. Skips without a GPU.
//
// On the GPU machine, also under compute-sanitizer (device leaks and errors):
//   compute-sanitizer --leak-check full --error-exitcode 1 build/bin/keel_device_alloc_failure_test
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/vm/cuda/cuda_test_programs.h"

namespace keel::cudatest {
namespace {

// Fails its `fail_at`-th allocation (0-based; -1: never) and counts live blocks.
// Device blocks come from cudaMalloc (256-byte aligned), host blocks from aligned_alloc.
struct CountingAllocator {
  bool device = false;
  long calls = 0, fail_at = -1, failures = 0, live = 0;

  static void* Allocate(void* ctx, size_t bytes, size_t alignment) {
    auto* self = static_cast<CountingAllocator*>(ctx);
    if (self->calls++ == self->fail_at) {
      ++self->failures;
      return nullptr;
    }
    void* p = nullptr;
    if (self->device) {
      if (alignment > 256 || cudaMalloc(&p, bytes == 0 ? 1 : bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        return nullptr;
      }
    } else {
      p = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment + alignment);
    }
    if (p != nullptr) ++self->live;
    return p;
  }
  static void Deallocate(void* ctx, void* p) {
    auto* self = static_cast<CountingAllocator*>(ctx);
    --self->live;
    if (self->device) {
      (void)cudaFree(p);
    } else {
      std::free(p);
    }
  }
  Allocator allocator() { return Allocator{&Allocate, &Deallocate, this}; }
};

struct Case {
  const char* name;
  bool autotune;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class DeviceAllocFailure : public ::testing::TestWithParam<Case> {};

TEST_P(DeviceAllocFailure, EveryAllocationFailsInTurnCleanly) {
  KEEL_SKIP_WITHOUT_GPU();
  ConvRef c;
  c.n = 1, c.c = 16, c.h = 14, c.w = 14, c.k = 32, c.r = 3, c.s = 3, c.pad_h = 1, c.pad_w = 1;
  c.activation = "relu";
  const ConvProgram conv = MakeConvProgram(c, /*bias=*/true, /*residual=*/false, 61);
  auto bytes = BuildProgram(conv.spec);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();

  for (bool fail_device : {true, false}) {
    SCOPED_TRACE(fail_device ? "device allocator fails" : "host allocator fails");
    long failure_points = 0;
    for (long n = 0;; ++n) {
      ASSERT_LT(n, 2000) << "load + create never succeeded";
      CountingAllocator host, device;
      device.device = true;
      (fail_device ? device : host).fail_at = n;
      Status status;
      {
        LoadOptions lo;
        lo.host_allocator = host.allocator();
        auto exe = Executable::LoadMemory(*bytes, lo);
        ASSERT_TRUE(exe.ok() || exe.status().code() == StatusCode::kOutOfMemory) << exe.status().ToString();
        if (exe.ok()) {
          VmOptions vo;
          vo.device = "cuda";
          vo.cuda_autotune = GetParam().autotune;
          vo.host_allocator = host.allocator();
          vo.device_allocator = device.allocator();
          auto vm = VirtualMachine::Create(*exe, vo);
          status = vm.status();
          if (vm.ok()) {
            // Creation succeeded: the VM also runs correctly on the embedder's memory.
            for (size_t i = 0; i < conv.inputs.size(); ++i) {
              const TensorInfo& in = (*exe)->input(i);
              ASSERT_TRUE((*vm)->SetInput(i, conv.inputs[i].data(), in.byte_size, in.shape, in.dtype).ok());
            }
            Status run = (*vm)->Run();
            ASSERT_TRUE(run.ok()) << run.ToString();
            std::vector<float> out(conv.want.size());
            ASSERT_TRUE((*vm)->CopyOutputToHost(0, out.data(), out.size() * 4).ok());
            EXPECT_LE(RelL2(out, conv.want), 1e-4);
          }
        } else {
          status = exe.status();
        }
        if (status.code() == StatusCode::kUnsupported) GTEST_SKIP() << status.ToString();  // e.g. no cuDNN
      }
      EXPECT_EQ(host.live, 0) << "allocation " << n << ": host blocks leaked";
      EXPECT_EQ(device.live, 0) << "allocation " << n << ": device blocks leaked";
      if (host.failures + device.failures == 0) {
        EXPECT_TRUE(status.ok()) << status.ToString();
        break;
      }
      ++failure_points;
      EXPECT_EQ(status.code(), StatusCode::kOutOfMemory) << "allocation " << n << ": " << status.ToString();
    }
    // Device: arena(s), weights, bias, input/output staging, workspace (and scratch when tuning).
    EXPECT_GE(failure_points, fail_device ? 3 : 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Tuning, DeviceAllocFailure,
                         ::testing::Values(Case{"autotune", true}, Case{"heuristics", false}),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace keel::cudatest
