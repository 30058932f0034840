// tests/compiler/passes/shape_inference_test.cc — types of every value, folded
// shape chains, and errors that name the node.
#include "compiler/passes/shape_inference.h"

#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

TEST(ShapeInferenceTest, ConvPoolGemmChain) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({2, 3, 16, 16}));
  ir::Node* conv = g.AddNode("Conv", "conv", {x, Const(g, "w", {8, 3, 3, 3}, 1)}, 1);
  conv->attrs().Set("strides", std::vector<int64_t>{2, 2});
  conv->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Node* pool = g.AddNode("MaxPool", "pool", {conv->output(0)}, 1);
  pool->attrs().Set("kernel_shape", std::vector<int64_t>{3, 3});
  pool->attrs().Set("strides", std::vector<int64_t>{2, 2});
  pool->attrs().Set("ceil_mode", int64_t{1});
  ir::Node* gap = g.AddNode("GlobalAveragePool", "gap", {pool->output(0)}, 1);
  ir::Node* flat = g.AddNode("Flatten", "flat", {gap->output(0)}, 1);
  ir::Node* gemm = g.AddNode("Gemm", "fc", {flat->output(0), Const(g, "fw", {10, 8}, 2), Const(g, "fb", {10}, 3)}, 1);
  gemm->attrs().Set("transB", int64_t{1});
  g.AddOutput(gemm->output(0));
  Status s = InferShapes(g);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(conv->output(0)->type().ToString(), "f32[2,8,8,8]");
  // ceil((8-3)/2)+1 = 4 (the last window starts inside the input).
  EXPECT_EQ(pool->output(0)->type().ToString(), "f32[2,8,4,4]");
  EXPECT_EQ(gap->output(0)->type().ToString(), "f32[2,8,1,1]");
  EXPECT_EQ(flat->output(0)->type().ToString(), "f32[2,8]");
  EXPECT_EQ(gemm->output(0)->type().ToString(), "f32[2,10]");
  // Canonical attributes were filled.
  EXPECT_EQ(*conv->attrs().GetInts("dilations", {}), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(*conv->attrs().GetInts("kernel_shape", {}), (std::vector<int64_t>{3, 3}));
  EXPECT_TRUE(g.Verify(true).ok());
}

TEST(ShapeInferenceTest, FoldsShapeChainIntoReshape) {
  // x:[1,4,6] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 1)), [-1]))  => [4, 6]
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({1, 4, 6}));
  ir::Node* shape = g.AddNode("Shape", "shape", {x}, 1);
  ir::Node* gather = g.AddNode("Gather", "gather", {shape->output(0), g.AddConstant("one", ops::MakeTensorI64({}, {1}))}, 1);
  ir::Node* unsq = g.AddNode("Unsqueeze", "unsq", {gather->output(0), g.AddConstant("ax", ops::MakeTensorI64({1}, {0}))}, 1);
  ir::Node* cat = g.AddNode("Concat", "cat", {unsq->output(0), g.AddConstant("m1", ops::MakeTensorI64({1}, {-1}))}, 1);
  cat->attrs().Set("axis", int64_t{0});
  ir::Node* reshape = g.AddNode("Reshape", "reshape", {x, cat->output(0)}, 1);
  g.AddOutput(reshape->output(0));
  Status s = InferShapes(g);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(reshape->output(0)->type().ToString(), "f32[4,6]");
  EXPECT_EQ(reshape->inputs().size(), 1u);  // shape lifted into the attribute
  EXPECT_EQ(*reshape->attrs().GetInts("shape", {}), (std::vector<int64_t>{4, -1}));
  EXPECT_EQ(g.num_nodes(), 1u);  // Shape/Gather/Unsqueeze/Concat folded away
}

TEST(ShapeInferenceTest, AddIncompatibleShapesNamesNode) {
  ir::Graph g;
  ir::Value* a = g.AddInput("a", F32({2, 3}));
  ir::Value* b = g.AddInput("b", F32({4}));
  ir::Node* add = g.AddNode("Add", "my_add", {a, b}, 1);
  g.AddOutput(add->output(0));
  Status s = InferShapes(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Add 'my_add'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[2,3]"), std::string::npos) << s.message();
}

TEST(ShapeInferenceTest, MatMulInnerDims) {
  ir::Graph g;
  ir::Node* mm = g.AddNode("MatMul", "mm", {g.AddInput("a", F32({2, 3})), g.AddInput("b", F32({4, 5}))}, 1);
  g.AddOutput(mm->output(0));
  Status s = InferShapes(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("MatMul 'mm'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("inner"), std::string::npos) << s.message();
}

TEST(ShapeInferenceTest, ConcatRanks) {
  ir::Graph g;
  ir::Node* cat = g.AddNode("Concat", "cat", {g.AddInput("a", F32({2, 3})), g.AddInput("b", F32({2, 3, 1}))}, 1);
  cat->attrs().Set("axis", int64_t{1});
  g.AddOutput(cat->output(0));
  Status s = InferShapes(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Concat 'cat'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("rank"), std::string::npos) << s.message();
}

TEST(ShapeInferenceTest, ConvChannelMismatch) {
  ir::Graph g;
  ir::Node* conv = g.AddNode("Conv", "c", {g.AddInput("x", F32({1, 4, 8, 8})), Const(g, "w", {8, 3, 3, 3}, 1)}, 1);
  g.AddOutput(conv->output(0));
  Status s = InferShapes(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Conv 'c'"), std::string::npos) << s.message();
}

TEST(ShapeInferenceTest, DynamicReshapeShapeIsUnsupported) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({6}));
  ir::Value* shp = g.AddInput("shp", ir::TensorType{ir::DType::kI64, {2}});
  ir::Node* r = g.AddNode("Reshape", "r", {x, shp}, 1);
  g.AddOutput(r->output(0));
  Status s = InferShapes(g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("Reshape 'r'"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace keel::passes

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

TEST(ShapeInferenceTest, LegacySoftmaxDefaultsToAxisOne) {
  ir::Graph g;
  ir::Node* sm = g.AddNode("Softmax", "sm", {g.AddInput("x", F32({2, 3}))}, 1);
  sm->attrs().Set("keel.legacy_flatten", int64_t{1});
  g.AddOutput(sm->output(0));
  ASSERT_TRUE(InferShapes(g).ok());
  EXPECT_EQ(*sm->attrs().GetInt("axis", -5), 1);
  EXPECT_FALSE(sm->attrs().Has("keel.legacy_flatten"));

  ir::Graph g3;
  ir::Node* sm3 = g3.AddNode("Softmax", "sm3", {g3.AddInput("x", F32({2, 3, 4}))}, 1);
  sm3->attrs().Set("keel.legacy_flatten", int64_t{1});  // normalizes over dims 1..2 together
  g3.AddOutput(sm3->output(0));
  ASSERT_TRUE(InferShapes(g3).ok());
  EXPECT_EQ(g3.outputs()[0]->type().shape, (std::vector<int64_t>{2, 3, 4}));
}

}  // namespace
}  // namespace keel::passes
