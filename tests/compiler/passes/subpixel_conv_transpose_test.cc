// tests/compiler/passes/subpixel_conv_transpose_test.cc — the subpixel pass
// (compiler/passes/subpixel_conv_transpose.h): a strided ConvTranspose becomes a
// forward Conv over the input, DepthToSpace and (where pads or the extra rows
// need cropping) a Slice, with the same values (reference evaluator) on odd
// shapes: the UNet's 3x3 stride 2 with pads 1 and output_padding 1, its 2x2
// stride 2 without pads, a GAN's 4x4 stride 2 pads 1, a 5x5 stride 3 with uneven
// pads and output_padding 2 (phases with fewer taps), and a 3x2 kernel over an
// odd rectangle; with and without bias, channels not a power of two. What it must
// leave alone (stride 1, unequal strides, grouped, dilated, a weight that is no
// constant) does not change.
#include "compiler/passes/subpixel_conv_transpose.h"

#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

struct Spec {
  int64_t c = 5, o = 3, h = 7, w = 9;
  std::vector<int64_t> kernel = {3, 3}, strides = {2, 2}, pads = {1, 1, 1, 1}, output_padding = {1, 1};
  std::vector<int64_t> dilations = {1, 1};
  int64_t group = 1;
  bool bias = true, weight_input = false;
  std::vector<int64_t> InputShape() const { return {2, c, h, w}; }
};

std::unique_ptr<ir::Graph> Build(const Spec& s) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32(s.InputShape()));
  const std::vector<int64_t> ws{s.c, s.o / s.group, s.kernel[0], s.kernel[1]};
  ir::Value* w = s.weight_input ? g->AddInput("w", F32(ws)) : Const(*g, "w", ws, 3);
  std::vector<ir::Value*> in = {x, w};
  if (s.bias) in.push_back(Const(*g, "b", {s.o}, 5));
  ir::Attributes a;
  a.Set("kernel_shape", s.kernel);
  a.Set("strides", s.strides);
  a.Set("pads", s.pads);
  a.Set("output_padding", s.output_padding);
  a.Set("dilations", s.dilations);
  a.Set("group", s.group);
  g->AddOutput(Op(*g, "Relu", "y", {Op(*g, "ConvTranspose", "up", in, a)}));
  return g;
}

std::function<Status(ir::Graph&)> Rewrite() {
  return [](ir::Graph& g) -> Status {
    KEEL_RETURN_IF_ERROR(InferShapes(g));
    SubpixelConvTransposePass pass([](const ir::Node&) { return true; });
    KEEL_RETURN_IF_ERROR(pass.Run(g));
    return g.Verify(true);
  };
}

TEST(Subpixel, TransposedConvolutionsKeepTheirValues) {
  Spec unet;  // 3x3 stride 2, pads 1, output_padding 1: exactly twice the input
  Spec unet2;  // 2x2 stride 2, no pads: no crop
  unet2.kernel = {2, 2}, unet2.pads = {0, 0, 0, 0}, unet2.output_padding = {0, 0}, unet2.bias = false;
  Spec gan;  // 4x4 stride 2, pads 1
  gan.kernel = {4, 4}, gan.output_padding = {0, 0}, gan.c = 6, gan.o = 4;
  Spec odd;  // 5x5 stride 3, uneven pads, output_padding 2: phases with 1 or 2 taps
  odd.kernel = {5, 5}, odd.strides = {3, 3}, odd.pads = {2, 1, 1, 2}, odd.output_padding = {2, 2}, odd.h = 4;
  Spec rect;  // a 3x2 kernel over an odd rectangle
  rect.kernel = {3, 2}, rect.pads = {0, 1, 1, 0}, rect.output_padding = {1, 0}, rect.h = 5, rect.w = 6;
  for (const Spec& spec : {unet, unet2, gan, odd, rect}) {
    SCOPED_TRACE(std::to_string(spec.kernel[0]) + "x" + std::to_string(spec.kernel[1]) + " stride " +
                 std::to_string(spec.strides[0]));
    ir::Graph* g = nullptr;
    std::unique_ptr<ir::Graph> keep;
    EXPECT_LT(CompareAfter([&] { return Build(spec); }, Rewrite(), {Random(spec.InputShape(), 11)}, &g, &keep), 1e-5);
    ASSERT_NE(g, nullptr);
    const auto h = Histogram(*g);
    EXPECT_EQ(h.count("ConvTranspose"), 0u);
    EXPECT_EQ(h.at("Conv"), 1);
    EXPECT_EQ(h.at("DepthToSpace"), 1);
    for (const ir::Node* n : g->nodes()) {
      if (n->op_type() != "Conv") continue;
      const int64_t s = spec.strides[0];
      EXPECT_EQ(n->input(1)->type().shape[0], s * s * spec.o);
      EXPECT_EQ(n->inputs().size(), spec.bias ? 3u : 2u);
    }
  }
}

TEST(Subpixel, LeavesWhatItCannotRewrite) {
  Spec stride1;
  stride1.strides = {1, 1}, stride1.output_padding = {0, 0};
  Spec unequal;
  unequal.strides = {2, 3};
  Spec grouped;
  grouped.c = 4, grouped.o = 4, grouped.group = 2;
  Spec dilated;
  dilated.dilations = {2, 2}, dilated.output_padding = {0, 0};
  Spec runtime_weight;
  runtime_weight.weight_input = true;
  for (const Spec& spec : {stride1, unequal, grouped, dilated, runtime_weight}) {
    std::unique_ptr<ir::Graph> g = Build(spec);
    ASSERT_TRUE(InferShapes(*g).ok());
    SubpixelConvTransposePass pass([](const ir::Node&) { return true; });
    ASSERT_TRUE(pass.Run(*g).ok());
    EXPECT_EQ(Histogram(*g).count("ConvTranspose"), 1u);
  }
  // A candidate the target declines stays too.
  std::unique_ptr<ir::Graph> g = Build(Spec{});
  ASSERT_TRUE(InferShapes(*g).ok());
  SubpixelConvTransposePass pass([](const ir::Node&) { return false; });
  ASSERT_TRUE(pass.Run(*g).ok());
  EXPECT_EQ(Histogram(*g).count("ConvTranspose"), 1u);
}

}  // namespace
}  // namespace keel::passes
