// tests/compiler/passes/fusion_test.cc — grouping rules of fusion.h and numerical
// equivalence of fused graphs.
#include "compiler/passes/fusion.h"

#include "compiler/ops/reference.h"

#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

// Shape inference, then fusion (with rule 0b's sum prologues or not).
Status Fuse(ir::Graph& g, bool sum_prologues) {
  KEEL_RETURN_IF_ERROR(InferShapes(g));
  FusionPass p(true, sum_prologues);
  KEEL_RETURN_IF_ERROR(p.Run(g));
  return g.Verify(true);
}
Status FusePipeline(ir::Graph& g) { return Fuse(g, false); }

std::vector<std::string> Ops(const ir::Node* fused) {
  auto v = std::get<std::vector<std::string>>(fused->attrs().all().at("keel.ops"));
  return v;
}

std::string Pattern(const ir::Node* fused) { return *fused->attrs().GetString("keel.pattern", ""); }

// The ops of every fused node, in graph order.
std::vector<std::vector<std::string>> FusedGroups(const ir::Graph& g) {
  std::vector<std::vector<std::string>> out;
  for (const ir::Node* n : g.nodes()) {
    if (n->op_type() == "keel.Fused") out.push_back(Ops(n));
  }
  return out;
}

std::function<Status(ir::Graph&)> SumPrologueFusion(bool sum_prologues) {
  return [sum_prologues](ir::Graph& g) { return Fuse(g, sum_prologues); };
}

TEST(FusionTest, ConvBiasReluResidual) {
  // conv -> add(bias) -> relu -> add(residual x) -> output; x also feeds conv.
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({1, 2, 5, 5}));
    ir::Node* conv = g->AddNode("Conv", "conv", {x, Const(*g, "w", {2, 2, 3, 3}, 1)}, 1);
    conv->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    ir::Node* bias = g->AddNode("Add", "bias", {conv->output(0), Const(*g, "b", {2, 1, 1}, 2)}, 1);
    ir::Node* relu = g->AddNode("Relu", "relu", {bias->output(0)}, 1);
    ir::Node* res = g->AddNode("Add", "res", {relu->output(0), x}, 1, {"y"});
    g->AddOutput(res->output(0));
    return g;
  };
  ir::Graph* fused = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter(build, FusePipeline, {Random({1, 2, 5, 5}, 3)}, &fused, &keep), 1e-6);
  ASSERT_EQ(fused->num_nodes(), 1u);
  ir::Node* f = fused->nodes()[0];
  EXPECT_EQ(f->op_type(), "keel.Fused");
  EXPECT_EQ(Pattern(f), "anchor+epilogue");
  EXPECT_EQ(*f->attrs().GetString("keel.anchor", ""), "Conv");
  EXPECT_EQ(Ops(f), (std::vector<std::string>{"Conv", "Add", "Relu", "Add"}));
  // Inputs in first-use order: x, w, b (x reused by the residual add).
  ASSERT_EQ(f->inputs().size(), 3u);
  EXPECT_EQ(f->input(0)->name(), "x");
  EXPECT_EQ(f->input(1)->name(), "w");
  EXPECT_EQ(f->input(2)->name(), "b");
  EXPECT_EQ(f->output(0)->name(), "y");
  EXPECT_EQ(f->body()->num_nodes(), 4u);
}

TEST(FusionTest, MultiUseAnchorOutputStopsTheEpilogue) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* a = g->AddInput("a", F32({4, 8}));
    ir::Node* mm = g->AddNode("MatMul", "mm", {a, Const(*g, "w", {8, 8}, 1)}, 1);
    ir::Node* r = g->AddNode("Relu", "r", {mm->output(0)}, 1);
    ir::Node* s = g->AddNode("Sigmoid", "s", {mm->output(0)}, 1);
    ir::Node* t = g->AddNode("Tanh", "t", {s->output(0)}, 1);
    ir::Node* add = g->AddNode("Add", "add", {r->output(0), t->output(0)}, 1);
    g->AddOutput(add->output(0));
    return g;
  };
  ir::Graph* fused = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter(build, FusePipeline, {Random({4, 8}, 4)}, &fused, &keep), 1e-6);
  std::map<std::string, int> patterns;
  for (ir::Node* n : fused->nodes()) {
    ASSERT_EQ(n->op_type(), "keel.Fused");
    patterns[Pattern(n)]++;
  }
  // mm alone; relu alone? No: r -> add is a single-use chain (r, add); s -> t stops at add
  // (add already grouped with r).
  EXPECT_EQ(patterns["anchor"], 1);
  EXPECT_EQ(patterns["elementwise"], 2);
  EXPECT_EQ(fused->num_nodes(), 3u);
}

