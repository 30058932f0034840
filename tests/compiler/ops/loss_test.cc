// tests/compiler/ops/loss_test.cc — the loss composites (compiler/ops/loss.cc):
// their reference values (the evaluation of the expansion) against values
// small enough to check by hand, ignore_index outside [0, C) and over -inf
// log-probabilities, and the type-rule errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"

namespace keel::ops {
namespace {

using ir::DType;

Result<std::vector<ir::TensorDataPtr>> Eval(ir::Node* n) {
  KEEL_RETURN_IF_ERROR(CanonicalizeNode(*n));
  std::vector<ir::TensorDataPtr> in;
  for (ir::Value* v : n->inputs()) in.push_back(v ? v->constant() : nullptr);
  return EvaluateNode(*n, in);
}

// An NLL node over log-probabilities [[-1, -2, -3], [-4, -5, -6]], `targets`
// and class weights [1, 2, 3] (when `weighted`).
ir::Node* Nll(ir::Graph& g, const std::string& name, const std::vector<int64_t>& targets, bool weighted,
              const std::string& reduction, float first = -1) {
  std::vector<ir::Value*> in{g.AddConstant(name + "x", MakeTensorF32({2, 3}, {first, -2, -3, -4, -5, -6})),
                             g.AddConstant(name + "t", MakeTensorI64({2}, targets))};
  if (weighted) in.push_back(g.AddConstant(name + "w", MakeTensorF32({3}, {1, 2, 3})));
  ir::Node* n = g.AddNode("NegativeLogLikelihoodLoss", name, in, 1);
  n->attrs().Set("reduction", reduction);
  return n;
}

std::vector<double> Values(const Result<std::vector<ir::TensorDataPtr>>& r, size_t i = 0) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? TensorToDoubles(*(*r)[i]) : std::vector<double>{};
}

TEST(LossReference, NllReductionsWithWeights) {
  ir::Graph g;
  // Targets 2 and 0: losses 3 * w[2] = 9 and 4 * w[0] = 4; mean divides by w[2] + w[0].
  EXPECT_EQ(Values(Eval(Nll(g, "none", {2, 0}, true, "none"))), (std::vector<double>{9, 4}));
  EXPECT_EQ(Values(Eval(Nll(g, "sum", {2, 0}, true, "sum"))), (std::vector<double>{13}));
  EXPECT_EQ(Values(Eval(Nll(g, "mean", {2, 0}, true, "mean"))), (std::vector<double>{3.25}));
  EXPECT_EQ(Values(Eval(Nll(g, "plain", {2, 0}, false, "mean"))), (std::vector<double>{3.5}));
}

TEST(LossReference, NllIgnoreIndexOutsideClassesAndOverMinusInf) {
  ir::Graph g;
  // ignore_index 7 lies outside [0, 3): that element weighs 0; mean = 5 * 2 / 2.
  ir::Node* high = Nll(g, "high", {7, 1}, true, "mean");
  high->attrs().Set("ignore_index", int64_t{7});
  EXPECT_EQ(Values(Eval(high)), (std::vector<double>{5}));
  // ignore_index -1 clamps to class 0, whose log-probability is -inf: the
  // ignored loss is exactly 0, not -(-inf) * 0 = NaN.
  ir::Node* neg = Nll(g, "neg", {-1, 1}, true, "none", -std::numeric_limits<float>::infinity());
  neg->attrs().Set("ignore_index", int64_t{-1});
  EXPECT_EQ(Values(Eval(neg)), (std::vector<double>{0, 10}));
  // Without weights, the mean counts the kept elements only.
  ir::Node* count = Nll(g, "count", {1, 1}, false, "mean");
  count->attrs().Set("ignore_index", int64_t{1});
  ir::Node* half = Nll(g, "half", {0, 1}, false, "mean");
  half->attrs().Set("ignore_index", int64_t{1});
  EXPECT_TRUE(std::isnan(Values(Eval(count))[0]));  // every element ignored: 0 / 0, as the ONNX reference
  EXPECT_EQ(Values(Eval(half)), (std::vector<double>{1}));
}

TEST(LossReference, SoftmaxCrossEntropyAndLogProb) {
  ir::Graph g;
  // Two equal logits: log-probabilities -ln 2; the loss of either class is ln 2.
  ir::Node* n = g.AddNode("SoftmaxCrossEntropyLoss", "sce",
                          {g.AddConstant("x", MakeTensorF32({1, 2, 1}, {3, 3})), g.AddConstant("t", MakeTensorI64({1, 1}, {1}))},
                          2);
  auto r = Eval(n);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(Values(r, 0)[0], std::log(2.0), 1e-6);
  EXPECT_EQ((*r)[0]->type.shape, (std::vector<int64_t>{}));
  EXPECT_EQ((*r)[1]->type.shape, (std::vector<int64_t>{1, 2, 1}));
  for (double v : Values(r, 1)) EXPECT_NEAR(v, -std::log(2.0), 1e-6);
}

TEST(LossRules, RefusalsNameTheNode) {
  ir::Graph g;
  auto expect_error = [](ir::Node* n, const std::string& what) {
    auto r = Eval(n);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(n->name()), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
  };
  expect_error(Nll(g, "bad_reduction", {0, 1}, false, "avg"), "reduction must be");
  expect_error(g.AddNode("NegativeLogLikelihoodLoss", "bad_target",
                         {g.AddConstant("x2", MakeTensorF32({2, 3}, {0, 0, 0, 0, 0, 0})),
                          g.AddConstant("t2", MakeTensorI64({3}, {0, 1, 2}))},
                         1),
               "does not match");
  expect_error(g.AddNode("NegativeLogLikelihoodLoss", "float_target",
                         {g.AddConstant("x3", MakeTensorF32({2, 3}, {0, 0, 0, 0, 0, 0})),
                          g.AddConstant("t3", MakeTensorF32({2}, {0, 1}))},
                         1),
               "target of type f32");
  expect_error(g.AddNode("SoftmaxCrossEntropyLoss", "bad_weight",
                         {g.AddConstant("x4", MakeTensorF32({2, 3}, {0, 0, 0, 0, 0, 0})),
                          g.AddConstant("t4", MakeTensorI64({2}, {0, 1})), g.AddConstant("w4", MakeTensorF32({2}, {1, 1}))},
                         1),
               "weight must be");
}

}  // namespace
}  // namespace keel::ops
