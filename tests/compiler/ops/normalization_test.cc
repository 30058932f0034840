// tests/compiler/ops/normalization_test.cc — the normalization family: every
// op's kernel (CPU, serial and threaded, rows split over threads) against its
// reference evaluator, secondary outputs included; version normalization and
// type-rule errors; a few hand-computed reference values.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/semantics.h"
#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::ops {
namespace {

using codegen::testing::Attrs;
using codegen::testing::CheckNodeAgainstReference;
using codegen::testing::GraphBuilder;
using ir::DType;

// Small tensors still take the parallel path (rows spread over threads).
codegen::LowerOptions Parallel() {
  codegen::LowerOptions o;
  o.min_parallel_elements = 1;
  return o;
}

void Check(GraphBuilder& b, const std::string& op, std::vector<ir::Value*> in, const ir::Attributes& attrs,
           uint32_t seed, size_t outputs = 1) {
  ir::Node* n = b.Op(op, std::move(in), attrs, outputs);
  ASSERT_NE(n, nullptr);
  CheckNodeAgainstReference(*n, seed, 1e-5, 4, Parallel());
  CheckNodeAgainstReference(*n, seed, 1e-5, 4, codegen::LowerOptions{});
}

std::vector<float> Positive(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.5f + 0.25f * static_cast<float>(i % 5);
  return v;
}

TEST(NormalizationKernels, LayerNormAllOutputs) {
  GraphBuilder b;
  Check(b, "LayerNormalization", {b.Input("x", {2, 3, 4, 5}), b.Input("s", {4, 5}), b.Input("b", {5})},
        Attrs({{"axis", int64_t{2}}, {"epsilon", 1e-3}}), 1, 3);
  Check(b, "LayerNormalization", {b.Input("x2", {3, 17}), b.Input("s2", {17})}, Attrs({{"axis", int64_t{0}}}), 2, 2);
}

TEST(NormalizationKernels, LayerNormStashDoubleAndF16Data) {
  GraphBuilder b;
  ir::Node* n = b.Op("LayerNormalization", {b.Input("x", {2, 6}, DType::kF16), b.Input("s", {6}, DType::kF16)},
                     Attrs({{"stash_type", int64_t{11}}}), 3);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->output(0)->type().dtype, DType::kF16);
  EXPECT_EQ(n->output(1)->type().dtype, DType::kF64);
  EXPECT_EQ(n->output(2)->type().shape, (std::vector<int64_t>{2, 1}));
  CheckNodeAgainstReference(*n, 3, 1e-3);
}

TEST(NormalizationKernels, RmsNorm) {
  GraphBuilder b;
  Check(b, "RMSNormalization", {b.Input("x", {3, 4, 6}), b.Input("s", {4, 6})}, Attrs({{"axis", int64_t{1}}}), 4);
}

TEST(NormalizationKernels, InstanceAndGroupNorm) {
  GraphBuilder b;
  Check(b, "InstanceNormalization", {b.Input("x", {2, 3, 5, 4}), b.Input("s", {3}), b.Input("b", {3})}, {}, 5);
  Check(b, "GroupNormalization", {b.Input("x2", {2, 6, 3, 3}), b.Input("s2", {6}), b.Input("b2", {6})},
        Attrs({{"num_groups", int64_t{3}}}), 6);
  // GroupNormalization-18: one scale/bias per group.
  Check(b, "GroupNormalization", {b.Input("x3", {2, 6, 7}), b.Input("s3", {2}), b.Input("b3", {2})},
        Attrs({{"num_groups", int64_t{2}}, {"keel.group_affine", int64_t{1}}}), 7);
}

TEST(NormalizationKernels, BatchNormRuntimeParamsAndTraining) {
  GraphBuilder b;
  ir::Value* var = b.ConstF32("v", {3}, Positive(3));
  Check(b, "BatchNormalization",
        {b.Input("x", {2, 3, 4, 5}), b.Input("s", {3}), b.Input("b", {3}), b.Input("m", {3}), var}, {}, 8);
  Check(b, "BatchNormalization",
        {b.Input("x2", {4, 3, 6}), b.Input("s2", {3}), b.Input("b2", {3}), b.Input("m2", {3}), var},
        Attrs({{"training_mode", int64_t{1}}, {"momentum", 0.7}}), 9, 3);
  // spatial = 0 (opset 7): per-activation parameters.
  Check(b, "BatchNormalization",
        {b.Input("x3", {2, 2, 3}), b.Input("s3", {2, 3}), b.Input("b3", {2, 3}), b.Input("m3", {2, 3}),
         b.ConstF32("v3", {2, 3}, Positive(6))},
        Attrs({{"spatial", int64_t{0}}}), 10);
}