TEST(FusionTest, InjectiveHeadWithElementwiseTail) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({3, 4}));
    ir::Node* tr = g->AddNode("Transpose", "tr", {x}, 1);
    ir::Node* mul = g->AddNode("Mul", "mul", {tr->output(0), g->AddConstant("k", ops::MakeTensorF32({}, {0.5f}))}, 1);
    ir::Node* e = g->AddNode("Erf", "erf", {mul->output(0)}, 1);
    g->AddOutput(e->output(0));
    return g;
  };
  ir::Graph* fused = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter(build, FusePipeline, {Random({3, 4}, 5)}, &fused, &keep), 1e-6);
  ASSERT_EQ(fused->num_nodes(), 1u);
  EXPECT_EQ(Pattern(fused->nodes()[0]), "injective");
  EXPECT_EQ(Ops(fused->nodes()[0]), (std::vector<std::string>{"Transpose", "Mul", "Erf"}));
}

TEST(FusionTest, ViewsStayOutside) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({2, 3}));
  ir::Node* r = g.AddNode("Relu", "r", {x}, 1);
  ir::Node* v = g.AddNode("keel.Reshape", "v", {r->output(0)}, 1);
  v->attrs().Set("shape", std::vector<int64_t>{6});
  ir::Node* s = g.AddNode("Sigmoid", "s", {v->output(0)}, 1);
  g.AddOutput(s->output(0));
  ASSERT_TRUE(FusePipeline(g).ok());
  auto h = Histogram(g);
  EXPECT_EQ(h["keel.Reshape"], 1);
  EXPECT_EQ(h["keel.Fused"], 2);
}

TEST(FusionTest, ResidualAddBehindViewsJoinsTheAnchor) {
  // MatMul [4,6] -> views [4,1,6] -> [1,4,6] -> Add(residual r [1,4,6]) -> Mul(scalar) -> Softmax -> y.
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* a = g->AddInput("a", F32({4, 5}));
    ir::Value* r = g->AddInput("r", F32({1, 4, 6}));
    ir::Node* mm = g->AddNode("MatMul", "mm", {a, Const(*g, "w", {5, 6}, 1)}, 1);
    ir::Node* v1 = g->AddNode("keel.Reshape", "v1", {mm->output(0)}, 1);
    v1->attrs().Set("shape", std::vector<int64_t>{4, 1, 6});
    ir::Node* v2 = g->AddNode("keel.Reshape", "v2", {v1->output(0)}, 1);
    v2->attrs().Set("shape", std::vector<int64_t>{1, 4, 6});
    ir::Node* add = g->AddNode("Add", "add", {r, v2->output(0)}, 1);
    ir::Node* mul = g->AddNode("Mul", "mul", {add->output(0), Const(*g, "s", {}, 2)}, 1, {"scaled"});
    ir::Node* sm = g->AddNode("Softmax", "sm", {mul->output(0)}, 1, {"y"});
    g->AddOutput(sm->output(0));
    return g;
  };
  ir::Graph* fused = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter(build, FusePipeline, {Random({4, 5}, 3), Random({1, 4, 6}, 4)}, &fused, &keep), 1e-6);
  auto h = Histogram(*fused);
  EXPECT_EQ(h["keel.Fused"], 2);  // MatMul + Add + Mul, Softmax
  ir::Node* softmax = fused->outputs()[0]->producer();
  ir::Value* scaled = softmax->input(0);
  EXPECT_EQ(scaled->name(), "scaled");
  EXPECT_EQ(scaled->type().ToString(), "f32[1,4,6]");
  ASSERT_EQ(scaled->producer()->op_type(), "keel.Reshape");
  ir::Node* f = scaled->producer()->input(0)->producer();
  EXPECT_EQ(Ops(f), (std::vector<std::string>{"MatMul", "Add", "Mul"}));
  EXPECT_EQ(f->output(0)->type().ToString(), "f32[4,6]");
}

