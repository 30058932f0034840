// tests/compiler/passes/space_to_depth_test.cc — the space-to-depth pass
// (compiler/passes/space_to_depth.h): a strided convolution over few channels
// becomes Pad, SpaceToDepth, (a channel Pad) and a stride-1 convolution with
// the same values (reference evaluator) on odd shapes: ResNet's 7x7 stride-2
// stem, a 5x5 stride-2 kernel over an odd 15x17 image with uneven pads, a 3x3
// stride-3 kernel over one channel, ConvNeXt's unpadded 4x4 stride-4 stem (no
// Pad node then), with and without bias; and what it must
// leave alone does not change.
#include "compiler/passes/space_to_depth.h"

#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

struct ConvSpec {
  int64_t c = 3, h = 16, w = 16, k = 7, s = 2, o = 8;
  std::vector<int64_t> pads = {3, 3, 3, 3};
  bool bias = true;
  int64_t group = 1, dilation = 1;
  bool computed_weight = false;
};

std::unique_ptr<ir::Graph> Build(const ConvSpec& c) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32({2, c.c, c.h, c.w}));
  ir::Value* w = Const(*g, "w", {c.o, c.c / c.group, c.k, c.k}, 3);
  if (c.computed_weight) w = Op(*g, "Relu", "w_relu", {w});
  std::vector<ir::Value*> in = {x, w};
  if (c.bias) in.push_back(Const(*g, "b", {c.o}, 5));
  ir::Attributes a;
  a.Set("kernel_shape", std::vector<int64_t>{c.k, c.k});
  a.Set("strides", std::vector<int64_t>{c.s, c.s});
  a.Set("pads", c.pads);
  a.Set("group", c.group);
  a.Set("dilations", std::vector<int64_t>{c.dilation, c.dilation});
  g->AddOutput(Op(*g, "Relu", "y", {Op(*g, "Conv", "conv", in, a)}));
  return g;
}

std::function<Status(ir::Graph&)> Rewrite(int64_t channels) {
  return [channels](ir::Graph& g) -> Status {
    KEEL_RETURN_IF_ERROR(InferShapes(g));
    SpaceToDepthPass pass([channels](const ir::Node&) { return channels; });
    KEEL_RETURN_IF_ERROR(pass.Run(g));
    return g.Verify(true);
  };
}

TEST(SpaceToDepth, StridedConvolutionsKeepTheirValues) {
  ConvSpec stem;  // ResNet's stem: 3 channels, 7x7, stride 2, pads 3
  ConvSpec odd;
  odd.c = 2, odd.h = 15, odd.w = 17, odd.k = 5, odd.s = 2, odd.pads = {2, 1, 0, 2}, odd.bias = false;
  ConvSpec stride3;
  stride3.c = 1, stride3.h = 14, stride3.w = 13, stride3.k = 3, stride3.s = 3, stride3.pads = {1, 0, 1, 2};
  ConvSpec patchify;  // ConvNeXt's stem: 4x4 stride 4, no pads: no Pad node at all
  patchify.k = 4, patchify.s = 4, patchify.pads = {0, 0, 0, 0};
  for (const auto& [spec, channels] : std::vector<std::pair<ConvSpec, int64_t>>{
           {stem, 16}, {stem, 12}, {odd, 8}, {stride3, 9}, {stride3, 16}, {patchify, 48}}) {
    SCOPED_TRACE(std::to_string(spec.c) + " channels, " + std::to_string(spec.k) + "x" + std::to_string(spec.k) +
                 " stride " + std::to_string(spec.s) + " -> " + std::to_string(channels));
    ir::Graph* g = nullptr;
    std::unique_ptr<ir::Graph> keep;
    const auto x = Random({2, spec.c, spec.h, spec.w}, 11);
    EXPECT_LT(CompareAfter([&] { return Build(spec); }, Rewrite(channels), {x}, &g, &keep), 1e-5);
    ASSERT_NE(g, nullptr);
    const auto h = Histogram(*g);
    ASSERT_EQ(h.count("SpaceToDepth"), 1u);
    EXPECT_EQ(h.at("SpaceToDepth"), 1);
    const bool spatial_pad = spec.pads != std::vector<int64_t>{0, 0, 0, 0};
    EXPECT_EQ(h.count("Pad") ? h.at("Pad") : 0, (spatial_pad ? 1 : 0) + (channels > spec.s * spec.s * spec.c ? 1 : 0));
    for (const ir::Node* n : g->nodes()) {
      if (n->op_type() != "Conv") continue;
      const int64_t k2 = (spec.k + spec.s - 1) / spec.s;
      EXPECT_EQ(*n->attrs().GetInts("strides", {}), (std::vector<int64_t>{1, 1}));
      EXPECT_EQ(*n->attrs().GetInts("kernel_shape", {}), (std::vector<int64_t>{k2, k2}));
      EXPECT_EQ(n->input(0)->type().shape[1], channels);
    }
  }
}

