// tests/compiler/passes/simplify_test.cc — Identity/Dropout removal and keel.Reshape views.
#include "compiler/passes/simplify.h"

#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

TEST(SimplifyTest, RemovesIdentityAndDropout) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({4}));
  ir::Node* relu = g.AddNode("Relu", "relu", {x}, 1);
  ir::Node* id = g.AddNode("Identity", "id", {relu->output(0)}, 1);
  ir::Node* drop = g.AddNode("Dropout", "drop", {id->output(0)}, 1);
  ir::Node* sig = g.AddNode("Sigmoid", "sig", {drop->output(0)}, 1);
  ir::Node* out_id = g.AddNode("Identity", "out_id", {sig->output(0)}, 1, {"result"});
  g.AddOutput(out_id->output(0));
  SimplifyPass p;
  ASSERT_TRUE(p.Run(g).ok());
  EXPECT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(sig->input(0), relu->output(0));
  ASSERT_EQ(g.outputs()[0], sig->output(0));
  EXPECT_EQ(g.outputs()[0]->name(), "result");  // interface name kept
  EXPECT_TRUE(g.Verify(false).ok());
}

TEST(SimplifyTest, KeepsIdentityCopyingAnInputToAnOutput) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({4}));
  ir::Node* id = g.AddNode("Identity", "id", {x}, 1, {"y"});
  g.AddOutput(id->output(0));
  SimplifyPass p;
  ASSERT_TRUE(p.Run(g).ok());
  EXPECT_EQ(g.num_nodes(), 1u);
}

TEST(SimplifyTest, ReshapeLikeOpsBecomeViews) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({2, 3, 1}));
  ir::Node* sq = g.AddNode("Squeeze", "sq", {x}, 1);
  ir::Node* fl = g.AddNode("Flatten", "fl", {sq->output(0)}, 1);
  fl->attrs().Set("axis", int64_t{0});
  ir::Node* relu = g.AddNode("Relu", "relu", {fl->output(0)}, 1);
  g.AddOutput(relu->output(0));
  ASSERT_TRUE(InferShapes(g).ok());
  SimplifyPass p;
  ASSERT_TRUE(p.Run(g).ok());
  auto h = Histogram(g);
  EXPECT_EQ(h["keel.Reshape"], 2);
  EXPECT_EQ(h.count("Squeeze"), 0u);
  ir::Node* view = relu->input(0)->producer();
  ASSERT_EQ(view->op_type(), "keel.Reshape");
  EXPECT_EQ(*view->attrs().GetInts("shape", {}), (std::vector<int64_t>{1, 6}));
  EXPECT_EQ(view->output(0)->type().ToString(), "f32[1,6]");
  EXPECT_TRUE(g.Verify(true).ok());
  // keel.Reshape is itself type-checkable.
  EXPECT_TRUE(InferShapes(g).ok());
}

TEST(SimplifyTest, TransposeOfUnitAxesBecomesAView) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({5, 1, 3}));
  ir::Node* unit = g.AddNode("Transpose", "unit", {x}, 1);  // [5,1,3] -> [1,5,3]: no element moves
  unit->attrs().Set("perm", std::vector<int64_t>{1, 0, 2});
  ir::Node* real = g.AddNode("Transpose", "real", {unit->output(0)}, 1);  // [1,5,3] -> [1,3,5]: a copy
  real->attrs().Set("perm", std::vector<int64_t>{0, 2, 1});
  g.AddOutput(real->output(0));
  ASSERT_TRUE(InferShapes(g).ok());
  SimplifyPass p;
  ASSERT_TRUE(p.Run(g).ok());
  auto h = Histogram(g);
  EXPECT_EQ(h["keel.Reshape"], 1);
  EXPECT_EQ(h["Transpose"], 1);
  ASSERT_EQ(real->input(0)->producer()->op_type(), "keel.Reshape");
  EXPECT_EQ(real->input(0)->type().ToString(), "f32[1,5,3]");
  EXPECT_TRUE(g.Verify(true).ok());
}

}  // namespace
}  // namespace keel::passes
