// tests/compiler/passes/channels_last_test.cc — the channels-last pass on small
// CNN graphs: the same values as the channels-first graph (the reference
// evaluator, exactly), transposes only where NCHW data enters or leaves, and no
// change where the target prefers nothing; a mean over H and W without keepdims
// reads the channels-last image.
#include "compiler/passes/channels_last.h"

#include "compiler/ir/printer.h"
#include "compiler/ops/channels_last.h"
#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

ChannelsLastPredicate Always() {
  return [](const ir::Node&) { return true; };
}

std::function<Status(ir::Graph&)> Transform(ChannelsLastPredicate prefers, bool before_enlarging = false) {
  return [prefers, before_enlarging](ir::Graph& g) -> Status {
    KEEL_RETURN_IF_ERROR(InferShapes(g));
    ChannelsLastPass pass(prefers, before_enlarging);
    KEEL_RETURN_IF_ERROR(pass.Run(g));
    return g.Verify(true);
  };
}

ir::Node* Conv(ir::Graph& g, const std::string& name, ir::Value* x, int64_t cin, int64_t cout, int64_t k,
               uint32_t seed) {
  ir::Node* n = g.AddNode("Conv", name, {x, Const(g, name + ".w", {cout, cin, k, k}, seed),
                                         Const(g, name + ".b", {cout}, seed + 1)}, 1);
  n->attrs().Set("pads", std::vector<int64_t>(4, k / 2));
  return n;
}

int CountChannelsLast(const ir::Graph& g) {
  int c = 0;
  for (const ir::Node* n : g.nodes()) c += ops::IsChannelsLast(*n) ? 1 : 0;
  return c;
}

// x → conv → relu → conv → add(relu) → maxpool → concat(·, conv1x1(·)) → mul(scale)
// → global average pool → flatten, and the residual sum as a second output.
std::unique_ptr<ir::Graph> SmallCnn() {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32({2, 4, 9, 9}));
  ir::Node* c1 = Conv(*g, "c1", x, 4, 8, 3, 1);
  ir::Node* r1 = g->AddNode("Relu", "r1", {c1->output(0)}, 1);
  ir::Node* c2 = Conv(*g, "c2", r1->output(0), 8, 8, 3, 3);
  ir::Node* sum = g->AddNode("Add", "sum", {c2->output(0), r1->output(0)}, 1, {"sum"});
  ir::Node* pool = g->AddNode("MaxPool", "pool", {sum->output(0)}, 1);
  pool->attrs().Set("kernel_shape", std::vector<int64_t>{3, 3});
  pool->attrs().Set("strides", std::vector<int64_t>{2, 2});
  pool->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Node* c3 = Conv(*g, "c3", pool->output(0), 8, 8, 1, 5);
  ir::Node* cat = g->AddNode("Concat", "cat", {pool->output(0), c3->output(0)}, 1);
  cat->attrs().Set("axis", int64_t{1});
  ir::Node* mul = g->AddNode("Mul", "mul", {cat->output(0), Const(*g, "scale", {16, 1, 1}, 7)}, 1);
  ir::Node* gap = g->AddNode("GlobalAveragePool", "gap", {mul->output(0)}, 1);
  ir::Node* flat = g->AddNode("Flatten", "flat", {gap->output(0)}, 1, {"y"});
  g->AddOutput(flat->output(0));
  g->AddOutput(sum->output(0));
  return g;
}

TEST(ChannelsLastTest, SameValuesWithTransposesOnlyAtTheEdges) {
  const std::vector<ir::TensorDataPtr> in = {Random({2, 4, 9, 9}, 11)};
  ir::Graph* g = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_EQ(CompareAfter(SmallCnn, Transform(Always()), in, &g, &keep), 0.0);
  ASSERT_NE(g, nullptr);
  // conv x3, maxpool, global pool in channels-last form; one transpose for the
  // image, one for the NCHW output `sum`; the pooled [2,1,1,16] is a view.
  EXPECT_EQ(CountChannelsLast(*g), 5);
  const auto h = Histogram(*g);
  EXPECT_EQ(h.at("Transpose"), 2) << ir::PrintGraph(*g);
  EXPECT_EQ(h.at("keel.Reshape"), 1);
  EXPECT_EQ(g->outputs()[1]->name(), "sum");
  EXPECT_EQ(g->outputs()[1]->type().shape, (std::vector<int64_t>{2, 8, 9, 9}));
}

