// tests/compiler/passes/im2col_test.cc — the im2col pass (compiler/passes/im2col.h)
// and keel.Im2Col (compiler/ops/im2col.cc): a convolution over few channels
// becomes keel.Im2Col, a Gemm (bias as its C) and a Transpose with the same values
// (reference evaluator) on odd shapes: VGG's padded 3x3 stem with zero columns
// past the window, a strided 3x3 over one channel with uneven pads and exactly
// the window's columns, a dilated 2x3 kernel, a 1-D convolution, and a 3-D
// video stem with strides (1, 2, 2); with and without bias. What it must leave
// alone (grouped; a weight that is no constant) does not change, and a target asking for too few columns is an error
// naming the node.
#include "compiler/passes/im2col.h"

#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

struct ConvSpec {
  int64_t c = 3, o = 8;
  std::vector<int64_t> spatial = {16, 16}, kernel = {3, 3}, strides = {1, 1}, dilations = {1, 1};
  std::vector<int64_t> pads = {1, 1, 1, 1};
  bool bias = true;
  int64_t group = 1;
  bool weight_input = false;  // the weight a graph input, not a constant

  std::vector<int64_t> InputShape() const {
    std::vector<int64_t> s{2, c};
    s.insert(s.end(), spatial.begin(), spatial.end());
    return s;
  }
  int64_t Window() const {
    int64_t w = c / group;
    for (int64_t k : kernel) w *= k;
    return w;
  }
};

std::unique_ptr<ir::Graph> Build(const ConvSpec& c) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32(c.InputShape()));
  std::vector<int64_t> ws{c.o, c.c / c.group};
  ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
  ir::Value* w = c.weight_input ? g->AddInput("w", F32(ws)) : Const(*g, "w", ws, 3);
  std::vector<ir::Value*> in = {x, w};
  if (c.bias) in.push_back(Const(*g, "b", {c.o}, 5));
  ir::Attributes a;
  a.Set("kernel_shape", c.kernel);
  a.Set("strides", c.strides);
  a.Set("pads", c.pads);
  a.Set("group", c.group);
  a.Set("dilations", c.dilations);
  g->AddOutput(Op(*g, "Relu", "y", {Op(*g, "Conv", "conv", in, a)}));
  return g;
}

std::function<Status(ir::Graph&)> Rewrite(int64_t columns) {
  return [columns](ir::Graph& g) -> Status {
    KEEL_RETURN_IF_ERROR(InferShapes(g));
    Im2ColPass pass([columns](const ir::Node&) { return columns; });
    KEEL_RETURN_IF_ERROR(pass.Run(g));
    return g.Verify(true);
  };
}

