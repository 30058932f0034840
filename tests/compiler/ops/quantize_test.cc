// tests/compiler/ops/quantize_test.cc — the quantization family through the
// reference evaluator: QuantizeLinear's rounding (half to even, before the zero
// point) and saturation, per-axis and blocked scales, MatMulInteger's zero
// points and int32 wrap-around, DynamicQuantizeLinear's three outputs, and
// refusals of the types Keel does not quantize to.
#include <gtest/gtest.h>

#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"

namespace keel::ops {
namespace {

using namespace keel::ir;  // NOLINT: the test builds IR graphs throughout

TensorDataPtr Ints(DType t, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  std::shared_ptr<TensorData> d = NewTensor({t, std::move(shape)});
  for (size_t i = 0; i < v.size(); ++i) StoreInt(*d, static_cast<int64_t>(i), v[i]);
  return d;
}

std::vector<int64_t> IntValues(const TensorDataPtr& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t->type.NumElements(); ++i) v.push_back(ElementAsInt(*t, i));
  return v;
}

// One node over constant inputs (nullptr = absent), canonicalized and evaluated.
struct OneNode {
  Graph g;
  Node* node = nullptr;
  OneNode(const std::string& op, const std::vector<TensorDataPtr>& inputs, size_t outputs = 1) {
    std::vector<Value*> in;
    for (size_t i = 0; i < inputs.size(); ++i) {
      in.push_back(inputs[i] ? g.AddConstant("in" + std::to_string(i), inputs[i]) : nullptr);
    }
    node = g.AddNode(op, "n", in, outputs);
  }
  Result<std::vector<TensorDataPtr>> Run() {
    KEEL_RETURN_IF_ERROR(CanonicalizeNode(*node));
    KEEL_ASSIGN_OR_RETURN(auto types, InferNodeTypes(*node));
    for (size_t i = 0; i < types.size(); ++i) node->output(i)->set_type(types[i]);
    std::vector<TensorDataPtr> args;
    for (Value* v : node->inputs()) args.push_back(v ? v->constant() : nullptr);
    return EvaluateNode(*node, args);
  }
};

TEST(QuantizeTest, RoundsHalfToEvenBeforeTheZeroPointAndSaturates) {
  // x / 1 = 0.5, 1.5, 2.5, -2.5 round to 0, 2, 2, -2; then + 11 (odd: adding first would round otherwise).
  OneNode n("QuantizeLinear", {MakeTensorF32({6}, {0.5f, 1.5f, 2.5f, -2.5f, 1000, -1000}), MakeTensorF32({}, {1}),
                               Ints(DType::kI8, {}, {11})});
  auto out = n.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0]->type.dtype, DType::kI8);
  EXPECT_EQ(IntValues((*out)[0]), (std::vector<int64_t>{11, 13, 13, 9, 127, -128}));
}

TEST(QuantizeTest, PerAxisAndBlockedScales) {
  const TensorDataPtr x = MakeTensorF32({2, 3}, {2, 4, 6, 8, 10, 12});
  OneNode axis("QuantizeLinear", {x, MakeTensorF32({2}, {1, 2})});
  axis.node->attrs().Set("axis", int64_t{0});
  auto a = axis.Run();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(IntValues((*a)[0]), (std::vector<int64_t>{2, 4, 6, 4, 5, 6}));
  // Blocks of 2 along axis 1: columns {0, 1} use scale [.][0], column 2 (the remainder) [.][1].
  OneNode blocked("QuantizeLinear", {x, MakeTensorF32({2, 2}, {2, 3, 4, 6}), Ints(DType::kU8, {2, 2}, {1, 2, 3, 4})});
  blocked.node->attrs().Set("axis", int64_t{1});
  blocked.node->attrs().Set("block_size", int64_t{2});
  auto b = blocked.Run();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(IntValues((*b)[0]), (std::vector<int64_t>{2, 3, 4, 5, 5, 6}));  // 10 / 4 = 2.5 -> 2
}

TEST(QuantizeTest, DequantizePerAxis) {
  OneNode n("DequantizeLinear", {Ints(DType::kU8, {2, 2}, {10, 20, 30, 40}), MakeTensorF32({2}, {0.5f, 2}),
                                 Ints(DType::kU8, {2}, {10, 0})});
  n.node->attrs().Set("axis", int64_t{0});  // rows (the default axis 1 would pick columns)
  auto out = n.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const float* y = (*out)[0]->data<float>();
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{0, 5, 60, 80}));
}

TEST(QuantizeTest, MatMulIntegerZeroPointsAndWrapAround) {
  // A [2, 2] u8 with per-row zero points, B [2, 2] i8 with per-column ones.
  OneNode n("MatMulInteger", {Ints(DType::kU8, {2, 2}, {1, 2, 3, 4}), Ints(DType::kI8, {2, 2}, {5, 6, 7, 8}),
                              Ints(DType::kU8, {2}, {1, 0}), Ints(DType::kI8, {2}, {0, 1})});
  auto out = n.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // A - azp = [[0, 1], [3, 4]]; B - bzp = [[5, 5], [7, 7]].
  EXPECT_EQ(IntValues((*out)[0]), (std::vector<int64_t>{7, 7, 43, 43}));
  // 2^31 wraps like int32 arithmetic: 32768 * 65536 = 2^31.
  OneNode w("MatMulInteger", {Ints(DType::kU16, {1, 2}, {32768, 32768}), Ints(DType::kU16, {2, 1}, {65535, 1})});
  auto wo = w.Run();
  ASSERT_TRUE(wo.ok()) << wo.status().ToString();
  EXPECT_EQ(IntValues((*wo)[0]), (std::vector<int64_t>{INT32_MIN}));
}

TEST(QuantizeTest, DynamicQuantizeLinearOutputs) {
  OneNode n("DynamicQuantizeLinear", {MakeTensorF32({4}, {1, 2, 3, 5.1f})}, 3);
  auto out = n.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 3u);
  // Range [0, 5.1]: scale 0.02, zero point 0.
  EXPECT_FLOAT_EQ((*out)[1]->data<float>()[0], 5.1f / 255);
  EXPECT_EQ(IntValues((*out)[2]), (std::vector<int64_t>{0}));
  EXPECT_EQ(IntValues((*out)[0]), (std::vector<int64_t>{50, 100, 150, 255}));
}

TEST(QuantizeTest, RefusalsNameTheNodeAndType) {
  OneNode i32("QuantizeLinear", {MakeTensorF32({2}, {1, 2}), MakeTensorF32({}, {1}), Ints(DType::kI32, {}, {0})});
  auto r = i32.Run();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("QuantizeLinear 'n'"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("i32"), std::string::npos) << r.status().message();
  OneNode bad("DequantizeLinear", {Ints(DType::kU8, {2, 3}, {1, 2, 3, 4, 5, 6}), MakeTensorF32({2}, {1, 2})});
  auto b = bad.Run();  // axis 1 has 3 entries, the scale 2
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("DequantizeLinear 'n'"), std::string::npos) << b.status().message();
}

}  // namespace
}  // namespace keel::ops