TEST(NormalizationKernels, LrnMvnLpNorm) {
  GraphBuilder b;
  Check(b, "LRN", {b.Input("x", {2, 7, 3, 3})}, Attrs({{"size", int64_t{4}}, {"alpha", 0.5}}), 11);
  // A window wider than the unrolled limit takes the loop.
  Check(b, "LRN", {b.Input("x2", {1, 40, 2, 2})}, Attrs({{"size", int64_t{35}}, {"alpha", 0.5}}), 12);
  Check(b, "MeanVarianceNormalization", {b.Input("x3", {3, 2, 4, 5})}, {}, 13);
  Check(b, "MeanVarianceNormalization", {b.Input("x4", {3, 2, 4})}, Attrs({{"axes", std::vector<int64_t>{1}}}), 14);
  Check(b, "LpNormalization", {b.Input("x5", {5, 6})}, Attrs({{"axis", int64_t{0}}, {"p", int64_t{1}}}), 15);
  Check(b, "LpNormalization", {b.Input("x6", {2, 5, 3})}, Attrs({{"axis", int64_t{1}}}), 16);
  // A zero row normalizes to zeros, not NaN, in the kernel as in the reference.
  Check(b, "LpNormalization", {b.ConstF32("z", {2, 3}, {0, 0, 0, 3, 4, 0})}, {}, 17);
}

// ---- reference values and rules ----------------------------------------------------------

Result<std::vector<ir::TensorDataPtr>> Eval(ir::Graph& g, ir::Node* n) {
  KEEL_RETURN_IF_ERROR(CanonicalizeNode(*n));
  std::vector<ir::TensorDataPtr> in;
  for (ir::Value* v : n->inputs()) in.push_back(v ? v->constant() : nullptr);
  (void)g;
  return EvaluateNode(*n, in);
}

TEST(NormalizationReference, LpNormZeroRowAndGroupAffine) {
  ir::Graph g;
  ir::Node* lp = g.AddNode("LpNormalization", "lp", {g.AddConstant("x", MakeTensorF32({2, 2}, {0, 0, 3, 4}))}, 1);
  auto r = Eval(g, lp);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(TensorToDoubles(*(*r)[0]), (std::vector<double>{0, 0, 0.6f, 0.8f}));

  // Two groups of one channel each, two elements per group: normalized to -1, +1.
  ir::Node* gn = g.AddNode("GroupNormalization", "gn",
                           {g.AddConstant("gx", MakeTensorF32({1, 2, 2}, {1, 3, 10, 20})),
                            g.AddConstant("gs", MakeTensorF32({2}, {2, 3})), g.AddConstant("gb", MakeTensorF32({2}, {0, 1}))},
                           1);
  gn->attrs().Set("num_groups", int64_t{2});
  gn->attrs().Set("epsilon", 0.0);
  r = Eval(g, gn);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(TensorToDoubles(*(*r)[0]), (std::vector<double>{-2, 2, -2, 4}));
}

TEST(NormalizationRules, BatchNormOldOpsetRunningOutputsMeanTraining) {
  ir::Graph g;
  std::vector<ir::Value*> in;
  for (const char* name : {"x", "s", "b", "m", "v"}) in.push_back(g.AddInput(name, {DType::kF32, {2, 3}}));
  in[0] = g.AddInput("x4", {DType::kF32, {2, 3, 4}});
  ir::Node* bn = g.AddNode("BatchNormalization", "bn", in, 3);
  const OpDef* def = Registry::Get().Find("BatchNormalization");
  ASSERT_NE(def, nullptr);
  ASSERT_TRUE(def->normalize(*bn, 9).ok());
  EXPECT_EQ(*bn->attrs().GetInt("training_mode", 0), 1);
  ASSERT_TRUE(CanonicalizeNode(*bn).ok());
  auto types = InferNodeTypes(*bn);
  // The parameters have 6 elements, the channels are 3.
  ASSERT_FALSE(types.ok());
  EXPECT_NE(types.status().message().find("BatchNormalization 'bn'"), std::string::npos);
}

TEST(NormalizationRules, ErrorsNameTheNode) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", {DType::kF32, {2, 6, 4}});
  ir::Node* gn = g.AddNode("GroupNormalization", "gn", {x, g.AddInput("s", {DType::kF32, {6}}), g.AddInput("b", {DType::kF32, {6}})}, 1);
  gn->attrs().Set("num_groups", int64_t{4});
  ASSERT_TRUE(CanonicalizeNode(*gn).ok());
  auto t = InferNodeTypes(*gn);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("GroupNormalization 'gn': num_groups 4"), std::string::npos) << t.status().message();

  ir::Node* ln = g.AddNode("LayerNormalization", "ln", {x, g.AddInput("s5", {DType::kF32, {5}})}, 1);
  ASSERT_TRUE(CanonicalizeNode(*ln).ok());
  t = InferNodeTypes(*ln);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("does not broadcast"), std::string::npos) << t.status().message();

  ir::Node* bn = g.AddNode("BatchNormalization", "bn2", {x, x, x, x, x}, 2);
  ASSERT_TRUE(CanonicalizeNode(*bn).ok());
  t = InferNodeTypes(*bn);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("training_mode=1"), std::string::npos) << t.status().message();
}

}  // namespace
}  // namespace keel::ops