TEST(FusionTest, AnchorsCanBeLeftUnfused) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({2, 3}));
  ir::Node* sm = g.AddNode("Softmax", "sm", {x}, 1);
  ir::Node* r = g.AddNode("Relu", "r", {sm->output(0)}, 1);
  g.AddOutput(r->output(0));
  ASSERT_TRUE(InferShapes(g).ok());
  FusionPass p(/*fuse_anchors=*/false);
  ASSERT_TRUE(p.Run(g).ok());
  EXPECT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(Pattern(g.nodes()[0]), "anchor");
  EXPECT_EQ(Pattern(g.nodes()[1]), "elementwise");
}

TEST(FusionTest, Classification) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", {ir::DType::kF32, {2, 3}});
  auto cls = [&](const std::string& op, size_t outputs = 1) { return ClassifyOp(*g.AddNode(op, op, {x}, outputs)); };
  EXPECT_EQ(cls("Add"), OpClass::kElementwise);
  EXPECT_EQ(cls("Clip"), OpClass::kElementwise);
  EXPECT_EQ(cls("Gather"), OpClass::kInjective);
  EXPECT_EQ(cls("LayerNormalization"), OpClass::kAnchor);
  EXPECT_EQ(cls("keel.Reshape"), OpClass::kOpaque);
  EXPECT_EQ(cls("NoSuchOp"), OpClass::kOpaque);
  EXPECT_EQ(cls("LayerNormalization", 3), OpClass::kOpaque);  // multi-output nodes are never grouped
}

// A squeeze-and-excitation gate: Conv -> Sigmoid gives [N,C,1,1], multiplied by
// the [N,C,H,W] feature map. The Mul grows the shape, so it must not become the
// Conv's epilogue (it used to, and code generation then refused the group).
TEST(FusionTest, BroadcastingMulDoesNotJoinAnAnchorEpilogue) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", {ir::DType::kF32, {1, 4, 5, 5}});
  ir::Value* pooled = g.AddInput("pooled", {ir::DType::kF32, {1, 4, 1, 1}});
  std::vector<float> w(16, 0.1f);
  ir::Value* wv = g.AddConstant("w", ops::MakeTensorF32({4, 4, 1, 1}, w));
  ir::Node* conv = g.AddNode("Conv", "conv", {pooled, wv}, 1);
  ir::Node* sig = g.AddNode("Sigmoid", "sig", {conv->output(0)}, 1);
  ir::Node* mul = g.AddNode("Mul", "mul", {x, sig->output(0)}, 1);
  g.AddOutput(mul->output(0));
  ASSERT_TRUE(InferShapes(g).ok());
  FusionPass p;
  ASSERT_TRUE(p.Run(g).ok());
  ASSERT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(Pattern(g.nodes()[0]), "anchor+epilogue");  // Conv + Sigmoid
  EXPECT_EQ(Pattern(g.nodes()[1]), "elementwise");      // the broadcasting Mul
}

// A Cast that changes the anchor's element type ends its epilogue: the half GEMM + bias
// stays one group (a cuBLASLt candidate), the widening Cast and what follows another.
TEST(FusionTest, TypeChangingCastEndsAnAnchorEpilogue) {
  ir::Graph g;
  ir::Value* a = g.AddInput("a", {ir::DType::kF16, {4, 8}});
  ir::Value* b = g.AddInput("b", {ir::DType::kF16, {8, 3}});
  ir::Value* bias = g.AddInput("bias", {ir::DType::kF16, {3}});
  ir::Node* mm = g.AddNode("MatMul", "mm", {a, b}, 1);
  ir::Node* add = g.AddNode("Add", "add", {mm->output(0), bias}, 1);
  ir::Node* cast = g.AddNode("Cast", "cast", {add->output(0)}, 1);
  cast->attrs().Set("to", std::string("f32"));
  ir::Node* relu = g.AddNode("Relu", "relu", {cast->output(0)}, 1);
  g.AddOutput(relu->output(0));
  const Status inferred = InferShapes(g);
  ASSERT_TRUE(inferred.ok()) << inferred.ToString();
  FusionPass p;
  ASSERT_TRUE(p.Run(g).ok());
  ASSERT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(Pattern(g.nodes()[0]), "anchor+epilogue");
  EXPECT_EQ(Ops(g.nodes()[0]), (std::vector<std::string>{"MatMul", "Add"}));
  EXPECT_EQ(g.nodes()[0]->output(0)->type().dtype, ir::DType::kF16);
  EXPECT_EQ(Pattern(g.nodes()[1]), "elementwise");
  EXPECT_EQ(Ops(g.nodes()[1]), (std::vector<std::string>{"Cast", "Relu"}));
}

