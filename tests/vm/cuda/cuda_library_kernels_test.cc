// tests/vm/cuda/cuda_library_kernels_test.cc — cublas.gemm, cudnn.conv2d (1-D,
// 2-D and 3-D) and cudnn.pool2d (serialization/library_ops.h) on the GPU against CPU reference
// loops (relative L2 <= 1e-5 with TF32 off), each run with and without CUDA
// graphs, plus attribute validation errors. Skips when no GPU is present.
#include <gtest/gtest.h>

#include "tests/vm/cuda/cuda_test_programs.h"

namespace keel::cudatest {
namespace {

using ser::AttrDesc;

// Runs `p` (inputs in order) with and without graphs; both must match `want`.
void ExpectMatches(const ProgramSpec& p, const std::vector<std::vector<float>>& inputs,
                   const std::vector<float>& want) {
  ExpectMatchesWithAndWithoutGraphs(p, inputs, want, 1e-5);
}

// ---- cublas.gemm ----------------------------------------------------------------

struct GemmCase {
  const char* name;
  GemmRef g;
};
// Test names print the case name, not the struct's bytes.
void PrintTo(const GemmCase& c, std::ostream* os) { *os << c.name; }

class Gemm : public ::testing::TestWithParam<GemmCase> {};

TEST_P(Gemm, MatchesReference) {
  KEEL_SKIP_WITHOUT_GPU();
  const GemmRef& g = GetParam().g;
  const int64_t sa = g.stride_a >= 0 ? g.stride_a : g.m * g.k;
  const int64_t sb = g.stride_b >= 0 ? g.stride_b : g.k * g.n;
  const int64_t a_elems = (g.batch - 1) * sa + g.m * g.k, b_elems = (g.batch - 1) * sb + g.k * g.n;
  const auto a = Random(static_cast<size_t>(a_elems), 11), b = Random(static_cast<size_t>(b_elems), 12);
  const int64_t bias_elems = g.bias == 1 ? g.n : g.m * g.n;
  const auto bias = Random(static_cast<size_t>(bias_elems), 13);
  std::vector<AttrDesc> attrs = {AttrDesc::Ints("m", {g.m}), AttrDesc::Ints("n", {g.n}), AttrDesc::Ints("k", {g.k}),
                                 AttrDesc::Ints("batch", {g.batch}), AttrDesc::Ints("trans_a", {g.trans_a}),
                                 AttrDesc::Ints("trans_b", {g.trans_b}), AttrDesc::Floats("alpha", {g.alpha}),
                                 AttrDesc::Str("epilogue", g.epilogue)};
  if (g.stride_a >= 0) attrs.push_back(AttrDesc::Ints("stride_a", {g.stride_a}));
  if (g.stride_b >= 0) attrs.push_back(AttrDesc::Ints("stride_b", {g.stride_b}));
  std::vector<std::vector<int64_t>> shapes = {{a_elems}, {b_elems}};
  ProgramSpec p;
  p.tensors = {{{a_elems}, Role::kInput, {}}, {{b_elems}, Role::kInput, {}}};
  std::vector<std::vector<float>> inputs = {a, b};
  if (g.bias != 0) {
    attrs.push_back(AttrDesc::Ints("has_bias", {1}));
    attrs.push_back(AttrDesc::Str("bias_broadcast", g.bias == 1 ? "row" : "full"));
    attrs.push_back(AttrDesc::Floats("beta", {g.beta}));
    shapes.push_back({bias_elems});
    p.tensors.push_back({{bias_elems}, Role::kConst, bias});  // bias as a device constant
  }
  shapes.push_back({g.batch, g.m, g.n});
  p.tensors.push_back({{g.batch, g.m, g.n}, Role::kOutput, {}});
  p.kernels.push_back(LibraryKernel("gemm", "cublas.gemm", shapes, attrs));
  std::vector<uint32_t> args;
  for (uint32_t t = 0; t < p.tensors.size(); ++t) args.push_back(t);
  p.ops = {{0, args, "gemm"}};
  ExpectMatches(p, inputs, ReferenceGemm(g, a, b, bias));
}

GemmRef G(int64_t m, int64_t n, int64_t k) {
  GemmRef g;
  g.m = m;
  g.n = n;
  g.k = k;
  return g;
}
GemmRef With(GemmRef g, auto f) {
  f(g);
  return g;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Gemm,
    ::testing::Values(
        GemmCase{"plain", G(33, 65, 17)}, GemmCase{"square", G(128, 128, 128)},
        GemmCase{"trans_a", With(G(20, 30, 40), [](GemmRef& g) { g.trans_a = true; })},
        GemmCase{"trans_b", With(G(20, 30, 40), [](GemmRef& g) { g.trans_b = true; })},
        GemmCase{"both_trans_alpha", With(G(7, 9, 11), [](GemmRef& g) { g.trans_a = g.trans_b = true; g.alpha = 0.5f; })},
        GemmCase{"batched", With(G(16, 24, 32), [](GemmRef& g) { g.batch = 3; })},
        GemmCase{"batched_broadcast_b", With(G(16, 24, 32), [](GemmRef& g) { g.batch = 4; g.stride_b = 0; })},
        GemmCase{"row_bias_relu", With(G(64, 96, 48), [](GemmRef& g) { g.bias = 1; g.epilogue = "relu"; })},
        GemmCase{"row_bias", With(G(5, 1000, 64), [](GemmRef& g) { g.bias = 1; })},
        GemmCase{"full_bias_beta", With(G(12, 18, 30), [](GemmRef& g) { g.bias = 2; g.beta = 0.25f; })},
        GemmCase{"gelu_tanh", With(G(32, 64, 16), [](GemmRef& g) { g.epilogue = "gelu_tanh"; })},
        GemmCase{"gemv_like", G(1, 1000, 2048)}),
    [](const ::testing::TestParamInfo<GemmCase>& i) { return std::string(i.param.name); });

// ---- cudnn.conv2d ---------------------------------------------------------------

struct ConvCase {
  const char* name = "";
  ConvRef c;
  bool bias = false, residual = false;
};
void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

class Conv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv, MatchesReference) {
  KEEL_SKIP_WITHOUT_GPU();
  const ConvCase& cc = GetParam();
  const ConvProgram conv = MakeConvProgram(cc.c, cc.bias, cc.residual, 21);
  ExpectMatches(conv.spec, conv.inputs, conv.want);
}

ConvRef C(int64_t n, int64_t c, int64_t hw, int64_t k, int64_t rs, auto f) {
  ConvRef r;
  r.n = n;
  r.c = c;
  r.h = r.w = hw;
  r.k = k;
  r.r = r.s = rs;
  f(r);
  return r;
}
auto kNone = [](ConvRef&) {};

INSTANTIATE_TEST_SUITE_P(
    Cases, Conv,
    ::testing::Values(
        ConvCase{"plain_3x3_pad1", C(2, 8, 12, 16, 3, [](ConvRef& r) { r.pad_h = r.pad_w = 1; })},
        ConvCase{"bias_relu_fused", C(1, 16, 14, 32, 3, [](ConvRef& r) { r.pad_h = r.pad_w = 1; r.activation = "relu"; }), true},
        ConvCase{"relu_no_bias", C(1, 4, 9, 8, 3, [](ConvRef& r) { r.activation = "relu"; })},
        ConvCase{"residual_bias_relu", C(2, 8, 8, 8, 3, [](ConvRef& r) { r.pad_h = r.pad_w = 1; r.activation = "relu"; }), true, true},
        ConvCase{"residual_no_act", C(1, 8, 8, 8, 1, kNone), false, true},
        ConvCase{"bias_only", C(1, 3, 16, 8, 5, [](ConvRef& r) { r.pad_h = r.pad_w = 2; }), true},
        ConvCase{"stride2", C(1, 8, 15, 16, 3, [](ConvRef& r) { r.stride_h = r.stride_w = 2; r.pad_h = r.pad_w = 1; }), true},
        ConvCase{"depthwise_clip6", C(1, 16, 10, 16, 3, [](ConvRef& r) { r.group = 16; r.pad_h = r.pad_w = 1; r.activation = "clip"; }), true},
        // Clip cannot be fused by cuDNN: conv + the VM's bias/residual/act
        // kernel, float4 path (P*Q % 4 == 0) and scalar path (7x7).
        ConvCase{"residual_bias_clip_vec4", C(2, 8, 8, 8, 3, [](ConvRef& r) { r.pad_h = r.pad_w = 1; r.activation = "clip"; r.clip_max = 0.5; }), true, true},
        ConvCase{"residual_clip_odd_hw", C(1, 8, 7, 12, 1, [](ConvRef& r) { r.activation = "clip"; r.clip_max = 0.25; }), false, true},
        ConvCase{"grouped", C(1, 8, 7, 12, 3, [](ConvRef& r) { r.group = 4; })},
        ConvCase{"dilated", C(1, 4, 11, 4, 3, [](ConvRef& r) { r.dil_h = r.dil_w = 2; r.pad_h = r.pad_w = 2; })}),
    [](const ::testing::TestParamInfo<ConvCase>& i) { return std::string(i.param.name); });

// cudnn.conv2d with 1, 2 or 3 spatial dims (one kernel op for every rank:
// serialization/library_ops.h), against the rank-generic reference loops.
struct ConvNdCase {
  const char* name = "";
  ConvNdRef c;
  bool bias = false, residual = false;
};
void PrintTo(const ConvNdCase& c, std::ostream* os) { *os << c.name; }

class ConvNd : public ::testing::TestWithParam<ConvNdCase> {};

TEST_P(ConvNd, MatchesReference) {
  KEEL_SKIP_WITHOUT_GPU();
  const ConvNdCase& cc = GetParam();
  const ConvProgram conv = MakeConvNdProgram(cc.c, cc.bias, cc.residual, 23);
  ExpectMatches(conv.spec, conv.inputs, conv.want);
}

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

INSTANTIATE_TEST_SUITE_P(
    Cases, ConvNd,
    ::testing::Values(
        // 1-D (cuDNN runs them as 2-D of unit height).
        ConvNdCase{"conv1d_stride_pad_bias", Nd(2, 4, 6, {19}, {3}, [](ConvNdRef& r) { r.pads = {1}; r.strides = {2}; }), true},
        ConvNdCase{"conv1d_depthwise_dilated_relu",
                   Nd(1, 6, 6, {40}, {5}, [](ConvNdRef& r) { r.group = 6; r.dilations = {2}; r.pads = {4}; r.activation = "relu"; })},
        ConvNdCase{"conv1d_residual_clip", Nd(1, 8, 8, {33}, {1}, [](ConvNdRef& r) { r.activation = "clip"; r.clip_max = 0.5f; }),
                   false, true},
        ConvNdCase{"conv1d_grouped_bias_residual_relu",
                   Nd(2, 8, 12, {64}, {3}, [](ConvNdRef& r) { r.group = 4; r.pads = {1}; r.activation = "relu"; }), true, true},
        // 2-D with different settings per axis.
        ConvNdCase{"conv2d_per_axis_group_dilation_bias_relu",
                   Nd(1, 8, 6, {13, 11}, {3, 3}, [](ConvNdRef& r) {
                     r.group = 2; r.dilations = {2, 1}; r.pads = {2, 1}; r.strides = {1, 2}; r.activation = "relu";
                   }), true},
        // 3-D: mc3_18 / r2plus1d_18-like layers, then odd ones.
        ConvNdCase{"conv3d_stem_bias_relu",
                   Nd(1, 3, 16, {8, 28, 28}, {3, 7, 7}, [](ConvNdRef& r) {
                     r.pads = {1, 3, 3}; r.strides = {1, 2, 2}; r.activation = "relu";
                   }), true},
        ConvNdCase{"conv3d_residual_bias_relu_vec4",
                   Nd(1, 8, 8, {4, 8, 8}, {3, 3, 3}, [](ConvNdRef& r) { r.pads = {1, 1, 1}; r.activation = "relu"; }), true, true},
        ConvNdCase{"conv3d_spatial_1x3x3", Nd(1, 8, 12, {4, 10, 10}, {1, 3, 3}, [](ConvNdRef& r) { r.pads = {0, 1, 1}; }), true},
        ConvNdCase{"conv3d_temporal_3x1x1_stride2",
                   Nd(1, 12, 8, {8, 5, 5}, {3, 1, 1}, [](ConvNdRef& r) { r.pads = {1, 0, 0}; r.strides = {2, 1, 1}; }), true},
        ConvNdCase{"conv3d_grouped_dilated",
                   Nd(1, 8, 12, {5, 7, 9}, {3, 3, 3}, [](ConvNdRef& r) { r.group = 4; r.dilations = {1, 2, 1}; r.pads = {1, 2, 1}; })},
        ConvNdCase{"conv3d_depthwise_clip6",
                   Nd(1, 4, 4, {5, 6, 20}, {3, 3, 3}, [](ConvNdRef& r) { r.group = 4; r.pads = {1, 1, 1}; r.activation = "clip"; }),
                   true},
        // 3*5*7 = 105 outputs per channel: the epilogue's scalar path.
        ConvNdCase{"conv3d_odd_residual_bias_clip",
                   Nd(2, 4, 6, {3, 5, 7}, {1, 1, 1}, [](ConvNdRef& r) { r.activation = "clip"; r.clip_max = 0.25f; }), true,
                   true},
        ConvNdCase{"conv3d_batch2_stride_pad",
                   Nd(2, 5, 7, {6, 9, 8}, {2, 3, 3}, [](ConvNdRef& r) { r.pads = {1, 1, 0}; r.strides = {2, 2, 1}; })}),
    [](const ::testing::TestParamInfo<ConvNdCase>& i) { return std::string(i.param.name); });

// ---- cudnn.pool2d ---------------------------------------------------------------

class Pool : public ::testing::TestWithParam<PoolRef> {};

TEST_P(Pool, MatchesReference) {
  KEEL_SKIP_WITHOUT_GPU();
  const PoolRef& r = GetParam();
  const std::vector<int64_t> xs = {r.n, r.c, r.h, r.w}, ys = {r.n, r.c, r.out_h(), r.out_w()};
  const auto x = Random(static_cast<size_t>(r.n * r.c * r.h * r.w), 31);
  ProgramSpec p;
  p.tensors = {{xs, Role::kInput, {}}, {ys, Role::kOutput, {}}};
  p.kernels.push_back(LibraryKernel("pool", "cudnn.pool2d", {xs, ys},
                                    {AttrDesc::Str("mode", r.mode), AttrDesc::Ints("kernel", {r.kh, r.kw}),
                                     AttrDesc::Ints("pads", {r.pad_h, r.pad_w, r.pad_h, r.pad_w}),
                                     AttrDesc::Ints("strides", {r.stride_h, r.stride_w})}));
  p.ops = {{0, {0, 1}, "pool"}};
  ExpectMatches(p, {x}, ReferencePool(r, x));
}

INSTANTIATE_TEST_SUITE_P(Cases, Pool,
                         ::testing::Values(PoolRef{2, 8, 16, 16, 3, 3, 1, 1, 2, 2, "max"},
                                           PoolRef{1, 4, 9, 9, 2, 2, 0, 0, 2, 2, "max"},
                                           PoolRef{1, 4, 10, 10, 3, 3, 1, 1, 1, 1, "avg"},
                                           PoolRef{1, 4, 10, 10, 3, 3, 1, 1, 2, 2, "avg_exclude_pad"},
                                           PoolRef{2, 16, 7, 7, 7, 7, 0, 0, 1, 1, "avg_exclude_pad"}));

// ---- validation -----------------------------------------------------------------

Status CreateWith(const ser::KernelDesc& k, const std::vector<TensorSpec>& tensors) {
  ProgramSpec p;
  p.tensors = tensors;
  return CreateOneKernelVm(k, p);
}

TEST(LibraryKernels, BadAttributesFailAtCreation) {
  KEEL_SKIP_WITHOUT_GPU();
  const std::vector<TensorSpec> gemm_t = {{{6}, Role::kInput, {}}, {{6}, Role::kInput, {}}, {{2, 2}, Role::kOutput, {}}};
  auto gemm = [](std::vector<AttrDesc> attrs) {
    return LibraryKernel("gemm", "cublas.gemm", {{6}, {6}, {2, 2}}, std::move(attrs));
  };
  const std::vector<AttrDesc> ok = {AttrDesc::Ints("m", {2}), AttrDesc::Ints("n", {2}), AttrDesc::Ints("k", {3})};
  EXPECT_TRUE(CreateWith(gemm(ok), gemm_t).ok());
  Status missing = CreateWith(gemm({AttrDesc::Ints("m", {2}), AttrDesc::Ints("n", {2})}), gemm_t);
  EXPECT_EQ(missing.code(), StatusCode::kInvalidExecutable) << missing.ToString();
  EXPECT_NE(missing.message().find("\"k\""), std::string::npos) << missing.ToString();
  auto unknown_attrs = ok;
  unknown_attrs.push_back(AttrDesc::Ints("tranz_a", {1}));
  Status unknown = CreateWith(gemm(unknown_attrs), gemm_t);
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidExecutable) << unknown.ToString();
  EXPECT_NE(unknown.message().find("tranz_a"), std::string::npos) << unknown.ToString();
  Status too_small = CreateWith(gemm({AttrDesc::Ints("m", {2}), AttrDesc::Ints("n", {2}), AttrDesc::Ints("k", {4})}), gemm_t);
  EXPECT_EQ(too_small.code(), StatusCode::kInvalidExecutable) << too_small.ToString();
  Status bad_epi = CreateWith(gemm({AttrDesc::Ints("m", {2}), AttrDesc::Ints("n", {2}), AttrDesc::Ints("k", {3}),
                                    AttrDesc::Str("epilogue", "swish")}),
                              gemm_t);
  EXPECT_EQ(bad_epi.code(), StatusCode::kInvalidExecutable) << bad_epi.ToString();

