// tests/compiler/ops/reference_test.cc — the reference evaluation of ops
// (naive evaluators and the interpreter of elementwise/injective lowerings)
// against hand-computed values (small enough to check by hand) and type-rule errors.
#include "compiler/ops/reference.h"

#include <gtest/gtest.h>

#include <cmath>

#include "compiler/ops/registry.h"
#include "compiler/ops/semantics.h"

namespace keel::ops {
namespace {

using namespace keel::ir;  // NOLINT: the test builds IR graphs throughout

// Builds a one-node graph over constant inputs, canonicalizes and evaluates it.
class OneNode {
 public:
  OneNode(const std::string& op, std::vector<TensorDataPtr> inputs) {
    std::vector<Value*> vals;
    for (size_t i = 0; i < inputs.size(); ++i) {
      vals.push_back(inputs[i] ? g_.AddConstant("in" + std::to_string(i), inputs[i]) : nullptr);
    }
    node_ = g_.AddNode(op, "n", vals, 1);
  }
  Attributes& attrs() { return node_->attrs(); }
  Result<TensorDataPtr> Run() {
    KEEL_RETURN_IF_ERROR(CanonicalizeNode(*node_));
    std::vector<TensorDataPtr> args;
    for (Value* v : node_->inputs()) args.push_back(v ? v->constant() : nullptr);
    KEEL_ASSIGN_OR_RETURN(auto outs, EvaluateNode(*node_, args));
    return outs[0];
  }

