// tests/vm/cuda/cudnn_engine_conv_test.cc — the opt-in cuDNN backend-API
// convolution (vm/cuda/cudnn_engine_conv.h) against the CPU reference loops:
//   * Candidates: EVERY engine plan the heuristics offer with TF32 off (not just
//     the fastest) must match ReferenceConv (relative L2 <= 1e-5), on several
//     shapes including ResNet-18's, and none may carry a tensor-core note; each
//     rebuilt from its identity (what a tuning entry records, CreateFor) gives
//     the same workspace and bit-identical output; an unknown identity is refused.
//   * The policy (cuda_lib::EnginesConsidered: which convolutions hold the engine
//     competition, shared with the emitted host program): no GPU needed.
//   * Through the VM: with VmOptions::cudnn_engines = kForce, cudnn.conv2d kernels with
//     bias/residual/ReLU epilogues run as cudnnBackendExecute (checked in the
//     trace) + the VM's epilogue, with and without CUDA graphs, and match.
// The GPU tests skip when no GPU is present (all skip when built without cuDNN).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/vm/cuda/cuda_test_programs.h"
#ifdef KEEL_HAVE_CUDNN
#include "vm/cuda/cudnn_engine_conv.h"
#endif

namespace keel::cudatest {
namespace {

using ser::AttrDesc;

struct Shape {
  const char* name;
  ConvRef c;
};
// Test names print the case name, not the struct's bytes.
void PrintTo(const Shape& s, std::ostream* os) { *os << s.name; }

ConvRef Make(int64_t n, int64_t c, int64_t hw, int64_t k, int64_t rs, int64_t stride, int64_t pad) {
  ConvRef r;
  r.n = n;
  r.c = c;
  r.h = r.w = hw;
  r.k = k;
  r.r = r.s = rs;
  r.stride_h = r.stride_w = stride;
  r.pad_h = r.pad_w = pad;
  return r;
}

// ResNet-18's convolutions (batch 1 unless named), plus odd shapes.
const Shape kShapes[] = {
    {"stem_7x7_s2", Make(1, 3, 224, 64, 7, 2, 3)},
    {"l1_3x3_64", Make(1, 64, 56, 64, 3, 1, 1)},
    {"l2_3x3_s2_128", Make(1, 64, 56, 128, 3, 2, 1)},
    {"l2_1x1_s2_down", Make(1, 64, 56, 128, 1, 2, 0)},
    {"l3_3x3_256", Make(1, 256, 14, 256, 3, 1, 1)},
    {"l4_3x3_s2_512", Make(1, 256, 14, 512, 3, 2, 1)},
    {"l4_3x3_512", Make(1, 512, 7, 512, 3, 1, 1)},
    {"l4_3x3_512_b4", Make(4, 512, 7, 512, 3, 1, 1)},
    {"odd_5x5_b2", Make(2, 5, 13, 7, 5, 1, 2)},
};

class EngineCandidates : public ::testing::TestWithParam<Shape> {};

#ifdef KEEL_HAVE_CUDNN
// The shared calls' view of `c` (vm/cuda/library_calls_cudnn.h): f32, NCHW, TF32 off.
cuda_lib::ConvProblem Problem(const ConvRef& c) {
  cuda_lib::ConvProblem p;
  p.x = {static_cast<int>(c.n), static_cast<int>(c.c), static_cast<int>(c.h), static_cast<int>(c.w)};
  p.w = {static_cast<int>(c.k), static_cast<int>(c.c), static_cast<int>(c.r), static_cast<int>(c.s)};
  p.y = {static_cast<int>(c.n), static_cast<int>(c.k), static_cast<int>(c.out_h()), static_cast<int>(c.out_w())};
  p.pads = {static_cast<int>(c.pad_h), static_cast<int>(c.pad_w)};
  p.strides = {static_cast<int>(c.stride_h), static_cast<int>(c.stride_w)};
  p.dilations = {static_cast<int>(c.dil_h), static_cast<int>(c.dil_w)};
  return p;
}

void CheckEveryCandidate(const Shape& shape, vm_internal::EngineSearch search = {}) {
  const ConvRef& c = shape.c;
  const auto x = Random(static_cast<size_t>(c.n * c.c * c.h * c.w), 41);
  const auto w = Random(static_cast<size_t>(c.k * c.c * c.r * c.s), 42, -0.5f, 0.5f);
  const std::vector<float> want = ReferenceConv(c, x, w, nullptr, nullptr);

  cudnnHandle_t h = nullptr;
  ASSERT_EQ(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  const cuda_lib::ConvProblem problem = Problem(c);  // TF32 off
  auto made = vm_internal::CudnnEngineConv::Create(h, problem, uint64_t{256} << 20, search);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  vm_internal::CudnnEngineConv& e = **made;
  ASSERT_GE(e.size(), 1u);
  uint64_t max_ws = 1;
  for (size_t i = 0; i < e.size(); ++i) max_ws = std::max(max_ws, e.workspace(i));
  void *dx = nullptr, *dw = nullptr, *dy = nullptr, *dws = nullptr;
  ASSERT_EQ(cudaMalloc(&dx, x.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dw, w.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dy, want.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dws, max_ws), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dw, w.data(), w.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  int ran = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    SCOPED_TRACE(e.describe(i));
    EXPECT_EQ(e.describe(i).find("tensor_core"), std::string::npos);
    EXPECT_EQ(e.describe(i).find("down_convert"), std::string::npos);
    ASSERT_EQ(cudaMemset(dy, 0xff, want.size() * 4), cudaSuccess);  // NaNs: a candidate must write all of Y
    const cudnnStatus_t s = e.Run(i, dx, dw, dy, dws);
    if (s != CUDNN_STATUS_SUCCESS) {
      // A finalized plan may still refuse to launch; it is then never chosen
      // (the VM's timing skips it). Only report it.
      std::printf("  %s: %s\n", e.describe(i).c_str(), cudnnGetErrorString(s));
      (void)cudaGetLastError();
      continue;
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> got(want.size());
    ASSERT_EQ(cudaMemcpy(got.data(), dy, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_LE(RelL2(got, want), 1e-5);
    ++ran;
    // The identity a tuning entry records (library_calls_engine_choice.h) builds the
    // same configuration: same workspace, bit-identical output.
    auto again = vm_internal::CudnnEngineConv::CreateFor(h, problem, uint64_t{256} << 20, e.id(i));
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ((*again)->workspace(0), e.workspace(i));
    ASSERT_EQ(cudaMemset(dy, 0xff, want.size() * 4), cudaSuccess);
    ASSERT_EQ((*again)->Run(0, dx, dw, dy, dws), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> rebuilt(want.size());
    ASSERT_EQ(cudaMemcpy(rebuilt.data(), dy, rebuilt.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(rebuilt.data(), got.data(), got.size() * 4), 0) << "rebuilt from its identity";
  }
  EXPECT_GE(ran, 1);
  std::printf("%s: %zu candidates, %d ran (%s)\n", shape.name, e.size(), ran, e.summary().c_str());
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(dy);
  cudaFree(dws);
  made->reset();
  cudnnDestroy(h);
}

TEST_P(EngineCandidates, EveryCandidateMatchesReference) {
  KEEL_SKIP_WITHOUT_GPU();
  CheckEveryCandidate(GetParam());
}

// EngineSearch::all (VmOptions::cudnn_engines_all): every engine of the library
// (not only the heuristics' picks) on ResNet-18's heaviest shapes.
TEST(EngineAll, EveryEngineMatchesReference) {
  KEEL_SKIP_WITHOUT_GPU();
  vm_internal::EngineSearch all;
  all.all = true;
  CheckEveryCandidate({"all_l4_3x3_512", Make(1, 512, 7, 512, 3, 1, 1)}, all);
  CheckEveryCandidate({"all_l3_3x3_256_b2", Make(2, 256, 14, 256, 3, 1, 1)}, all);
}
// A configuration this cuDNN does not offer (as a stale or edited tuning entry
// could name) is refused, naming it.
TEST(EngineIdentity, UnknownConfigurationIsRefused) {
  KEEL_SKIP_WITHOUT_GPU();
  cudnnHandle_t h = nullptr;
  ASSERT_EQ(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  cuda_lib::EngineId id;
  id.index = 99999;
  auto made = vm_internal::CudnnEngineConv::CreateFor(h, Problem(Make(1, 64, 56, 64, 3, 1, 1)), uint64_t{256} << 20, id);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), StatusCode::kUnsupported) << made.status().ToString();
  EXPECT_NE(made.status().message().find("engine=99999 knobs=none"), std::string::npos) << made.status().ToString();
  cudnnDestroy(h);
}

// Which convolutions hold the engine competition (VmOptions::cudnn_engines): the
// rule the VM and the emitted host program share. No GPU needed.
TEST(EnginePolicy, ConsideredProblems) {
  using cuda_lib::EnginePolicy;
  using cuda_lib::EnginesConsidered;
  cuda_lib::ConvProblem dense = Problem(Make(1, 64, 56, 64, 3, 1, 1));
  cuda_lib::ConvProblem grouped = dense;
  grouped.group = 8;
  grouped.w[1] = 8;
  for (const EnginePolicy m : {EnginePolicy::kCompete, EnginePolicy::kForce}) {
    EXPECT_TRUE(EnginesConsidered(m, dense));
    EXPECT_TRUE(EnginesConsidered(m, grouped));
  }
  EXPECT_FALSE(EnginesConsidered(EnginePolicy::kOff, grouped));
  // kAuto: grouped and (half or channels-last).
  EXPECT_FALSE(EnginesConsidered(EnginePolicy::kAuto, dense));
  EXPECT_FALSE(EnginesConsidered(EnginePolicy::kAuto, grouped));  // f32, NCHW
  cuda_lib::ConvProblem half = grouped;
  half.type = cuda_lib::ElementType::kF16;
  EXPECT_TRUE(EnginesConsidered(EnginePolicy::kAuto, half));
  half.type = cuda_lib::ElementType::kBF16;
  EXPECT_TRUE(EnginesConsidered(EnginePolicy::kAuto, half));
  cuda_lib::ConvProblem nhwc = grouped;
  nhwc.nhwc = true;
  EXPECT_TRUE(EnginesConsidered(EnginePolicy::kAuto, nhwc));
  cuda_lib::ConvProblem dense_half = dense;
  dense_half.type = cuda_lib::ElementType::kF16;
  EXPECT_FALSE(EnginesConsidered(EnginePolicy::kAuto, dense_half));
  // Outside the graph's reach: transposed, channels-last 3-D.
  cuda_lib::ConvProblem transposed = half;
  transposed.transposed = true;
  EXPECT_FALSE(EnginesConsidered(EnginePolicy::kForce, transposed));
  cuda_lib::ConvProblem nhwc3d = half;
  nhwc3d.nhwc = true;
  nhwc3d.x.push_back(4);
  nhwc3d.w.push_back(3);
  nhwc3d.y.push_back(4);
  nhwc3d.pads.push_back(1);
  nhwc3d.strides.push_back(1);
  nhwc3d.dilations.push_back(1);
  EXPECT_FALSE(EnginesConsidered(EnginePolicy::kForce, nhwc3d));
  nhwc3d.nhwc = false;
  EXPECT_TRUE(EnginesConsidered(EnginePolicy::kAuto, nhwc3d));
}
#else
TEST_P(EngineCandidates, EveryCandidateMatchesReference) { GTEST_SKIP() << "built without cuDNN"; }
#endif

INSTANTIATE_TEST_SUITE_P(Shapes, EngineCandidates, ::testing::ValuesIn(kShapes),
                         [](const ::testing::TestParamInfo<Shape>& i) { return std::string(i.param.name); });

// ---- through the VM -----------------------------------------------------------

struct VmCase {
  const char* name;
  ConvNdRef c;  // 1-D (lifted to 2-D), 2-D or 3-D
  bool bias = false, residual = false;
};
void PrintTo(const VmCase& c, std::ostream* os) { *os << c.name; }

class EngineVm : public ::testing::TestWithParam<VmCase> {};

TEST_P(EngineVm, ForcedEngineMatchesReference) {
  KEEL_SKIP_WITHOUT_GPU();
#ifndef KEEL_HAVE_CUDNN
  GTEST_SKIP() << "built without cuDNN";
#endif
  const VmCase& vc = GetParam();
  const ConvProgram conv = MakeConvNdProgram(vc.c, vc.bias, vc.residual, 51);
  auto bytes = BuildProgram(conv.spec);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const std::vector<std::vector<float>>& inputs = conv.inputs;
  const std::vector<float>& want = conv.want;
  for (bool graph : {true, false}) {
    SCOPED_TRACE(graph ? "cuda graph" : "no graph");
    CallRecorder rec;
    VmOptions o;
    o.device = "cuda";
    o.cuda_graph = graph;
    o.cudnn_engines = VmOptions::CudnnEngines::kForce;
    if (!graph) o.trace = &rec;
    RunResult r = RunOnce(*bytes, "", inputs, o);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_LE(RelL2(r.outputs[0], want), 1e-5);
    if (!graph) {
      bool engine = false;
      for (const std::string& call : rec.calls) engine = engine || call.rfind("cudnnBackendExecute", 0) == 0;
      EXPECT_TRUE(engine) << "no cudnnBackendExecute among " << rec.calls.size() << " launches";
    }
  }
}

ConvNdRef WithAct(ConvRef c, const char* act) {
  c.activation = act;
  return ToNd(c);
}

// A 1-D or 3-D problem: `in`, `kernel`, `pads`, `strides` one per spatial axis.
ConvNdRef Nd(int64_t c, int64_t k, std::vector<int64_t> in, std::vector<int64_t> kernel, std::vector<int64_t> pads,
             std::vector<int64_t> strides, const char* act) {
  ConvNdRef r;
  r.c = c;
  r.k = k;
  r.in = std::move(in);
  r.kernel = std::move(kernel);
  r.pads = std::move(pads);
  r.strides = std::move(strides);
  r.dilations.assign(r.in.size(), 1);
  r.activation = act;
  return r;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, EngineVm,
    ::testing::Values(VmCase{"plain", ToNd(Make(2, 8, 12, 16, 3, 1, 1))},
                      VmCase{"bias_relu", WithAct(Make(1, 64, 56, 64, 3, 1, 1), "relu"), true},
                      VmCase{"residual_bias_relu_512", WithAct(Make(1, 512, 7, 512, 3, 1, 1), "relu"), true, true},
                      VmCase{"bias_stride2", ToNd(Make(1, 64, 56, 128, 1, 2, 0)), true},
                      // mc3_18-like 3-D layers and a 1-D one (run as 2-D of unit height).
                      VmCase{"conv3d_stem_bias_relu", Nd(3, 16, {8, 28, 28}, {3, 7, 7}, {1, 3, 3}, {1, 2, 2}, "relu"), true},
                      VmCase{"conv3d_residual_bias_relu", Nd(16, 16, {4, 14, 14}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, "relu"),
                             true, true},
                      VmCase{"conv1d_bias", Nd(8, 12, {50}, {5}, {2}, {2}, ""), true}),
    [](const ::testing::TestParamInfo<VmCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace keel::cudatest