// A half GEMM without a bias operand widens to f32 in its epilogue (cuBLASLt
// writes D in f32): the Cast right after it joins, and so do the f32 bias and
// residual adds after it. A Gemm with a half bias operand (C) does not widen.
TEST(FusionTest, HalfGemmWidensToF32InItsEpilogue) {
  ir::Graph g;
  ir::Value* a = g.AddInput("a", {ir::DType::kBF16, {4, 8}});
  ir::Value* b = g.AddInput("b", {ir::DType::kBF16, {8, 3}});
  ir::Value* bias = g.AddInput("bias", {ir::DType::kF32, {3}});
  ir::Value* res = g.AddInput("res", {ir::DType::kF32, {4, 3}});
  ir::Node* mm = g.AddNode("MatMul", "mm", {a, b}, 1);
  ir::Node* cast = g.AddNode("Cast", "cast", {mm->output(0)}, 1);
  cast->attrs().Set("to", std::string("f32"));
  ir::Node* add = g.AddNode("Add", "add", {cast->output(0), bias}, 1);
  ir::Node* sum = g.AddNode("Add", "sum", {res, add->output(0)}, 1);
  g.AddOutput(sum->output(0));
  ir::Value* c = g.AddInput("c", {ir::DType::kBF16, {3}});
  ir::Node* gemm = g.AddNode("Gemm", "gemm", {a, b, c}, 1);
  ir::Node* wide = g.AddNode("Cast", "wide", {gemm->output(0)}, 1);
  wide->attrs().Set("to", std::string("f32"));
  g.AddOutput(wide->output(0));
  const Status inferred = InferShapes(g);
  ASSERT_TRUE(inferred.ok()) << inferred.ToString();
  FusionPass p;
  ASSERT_TRUE(p.Run(g).ok());
  ASSERT_EQ(g.num_nodes(), 3u);
  EXPECT_EQ(Ops(g.nodes()[0]), (std::vector<std::string>{"MatMul", "Cast", "Add", "Add"}));
  EXPECT_EQ(g.nodes()[0]->output(0)->type().dtype, ir::DType::kF32);
  EXPECT_EQ(Ops(g.nodes()[1]), (std::vector<std::string>{"Gemm"}));
  EXPECT_EQ(Ops(g.nodes()[2]), (std::vector<std::string>{"Cast"}));
}

// Mixed precision's casts around an f32 Softmax join it: the widening Cast as a
// prologue (the kernel reads the half data), the narrowing one as its epilogue (a
// generated anchor converts at its store). Values are unchanged.
TEST(FusionTest, CastsAroundAGeneratedAnchorJoinIt) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({3, 17}));
    ir::Node* half = g->AddNode("Cast", "half", {x}, 1);
    half->attrs().Set("to", std::string("f16"));
    ir::Node* widen = g->AddNode("Cast", "widen", {half->output(0)}, 1);
    widen->attrs().Set("to", std::string("f32"));
    ir::Node* softmax = g->AddNode("Softmax", "softmax", {widen->output(0)}, 1);
    ir::Node* narrow = g->AddNode("Cast", "narrow", {softmax->output(0)}, 1);
    narrow->attrs().Set("to", std::string("f16"));
    ir::Node* out = g->AddNode("Cast", "out", {narrow->output(0)}, 1, {"y"});
    out->attrs().Set("to", std::string("f32"));
    g->AddOutput(out->output(0));
    return g;
  };
  ir::Graph* fused = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_EQ(CompareAfter(build, FusePipeline, {Random({3, 17}, 5)}, &fused, &keep), 0.0);
  ASSERT_EQ(fused->num_nodes(), 2u);
  EXPECT_EQ(Ops(fused->nodes()[0]), (std::vector<std::string>{"Cast"}));
  ir::Node* f = fused->nodes()[1];
  EXPECT_EQ(Ops(f), (std::vector<std::string>{"Cast", "Softmax", "Cast", "Cast"}));
  EXPECT_EQ(Pattern(f), "anchor+epilogue");
  EXPECT_EQ(*f->attrs().GetString("keel.anchor", ""), "Softmax");
  EXPECT_EQ(f->input(0)->type().dtype, ir::DType::kF16);
}