TEST(ChannelsLastTest, NoPreferenceNoChange) {
  auto g = SmallCnn();
  ASSERT_TRUE(Transform([](const ir::Node&) { return false; })(*g).ok());
  EXPECT_EQ(CountChannelsLast(*g), 0);
  EXPECT_EQ(Histogram(*g).count("Transpose"), 0u);
  auto h = SmallCnn();
  ASSERT_TRUE(Transform({})(*h).ok());
  EXPECT_EQ(ir::PrintGraph(*g), ir::PrintGraph(*h));
}

// Only the convolutions preferred: the pools stay channels-first, behind a transpose.
TEST(ChannelsLastTest, UnpreferredOpsGetTheirLayoutBack) {
  const std::vector<ir::TensorDataPtr> in = {Random({2, 4, 9, 9}, 12)};
  auto convs = [](const ir::Node& n) { return n.op_type() == "Conv"; };
  ir::Graph* g = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_EQ(CompareAfter(SmallCnn, Transform(convs), in, &g, &keep), 0.0);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(CountChannelsLast(*g), 3);
  for (const ir::Node* n : g->nodes()) {
    if (n->op_type() == "MaxPool") { EXPECT_EQ(n->input(0)->producer()->op_type(), "Transpose"); }
  }
}

// The transpose into a channels-last chain behind a convolution (through a Relu) goes into
// that convolution's output-only form (ops/channels_last.h) where the target prefers it: it
// reads the NCHW image and writes NHWC; otherwise the transpose stays.
TEST(ChannelsLastTest, OutputOnlyFormWritesTheChainsInput) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({2, 3, 8, 7}));
    ir::Node* c1 = Conv(*g, "c1", x, 3, 8, 3, 31);
    ir::Node* r = g->AddNode("Relu", "r", {c1->output(0)}, 1);
    ir::Node* c2 = Conv(*g, "c2", r->output(0), 8, 6, 1, 33);
    ir::Node* r2 = g->AddNode("Relu", "r2", {c2->output(0)}, 1, {"y"});
    g->AddOutput(r2->output(0));
    return g;
  };
  const std::vector<ir::TensorDataPtr> in = {Random({2, 3, 8, 7}, 15)};
  for (bool output_only : {true, false}) {
    SCOPED_TRACE(output_only ? "output-only form preferred" : "refused");
    auto prefers = [output_only](const ir::Node& n) {
      return ops::IsOutputChannelsLast(n) ? output_only : n.name() == "c2";
    };
    ir::Graph* g = nullptr;
    std::unique_ptr<ir::Graph> keep;
    EXPECT_EQ(CompareAfter(build, Transform(prefers), in, &g, &keep), 0.0);
    ASSERT_NE(g, nullptr);
    int outputs_only = 0;
    for (const ir::Node* n : g->nodes()) outputs_only += ops::IsOutputChannelsLast(*n) ? 1 : 0;
    EXPECT_EQ(outputs_only, output_only ? 1 : 0);
    EXPECT_EQ(CountChannelsLast(*g), output_only ? 2 : 1);
    EXPECT_EQ(Histogram(*g).at("Transpose"), output_only ? 1 : 2) << ir::PrintGraph(*g);
  }
}

// An operand the pass cannot move (a second image, not a constant) keeps the
// elementwise op channels-first: the transpose stays before it.
TEST(ChannelsLastTest, NonConstantOperandStopsTheSinking) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({1, 3, 6, 6}));
    ir::Value* other = g->AddInput("other", F32({1, 5, 6, 6}));
    ir::Node* c = Conv(*g, "c", x, 3, 5, 3, 21);
    ir::Node* add = g->AddNode("Add", "add", {c->output(0), other}, 1, {"y"});
    g->AddOutput(add->output(0));
    return g;
  };
  const std::vector<ir::TensorDataPtr> in = {Random({1, 3, 6, 6}, 13), Random({1, 5, 6, 6}, 14)};
  ir::Graph* g = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_EQ(CompareAfter(build, Transform(Always()), in, &g, &keep), 0.0);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Histogram(*g).at("Transpose"), 2);
  for (const ir::Node* n : g->nodes()) {
    if (n->op_type() == "Add") { EXPECT_EQ(n->input(0)->producer()->op_type(), "Transpose"); }
  }
}

