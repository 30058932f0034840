// tests/compiler/passes/constant_folding_test.cc — folding of constant
// subgraphs, Shape of static values, and the size cap.
#include "compiler/passes/constant_folding.h"

#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

TEST(ConstantFoldingTest, FoldsSmallArithmetic) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({3}));
  ir::Value* a = g.AddConstant("a", ops::MakeTensorF32({3}, {1, 2, 3}));
  ir::Value* b = g.AddConstant("b", ops::MakeTensorF32({}, {10}));
  ir::Node* mul = g.AddNode("Mul", "mul", {a, b}, 1);
  ir::Node* sqrt = g.AddNode("Sqrt", "sqrt", {mul->output(0)}, 1);
  ir::Node* add = g.AddNode("Add", "add", {x, sqrt->output(0)}, 1);
  g.AddOutput(add->output(0));
  ASSERT_TRUE(InferShapes(g).ok());
  ConstantFoldingPass pass;
  Status s = pass.Run(g);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(g.num_nodes(), 1u);
  ir::Value* folded = add->input(1);
  ASSERT_TRUE(folded->is_constant());
  EXPECT_FLOAT_EQ(folded->constant()->data<float>()[1], std::sqrt(20.0f));
  EXPECT_TRUE(g.Verify(true).ok());
}

TEST(ConstantFoldingTest, ShapeOfStaticValueBecomesConstant) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({5, 2}));
  ir::Node* relu = g.AddNode("Relu", "relu", {x}, 1);
  ir::Node* shape = g.AddNode("Shape", "shape", {relu->output(0)}, 1);
  ir::Node* cast = g.AddNode("Cast", "cast", {shape->output(0)}, 1);
  cast->attrs().Set("to", std::string("f32"));
  ir::Node* add = g.AddNode("Add", "add", {relu->output(0), cast->output(0)}, 1);
  g.AddOutput(add->output(0));
  ASSERT_TRUE(InferShapes(g).ok());
  ConstantFoldingPass pass;
  ASSERT_TRUE(pass.Run(g).ok());
  auto h = Histogram(g);
  EXPECT_EQ(h.count("Shape"), 0u);
  EXPECT_EQ(h.count("Cast"), 0u);
  ASSERT_TRUE(add->input(1)->is_constant());
  EXPECT_FLOAT_EQ(add->input(1)->constant()->data<float>()[0], 5.0f);
}

TEST(ConstantFoldingTest, SizeCapKeepsSharedWeightsButFoldsTransposeOfSoleUse) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({64, 64}));
  ir::Value* w = Const(g, "w", {64, 64}, 7);  // 16 KiB
  ir::Node* scaled = g.AddNode("Mul", "scale_w", {w, g.AddConstant("two", ops::MakeTensorF32({}, {2}))}, 1);
  ir::Node* mm1 = g.AddNode("MatMul", "mm1", {x, scaled->output(0)}, 1);
  ir::Node* mm2 = g.AddNode("MatMul", "mm2", {mm1->output(0), w}, 1);  // w has another use
  ir::Value* w2 = Const(g, "w2", {64, 64}, 8);
  ir::Node* tr = g.AddNode("Transpose", "tr", {w2}, 1);  // w2 used only here
  ir::Node* mm3 = g.AddNode("MatMul", "mm3", {mm2->output(0), tr->output(0)}, 1);
  g.AddOutput(mm3->output(0));
  ASSERT_TRUE(InferShapes(g).ok());
  ConstantFoldingPass capped(/*max_bytes=*/1024);
  ASSERT_TRUE(capped.Run(g).ok());
  auto h = Histogram(g);
  EXPECT_EQ(h["Mul"], 1) << "folding Mul would duplicate the shared 16 KiB weight";
  EXPECT_EQ(h.count("Transpose"), 0u) << "a transposed sole-use weight replaces the original";
  ConstantFoldingPass uncapped(/*max_bytes=*/1 << 20);
  ASSERT_TRUE(uncapped.Run(g).ok());
  EXPECT_EQ(Histogram(g).count("Mul"), 0u);
}

TEST(ConstantFoldingTest, FoldingPreservesResults) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({2, 3}));
    ir::Node* t = g->AddNode("Transpose", "t", {Const(*g, "c", {3, 2}, 3)}, 1);
    ir::Node* s = g->AddNode("Sigmoid", "s", {t->output(0)}, 1);
    ir::Node* add = g->AddNode("Add", "add", {x, s->output(0)}, 1);
    g->AddOutput(add->output(0));
    return g;
  };
  double diff = CompareAfter(
      build,
      [](ir::Graph& g) {
        KEEL_RETURN_IF_ERROR(InferShapes(g));
        ConstantFoldingPass p;
        KEEL_RETURN_IF_ERROR(p.Run(g));
        if (g.num_nodes() != 1) return Internal("expected one node left");
        return Status::Ok();
      },
      {Random({2, 3}, 11)});
  EXPECT_LT(diff, 1e-6);
}

TEST(ConstantFoldingTest, BadGatherIndexIsAnError) {
  ir::Graph g;
  ir::Node* gather = g.AddNode("Gather", "bad_gather",
                               {g.AddConstant("d", ops::MakeTensorI64({3}, {1, 2, 3})),
                                g.AddConstant("i", ops::MakeTensorI64({1}, {5}))},
                               1);
  ir::Node* cast = g.AddNode("Cast", "cast", {gather->output(0)}, 1);
  cast->attrs().Set("to", std::string("f32"));
  ir::Node* add = g.AddNode("Add", "add", {g.AddInput("x", F32({1})), cast->output(0)}, 1);
  g.AddOutput(add->output(0));
  Status s = InferShapes(g);  // folds integer chains on the spot
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("bad_gather"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace keel::passes
