// tests/vm/cuda/cuda_keel_conv_test.cc — the "keel.conv2d" kernel
// (vm/cuda/conv_kernel.cuh) in f16 and bf16 against the f32 CPU reference fed
// with the same rounded inputs: every channel class (16, 32 and 64 inputs, 1, 2
// and 4 n-tiles of outputs), channels padded to 16, kernel windows from 1x1 to
// 5x5 with strides, dilations and pads, images whose sides are not multiples of the block's
// 8 x 16 tile, bias, residual, relu and clip; with and without CUDA graphs.
// Also the load-time refusals, each naming what is wrong. Skips without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "serialization/library_ops.h"
#include "tests/vm/cuda/cuda_test_programs.h"

namespace keel::cudatest {
namespace {

using ser::AttrDesc;

struct Case {
  const char* name = "";
  ConvNdRef c;
  bool bias = false, residual = false;
};

// n, c, k, input height and width, kernel height and width; `f` sets the rest.
ConvNdRef Conv(int64_t n, int64_t c, int64_t k, int64_t h, int64_t w, int64_t r, int64_t s, auto f) {
  ConvNdRef x;
  x.n = n;
  x.c = c;
  x.k = k;
  x.in = {h, w};
  x.kernel = {r, s};
  x.pads = {0, 0};
  x.strides = {1, 1};
  x.dilations = {1, 1};
  f(x);
  return x;
}
auto kSame3 = [](ConvNdRef& r) { r.pads = {1, 1}; };

const Case kCases[] = {
    // A UNet's layers, small: 16 -> 16 and 32 -> 16 3x3 with bias and relu.
    {"unet_16_16", Conv(2, 16, 16, 20, 37, 3, 3, [](ConvNdRef& r) { r.pads = {1, 1}; r.activation = "relu"; }), true},
    {"unet_32_16", Conv(1, 32, 16, 17, 16, 3, 3, [](ConvNdRef& r) { r.pads = {1, 1}; r.activation = "relu"; }), true},
    // Every n-tile class, with outputs not filling the last tile.
    {"k8", Conv(1, 16, 8, 9, 9, 3, 3, kSame3)},
    {"k6_one_tile", Conv(2, 8, 6, 11, 5, 3, 3, kSame3), true},
    {"k24_four_tiles", Conv(1, 24, 24, 10, 18, 3, 3, kSame3), true},
    {"k24_c64", Conv(1, 64, 24, 8, 33, 3, 3, kSame3), true, true},
    {"c64_k32", Conv(2, 64, 32, 9, 20, 3, 3, kSame3), true},
    // Channels padded to 16 (8, 24, 40), 1x1, larger windows, strides, dilation, no pads.
    {"c8_1x1", Conv(3, 8, 16, 5, 21, 1, 1, [](ConvNdRef&) {}), true},
    {"c40_5x5_pad2", Conv(1, 40, 16, 12, 19, 5, 5, [](ConvNdRef& r) { r.pads = {2, 2}; }), true},
    {"stride2", Conv(2, 16, 32, 23, 31, 3, 3, [](ConvNdRef& r) { r.pads = {1, 1}; r.strides = {2, 2}; }), true},
    {"stride_2x1_valid", Conv(1, 16, 16, 15, 20, 3, 2, [](ConvNdRef& r) { r.strides = {2, 1}; })},
    {"dilation2", Conv(1, 16, 16, 18, 18, 3, 3, [](ConvNdRef& r) { r.pads = {2, 2}; r.dilations = {2, 2}; }), true},
    {"pads_1x0_kernel_2x4", Conv(1, 16, 8, 9, 12, 2, 4, [](ConvNdRef& r) { r.pads = {1, 0}; })},
    // Epilogues: residual (added before the activation), clip.
    {"residual_relu", Conv(2, 16, 16, 8, 16, 3, 3, [](ConvNdRef& r) { r.pads = {1, 1}; r.activation = "relu"; }), true,
     true},
    {"bias_clip6", Conv(1, 16, 16, 13, 13, 3, 3, [](ConvNdRef& r) {
       r.pads = {1, 1}; r.activation = "clip"; r.clip_max = 0.5f;
     }), true},
};

// The case as a keel.conv2d program in `dt`: cudnn.conv2d's program moved to
// channels-last, the library op renamed (the two share arguments and attributes).
ConvProgram KeelConvProgram(const Case& cc, DataType dt, uint32_t seed) {
  ConvProgram conv = MakeConvNdProgram(cc.c, cc.bias, cc.residual, seed, dt);
  MoveToChannelsLast(conv.spec, conv.inputs, conv.want);
  conv.spec.kernels[0].library_op = ser::library_ops::kKeelConv2d;
  return conv;
}

class KeelConv : public ::testing::TestWithParam<std::tuple<DataType, Case>> {};

TEST_P(KeelConv, MatchesReference) {
  KEEL_SKIP_WITHOUT_GPU();
  const DataType dt = std::get<0>(GetParam());
  const ConvProgram conv = KeelConvProgram(std::get<1>(GetParam()), dt, 41);
  std::vector<std::string> calls;
  ExpectMatchesWithAndWithoutGraphs(conv.spec, conv.inputs, conv.want, dt == DataType::kF16 ? 2e-3 : 1e-2,
                                    VmOptions{}, &calls);
  bool own = false;
  for (const std::string& call : calls) own = own || call.rfind("keel_conv_nhwc_", 0) == 0;
  EXPECT_TRUE(own) << "no keel_conv_nhwc_* launch among " << calls.size() << " launches";
}

INSTANTIATE_TEST_SUITE_P(Cases, KeelConv,
                         ::testing::Combine(::testing::Values(DataType::kF16, DataType::kBF16),
                                            ::testing::ValuesIn(kCases)),
                         [](const auto& i) {
                           return std::string(DataTypeName(std::get<0>(i.param))) + "_" + std::get<1>(i.param).name;
                         });

// What the kernel does not take is refused at load, by name.
TEST(KeelConvLoad, RefusesWhatTheKernelDoesNotTake) {
  KEEL_SKIP_WITHOUT_GPU();
  struct Refusal {
    const char* what;
    Case c;
    DataType dt;
    const char* expect;
  };
  const Refusal refusals[] = {
      {"f32", {"", Conv(1, 16, 16, 8, 8, 3, 3, kSame3)}, DataType::kF32, "takes f16 or bf16"},
      {"channels", {"", Conv(1, 12, 16, 8, 8, 3, 3, kSame3)}, DataType::kF16, "multiple of 8"},
      {"outputs", {"", Conv(1, 16, 40, 8, 8, 3, 3, kSame3)}, DataType::kF16, "at most 32"},
      {"odd outputs", {"", Conv(1, 16, 7, 8, 8, 3, 3, kSame3)}, DataType::kF16, "even"},
      {"window", {"", Conv(1, 32, 16, 40, 40, 7, 7, [](ConvNdRef& r) { r.strides = {2, 2}; r.dilations = {2, 2}; })},
       DataType::kBF16, "shared memory"},
      {"weights", {"", Conv(1, 64, 32, 8, 8, 5, 5, [](ConvNdRef& r) { r.pads = {2, 2}; })}, DataType::kF16,
       "shared memory"},
      {"group", {"", Conv(1, 16, 16, 8, 8, 3, 3, [](ConvNdRef& r) { r.pads = {1, 1}; r.group = 2; })}, DataType::kF16,
       "group 1"},
  };
  for (const Refusal& r : refusals) {
    SCOPED_TRACE(r.what);
    const ConvProgram conv = KeelConvProgram(r.c, r.dt, 7);
    const Status s = CreateOneKernelVm(conv.spec.kernels[0], conv.spec);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.ToString().find("keel.conv2d"), std::string::npos) << s.ToString();
    EXPECT_NE(s.ToString().find(r.expect), std::string::npos) << s.ToString();
  }
  // Channels-first data is cudnn.conv2d's, not this kernel's.
  ConvProgram nchw = MakeConvNdProgram(kCases[0].c, true, false, 7, DataType::kF16);
  nchw.spec.kernels[0].library_op = ser::library_ops::kKeelConv2d;
  const Status s = CreateOneKernelVm(nchw.spec.kernels[0], nchw.spec);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("layout nhwc"), std::string::npos) << s.ToString();
}

