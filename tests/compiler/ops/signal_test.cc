// tests/compiler/ops/signal_test.cc — the signal and linear-algebra ops: DFT
// and the windows through their expansions, Det's evaluator on singular and
// permuted matrices, BitCast through the reference interpreter, and the
// refusals of shape-deciding inputs that are not constant.
#include <gtest/gtest.h>

#include <cstring>

#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"

namespace keel::ops {
namespace {

using namespace keel::ir;  // NOLINT: the test builds IR graphs throughout

std::vector<double> Doubles(const TensorDataPtr& t) { return TensorToDoubles(*t); }

// One node over constant inputs, canonicalized, typed and evaluated.
Result<TensorDataPtr> Eval(Graph&, Node* node) {
  KEEL_RETURN_IF_ERROR(CanonicalizeNode(*node));
  std::vector<TensorDataPtr> args;
  for (Value* v : node->inputs()) args.push_back(v ? v->constant() : nullptr);
  KEEL_ASSIGN_OR_RETURN(auto outs, EvaluateNode(*node, args));
  return outs[0];
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i;
}

TEST(SignalTest, RealDftOfFourPoints) {
  Graph g;
  Node* n = g.AddNode("DFT", "dft", {g.AddConstant("x", MakeTensorF32({1, 4, 1}, {1, 2, 3, 4}))}, 1);
  n->attrs().Set("axis", int64_t{1});
  auto out = Eval(g, n);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)->type.shape, (std::vector<int64_t>{1, 4, 2}));
  // The imaginary parts of DC and Nyquist are exactly zero (exact quarter turns).
  EXPECT_EQ(Doubles(*out), (std::vector<double>{10, 0, -2, 2, -2, 0, -2, -2}));
}

TEST(SignalTest, OneSidedInverseRestoresTheSignal) {
  // irfft of rfft([1, 2, 3, 4]) (bins 10, -2+2i, -2) with the default length 2*(3-1) = 4.
  Graph g;
  Node* n = g.AddNode("DFT", "irfft", {g.AddConstant("x", MakeTensorF32({3, 2}, {10, 0, -2, 2, -2, 0}))}, 1);
  n->attrs().Set("axis", int64_t{0});
  n->attrs().Set("inverse", int64_t{1});
  n->attrs().Set("onesided", int64_t{1});
  auto out = Eval(g, n);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)->type.shape, (std::vector<int64_t>{4, 1}));
  ExpectNear(Doubles(*out), {1, 2, 3, 4});
}

TEST(SignalTest, NonConstantDftLengthIsRefused) {
  Graph g;
  Value* x = g.AddInput("x", {DType::kF32, {1, 8, 1}});
  Value* len = g.AddInput("len", {DType::kI64, {}});
  Node* n = g.AddNode("DFT", "dft", {x, len}, 1);
  Status s = CanonicalizeNode(*n);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("must be a compile-time constant"), std::string::npos) << s.ToString();
}

TEST(SignalTest, PeriodicHannWindow) {
  Graph g;
  Node* n = g.AddNode("HannWindow", "w", {g.AddConstant("n", MakeTensorI64({}, {4}))}, 1);
  auto out = Eval(g, n);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectNear(Doubles(*out), {0, 0.5, 1, 0.5});
  Graph g2;
  Node* sym = g2.AddNode("HannWindow", "w", {g2.AddInput("n", {DType::kI64, {}})}, 1);
  EXPECT_FALSE(CanonicalizeNode(*sym).ok());
}

TEST(SignalTest, DeterminantPivotsAndSingularMatrices) {
  Graph g;
  // [[0,1],[1,0]] (a swap: -1), [[1,2],[2,4]] (singular: 0), [[0,0],[0,3]] (zero column: 0).
  Node* n = g.AddNode("Det", "det", {g.AddConstant("x", MakeTensorF32({3, 2, 2}, {0, 1, 1, 0, 1, 2, 2, 4, 0, 0, 0, 3}))}, 1);
  auto out = Eval(g, n);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)->type.shape, (std::vector<int64_t>{3}));
  ExpectNear(Doubles(*out), {-1, 0, 0});
}

TEST(SignalTest, BitCastReinterpretsFloatBits) {
  Graph g;
  Node* n = g.AddNode("BitCast", "b", {g.AddConstant("x", MakeTensorF32({2}, {1.0f, -2.5f}))}, 1);
  n->attrs().Set("to", std::string("i32"));
  auto out = Eval(g, n);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  int32_t want[2];
  const float in[2] = {1.0f, -2.5f};
  std::memcpy(want, in, sizeof(in));
  EXPECT_EQ((*out)->data<int32_t>()[0], want[0]);
  EXPECT_EQ((*out)->data<int32_t>()[1], want[1]);
  // Different widths are refused.
  Graph g2;
  Node* bad = g2.AddNode("BitCast", "b", {g2.AddConstant("x", MakeTensorF32({2}, {1, 2}))}, 1);
  bad->attrs().Set("to", std::string("i64"));
  EXPECT_FALSE(InferNodeTypes(*bad).ok());
}

}  // namespace
}  // namespace keel::ops
