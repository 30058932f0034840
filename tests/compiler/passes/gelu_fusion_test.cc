// tests/compiler/passes/gelu_fusion_test.cc — the gelu-fusion pass
// (compiler/passes/gelu_fusion.h): each spelling of the erf form of GELU that
// exporters write becomes one Gelu(approximate = "none") with the same values
// (reference evaluator); subgraphs that are not exactly GELU, or whose
// intermediates are read elsewhere, stay. And mixed precision: a half Gelu
// takes its tanh form and the report counts it; fp32 keeps the erf form.
#include "compiler/passes/gelu_fusion.h"

#include <cmath>

#include "compiler/passes/mixed_precision.h"
#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

// How the five nodes are written.
enum class Form { kDivThenHalfLast, kMulHalfFirst, kHalfOfSum, kSwappedOperands };

struct Spec {
  Form form = Form::kDivThenHalfLast;
  float sqrt2 = 1.4142135f;  // the divisor (1 / it multiplies in kMulHalfFirst)
  float one = 1.f, half = 0.5f;
  bool erf_read_twice = false;  // an intermediate with a second reader
  bool sum_is_output = false;   // an intermediate that is a graph output
};

std::unique_ptr<ir::Graph> Build(const Spec& s) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* in = g->AddInput("in", F32({2, 3, 7}));
  ir::Value* x = Op(*g, "Relu", "pre", {in});  // x has a producer, like a GEMM's output
  ir::Value* scaled = s.form == Form::kMulHalfFirst ? Op(*g, "Mul", "scale", {x, Scalar(*g, "r2", 1.f / s.sqrt2)})
                                                    : Op(*g, "Div", "scale", {x, Scalar(*g, "r2", s.sqrt2)});
  ir::Value* e = Op(*g, "Erf", "erf", {scaled});
  ir::Value* sum = s.form == Form::kSwappedOperands ? Op(*g, "Add", "sum", {Scalar(*g, "one", s.one), e})
                                                    : Op(*g, "Add", "sum", {e, Scalar(*g, "one", s.one)});
  ir::Value* y = nullptr;
  switch (s.form) {
    case Form::kDivThenHalfLast:
      y = Op(*g, "Mul", "y", {Op(*g, "Mul", "xs", {x, sum}), Scalar(*g, "h", s.half)});
      break;
    case Form::kMulHalfFirst:
      y = Op(*g, "Mul", "y", {Op(*g, "Mul", "xh", {x, Scalar(*g, "h", s.half)}), sum});
      break;
    case Form::kHalfOfSum:
      y = Op(*g, "Mul", "y", {x, Op(*g, "Mul", "sh", {sum, Scalar(*g, "h", s.half)})});
      break;
    case Form::kSwappedOperands:
      y = Op(*g, "Mul", "y", {Scalar(*g, "h", s.half), Op(*g, "Mul", "xs", {sum, x})});
      break;
  }
  g->AddOutput(Op(*g, "Neg", "after", {y}));
  if (s.erf_read_twice) g->AddOutput(Op(*g, "Abs", "other", {e}));
  if (s.sum_is_output) g->AddOutput(sum);
  return g;
}

Status Fuse(ir::Graph& g) {
  KEEL_RETURN_IF_ERROR(InferShapes(g));
  GeluFusionPass pass;
  KEEL_RETURN_IF_ERROR(pass.Run(g));
  return g.Verify(true);
}

std::vector<ir::TensorDataPtr> Inputs() {
  std::vector<float> v = RandomValues(42, 7);
  for (float& f : v) f *= 4.f;  // -4 .. 4: both tails of erf
  return {ops::MakeTensorF32({2, 3, 7}, v)};
}

TEST(GeluFusion, EverySpellingBecomesOneGelu) {
  for (Form form : {Form::kDivThenHalfLast, Form::kMulHalfFirst, Form::kHalfOfSum, Form::kSwappedOperands}) {
    Spec s;
    s.form = form;
    ir::Graph* g = nullptr;
    std::unique_ptr<ir::Graph> keep;
    const double diff = CompareAfter([&] { return Build(s); }, Fuse, Inputs(), &g, &keep);
    EXPECT_LT(diff, 1e-6) << "form " << static_cast<int>(form);
    ASSERT_NE(g, nullptr);
    const auto h = Histogram(*g);
    EXPECT_EQ(h.count("Erf"), 0u) << "form " << static_cast<int>(form);
    EXPECT_EQ(h.count("Mul"), 0u) << "form " << static_cast<int>(form);
    ASSERT_EQ(h.count("Gelu"), 1u) << "form " << static_cast<int>(form);
    for (const ir::Node* n : g->nodes()) {
      if (n->op_type() != "Gelu") continue;
      EXPECT_EQ(n->input(0)->producer()->op_type(), "Relu");
      EXPECT_EQ(*n->attrs().GetString("approximate", ""), "none");
      EXPECT_EQ(n->output(0)->name(), "y:0");  // the subgraph's result keeps its name
      ASSERT_EQ(n->output(0)->uses().size(), 1u);
      EXPECT_EQ(n->output(0)->uses()[0].node->op_type(), "Neg");
    }
  }
}

TEST(GeluFusion, WhatIsNotExactlyGeluStays) {
  Spec wrong_divisor, wrong_one, wrong_half, shared_erf, output_sum;
  wrong_divisor.sqrt2 = 1.5f;
  wrong_one.one = 2.f;
  wrong_half.half = 0.25f;
  shared_erf.erf_read_twice = true;
  output_sum.sum_is_output = true;
  for (const Spec& s : {wrong_divisor, wrong_one, wrong_half, shared_erf, output_sum}) {
    ir::Graph* g = nullptr;
    std::unique_ptr<ir::Graph> keep;
    EXPECT_LT(CompareAfter([&] { return Build(s); }, Fuse, Inputs(), &g, &keep), 1e-7);
    ASSERT_NE(g, nullptr);
    const auto h = Histogram(*g);
    EXPECT_EQ(h.count("Gelu"), 0u);
    EXPECT_EQ(h.at("Erf"), 1);
  }
}

TEST(GeluFusion, HalfPrecisionTakesTheTanhForm) {
  for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kBf16}) {
    std::unique_ptr<ir::Graph> g = Build(Spec{});
    ASSERT_TRUE(Fuse(*g).ok());
    MixedPrecisionOptions options;
    options.precision = p;
    Result<MixedPrecisionReport> report = ApplyMixedPrecision(*g, options);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    const bool half = p != Precision::kFp32;
    EXPECT_EQ(report->tanh_gelu, half ? 1 : 0);
    for (const ir::Node* n : g->nodes()) {
      if (n->op_type() == "Gelu") {
        EXPECT_EQ(*n->attrs().GetString("approximate", ""), half ? "tanh" : "none");
      }
    }
    // Within the tanh form's distance from the erf form (4.8e-4) plus the half rounding.
    const double tolerance = p == Precision::kBf16 ? 6e-2 : p == Precision::kFp16 ? 8e-3 : 1e-6;
    Result<std::vector<ir::TensorDataPtr>> got = ops::EvaluateGraph(*g, Inputs());
    std::unique_ptr<ir::Graph> ref = Build(Spec{});
    ASSERT_TRUE(InferShapes(*ref).ok());
    Result<std::vector<ir::TensorDataPtr>> want = ops::EvaluateGraph(*ref, Inputs());
    ASSERT_TRUE(got.ok() && want.ok());
    EXPECT_LT(MaxAbsDiff(*(*want)[0], *(*got)[0]), tolerance) << PrecisionName(p);
  }
}

}  // namespace
}  // namespace keel::passes
