// tests/vm/cuda/cuda_half_library_kernels_test.cc — the library kernels in half
// precision (keelc --precision fp16|bf16 on --target cuda): cublas.gemm (plain,
// transposed, batched, every epilogue), cudnn.conv2d (1-D, 2-D and 3-D, with
// bias, residual, relu and clip: cuDNN's fused call and the VM's
// keel_bias_act_f16/bf16 epilogue), cudnn.conv_transpose (1-D, 2-D and 3-D:
// the data gradient, then the epilogue) and cudnn.pool2d, every tensor in f16 or
// bf16 (and GEMMs writing f32 with an f32 bias and residual from half A and B),
// against the f32 CPU reference loops fed with the same (rounded) inputs.
// Tolerances are half's: relative L2 <= 2e-3 in f16 (11-bit significand),
// 1e-2 in bf16 (8 bits); f32 accumulation keeps them independent of k. Each
// case runs with and without CUDA graphs. The 2-D and 3-D convolutions and the
// pools also run channels-last (layout "nhwc", keelc --layout), in f32 too. Also:
// mixed dtypes are refused, and one tuning file keeps f32 and half entries
// apart. Skips without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/vm/cuda/cuda_test_programs.h"

namespace keel::cudatest {
namespace {

using ser::AttrDesc;

double Tolerance(DataType t) { return t == DataType::kF32 ? 1e-5 : t == DataType::kF16 ? 2e-3 : 1e-2; }

// Runs `p` (every tensor in p.dtype) with and without graphs; both must match `want`.
void ExpectMatches(const ProgramSpec& p, const std::vector<std::vector<float>>& inputs,
                   const std::vector<float>& want) {
  SCOPED_TRACE(DataTypeName(p.dtype));
  ExpectMatchesWithAndWithoutGraphs(p, inputs, want, Tolerance(p.dtype));
}

const DataType kHalfTypes[] = {DataType::kF16, DataType::kBF16};

std::string TypeName(DataType t) { return DataTypeName(t); }

// ---- cublas.gemm ----------------------------------------------------------------

struct GemmCase {
  const char* name;
  GemmRef g;
  bool f32_out = false;  // Y, the bias and the residual in f32 (half A and B)
};

GemmRef G(int64_t m, int64_t n, int64_t k, auto f) {
  GemmRef g;
  g.m = m;
  g.n = n;
  g.k = k;
  f(g);
  return g;
}
auto kPlain = [](GemmRef&) {};

const GemmCase kGemmCases[] = {
    {"plain", G(33, 65, 17, kPlain)},
    {"square", G(128, 128, 128, kPlain)},
    {"trans_a", G(20, 30, 40, [](GemmRef& g) { g.trans_a = true; })},
    {"trans_b_alpha", G(24, 32, 40, [](GemmRef& g) { g.trans_b = true; g.alpha = 0.5f; })},
    {"batched", G(16, 24, 32, [](GemmRef& g) { g.batch = 3; })},
    {"batched_broadcast_b", G(16, 24, 32, [](GemmRef& g) { g.batch = 4; g.stride_b = 0; })},
    {"row_bias_relu", G(64, 96, 48, [](GemmRef& g) { g.bias = 1; g.epilogue = "relu"; })},
    {"row_bias", G(5, 1000, 64, [](GemmRef& g) { g.bias = 1; })},
    {"row_bias_gelu_tanh", G(32, 64, 16, [](GemmRef& g) { g.bias = 1; g.epilogue = "gelu_tanh"; })},
    {"full_bias_beta", G(12, 18, 30, [](GemmRef& g) { g.bias = 2; g.beta = 0.25f; })},
    {"row_bias_residual_relu", G(33, 48, 40, [](GemmRef& g) { g.bias = 1; g.residual = true; g.epilogue = "relu"; })},
    {"batched_residual", G(16, 24, 32, [](GemmRef& g) { g.batch = 3; g.residual = true; })},
    {"gelu_tanh", G(32, 64, 16, [](GemmRef& g) { g.epilogue = "gelu_tanh"; })},
    {"gemv_like_k2048", G(1, 1000, 2048, kPlain)},
    // Odd sizes: rows of 2-byte elements not 16-byte multiples (the
    // element-aligned fallback algorithm for the batch offsets).
    {"odd_batched", G(7, 9, 11, [](GemmRef& g) { g.batch = 3; })},
    // f32 results from half operands (bf16's f32 residual stream, passes/mixed_precision.h).
    {"to_f32_plain", G(33, 65, 17, kPlain), true},
    {"to_f32_row_bias_residual", G(197, 96, 64, [](GemmRef& g) { g.bias = 1; g.residual = true; }), true},
    {"to_f32_row_bias_gelu_tanh", G(32, 64, 16, [](GemmRef& g) { g.bias = 1; g.epilogue = "gelu_tanh"; }), true},
    {"to_f32_batched_residual_alpha",
     G(16, 24, 32, [](GemmRef& g) { g.batch = 3; g.residual = true; g.alpha = 0.125f; }), true},
};

class HalfGemm : public ::testing::TestWithParam<std::tuple<DataType, GemmCase>> {};

TEST_P(HalfGemm, MatchesReference) {
  KEEL_SKIP_WITHOUT_GPU();
  const DataType dt = std::get<0>(GetParam());
  const GemmRef& g = std::get<1>(GetParam()).g;
  const bool f32_out = std::get<1>(GetParam()).f32_out;
  const DataType out_dt = f32_out ? DataType::kF32 : dt;
  const int64_t sa = g.stride_a >= 0 ? g.stride_a : g.m * g.k;
  const int64_t sb = g.stride_b >= 0 ? g.stride_b : g.k * g.n;
  const int64_t a_elems = (g.batch - 1) * sa + g.m * g.k, b_elems = (g.batch - 1) * sb + g.k * g.n;
  const auto a = RoundedTo(Random(static_cast<size_t>(a_elems), 11), dt);
  const auto b = RoundedTo(Random(static_cast<size_t>(b_elems), 12), dt);
  const int64_t bias_elems = g.bias == 1 ? g.n : g.m * g.n;
  const auto bias = RoundedTo(Random(static_cast<size_t>(bias_elems), 13), out_dt);
  std::vector<AttrDesc> attrs = {AttrDesc::Ints("m", {g.m}), AttrDesc::Ints("n", {g.n}), AttrDesc::Ints("k", {g.k}),
                                 AttrDesc::Ints("batch", {g.batch}), AttrDesc::Ints("trans_a", {g.trans_a}),
                                 AttrDesc::Ints("trans_b", {g.trans_b}), AttrDesc::Floats("alpha", {g.alpha}),
                                 AttrDesc::Str("epilogue", g.epilogue)};
  if (g.stride_a >= 0) attrs.push_back(AttrDesc::Ints("stride_a", {g.stride_a}));
  if (g.stride_b >= 0) attrs.push_back(AttrDesc::Ints("stride_b", {g.stride_b}));
  std::vector<std::vector<int64_t>> shapes = {{a_elems}, {b_elems}};
  ProgramSpec p;
  p.tensors = {{{a_elems}, Role::kInput, {}}, {{b_elems}, Role::kInput, {}}};
  if (g.bias != 0) {
    attrs.push_back(AttrDesc::Ints("has_bias", {1}));
    attrs.push_back(AttrDesc::Str("bias_broadcast", g.bias == 1 ? "row" : "full"));
    attrs.push_back(AttrDesc::Floats("beta", {g.beta}));
    shapes.push_back({bias_elems});
    p.tensors.push_back({{bias_elems}, Role::kConst, bias});
  }
  const auto residual = RoundedTo(Random(static_cast<size_t>(g.batch * g.m * g.n), 14), out_dt);
  if (g.residual) {
    attrs.push_back(AttrDesc::Ints("has_residual", {1}));
    shapes.push_back({g.batch, g.m, g.n});
    p.tensors.push_back({{g.batch, g.m, g.n}, Role::kConst, residual});
  }
  shapes.push_back({g.batch, g.m, g.n});
  p.tensors.push_back({{g.batch, g.m, g.n}, Role::kOutput, {}});
  p.kernels.push_back(LibraryKernel("gemm", "cublas.gemm", shapes, attrs));
  std::vector<uint32_t> args;
  for (uint32_t t = 0; t < p.tensors.size(); ++t) args.push_back(t);
  p.ops = {{0, args, "gemm"}};
  p = InDType(std::move(p), dt);
  for (size_t t = 2; t < p.tensors.size(); ++t) {  // bias, residual, Y
    p.kernels[0].args[t].dtype = out_dt;
    p.tensor_dtypes[t] = out_dt;
  }
  ExpectMatches(p, {a, b}, ReferenceGemm(g, a, b, bias, residual));
}

INSTANTIATE_TEST_SUITE_P(Cases, HalfGemm, ::testing::Combine(::testing::ValuesIn(kHalfTypes), ::testing::ValuesIn(kGemmCases)),
                         [](const auto& i) {
                           return TypeName(std::get<0>(i.param)) + "_" + std::get<1>(i.param).name;
                         });

// ---- cudnn.conv2d (1-D, 2-D, 3-D) ----------------------------------------------

struct ConvCase {
  const char* name = "";
  ConvNdRef c;
  bool bias = false, residual = false;
};

// n, c, k, spatial input dims and kernel; pads 0, strides and dilations 1 unless `f` says.
ConvNdRef Nd(int64_t n, int64_t c, int64_t k, std::vector<int64_t> in, std::vector<int64_t> kernel, auto f) {
  ConvNdRef r;
  r.n = n;
  r.c = c;
  r.k = k;
  r.in = std::move(in);
  r.kernel = std::move(kernel);
  r.pads.assign(r.in.size(), 0);
  r.strides.assign(r.in.size(), 1);
  r.dilations.assign(r.in.size(), 1);
  f(r);
  return r;
}

const ConvCase kConvCases[] = {
    // 2-D: plain, cuDNN's fused bias+relu, residual (fused identity or epilogue), clip
    // (always the VM's keel_bias_act_<half> kernel), depthwise, strided.
    {"conv2d_plain_pad1", Nd(2, 8, 16, {12, 12}, {3, 3}, [](ConvNdRef& r) { r.pads = {1, 1}; })},
    {"conv2d_bias_relu", Nd(1, 16, 32, {14, 14}, {3, 3}, [](ConvNdRef& r) { r.pads = {1, 1}; r.activation = "relu"; }),
     true},
    {"conv2d_residual_bias_relu", Nd(2, 8, 8, {8, 8}, {3, 3}, [](ConvNdRef& r) { r.pads = {1, 1}; r.activation = "relu"; }),
     true, true},
    {"conv2d_residual_bias_clip", Nd(2, 8, 8, {8, 8}, {3, 3}, [](ConvNdRef& r) {
       r.pads = {1, 1}; r.activation = "clip"; r.clip_max = 0.5f;
     }), true, true},
    {"conv2d_depthwise_clip6", Nd(1, 16, 16, {10, 10}, {3, 3}, [](ConvNdRef& r) {
       r.group = 16; r.pads = {1, 1}; r.activation = "clip";
     }), true},
    {"conv2d_stride2_bias", Nd(1, 8, 16, {15, 15}, {3, 3}, [](ConvNdRef& r) { r.strides = {2, 2}; r.pads = {1, 1}; }), true},
    // 1-D (cuDNN runs them as 2-D of unit height).
    {"conv1d_stride_pad_bias", Nd(2, 4, 6, {19}, {3}, [](ConvNdRef& r) { r.pads = {1}; r.strides = {2}; }), true},
    {"conv1d_grouped_bias_residual_relu",
     Nd(2, 8, 12, {64}, {3}, [](ConvNdRef& r) { r.group = 4; r.pads = {1}; r.activation = "relu"; }), true, true},
    // 3-D.
    {"conv3d_stem_bias_relu", Nd(1, 3, 16, {8, 28, 28}, {3, 7, 7}, [](ConvNdRef& r) {
       r.pads = {1, 3, 3}; r.strides = {1, 2, 2}; r.activation = "relu";
     }), true},
    {"conv3d_odd_residual_bias_clip", Nd(2, 4, 6, {3, 5, 7}, {1, 1, 1}, [](ConvNdRef& r) {
       r.activation = "clip"; r.clip_max = 0.25f;
     }), true, true},
    {"conv3d_grouped_dilated", Nd(1, 8, 12, {5, 7, 9}, {3, 3, 3}, [](ConvNdRef& r) {
       r.group = 4; r.dilations = {1, 2, 1}; r.pads = {1, 2, 1};
     })},
    // cudnn.conv_transpose (ONNX ConvTranspose): a UNet's 2x2 stride-2 upsampling,
    // 3x3 stride 2 with pads and output_padding, grouped and dilated with a residual
    // and relu (the epilogue kernel), odd sizes, 1-D and 3-D.
    {"convT2d_k2s2_bias", Nd(2, 16, 8, {7, 9}, {2, 2}, [](ConvNdRef& r) { r.transposed = true; r.strides = {2, 2}; }),
     true},
    {"convT2d_k3s2_pad_outpad_bias", Nd(1, 8, 12, {6, 5}, {3, 3}, [](ConvNdRef& r) {
       r.transposed = true; r.strides = {2, 2}; r.pads = {1, 1}; r.output_padding = {1, 1};
     }), true},
    {"convT2d_grouped_dilated_residual_relu", Nd(2, 8, 12, {5, 6}, {3, 3}, [](ConvNdRef& r) {
       r.transposed = true; r.group = 2; r.dilations = {2, 1}; r.pads = {1, 1}; r.activation = "relu";
     }), true, true},
    {"convT1d_stride3_outpad2", Nd(2, 4, 6, {11}, {4}, [](ConvNdRef& r) {
       r.transposed = true; r.strides = {3}; r.pads = {1}; r.output_padding = {2};
     })},
    {"convT3d_bias", Nd(1, 6, 4, {3, 4, 5}, {2, 3, 3}, [](ConvNdRef& r) {
       r.transposed = true; r.strides = {2, 1, 2}; r.pads = {0, 1, 1};
     }), true},
};

class HalfConv : public ::testing::TestWithParam<std::tuple<DataType, ConvCase>> {};

TEST_P(HalfConv, MatchesReference) {
  KEEL_SKIP_WITHOUT_GPU();
  const DataType dt = std::get<0>(GetParam());
  const ConvCase& cc = std::get<1>(GetParam());
  const ConvProgram conv = MakeConvNdProgram(cc.c, cc.bias, cc.residual, 23, dt);
  ASSERT_EQ(conv.spec.dtype, dt);
  ExpectMatches(conv.spec, conv.inputs, conv.want);
}

INSTANTIATE_TEST_SUITE_P(Cases, HalfConv, ::testing::Combine(::testing::ValuesIn(kHalfTypes), ::testing::ValuesIn(kConvCases)),
                         [](const auto& i) {
                           return TypeName(std::get<0>(i.param)) + "_" + std::get<1>(i.param).name;
                         });

// ---- cudnn.pool2d ---------------------------------------------------------------

const PoolRef kPools[] = {PoolRef{2, 8, 16, 16, 3, 3, 1, 1, 2, 2, "max"}, PoolRef{1, 4, 10, 10, 3, 3, 1, 1, 1, 1, "avg"},
                          PoolRef{1, 4, 10, 10, 3, 3, 1, 1, 2, 2, "avg_exclude_pad"},
                          PoolRef{2, 16, 7, 7, 7, 7, 0, 0, 1, 1, "avg_exclude_pad"}};

// A one-pool program in f32 (InDType converts it), its random input (rounded to
// `dt`) and the CPU reference output.
struct PoolProgram {
  ProgramSpec spec;
  std::vector<std::vector<float>> inputs;
  std::vector<float> want;
};
PoolProgram MakePoolProgram(const PoolRef& r, uint32_t seed, DataType dt) {
  const std::vector<int64_t> xs = {r.n, r.c, r.h, r.w}, ys = {r.n, r.c, r.out_h(), r.out_w()};
  PoolProgram pp;
  pp.inputs = {RoundedTo(Random(static_cast<size_t>(r.n * r.c * r.h * r.w), seed), dt)};
  pp.want = ReferencePool(r, pp.inputs[0]);
  ProgramSpec& p = pp.spec;
  p.tensors = {{xs, Role::kInput, {}}, {ys, Role::kOutput, {}}};
  p.kernels.push_back(LibraryKernel("pool", "cudnn.pool2d", {xs, ys},
                                    {AttrDesc::Str("mode", r.mode), AttrDesc::Ints("kernel", {r.kh, r.kw}),
                                     AttrDesc::Ints("pads", {r.pad_h, r.pad_w, r.pad_h, r.pad_w}),
                                     AttrDesc::Ints("strides", {r.stride_h, r.stride_w})}));
  p.ops = {{0, {0, 1}, "pool"}};
  return pp;
}

std::string PoolCaseName(const ::testing::TestParamInfo<std::tuple<DataType, PoolRef>>& i) {
  const PoolRef& p = std::get<1>(i.param);
  return TypeName(std::get<0>(i.param)) + "_" + p.mode + "_" + std::to_string(p.h) + "_k" + std::to_string(p.kh) +
         "_s" + std::to_string(p.stride_h);
}

class HalfPool : public ::testing::TestWithParam<std::tuple<DataType, PoolRef>> {};

TEST_P(HalfPool, MatchesReference) {
  KEEL_SKIP_WITHOUT_GPU();
  const DataType dt = std::get<0>(GetParam());
  PoolProgram pp = MakePoolProgram(std::get<1>(GetParam()), 31, dt);
  ExpectMatches(InDType(std::move(pp.spec), dt), pp.inputs, pp.want);
}

INSTANTIATE_TEST_SUITE_P(Cases, HalfPool, ::testing::Combine(::testing::ValuesIn(kHalfTypes), ::testing::ValuesIn(kPools)),
                         PoolCaseName);

// ---- channels-last (layout "nhwc") ----------------------------------------------

const DataType kAllTypes[] = {DataType::kF32, DataType::kF16, DataType::kBF16};

class ChannelsLastConv : public ::testing::TestWithParam<std::tuple<DataType, ConvCase>> {};

TEST_P(ChannelsLastConv, MatchesReference) {
  KEEL_SKIP_WITHOUT_GPU();
  const DataType dt = std::get<0>(GetParam());
  const ConvCase& cc = std::get<1>(GetParam());
  if (cc.c.in.size() < 2) GTEST_SKIP() << "channels-last is 2-D and 3-D only";
  ConvProgram conv = MakeConvNdProgram(cc.c, cc.bias, cc.residual, 29, dt);
  MoveToChannelsLast(conv.spec, conv.inputs, conv.want);
  ExpectMatches(conv.spec, conv.inputs, conv.want);
}

INSTANTIATE_TEST_SUITE_P(Cases, ChannelsLastConv,
                         ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::ValuesIn(kConvCases)),
                         [](const auto& i) {
                           return TypeName(std::get<0>(i.param)) + "_" + std::get<1>(i.param).name;
                         });

class ChannelsLastPool : public ::testing::TestWithParam<std::tuple<DataType, PoolRef>> {};

TEST_P(ChannelsLastPool, MatchesReference) {
  KEEL_SKIP_WITHOUT_GPU();
  const DataType dt = std::get<0>(GetParam());
  PoolProgram pp = MakePoolProgram(std::get<1>(GetParam()), 33, dt);
  MoveToChannelsLast(pp.spec, pp.inputs, pp.want);
  ExpectMatches(InDType(std::move(pp.spec), dt), pp.inputs, pp.want);
}

INSTANTIATE_TEST_SUITE_P(Cases, ChannelsLastPool,
                         ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::ValuesIn(kPools)), PoolCaseName);

