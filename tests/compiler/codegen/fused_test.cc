// keel.Fused groups: anchor + elementwise epilogue (Conv+bias+Add residual+Relu,
// Gemm+Relu, MatMul+Add, depthwise Conv+Clip, Softmax epilogue), injective
// prologues (Transpose feeding MatMul), pure elementwise chains with several
// outputs, and the rejection of unsupported groups.
#include <gtest/gtest.h>

#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

using ir::Attributes;

TEST(Fused, ConvBiasResidualRelu) {
  GraphBuilder b;
  std::vector<ir::Value*> ins = {b.Input("x", {1, 8, 9, 11}), b.Input("w", {12, 8, 3, 3}), b.Input("bias", {12}),
                                 b.Input("res", {1, 12, 9, 11})};
  ir::Node* f = MakeFused(b.graph(), ins, [](GraphBuilder& g, const std::vector<ir::Value*>& v) {
    Attributes a;
    a.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    ir::Node* conv = g.Op("Conv", {v[0], v[1], v[2]}, a);
    ir::Node* add = g.Op("Add", {conv->output(0), v[3]});
    ir::Node* relu = g.Op("Relu", {add->output(0)});
    return std::vector<ir::Value*>{relu->output(0)};
  });
  KernelSpec spec = CheckNodeAgainstReference(*f, 51);
  EXPECT_EQ(spec.name, "k0_conv2d_add_relu");
  EXPECT_EQ(spec.num_inputs, 4);
  EXPECT_GT(spec.workspace_bytes, 0);
}