// A model's own permutes around a channels-last op (ConvNeXt's LayerNorm over the
// channels) cancel against the pass's transposes.
TEST(ChannelsLastTest, ModelPermutesCancel) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({1, 4, 5, 5}));
    ir::Node* c = Conv(*g, "c", x, 4, 4, 3, 31);
    ir::Node* to_last = g->AddNode("Transpose", "to_last", {c->output(0)}, 1);
    to_last->attrs().Set("perm", std::vector<int64_t>{0, 2, 3, 1});
    ir::Node* norm = g->AddNode("LayerNormalization", "ln",
                                {to_last->output(0), Const(*g, "s", {4}, 32), Const(*g, "t", {4}, 33)}, 1);
    norm->attrs().Set("axis", int64_t{-1});
    ir::Node* to_first = g->AddNode("Transpose", "to_first", {norm->output(0)}, 1);
    to_first->attrs().Set("perm", std::vector<int64_t>{0, 3, 1, 2});
    ir::Node* c2 = Conv(*g, "c2", to_first->output(0), 4, 4, 3, 34);
    g->AddOutput(c2->output(0));
    return g;
  };
  const std::vector<ir::TensorDataPtr> in = {Random({1, 4, 5, 5}, 15)};
  ir::Graph* g = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter(build, Transform(Always()), in, &g, &keep), 1e-6);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Histogram(*g).at("Transpose"), 2) << ir::PrintGraph(*g);  // the image in, the result out
}

// A mean over H and W without keepdims ([N, C] in either layout) reads the channels-last
// image: no transpose after the convolution. A mean over W alone would give [N, C, H] from
// NCHW but [N, H, C] from NHWC: the transpose stays before it.
TEST(ChannelsLastTest, MeanDroppingSpatialAxesReadsChannelsLast) {
  for (const bool spatial : {true, false}) {
    SCOPED_TRACE(spatial ? "axes 2, 3" : "axis 3");
    auto build = [spatial] {
      auto g = std::make_unique<ir::Graph>();
      ir::Value* x = g->AddInput("x", F32({2, 3, 6, 7}));
      ir::Node* c = Conv(*g, "c", x, 3, 5, 3, 41);
      ir::Node* mean = g->AddNode("ReduceMean", "mean", {c->output(0)}, 1, {"y"});
      mean->attrs().Set("axes", spatial ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{3});
      mean->attrs().Set("keepdims", int64_t{0});
      g->AddOutput(mean->output(0));
      return g;
    };
    const std::vector<ir::TensorDataPtr> in = {Random({2, 3, 6, 7}, 16)};
    ir::Graph* g = nullptr;
    std::unique_ptr<ir::Graph> keep;
    EXPECT_LT(CompareAfter(build, Transform(Always()), in, &g, &keep), 1e-6);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(Histogram(*g).at("Transpose"), spatial ? 1 : 2) << ir::PrintGraph(*g);  // the image in
    for (const ir::Node* n : g->nodes()) {
      if (n->op_type() != "ReduceMean") continue;
      EXPECT_EQ(n->input(0)->producer()->op_type(), spatial ? "Conv" : "Transpose");
      EXPECT_EQ(n->output(0)->type().shape, spatial ? (std::vector<int64_t>{2, 5}) : (std::vector<int64_t>{2, 5, 6}));
    }
  }
}

// A ViT's patch embedding: conv, flatten [N, C, H W], transpose to tokens [N, H W, C].
// Channels-last the flattening reads the conv's image and the two transposes cancel:
// only the image's transpose in stays. Flattening fewer axes keeps the transpose back.
TEST(ChannelsLastTest, FlattenedPatchesBecomeTokensWithoutTransposes) {
  for (const bool tokens : {true, false}) {
    SCOPED_TRACE(tokens ? "[N, C, H W] then [N, H W, C]" : "[N, C H, W]");
    auto build = [tokens] {
      auto g = std::make_unique<ir::Graph>();
      ir::Value* x = g->AddInput("x", F32({2, 3, 4, 6}));
      ir::Node* c = Conv(*g, "c", x, 3, 5, 3, 51);
      const std::vector<int64_t> shape = tokens ? std::vector<int64_t>{2, 5, 24} : std::vector<int64_t>{2, 20, 6};
      ir::Node* flat = g->AddNode("Reshape", "flat", {c->output(0), g->AddConstant("shape", ops::MakeTensorI64({3}, shape))}, 1);
      ir::Node* t = g->AddNode("Transpose", "tokens", {flat->output(0)}, 1, {"y"});
      t->attrs().Set("perm", std::vector<int64_t>{0, 2, 1});
      g->AddOutput(t->output(0));
      return g;
    };
    const std::vector<ir::TensorDataPtr> in = {Random({2, 3, 4, 6}, 17)};
    ir::Graph* g = nullptr;
    std::unique_ptr<ir::Graph> keep;
    EXPECT_LT(CompareAfter(build, Transform(Always()), in, &g, &keep), 1e-6);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(Histogram(*g).at("Transpose"), tokens ? 1 : 3) << ir::PrintGraph(*g);
  }
}