// A conversion that could end one chain or open a generated anchor's group goes to the
// anchor (never to both); a same-type producer (the Relu) stays where it was:
// Conv -> Relu -> Cast(f16) -> GlobalAveragePool.
TEST(FusionTest, APrologueIsNotAlsoAnEpilogue) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({1, 2, 5, 5}));
    ir::Node* conv = g->AddNode("Conv", "conv", {x, Const(*g, "w", {3, 2, 3, 3}, 1)}, 1);
    ir::Node* relu = g->AddNode("Relu", "relu", {conv->output(0)}, 1);
    ir::Node* half = g->AddNode("Cast", "half", {relu->output(0)}, 1);
    half->attrs().Set("to", std::string("f16"));
    ir::Node* pool = g->AddNode("GlobalAveragePool", "pool", {half->output(0)}, 1, {"y"});
    g->AddOutput(pool->output(0));
    return g;
  };
  ir::Graph* fused = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter(build, FusePipeline, {Random({1, 2, 5, 5}, 3)}, &fused, &keep), 1e-2);
  ASSERT_EQ(fused->num_nodes(), 2u);
  EXPECT_EQ(Ops(fused->nodes()[0]), (std::vector<std::string>{"Conv", "Relu"}));
  EXPECT_EQ(Ops(fused->nodes()[1]), (std::vector<std::string>{"Cast", "GlobalAveragePool"}));
  EXPECT_EQ(*fused->nodes()[1]->attrs().GetString("keel.anchor", ""), "GlobalAveragePool");
}

// The model input's Cast to half in front of the transpose that first reads it
// (the channels-last pass's to-NHWC on the image) is that injective kernel's
// prologue: one kernel reads f32 and writes the transposed half data. A Cast
// with a second use stays a kernel of its own.
TEST(FusionTest, ACastInFrontOfAnInjectiveNodeIsItsPrologue) {
  for (const bool second_use : {false, true}) {
    SCOPED_TRACE(second_use ? "second use" : "one use");
    auto build = [second_use] {
      auto g = std::make_unique<ir::Graph>();
      ir::Value* x = g->AddInput("x", F32({2, 3, 5, 7}));
      ir::Node* half = g->AddNode("Cast", "half", {x}, 1);
      half->attrs().Set("to", std::string("f16"));
      ir::Node* t = g->AddNode("Transpose", "to_nhwc", {half->output(0)}, 1);
      t->attrs().Set("perm", std::vector<int64_t>{0, 2, 3, 1});
      ir::Node* back = g->AddNode("Cast", "back", {t->output(0)}, 1, {"y"});  // f32 outputs to compare
      back->attrs().Set("to", std::string("f32"));
      g->AddOutput(back->output(0));
      if (second_use) {
        ir::Node* other = g->AddNode("Cast", "other", {half->output(0)}, 1, {"z"});
        other->attrs().Set("to", std::string("f32"));
        g->AddOutput(other->output(0));
      }
      return g;
    };
    ir::Graph* fused = nullptr;
    std::unique_ptr<ir::Graph> keep;
    EXPECT_EQ(CompareAfter(build, FusePipeline, {Random({2, 3, 5, 7}, 9)}, &fused, &keep), 0.0);
    ASSERT_NE(fused, nullptr);
    bool prologue = false;
    for (ir::Node* f : fused->nodes())
      prologue = prologue || Ops(f) == std::vector<std::string>{"Cast", "Transpose", "Cast"};
    EXPECT_EQ(prologue, !second_use);
    if (!second_use) {
      ASSERT_EQ(fused->num_nodes(), 1u);
      ir::Node* f = fused->nodes()[0];
      EXPECT_EQ(Pattern(f), "injective");
      EXPECT_EQ(f->input(0)->type().dtype, ir::DType::kF32);
    }
  }
}