// The tiles of a channels-first convolution with an output of at least the cache budget prefetch
// the next tile's output and residual lines (LowerOptions::gemm_prefetch_c), and a 1x1
// convolution's tiles the input rows of the next panel to pack (gemm_prefetch_pack;
// lower_gemm.cc): the same values as the reference with each on and off, and prefetches in the
// kernel only where one applies. Odd shapes: M tails (33, 20 and 40 output channels), tail
// panels, K blocks (K = 360 and 400: the output's lines in the last one only), a 7x7 on 3
// channels, 1x1 convolutions read in place (below the budget: no prefetch) and packed a panel at
// a time (256 and 4096 pixels), AVX2 and AVX-512.
TEST(Fused, ConvResidualPrefetch) {
  struct Case { std::vector<int64_t> x; int64_t co, kh; };
  const std::vector<Case> cases = {{{1, 8, 61, 67}, 33, 3},  {{1, 40, 48, 71}, 40, 3},   {{1, 3, 70, 66}, 32, 7},
                                   {{1, 16, 17, 19}, 24, 1}, {{1, 24, 16, 16}, 20, 1},   {{1, 400, 16, 16}, 20, 1},
                                   {{1, 24, 64, 64}, 40, 1}};
  for (const Case& c : cases) {
    GraphBuilder b;
    std::vector<ir::Value*> ins = {b.Input("x", c.x), b.Input("w", {c.co, c.x[1], c.kh, c.kh}), b.Input("bias", {c.co}),
                                   b.Input("res", {c.x[0], c.co, c.x[2], c.x[3]})};
    ir::Node* f = MakeFused(b.graph(), ins, [&](GraphBuilder& g, const std::vector<ir::Value*>& v) {
      Attributes a;
      a.Set("pads", std::vector<int64_t>(4, c.kh / 2));
      ir::Node* conv = g.Op("Conv", {v[0], v[1], v[2]}, a);
      ir::Node* add = g.Op("Add", {conv->output(0), v[3]});
      ir::Node* relu = g.Op("Relu", {add->output(0)});
      return std::vector<ir::Value*>{relu->output(0)};
    });
    for (LowerOptions o : {LowerOptionsForCpuFeatures("+avx2,+fma"), LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f")}) {
      const int64_t pixels = c.x[2] * c.x[3];
      const bool large = c.co * pixels * 4 >= o.l2_bytes, packs_panels = c.kh == 1 && pixels % o.gemm_nr == 0;
      for (int on = 0; on < 4; ++on) {
        SCOPED_TRACE("x " + f->input(0)->type().ToString() + ", NR " + std::to_string(o.gemm_nr) + ", options " +
                     std::to_string(on));
        o.gemm_prefetch_c = (on & 1) != 0;
        o.gemm_prefetch_pack = (on & 2) != 0;
        const KernelSpec spec = CheckNodeAgainstReference(*f, 53, 1e-5, 4, o);
        ASSERT_NE(spec.kernel, nullptr);
        const bool prefetches = spec.kernel->ToString().find("prefetch") != std::string::npos;
        EXPECT_EQ(prefetches, (o.gemm_prefetch_c && large) || (o.gemm_prefetch_pack && packs_panels));
      }
    }
  }
}

TEST(Fused, DepthwiseConvClip) {
  GraphBuilder b;
  std::vector<ir::Value*> ins = {b.Input("x", {1, 6, 10, 10}), b.Input("w", {6, 1, 3, 3}), b.Input("bias", {6})};
  ir::Node* f = MakeFused(b.graph(), ins, [](GraphBuilder& g, const std::vector<ir::Value*>& v) {
    Attributes a;
    a.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    a.Set("group", int64_t{6});
    ir::Node* conv = g.Op("Conv", {v[0], v[1], v[2]}, a);
    Attributes c;
    c.Set("min", 0.0);
    c.Set("max", 0.25);
    ir::Node* clip = g.Op("Clip", {conv->output(0)}, c);
    return std::vector<ir::Value*>{clip->output(0)};
  });
  CheckNodeAgainstReference(*f, 52);
}

TEST(Fused, GemmRelu) {
  GraphBuilder b;
  std::vector<ir::Value*> ins = {b.Input("a", {5, 64}), b.Input("w", {30, 64}), b.Input("c", {30})};
  ir::Node* f = MakeFused(b.graph(), ins, [](GraphBuilder& g, const std::vector<ir::Value*>& v) {
    Attributes a;
    a.Set("transB", int64_t{1});
    ir::Node* gemm = g.Op("Gemm", {v[0], v[1], v[2]}, a);
    ir::Node* relu = g.Op("Relu", {gemm->output(0)});
    return std::vector<ir::Value*>{relu->output(0)};
  });
  CheckNodeAgainstReference(*f, 53);
}

TEST(Fused, TransposeIntoMatMulPlusBiasAndBodyConstant) {
  GraphBuilder b;
  std::vector<ir::Value*> ins = {b.Input("q", {2, 7, 4}), b.Input("k", {2, 7, 4})};
  ir::Node* f = MakeFused(b.graph(), ins, [](GraphBuilder& g, const std::vector<ir::Value*>& v) {
    Attributes p;
    p.Set("perm", std::vector<int64_t>{0, 2, 1});
    ir::Node* kt = g.Op("Transpose", {v[1]}, p);
    ir::Node* mm = g.Op("MatMul", {v[0], kt->output(0)});
    ir::Value* scale = g.ConstF32("scale", {}, {0.125f});
    ir::Node* mul = g.Op("Mul", {mm->output(0), scale});
    return std::vector<ir::Value*>{mul->output(0)};
  });
  CheckNodeAgainstReference(*f, 54);
}

TEST(Fused, SoftmaxWithEpilogue) {
  GraphBuilder b;
  std::vector<ir::Value*> ins = {b.Input("x", {3, 19})};
  ir::Node* f = MakeFused(b.graph(), ins, [](GraphBuilder& g, const std::vector<ir::Value*>& v) {
    ir::Node* sm = g.Op("Softmax", {v[0]});
    ir::Node* sq = g.Op("Mul", {sm->output(0), sm->output(0)});
    return std::vector<ir::Value*>{sq->output(0)};
  });
  CheckNodeAgainstReference(*f, 55);
}

TEST(Fused, ElementwiseChainWithTwoOutputsAndGelu) {
  GraphBuilder b;
  std::vector<ir::Value*> ins = {b.Input("x", {4, 29}), b.Input("bias", {29})};
  ir::Node* f = MakeFused(b.graph(), ins, [](GraphBuilder& g, const std::vector<ir::Value*>& v) {
    ir::Node* add = g.Op("Add", {v[0], v[1]});
    ir::Value* sqrt2 = g.ConstF32("sqrt2", {}, {1.4142135f});
    ir::Value* one = g.ConstF32("one", {}, {1.0f});
    ir::Value* half = g.ConstF32("half", {}, {0.5f});
    ir::Node* div = g.Op("Div", {add->output(0), sqrt2});
    ir::Node* erf = g.Op("Erf", {div->output(0)});
    ir::Node* plus = g.Op("Add", {erf->output(0), one});
    ir::Node* mul = g.Op("Mul", {add->output(0), plus->output(0)});
    ir::Node* gelu = g.Op("Mul", {mul->output(0), half});
    return std::vector<ir::Value*>{gelu->output(0), add->output(0)};
  });
  KernelSpec spec = CheckNodeAgainstReference(*f, 56);
  EXPECT_EQ(spec.args.size(), 4u);
}

TEST(Fused, RejectsTwoAnchors) {
  GraphBuilder b;
  std::vector<ir::Value*> ins = {b.Input("a", {4, 4}), b.Input("w", {4, 4})};
  ir::Node* f = MakeFused(b.graph(), ins, [](GraphBuilder& g, const std::vector<ir::Value*>& v) {
    ir::Node* m1 = g.Op("MatMul", {v[0], v[1]});
    ir::Node* m2 = g.Op("MatMul", {m1->output(0), v[1]});
    return std::vector<ir::Value*>{m2->output(0)};
  });
  auto spec = LowerNodeToKernel(*f, 3);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kUnsupported);
}