// Kernels of one class (the same runtime function) with different shared-memory
// needs: the bigger one, planned first, must still launch after the smaller one
// is planned (the function's limit is the class's, not the last kernel's).
TEST(KeelConvLoad, KernelsOfOneClassWithDifferentSharedMemory) {
  KEEL_SKIP_WITHOUT_GPU();
  const DataType dt = DataType::kF16;
  const ConvNdRef big = Conv(1, 64, 32, 9, 20, 3, 3, kSame3), small = Conv(1, 32, 32, 9, 20, 3, 3, kSame3);
  const std::vector<int64_t> xs = {1, 64, 9, 20}, w1s = {32, 64, 3, 3}, ys = {1, 32, 9, 20}, w2s = {32, 32, 3, 3};
  const auto x = RoundedTo(Random(1 * 64 * 9 * 20, 51), dt);
  const auto w1 = RoundedTo(Random(32 * 64 * 9, 52, -0.5f, 0.5f), dt);
  const auto w2 = RoundedTo(Random(32 * 32 * 9, 53, -0.5f, 0.5f), dt);
  const auto y1 = RoundedTo(ReferenceConvNd(big, x, w1, nullptr, nullptr), dt);  // stored in f16 between the two
  const auto y2 = ReferenceConvNd(small, y1, w2, nullptr, nullptr);
  ProgramSpec p;
  p.tensors = {{Nhwc(xs), Role::kInput, {}},
               {Nhwc(w1s), Role::kConst, Nhwc(w1, w1s)},
               {Nhwc(ys), Role::kTemp, {}},
               {Nhwc(w2s), Role::kConst, Nhwc(w2, w2s)},
               {Nhwc(ys), Role::kOutput, {}}};
  const std::vector<AttrDesc> attrs = {AttrDesc::Ints("pads", {1, 1, 1, 1}), AttrDesc::Str("layout", "nhwc")};
  p.kernels = {LibraryKernel("big", ser::library_ops::kKeelConv2d, {Nhwc(xs), Nhwc(w1s), Nhwc(ys)}, attrs),
               LibraryKernel("small", ser::library_ops::kKeelConv2d, {Nhwc(ys), Nhwc(w2s), Nhwc(ys)}, attrs)};
  p.ops = {{0, {0, 1, 2}, "big"}, {1, {2, 3, 4}, "small"}};
  ExpectMatchesWithAndWithoutGraphs(InDType(std::move(p), dt), {Nhwc(x, xs)}, Nhwc(y2, ys), 2e-3);
}

}  // namespace
}  // namespace keel::cudatest
