// tests/compiler/ops/resize_test.cc — Resize's canonical form (scales/sizes/axes/
// keep_aspect_ratio_policy resolved into keel.sizes/keel.scales), refusals, and
// the reference interpreter on hand-computed interpolations.
#include <gtest/gtest.h>

#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"

namespace keel::ops {
namespace {

using namespace keel::ir;  // NOLINT: the test builds IR graphs throughout

TensorDataPtr F32(std::vector<int64_t> shape, std::vector<float> v) { return MakeTensorF32(std::move(shape), v); }

std::vector<float> Values(const TensorDataPtr& t) {
  return std::vector<float>(t->data<float>(), t->data<float>() + t->type.NumElements());
}

// Resize over constant X and [roi, scales, sizes] (nullptr = absent).
struct ResizeNode {
  Graph g;
  Node* node = nullptr;
  ResizeNode(TensorDataPtr x, TensorDataPtr roi, TensorDataPtr scales, TensorDataPtr sizes) {
    std::vector<Value*> in{g.AddConstant("x", x)};
    for (auto& [name, t] : {std::pair{"roi", roi}, {"scales", scales}, {"sizes", sizes}}) {
      in.push_back(t ? g.AddConstant(name, t) : nullptr);
    }
    while (in.back() == nullptr) in.pop_back();
    node = g.AddNode("Resize", "r", in, 1);
  }
  Result<TensorDataPtr> Run() {
    KEEL_RETURN_IF_ERROR(CanonicalizeNode(*node));
    std::vector<TensorDataPtr> args;
    for (Value* v : node->inputs()) args.push_back(v ? v->constant() : nullptr);
    KEEL_ASSIGN_OR_RETURN(auto outs, EvaluateNode(*node, args));
    return outs[0];
  }
};

TEST(ResizeTest, LinearAsymmetricUpscale) {
  ResizeNode r(F32({1, 2}, {1, 3}), nullptr, F32({2}, {1, 2}), nullptr);
  r.node->attrs().Set("mode", std::string("linear"));
  r.node->attrs().Set("coordinate_transformation_mode", std::string("asymmetric"));
  auto out = r.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)->type.shape, (std::vector<int64_t>{1, 4}));
  // x = 0, 0.5, 1, 1.5 (the last clamps to the edge).
  EXPECT_EQ(Values(*out), (std::vector<float>{1, 2, 3, 3}));
  // Canonical: the parameters became attributes, only X remains; idempotent.
  EXPECT_EQ(r.node->inputs().size(), 1u);
  EXPECT_TRUE(CanonicalizeNode(*r.node).ok());
  EXPECT_EQ(r.node->attrs().GetInts("keel.sizes", {}).value(), (std::vector<int64_t>{1, 4}));
}

TEST(ResizeTest, NearestHalfPixelDownscaleIsAnIndexMap) {
  ResizeNode r(F32({1, 6}, {0, 1, 2, 3, 4, 5}), nullptr, nullptr, MakeTensorI64({2}, {1, 3}));
  auto out = r.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // half_pixel: x = (y + 0.5) * 2 - 0.5 = 0.5, 2.5, 4.5 -> round_prefer_floor 0, 2, 4.
  EXPECT_EQ(Values(*out), (std::vector<float>{0, 2, 4}));
}

TEST(ResizeTest, KeepAspectRatioNotLargerWithAxes) {
  ResizeNode r(F32({1, 1, 4, 4}, std::vector<float>(16, 1.0f)), nullptr, nullptr, MakeTensorI64({2}, {7, 8}));
  r.node->attrs().Set("axes", std::vector<int64_t>{2, 3});
  r.node->attrs().Set("keep_aspect_ratio_policy", std::string("not_larger"));
  ASSERT_TRUE(CanonicalizeNode(*r.node).ok());
  auto types = InferNodeTypes(*r.node);
  ASSERT_TRUE(types.ok()) << types.status().ToString();
  EXPECT_EQ((*types)[0].shape, (std::vector<int64_t>{1, 1, 7, 7}));
}

TEST(ResizeTest, CubicKeepsConstantsConstant) {
  ResizeNode r(F32({1, 1, 3, 3}, std::vector<float>(9, 2.5f)), nullptr, F32({4}, {1, 1, 1.7f, 2.3f}), nullptr);
  r.node->attrs().Set("mode", std::string("cubic"));
  auto out = r.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)->type.shape, (std::vector<int64_t>{1, 1, 5, 6}));
  for (float v : Values(*out)) EXPECT_NEAR(v, 2.5f, 1e-5f);
}

TEST(ResizeTest, NonConstantScalesNeedConstant) {
  Graph g;
  Value* x = g.AddInput("x", {DType::kF32, {1, 4}});
  Value* s = g.AddInput("s", {DType::kF32, {2}});
  Node* n = g.AddNode("Resize", "r", {x, nullptr, s}, 1);
  Status st = CanonicalizeNode(*n);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("must be a compile-time constant"), std::string::npos) << st.message();
}

TEST(ResizeTest, ScalesAndSizesTogetherRefused) {
  ResizeNode r(F32({1, 2}, {1, 3}), nullptr, F32({2}, {1, 2}), MakeTensorI64({2}, {1, 4}));
  auto out = r.Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("Resize 'r'"), std::string::npos) << out.status().message();
}

}  // namespace
}  // namespace keel::ops