// The VM refuses a channels-last 1-D convolution by name (the layout is 2-D and 3-D).
TEST(ChannelsLast, OneDimensionalConvIsRefused) {
  KEEL_SKIP_WITHOUT_GPU();
  ConvProgram conv = MakeConvNdProgram(kConvCases[6].c, false, false, 5, DataType::kF16);
  ASSERT_EQ(conv.spec.kernels[0].args[0].shape.size(), 3u);
  conv.spec.kernels[0].attrs.push_back(AttrDesc::Str("layout", "nhwc"));
  auto bytes = BuildProgram(conv.spec);
  ASSERT_TRUE(bytes.ok());
  VmOptions o;
  o.device = "cuda";
  RunResult r = RunOnce(*bytes, "", conv.inputs, o);
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.ToString().find("layout nhwc needs 2 or 3 spatial dims"), std::string::npos) << r.status.ToString();
}

// ---- validation -----------------------------------------------------------------

Status CreateWith(const ser::KernelDesc& k, const ProgramSpec& base) { return CreateOneKernelVm(k, base); }

// Library kernels take every tensor in one type: a mixed kernel is refused at
// VM creation by name, argument and dtype; an f64 one too.
TEST(HalfLibraryKernels, MixedOrOtherDTypesAreRefused) {
  KEEL_SKIP_WITHOUT_GPU();
  ProgramSpec base;
  base.tensors = {{{6}, Role::kInput, {}}, {{6}, Role::kInput, {}}, {{2, 2}, Role::kOutput, {}}};
  base = InDType(std::move(base), DataType::kF16);
  ser::KernelDesc gemm = LibraryKernel("gemm_mixed", "cublas.gemm", {{6}, {6}, {2, 2}},
                                       {AttrDesc::Ints("m", {2}), AttrDesc::Ints("n", {2}), AttrDesc::Ints("k", {3})});
  for (ser::KernelArgDesc& a : gemm.args) a.dtype = DataType::kF16;
  EXPECT_TRUE(CreateWith(gemm, base).ok());
  gemm.args[1].dtype = DataType::kBF16;
  // Here the program's registers are all f16, so the VM's signature check refuses the bf16
  // argument first (kInvalidExecutable); with matching registers the library kernel's own
  // check would (kUnsupported). Either way: refused, naming the kernel and the type.
  Status mixed = CreateWith(gemm, base);
  EXPECT_FALSE(mixed.ok());
  EXPECT_NE(mixed.message().find("gemm_mixed"), std::string::npos) << mixed.ToString();
  EXPECT_NE(mixed.message().find("bf16"), std::string::npos) << mixed.ToString();
  for (ser::KernelArgDesc& a : gemm.args) a.dtype = DataType::kF64;
  Status f64 = CreateWith(gemm, InDType(base, DataType::kF64));
  EXPECT_EQ(f64.code(), StatusCode::kUnsupported) << f64.ToString();
  EXPECT_NE(f64.message().find("f64"), std::string::npos) << f64.ToString();
}