  const std::vector<int64_t> xs = {1, 2, 5, 5}, ws = {2, 2, 3, 3}, ys = {1, 2, 3, 3};
  const std::vector<TensorSpec> conv_t = {{xs, Role::kInput, {}}, {ws, Role::kInput, {}}, {ys, Role::kOutput, {}}};
  Status asym = CreateWith(LibraryKernel("conv", "cudnn.conv2d", {xs, ws, ys}, {AttrDesc::Ints("pads", {0, 0, 1, 1})}),
                           conv_t);
  EXPECT_EQ(asym.code(), StatusCode::kUnsupported) << asym.ToString();
  Status wrong_y = CreateWith(LibraryKernel("conv", "cudnn.conv2d", {xs, ws, ys}, {AttrDesc::Ints("strides", {2, 2})}),
                              conv_t);
  EXPECT_EQ(wrong_y.code(), StatusCode::kInvalidExecutable) << wrong_y.ToString();
  // 1-D and 3-D: attribute lengths follow X's spatial rank; the same checks.
  const std::vector<int64_t> x3 = {1, 2, 4, 5, 5}, w3 = {2, 2, 3, 3, 3}, y3 = {1, 2, 2, 3, 3};
  const std::vector<TensorSpec> conv3_t = {{x3, Role::kInput, {}}, {w3, Role::kInput, {}}, {y3, Role::kOutput, {}}};
  auto conv3 = [&](std::vector<AttrDesc> attrs) { return LibraryKernel("conv3", "cudnn.conv2d", {x3, w3, y3}, std::move(attrs)); };
  EXPECT_TRUE(CreateWith(conv3({}), conv3_t).ok());
  Status pads_2d = CreateWith(conv3({AttrDesc::Ints("pads", {0, 0, 0, 0})}), conv3_t);
  EXPECT_EQ(pads_2d.code(), StatusCode::kInvalidExecutable) << pads_2d.ToString();
  EXPECT_NE(pads_2d.message().find("\"pads\""), std::string::npos) << pads_2d.ToString();
  Status asym3 = CreateWith(conv3({AttrDesc::Ints("pads", {0, 0, 0, 1, 0, 0})}), conv3_t);
  EXPECT_EQ(asym3.code(), StatusCode::kUnsupported) << asym3.ToString();
  Status wrong_y3 = CreateWith(conv3({AttrDesc::Ints("strides", {1, 2, 1})}), conv3_t);
  EXPECT_EQ(wrong_y3.code(), StatusCode::kInvalidExecutable) << wrong_y3.ToString();
  EXPECT_NE(wrong_y3.message().find("conv3"), std::string::npos) << wrong_y3.ToString();
  const std::vector<int64_t> x1 = {1, 4, 10}, w1 = {6, 2, 3}, y1 = {1, 6, 8};
  const std::vector<TensorSpec> conv1_t = {{x1, Role::kInput, {}}, {w1, Role::kInput, {}}, {y1, Role::kOutput, {}}};
  EXPECT_TRUE(CreateWith(LibraryKernel("conv1", "cudnn.conv2d", {x1, w1, y1}, {AttrDesc::Ints("group", {2})}), conv1_t).ok());
  Status bad_group = CreateWith(LibraryKernel("conv1", "cudnn.conv2d", {x1, w1, y1}, {AttrDesc::Ints("group", {3})}), conv1_t);
  EXPECT_EQ(bad_group.code(), StatusCode::kInvalidExecutable) << bad_group.ToString();
  const std::vector<int64_t> x6 = {1, 1, 2, 2, 2, 2}, w6 = {1, 1, 1, 1, 1, 1};
  const std::vector<TensorSpec> conv6_t = {{x6, Role::kInput, {}}, {w6, Role::kInput, {}}, {x6, Role::kOutput, {}}};
  Status rank6 = CreateWith(LibraryKernel("conv6", "cudnn.conv2d", {x6, w6, x6}, {}), conv6_t);
  EXPECT_EQ(rank6.code(), StatusCode::kInvalidExecutable) << rank6.ToString();
  Status unknown_op = CreateWith(LibraryKernel("x", "cudnn.softmax", {xs, ws, ys}, {}), conv_t);
  EXPECT_EQ(unknown_op.code(), StatusCode::kUnsupported) << unknown_op.ToString();
}

}  // namespace
}  // namespace keel::cudatest