// Rule 0b (the GPU's choice): a post-norm block's residual add, behind the GEMM's
// bias and a view, runs in the LayerNorm's kernel; the GEMM keeps its bias.
// Without the option, or when the sum has a second use (a pre-norm block's
// stream), the add stays the GEMM's epilogue.
TEST(FusionTest, AResidualSumInFrontOfALayerNormIsItsPrologue) {
  auto build = [](bool second_use) {
    return [second_use] {
      auto g = std::make_unique<ir::Graph>();
      ir::Value* a = g->AddInput("a", F32({4, 5}));
      ir::Value* r = g->AddInput("r", F32({1, 4, 6}));
      ir::Node* mm = g->AddNode("MatMul", "mm", {a, Const(*g, "w", {5, 6}, 1)}, 1);
      ir::Node* bias = g->AddNode("Add", "bias", {mm->output(0), Const(*g, "b", {6}, 2)}, 1);
      ir::Node* view = g->AddNode("keel.Reshape", "view", {bias->output(0)}, 1);
      view->attrs().Set("shape", std::vector<int64_t>{1, 4, 6});
      ir::Node* sum = g->AddNode("Add", "sum", {r, view->output(0)}, 1, {"sum"});
      ir::Node* ln = g->AddNode("LayerNormalization", "ln",
                                {sum->output(0), Const(*g, "gamma", {6}, 3), Const(*g, "beta", {6}, 4)}, 1, {"y"});
      ln->attrs().Set("axis", int64_t{-1});
      g->AddOutput(ln->output(0));
      if (second_use) {  // the next block's residual add
        g->AddOutput(g->AddNode("Add", "next", {sum->output(0), r}, 1, {"z"})->output(0));
      }
      return g;
    };
  };
  const std::vector<ir::TensorDataPtr> inputs = {Random({4, 5}, 3), Random({1, 4, 6}, 4)};
  using Groups = std::vector<std::vector<std::string>>;
  auto check = [&](bool second_use, bool sum_prologues, const Groups& expected) {
    ir::Graph* fused = nullptr;
    std::unique_ptr<ir::Graph> keep;
    EXPECT_LT(CompareAfter(build(second_use), SumPrologueFusion(sum_prologues), inputs, &fused, &keep), 1e-5);
    EXPECT_EQ(FusedGroups(*fused), expected) << "second use " << second_use << ", option " << sum_prologues;
  };
  check(false, true, {{"MatMul", "Add"}, {"Add", "LayerNormalization"}});
  check(false, false, {{"MatMul", "Add", "Add"}, {"LayerNormalization"}});
  check(true, true, {{"MatMul", "Add", "Add"}, {"LayerNormalization"}, {"Add"}});
}

// In half precision the sum is half and a widening Cast (rule 0) sits between it
// and the f32 LayerNorm: the sum joins ahead of the Cast.
TEST(FusionTest, AHalfSumJoinsAheadOfTheLayerNormsWideningCast) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    std::vector<ir::Value*> halves;
    for (const char* name : {"x", "r"}) {
      ir::Node* c = g->AddNode("Cast", std::string(name) + ".f16", {g->AddInput(name, F32({3, 8}))}, 1);
      c->attrs().Set("to", std::string("f16"));
      halves.push_back(c->output(0));
    }
    ir::Node* sum = g->AddNode("Add", "sum", halves, 1);
    ir::Node* widen = g->AddNode("Cast", "widen", {sum->output(0)}, 1);
    widen->attrs().Set("to", std::string("f32"));
    ir::Node* ln = g->AddNode("LayerNormalization", "ln",
                              {widen->output(0), Const(*g, "gamma", {8}, 3), Const(*g, "beta", {8}, 4)}, 1, {"y"});
    ln->attrs().Set("axis", int64_t{-1});
    g->AddOutput(ln->output(0));
    return g;
  };
  ir::Graph* fused = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter(build, SumPrologueFusion(true), {Random({3, 8}, 5), Random({3, 8}, 6)}, &fused, &keep), 1e-2);
  EXPECT_EQ(FusedGroups(*fused),
            (std::vector<std::vector<std::string>>{{"Cast"}, {"Cast"}, {"Add", "Cast", "LayerNormalization"}}));
}

// Rule 0b takes only the normalized data: a sum that is a LayerNorm's scale stays a kernel of its own.
TEST(FusionTest, ASumThatIsALayerNormsScaleIsNoPrologue) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", F32({3, 8}));
    ir::Node* scale = g->AddNode("Add", "scale", {g->AddInput("s", F32({8})), g->AddInput("t", F32({8}))}, 1);
    ir::Node* ln = g->AddNode("LayerNormalization", "ln", {x, scale->output(0), Const(*g, "beta", {8}, 4)}, 1, {"y"});
    ln->attrs().Set("axis", int64_t{-1});
    g->AddOutput(ln->output(0));
    return g;
  };
  ir::Graph* fused = nullptr;
  std::unique_ptr<ir::Graph> keep;
  EXPECT_LT(CompareAfter(build, SumPrologueFusion(true), {Random({3, 8}, 5), Random({8}, 6), Random({8}, 7)}, &fused,
                         &keep),
            1e-5);
  EXPECT_EQ(FusedGroups(*fused), (std::vector<std::vector<std::string>>{{"Add"}, {"LayerNormalization"}}));
}

}  // namespace
}  // namespace keel::passes