// One tuning file serves the f32 and the half version of the same conv + gemm
// program: each VM writes its own entries (the half ones name their type,
// vm/cuda/autotune.h), so the file ends up with both and neither borrows the
// other's choice.
TEST(HalfLibraryKernels, TuningEntriesAreKeptApartByDType) {
  KEEL_SKIP_WITHOUT_GPU();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("keel_half_tuning_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "tuning.txt").string();
  const std::vector<int64_t> xs = {1, 8, 12, 12}, ws = {16, 8, 3, 3}, ys = {1, 16, 12, 12};
  ProgramSpec p;
  p.tensors = {{xs, Role::kInput, {}},           {ws, Role::kConst, Random(16 * 8 * 9, 5)},
               {ys, Role::kTemp, {}},            {{144, 32}, Role::kConst, Random(144 * 32, 7)},
               {{1, 16, 32}, Role::kOutput, {}}};
  p.kernels.push_back(LibraryKernel("conv", "cudnn.conv2d", {xs, ws, ys}, {AttrDesc::Ints("pads", {1, 1, 1, 1})}));
  p.kernels.push_back(LibraryKernel("gemm", "cublas.gemm", {ys, {144, 32}, {1, 16, 32}},
                                    {AttrDesc::Ints("m", {16}), AttrDesc::Ints("n", {32}), AttrDesc::Ints("k", {144})}));
  p.ops = {{0, {0, 1, 2}, "conv"}, {1, {2, 3, 4}, "gemm"}};
  const std::vector<float> x = Random(8 * 12 * 12, 8);
  auto create = [&](DataType t) -> Status {
    auto bytes = BuildProgram(InDType(p, t));
    if (!bytes.ok()) return bytes.status();
    VmOptions o;
    o.device = "cuda";
    o.tuning_file = path;
    return RunOnce(*bytes, "", {x}, o).status;
  };
  auto read = [&]() {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  ASSERT_TRUE(create(DataType::kF32).ok());
  const std::string f32_text = read();
  EXPECT_EQ(f32_text.find("|f16|"), std::string::npos) << f32_text;
  ASSERT_TRUE(create(DataType::kF16).ok());
  const std::string both = read();
  // Every f32 line survives; the f16 problems add a conv and a gemm line of their own.
  for (size_t at = 0, end; (end = f32_text.find('\n', at)) != std::string::npos; at = end + 1) {
    EXPECT_NE(both.find(f32_text.substr(at, end - at + 1)), std::string::npos);
  }
  EXPECT_NE(both.find("|a0|f16|tf32"), std::string::npos) << both;  // the conv
  EXPECT_NE(both.find("|f16|tf32"), both.rfind("|f16|tf32")) << both;  // and the gemm
  ASSERT_TRUE(create(DataType::kBF16).ok());
  EXPECT_NE(read().find("|bf16|tf32"), std::string::npos) << read();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace keel::cudatest