 private:
  Graph g_;
  Node* node_;
};

std::vector<float> F(const TensorDataPtr& t) {
  return std::vector<float>(t->data<float>(), t->data<float>() + t->type.NumElements());
}

TEST(ReferenceEvalTest, AddBroadcasts) {
  OneNode n("Add", {MakeTensorF32({2, 3}, {1, 2, 3, 4, 5, 6}), MakeTensorF32({3}, {10, 20, 30})});
  auto r = n.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->type.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(F(*r), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(ReferenceEvalTest, AddShapeMismatchNamesNode) {
  OneNode n("Add", {MakeTensorF32({2, 3}, {1, 2, 3, 4, 5, 6}), MakeTensorF32({2}, {1, 2})});
  auto r = n.Run();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Add 'n'"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("broadcast"), std::string::npos);
}

TEST(ReferenceEvalTest, MatMulBatchedBroadcast) {
  // [2,1,2] x [2,1]: batch 2 of (1x2)(2x1).
  OneNode n("MatMul", {MakeTensorF32({2, 1, 2}, {1, 2, 3, 4}), MakeTensorF32({2, 1}, {5, 6})});
  auto r = n.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->type.shape, (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(F(*r), (std::vector<float>{1 * 5 + 2 * 6, 3 * 5 + 4 * 6}));
}

TEST(ReferenceEvalTest, MatMulInnerMismatch) {
  OneNode n("MatMul", {MakeTensorF32({2, 3}, std::vector<float>(6, 1)), MakeTensorF32({2, 2}, {1, 2, 3, 4})});
  auto r = n.Run();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("inner"), std::string::npos);
}

TEST(ReferenceEvalTest, GemmTransBAndBias) {
  OneNode n("Gemm", {MakeTensorF32({1, 2}, {1, 2}), MakeTensorF32({3, 2}, {1, 0, 0, 1, 1, 1}),
                     MakeTensorF32({3}, {10, 20, 30})});
  n.attrs().Set("transB", int64_t{1});
  n.attrs().Set("alpha", 2.0);
  auto r = n.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(F(*r), (std::vector<float>{2 * 1 + 10, 2 * 2 + 20, 2 * 3 + 30}));
}

TEST(ReferenceEvalTest, ConvWithPaddingStrideAndBias) {
  // 1x1x3x3 input 1..9, 1x1x2x2 kernel of ones, pad 1, stride 2 -> 2x2 output.
  OneNode n("Conv", {MakeTensorF32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                     MakeTensorF32({1, 1, 2, 2}, {1, 1, 1, 1}), MakeTensorF32({1}, {100})});
  n.attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  n.attrs().Set("strides", std::vector<int64_t>{2, 2});
  auto r = n.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->type.shape, (std::vector<int64_t>{1, 1, 2, 2}));
  // Windows: {1}, {2,3}, {4,7}, {5,6,8,9}.
  EXPECT_EQ(F(*r), (std::vector<float>{101, 105, 111, 128}));
}

TEST(ReferenceEvalTest, DepthwiseConv) {
  OneNode n("Conv", {MakeTensorF32({1, 2, 1, 2}, {1, 2, 3, 4}), MakeTensorF32({2, 1, 1, 1}, {10, -1})});
  n.attrs().Set("group", int64_t{2});
  auto r = n.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(F(*r), (std::vector<float>{10, 20, -3, -4}));
}

TEST(ReferenceEvalTest, PoolsAndCeilMode) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  OneNode mp("MaxPool", {MakeTensorF32({1, 1, 3, 3}, x)});
  mp.attrs().Set("kernel_shape", std::vector<int64_t>{2, 2});
  mp.attrs().Set("strides", std::vector<int64_t>{2, 2});
  mp.attrs().Set("ceil_mode", int64_t{1});
  auto r = mp.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->type.shape, (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(F(*r), (std::vector<float>{5, 6, 8, 9}));

  OneNode ap("AveragePool", {MakeTensorF32({1, 1, 3, 3}, x)});
  ap.attrs().Set("kernel_shape", std::vector<int64_t>{2, 2});
  ap.attrs().Set("pads", std::vector<int64_t>{1, 1, 0, 0});
  ap.attrs().Set("strides", std::vector<int64_t>{2, 2});
  auto a = ap.Run();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  // count_include_pad=0: padding is not counted. Windows: {1}, {2,3}, {4,7}, {5,6,8,9}.
  EXPECT_EQ(F(*a), (std::vector<float>{1, 2.5f, 5.5f, 7}));

  OneNode gp("GlobalAveragePool", {MakeTensorF32({1, 2, 1, 2}, {1, 3, 10, 20})});
  auto g = gp.Run();
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(F(*g), (std::vector<float>{2, 15}));
}

TEST(ReferenceEvalTest, SoftmaxAndLayerNorm) {
  OneNode sm("Softmax", {MakeTensorF32({1, 2}, {0, std::log(3.0f)})});
  auto s = sm.Run();
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(F(*s)[0], 0.25f, 1e-6);
  EXPECT_NEAR(F(*s)[1], 0.75f, 1e-6);

  OneNode ln("LayerNormalization",
             {MakeTensorF32({1, 2}, {1, 3}), MakeTensorF32({2}, {2, 2}), MakeTensorF32({2}, {0, 1})});
  ln.attrs().Set("epsilon", 0.0);
  auto l = ln.Run();
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_NEAR(F(*l)[0], -2.0f, 1e-6);  // (1-2)/1*2+0
  EXPECT_NEAR(F(*l)[1], 3.0f, 1e-6);   // (3-2)/1*2+1
}

TEST(ReferenceEvalTest, BatchNorm) {
  OneNode bn("BatchNormalization", {MakeTensorF32({1, 2, 1, 1}, {3, 5}), MakeTensorF32({2}, {2, 1}),
                                    MakeTensorF32({2}, {1, 0}), MakeTensorF32({2}, {1, 1}),
                                    MakeTensorF32({2}, {4, 16})});
  bn.attrs().Set("epsilon", 0.0);
  auto r = bn.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(F(*r)[0], (3 - 1) / 2.0 * 2 + 1, 1e-6);
  EXPECT_NEAR(F(*r)[1], (5 - 1) / 4.0, 1e-6);
}

TEST(ReferenceEvalTest, ShapeManipulation) {
  auto x = MakeTensorF32({2, 3}, {0, 1, 2, 3, 4, 5});
  OneNode tr("Transpose", {x});
  auto t = tr.Run();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(F(*t), (std::vector<float>{0, 3, 1, 4, 2, 5}));

  OneNode sl("Slice", {x, MakeTensorI64({1}, {1}), MakeTensorI64({1}, {100}), MakeTensorI64({1}, {-1})});
  auto s = sl.Run();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->type.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(F(*s), (std::vector<float>{1, 2, 4, 5}));

  OneNode rev("Slice", {x, MakeTensorI64({1}, {-1}), MakeTensorI64({1}, {-100}), MakeTensorI64({1}, {1}),
                        MakeTensorI64({1}, {-1})});
  auto rv = rev.Run();
  ASSERT_TRUE(rv.ok()) << rv.status().ToString();
  EXPECT_EQ(F(*rv), (std::vector<float>{2, 1, 0, 5, 4, 3}));  // axis 1 reversed

  OneNode ga("Gather", {x, MakeTensorI64({2}, {2, -3})});
  ga.attrs().Set("axis", int64_t{1});
  auto g = ga.Run();
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(F(*g), (std::vector<float>{2, 0, 5, 3}));

  OneNode bad("Gather", {x, MakeTensorI64({1}, {7})});
  EXPECT_FALSE(bad.Run().ok());

  OneNode cc("Concat", {x, MakeTensorF32({2, 1}, {9, 9})});
  cc.attrs().Set("axis", int64_t{-1});
  auto c = cc.Run();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(F(*c), (std::vector<float>{0, 1, 2, 9, 3, 4, 5, 9}));

  OneNode ccbad("Concat", {x, MakeTensorF32({2}, {9, 9})});
  auto cb = ccbad.Run();
  ASSERT_FALSE(cb.ok());
  EXPECT_NE(cb.status().message().find("rank"), std::string::npos);

  OneNode rs("Reshape", {x, MakeTensorI64({2}, {0, -1})});
  auto r = rs.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->type.shape, (std::vector<int64_t>{2, 3}));

  OneNode sh("Shape", {x});
  auto shp = sh.Run();
  ASSERT_TRUE(shp.ok());
  EXPECT_EQ((*shp)->type.dtype, DType::kI64);
  EXPECT_EQ((*shp)->data<int64_t>()[1], 3);

  OneNode us("Unsqueeze", {x, MakeTensorI64({2}, {0, -1})});
  auto u = us.Run();
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ((*u)->type.shape, (std::vector<int64_t>{1, 2, 3, 1}));

  OneNode rm("ReduceMean", {x});
  rm.attrs().Set("axes", std::vector<int64_t>{-1});
  auto m = rm.Run();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->type.shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(F(*m), (std::vector<float>{1, 4}));
}

TEST(ReferenceEvalTest, UnaryAndCast) {
  auto x = MakeTensorF32({4}, {-2.5f, -0.5f, 0.5f, 7.0f});
  OneNode clip("Clip", {x, MakeTensorF32({}, {0.0f}), MakeTensorF32({}, {6.0f})});
  auto c = clip.Run();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(F(*c), (std::vector<float>{0, 0, 0.5f, 6}));
  OneNode cast("Cast", {x});
  cast.attrs().Set("to", std::string("i64"));
  auto ci = cast.Run();
  ASSERT_TRUE(ci.ok()) << ci.status().ToString();
  EXPECT_EQ(ci.value()->data<int64_t>()[0], -2);
  EXPECT_EQ(ci.value()->data<int64_t>()[3], 7);
  OneNode erf("Erf", {x});
  auto e = erf.Run();
  ASSERT_TRUE(e.ok());
  EXPECT_NEAR(F(*e)[2], std::erf(0.5), 1e-6);
}

TEST(ReferenceEvalTest, EvaluateGraphWithFusedBody) {
  Graph g;
  Value* x = g.AddInput("x", TensorType{DType::kF32, {2}});
  Node* fused = g.AddNode("keel.Fused", "f", {x}, 1);
  auto body = std::make_unique<Graph>();
  Value* bx = body->AddInput("bx", TensorType{DType::kF32, {2}});
  Value* two = body->AddConstant("two", MakeTensorF32({}, {2.0f}));
  Node* mul = body->AddNode("Mul", "m", {bx, two}, 1);
  Node* relu = body->AddNode("Relu", "r", {mul->output(0)}, 1);
  body->AddOutput(relu->output(0));
  fused->set_body(std::move(body));
  g.AddOutput(fused->output(0));
  auto r = EvaluateGraph(g, {MakeTensorF32({2}, {-1, 3})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(F((*r)[0]), (std::vector<float>{0, 6}));
}

TEST(RefusedOps, ValueShapedAndRandomOpsSayWhy) {
  // Known ONNX ops Keel refuses on purpose: the importer's normalize step names the reason.
  const OpDef* nonzero = Registry::Get().Find("NonZero");
  ASSERT_NE(nonzero, nullptr);
  ir::Graph g;
  ir::Node* n = g.AddNode("NonZero", "nz", {g.AddInput("x", {ir::DType::kF32, {4}})}, 1);
  Status s = nonzero->normalize(*n, 13);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("depends on the input values"), std::string::npos) << s.message();
  const OpDef* random = Registry::Get().Find("RandomNormalLike");
  ASSERT_NE(random, nullptr);
  ir::Node* r = g.AddNode("RandomNormalLike", "rn", {g.AddInput("y", {ir::DType::kF32, {4}})}, 1);
  EXPECT_NE(random->normalize(*r, 22).message().find("random sampling"), std::string::npos);
}

}  // namespace
}  // namespace keel::ops