TEST(Im2Col, ConvolutionsKeepTheirValues) {
  ConvSpec stem;  // VGG's stem: 3 channels, 3x3, pads 1; 27 columns rounded up to 32
  ConvSpec strided;
  strided.c = 1, strided.spatial = {15, 17}, strided.strides = {2, 2}, strided.pads = {1, 0, 2, 1},
  strided.bias = false;
  ConvSpec dilated;
  dilated.c = 2, dilated.spatial = {11, 13}, dilated.kernel = {2, 3}, dilated.dilations = {2, 3},
  dilated.pads = {1, 2, 0, 3};
  ConvSpec line;  // 1-D
  line.c = 4, line.spatial = {19}, line.kernel = {3}, line.strides = {1}, line.dilations = {1}, line.pads = {2, 0};
  ConvSpec video;  // mc3's stem, smaller: 3x5x5 over 3 channels, strides (1, 2, 2)
  video.spatial = {4, 9, 10}, video.kernel = {3, 5, 5}, video.strides = {1, 2, 2}, video.dilations = {1, 1, 1},
  video.pads = {1, 2, 2, 1, 2, 2};
  for (const auto& [spec, columns] : std::vector<std::pair<ConvSpec, int64_t>>{
           {stem, 32}, {stem, 27}, {strided, 9}, {dilated, 16}, {line, 12}, {video, 232}}) {
    SCOPED_TRACE(std::to_string(spec.spatial.size()) + "-D, window " + std::to_string(spec.Window()) + " -> " +
                 std::to_string(columns) + " columns");
    ir::Graph* g = nullptr;
    std::unique_ptr<ir::Graph> keep;
    EXPECT_LT(CompareAfter([&] { return Build(spec); }, Rewrite(columns), {Random(spec.InputShape(), 11)}, &g, &keep),
              1e-5);
    ASSERT_NE(g, nullptr);
    const auto h = Histogram(*g);
    EXPECT_EQ(h.count("Conv"), 0u);
    ASSERT_EQ(h.count("keel.Im2Col"), 1u);
    EXPECT_EQ(h.at("Gemm"), 1);
    EXPECT_EQ(h.at("Transpose"), 1);
    for (const ir::Node* n : g->nodes()) {
      if (n->op_type() != "Gemm") continue;
      EXPECT_EQ(n->input(0)->type().shape[0], columns);  // A transposed: [columns, pixels]
      EXPECT_EQ(n->input(1)->type().shape, (std::vector<int64_t>{columns, spec.o}));
      EXPECT_EQ(n->inputs().size(), spec.bias ? 3u : 2u);
    }
  }
}

TEST(Im2Col, SharedWeightIsRearrangedOnce) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* w = Const(*g, "w", {8, 3, 3, 3}, 3);
    ir::Attributes a;
    a.Set("kernel_shape", std::vector<int64_t>{3, 3});
    a.Set("strides", std::vector<int64_t>{1, 1});
    a.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    for (const char* name : {"x0", "x1"}) {
      ir::Value* x = g->AddInput(name, F32({1, 3, 9, 7}));
      g->AddOutput(Op(*g, "Conv", std::string(name) + "_conv", {x, w}, a));
    }
    return g;
  };
  ir::Graph* g = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter(build, Rewrite(32), {Random({1, 3, 9, 7}, 4), Random({1, 3, 9, 7}, 5)}, &g, &keep), 1e-5);
  ASSERT_NE(g, nullptr);
  std::vector<const ir::Value*> weights;
  for (const ir::Node* n : g->nodes())
    if (n->op_type() == "Gemm") weights.push_back(n->input(1));
  ASSERT_EQ(weights.size(), 2u);
  EXPECT_EQ(weights[0], weights[1]);
}

TEST(Im2Col, LeavesWhatItCannotOrNeedNotRewrite) {
  ConvSpec grouped, weight_input;
  grouped.c = 4, grouped.o = 4, grouped.group = 2;
  weight_input.weight_input = true;
  for (const ConvSpec& spec : {grouped, weight_input}) {
    SCOPED_TRACE(spec.weight_input ? "weight input" : "grouped");
    ir::Graph* g = nullptr;
    std::unique_ptr<ir::Graph> keep;
    std::vector<ir::TensorDataPtr> inputs{Random(spec.InputShape(), 2)};
    if (spec.weight_input) inputs.push_back(Random({spec.o, spec.c, 3, 3}, 3));
    EXPECT_LT(CompareAfter([&] { return Build(spec); }, Rewrite(64), inputs, &g, &keep), 1e-7);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(Histogram(*g).count("keel.Im2Col"), 0u);
  }
  // The predicate says no.
  ir::Graph* g = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter([] { return Build(ConvSpec{}); }, Rewrite(0), {Random({2, 3, 16, 16}, 2)}, &g, &keep), 1e-7);
  EXPECT_EQ(Histogram(*g).count("keel.Im2Col"), 0u);
  // Fewer columns than the window reads is the target's bug: an error naming the node.
  auto bad = Build(ConvSpec{});
  Status s = Rewrite(26)(*bad);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("conv"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace keel::passes