// An upsampling Resize behind a channels-last convolution, with step 2b on (the CPU's): where its
// output leaves in NCHW (the graph's output) it runs channels-first, with the transpose back in
// front of it on the image a quarter its size; where another convolution reads it, it stays
// channels-last and no transpose is left between them. Nearest x2, then linear x2. Without step
// 2b (the GPU) the Resize stays channels-last either way.
TEST(ChannelsLastTest, UpsamplingResizeLeavesThroughTheSmallImage) {
  struct Case {
    bool conv_after, before_enlarging;
  };
  for (const Case& t : {Case{false, true}, Case{true, true}, Case{false, false}}) {
    for (const char* mode : {"nearest", "linear"}) {
      SCOPED_TRACE(std::string(mode) + (t.conv_after ? ", a convolution after it" : ", the graph's output") +
                   (t.before_enlarging ? "" : ", step 2b off"));
      auto build = [t, mode] {
        auto g = std::make_unique<ir::Graph>();
        ir::Value* x = g->AddInput("x", F32({2, 3, 5, 6}));
        ir::Node* c = Conv(*g, "c", x, 3, 4, 3, 61);
        ir::Value* scales = g->AddConstant("scales", ops::MakeTensorF32({4}, {1, 1, 2, 2}));
        ir::Node* up = g->AddNode("Resize", "up", {c->output(0), nullptr, scales}, 1, {t.conv_after ? "up" : "y"});
        up->attrs().Set("mode", std::string(mode));
        ir::Value* y = up->output(0);
        if (t.conv_after) y = Conv(*g, "c2", y, 4, 5, 3, 63)->output(0);
        g->AddOutput(y);
        return g;
      };
      const std::vector<ir::TensorDataPtr> in = {Random({2, 3, 5, 6}, 19)};
      ir::Graph* g = nullptr;
      std::unique_ptr<ir::Graph> keep;
      EXPECT_LT(CompareAfter(build, Transform(Always(), t.before_enlarging), in, &g, &keep), 1e-6);
      ASSERT_NE(g, nullptr);
      EXPECT_EQ(Histogram(*g).at("Transpose"), 2) << ir::PrintGraph(*g);  // the image in, the result out
      const bool nchw = t.before_enlarging && !t.conv_after;
      for (const ir::Node* n : g->nodes()) {
        if (n->op_type() != "Resize") continue;
        EXPECT_EQ(n->input(0)->producer()->op_type(), nchw ? "Transpose" : "Conv") << ir::PrintGraph(*g);
        EXPECT_EQ(n->output(0)->type().shape, nchw ? (std::vector<int64_t>{2, 4, 10, 12}) : (std::vector<int64_t>{2, 10, 12, 4}));
      }
    }
  }
}

// A pixel shuffle (DepthToSpace) and a Slice cropping H and W (the subpixel pass's
// upsampling) stay channels-last between convolutions: transposes only at the edges.
TEST(ChannelsLastTest, PixelShuffleAndCropStayChannelsLast) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({2, 3, 5, 6}));
    ir::Node* c1 = Conv(*g, "c1", x, 3, 16, 3, 1);
    ir::Node* shuffle = g->AddNode("DepthToSpace", "shuffle", {c1->output(0)}, 1);
    shuffle->attrs().Set("blocksize", int64_t{2});
    shuffle->attrs().Set("mode", std::string("DCR"));
    auto ints = [&](const std::string& name, const std::vector<int64_t>& v) {
      return g->AddConstant(name, ops::MakeTensorI64({static_cast<int64_t>(v.size())}, v));
    };
    ir::Node* crop = g->AddNode("Slice", "crop", {shuffle->output(0), ints("starts", {1, 0}), ints("ends", {9, 11}),
                                                  ints("axes", {2, 3})}, 1);
    ir::Node* c2 = Conv(*g, "c2", crop->output(0), 4, 5, 3, 3);
    g->AddOutput(c2->output(0));
    return g;
  };
  const std::vector<ir::TensorDataPtr> in = {Random({2, 3, 5, 6}, 13)};
  ir::Graph* g = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_EQ(CompareAfter(build, Transform(Always()), in, &g, &keep), 0.0);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(CountChannelsLast(*g), 3);  // the convolutions and the shuffle; the Slice moved its axes
  EXPECT_EQ(Histogram(*g).at("Transpose"), 2) << ir::PrintGraph(*g);
}

TEST(ChannelsLastTest, Deterministic) {
  auto a = SmallCnn(), b = SmallCnn();
  ASSERT_TRUE(Transform(Always())(*a).ok());
  ASSERT_TRUE(Transform(Always())(*b).ok());
  EXPECT_EQ(ir::PrintGraph(*a), ir::PrintGraph(*b));
}

}  // namespace
}  // namespace keel::passes
