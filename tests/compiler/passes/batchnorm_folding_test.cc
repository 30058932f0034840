// tests/compiler/passes/batchnorm_folding_test.cc — BN folded into Conv/Gemm
// (numerically equal results), and remaining BN as Mul+Add.
#include "compiler/passes/batchnorm_folding.h"

#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

// Adds a BatchNormalization over `x` with `c` channels (positive variances).
ir::Node* AddBn(ir::Graph& g, ir::Value* x, int64_t c, uint32_t seed) {
  std::vector<float> var = RandomValues(c, seed + 4);
  for (float& v : var) v = v * v + 0.5f;
  ir::Node* bn = g.AddNode("BatchNormalization", "bn",
                           {x, Const(g, "gamma", {c}, seed), Const(g, "beta", {c}, seed + 1),
                            Const(g, "mean", {c}, seed + 2), g.AddConstant("var", ops::MakeTensorF32({c}, var))},
                           1);
  bn->attrs().Set("epsilon", 1e-3);
  return bn;
}

Status BnPipeline(ir::Graph& g) {
  KEEL_RETURN_IF_ERROR(InferShapes(g));
  BatchNormFoldingPass p;
  return p.Run(g);
}

TEST(BatchNormFoldingTest, ConvWithoutBiasGetsFoldedWeightsAndNewBias) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({1, 3, 6, 6}));
    ir::Node* conv = g->AddNode("Conv", "conv", {x, Const(*g, "w", {4, 3, 3, 3}, 1)}, 1);
    ir::Node* bn = AddBn(*g, conv->output(0), 4, 10);
    ir::Node* relu = g->AddNode("Relu", "relu", {bn->output(0)}, 1);
    g->AddOutput(relu->output(0));
    return g;
  };
  ir::Graph* folded = nullptr;
  std::unique_ptr<ir::Graph> keep;
  double diff = CompareAfter(build, BnPipeline, {Random({1, 3, 6, 6}, 5)}, &folded, &keep);
  EXPECT_LT(diff, 1e-5);
  ASSERT_NE(folded, nullptr);
  auto h = Histogram(*folded);
  EXPECT_EQ(h.count("BatchNormalization"), 0u);
  EXPECT_EQ(h.count("Mul"), 0u);
  ir::Node* conv = folded->nodes()[0];
  ASSERT_EQ(conv->op_type(), "Conv");
  ASSERT_EQ(conv->inputs().size(), 3u);
  EXPECT_TRUE(conv->input(2)->is_constant());
}

TEST(BatchNormFoldingTest, GroupedConvWithBias) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({1, 4, 5, 5}));
    ir::Node* conv =
        g->AddNode("Conv", "conv", {x, Const(*g, "w", {4, 1, 3, 3}, 1), Const(*g, "b", {4}, 2)}, 1);
    conv->attrs().Set("group", int64_t{4});
    ir::Node* bn = AddBn(*g, conv->output(0), 4, 20);
    g->AddOutput(bn->output(0));
    return g;
  };
  ir::Graph* folded = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter(build, BnPipeline, {Random({1, 4, 5, 5}, 6)}, &folded, &keep), 1e-5);
  EXPECT_EQ(folded->num_nodes(), 1u);
  EXPECT_EQ(folded->outputs()[0]->name(), "bn:0");  // the output keeps the BN's name
}

TEST(BatchNormFoldingTest, GemmTransB) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({3, 5}));
    ir::Node* gemm = g->AddNode("Gemm", "fc", {x, Const(*g, "w", {4, 5}, 1), Const(*g, "c", {4}, 2)}, 1);
    gemm->attrs().Set("transB", int64_t{1});
    gemm->attrs().Set("beta", 0.5);
    ir::Node* bn = AddBn(*g, gemm->output(0), 4, 30);
    g->AddOutput(bn->output(0));
    return g;
  };
  ir::Graph* folded = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter(build, BnPipeline, {Random({3, 5}, 7)}, &folded, &keep), 1e-5);
  EXPECT_EQ(Histogram(*folded).count("BatchNormalization"), 0u);
  EXPECT_EQ(folded->num_nodes(), 1u);
}

TEST(BatchNormFoldingTest, StandaloneBnBecomesScaleShift) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({2, 3, 4, 4}));
    ir::Node* relu = g->AddNode("Relu", "relu", {x}, 1);
    ir::Node* bn = AddBn(*g, relu->output(0), 3, 40);
    g->AddOutput(bn->output(0));
    return g;
  };
  ir::Graph* folded = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter(build, BnPipeline, {Random({2, 3, 4, 4}, 8)}, &folded, &keep), 1e-5);
  auto h = Histogram(*folded);
  EXPECT_EQ(h.count("BatchNormalization"), 0u);
  EXPECT_EQ(h["Mul"], 1);
  EXPECT_EQ(h["Add"], 1);
}

TEST(BatchNormFoldingTest, ConvOutputWithTwoUsesIsNotFolded) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({1, 2, 4, 4}));
    ir::Node* conv = g->AddNode("Conv", "conv", {x, Const(*g, "w", {2, 2, 1, 1}, 1)}, 1);
    ir::Node* bn = AddBn(*g, conv->output(0), 2, 50);
    ir::Node* add = g->AddNode("Add", "add", {bn->output(0), conv->output(0)}, 1);
    g->AddOutput(add->output(0));
    return g;
  };
  ir::Graph* folded = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter(build, BnPipeline, {Random({1, 2, 4, 4}, 9)}, &folded, &keep), 1e-5);
  EXPECT_EQ(Histogram(*folded)["Mul"], 1);  // scale+shift instead of touching the shared conv
}

TEST(BatchNormFoldingTest, RuntimeParametersStayForTheKernel) {
  // A BN whose mean is a graph input cannot be folded: it stays and compiles as
  // BatchNormalization's own kernel.
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32({2, 3, 4}));
  ir::Value* mean = g->AddInput("mean_in", F32({3}));
  ir::Node* bn = AddBn(*g, x, 3, 60);
  bn->SetInputs({x, bn->input(1), bn->input(2), mean, bn->input(4)});
  g->AddOutput(bn->output(0));
  ASSERT_TRUE(BnPipeline(*g).ok());
  EXPECT_EQ(Histogram(*g)["BatchNormalization"], 1);
}

}  // namespace
}  // namespace keel::passes