TEST(SpaceToDepth, SharedWeightIsRearrangedOnce) {
  // Two stems over two inputs with one weight: one rearranged constant serves both.
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* w = Const(*g, "w", {8, 3, 7, 7}, 3);
    ir::Attributes a;
    a.Set("kernel_shape", std::vector<int64_t>{7, 7});
    a.Set("strides", std::vector<int64_t>{2, 2});
    a.Set("pads", std::vector<int64_t>{3, 3, 3, 3});
    for (const char* name : {"x0", "x1"}) {
      ir::Value* x = g->AddInput(name, F32({1, 3, 16, 16}));
      g->AddOutput(Op(*g, "Conv", std::string(name) + "_conv", {x, w}, a));
    }
    return g;
  };
  ir::Graph* g = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter(build, Rewrite(16), {Random({1, 3, 16, 16}, 4), Random({1, 3, 16, 16}, 5)}, &g, &keep),
            1e-5);
  ASSERT_NE(g, nullptr);
  std::vector<const ir::Value*> weights;
  for (const ir::Node* n : g->nodes())
    if (n->op_type() == "Conv") weights.push_back(n->input(1));
  ASSERT_EQ(weights.size(), 2u);
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_EQ(weights[0]->type().shape, (std::vector<int64_t>{8, 16, 4, 4}));
}

TEST(SpaceToDepth, LeavesWhatItCannotOrNeedNotRewrite) {
  ConvSpec stride1, grouped, dilated, computed, unread_column;
  stride1.s = 1;
  // The last input column is never read (13 + 1 - 3 = 11 is not a multiple of 3):
  // the padded input would have to be cropped.
  unread_column.c = 1, unread_column.h = 14, unread_column.w = 13, unread_column.k = 3, unread_column.s = 3;
  unread_column.pads = {1, 0, 1, 1};
  grouped.c = 4, grouped.o = 4, grouped.group = 2;
  dilated.dilation = 2;
  computed.computed_weight = true;
  for (const ConvSpec& spec : {stride1, grouped, dilated, computed, unread_column}) {
    ir::Graph* g = nullptr;
    std::unique_ptr<ir::Graph> keep;
    EXPECT_LT(CompareAfter([&] { return Build(spec); }, Rewrite(16), {Random({2, spec.c, spec.h, spec.w}, 2)}, &g,
                           &keep),
              1e-7);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(Histogram(*g).count("SpaceToDepth"), 0u);
  }
  // The predicate says no.
  ir::Graph* g = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter([] { return Build(ConvSpec{}); }, Rewrite(0), {Random({2, 3, 16, 16}, 2)}, &g, &keep), 1e-7);
  EXPECT_EQ(Histogram(*g).count("SpaceToDepth"), 0u);
  // Fewer channels than space-to-depth makes is the target's bug: an error naming the node.
  auto bad = Build(ConvSpec{});
  Status s = Rewrite(8)(*bad);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("conv"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace keel::passes