TEST(Fused, RejectsShapeChangingEpilogue) {
  GraphBuilder b;
  std::vector<ir::Value*> ins = {b.Input("a", {4, 4}), b.Input("w", {4, 4})};
  ir::Node* f = MakeFused(b.graph(), ins, [](GraphBuilder& g, const std::vector<ir::Value*>& v) {
    ir::Node* m1 = g.Op("MatMul", {v[0], v[1]});
    Attributes p;
    p.Set("perm", std::vector<int64_t>{1, 0});
    ir::Node* t = g.Op("Transpose", {m1->output(0)}, p);
    return std::vector<ir::Value*>{t->output(0)};
  });
  auto spec = LowerNodeToKernel(*f, 3);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kUnsupported);
}

// One-element constant arguments read as immediates (LowerOptions::inline_scalar_constants):
// a T5-style RMS-norm square and a tanh-GELU's coefficients in one fused group, a [1]-shaped
// and a 0-d f32 constant and an i64 one, on an odd shape. The same values as the reference with
// the option on and off; on, the kernel reads no constant argument and pow's exponent is the
// immediate 2 (which LLVM turns into a multiply).
TEST(Fused, ScalarConstantsReadAsImmediates) {
  GraphBuilder b;
  std::vector<ir::Value*> ins = {b.Input("x", {3, 37}), b.ConstF32("two", {}, {2.0f}), b.ConstF32("k", {1}, {0.044715f}),
                                 b.ConstF32("half", {}, {0.5f})};
  ir::Node* f = MakeFused(b.graph(), ins, [](GraphBuilder& g, const std::vector<ir::Value*>& v) {
    ir::Node* sq = g.Op("Pow", {v[0], v[1]});
    ir::Node* cube = g.Op("Mul", {sq->output(0), v[0]});
    ir::Node* inner = g.Op("Add", {v[0], g.Op("Mul", {cube->output(0), v[2]})->output(0)});
    ir::Node* t = g.Op("Tanh", {inner->output(0)});
    return std::vector<ir::Value*>{g.Op("Mul", {t->output(0), v[3]})->output(0)};
  });
  for (bool inline_constants : {true, false}) {
    LowerOptions o;
    o.inline_scalar_constants = inline_constants;
    KernelSpec spec = CheckNodeAgainstReference(*f, 61, 1e-6, 4, o);
    ASSERT_TRUE(spec.kernel);
    const std::string text = spec.kernel->ToString();
    EXPECT_EQ(spec.num_inputs, 4);  // the arguments stay
    for (const char* arg : {"in1[", "in2[", "in3["})
      EXPECT_EQ(text.find(arg) == std::string::npos, inline_constants) << arg << "\n" << text;
    EXPECT_EQ(text.find(", 2f)") != std::string::npos, inline_constants) << text;  // pow(in0[...], 2f)
  }
  GraphBuilder bi;
  KernelSpec spec = CheckOp(bi, "Add", {bi.Input("xi", {5, 7}, ir::DType::kI64), bi.ConstI64("k", {}, {3})}, {}, 62);
  ASSERT_TRUE(spec.kernel);
  EXPECT_EQ(spec.kernel->ToString().find("in1["), std::string::npos) << spec.kernel->ToString();
}

}  // namespace
}  // namespace keel::codegen::testing
