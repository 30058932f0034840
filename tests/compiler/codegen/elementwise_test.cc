// Elementwise, broadcasting and data-movement ops: each generated kernel against
// the reference evaluator, with odd shapes (not multiples of the vector width)
// and 1-sized dims.
#include <gtest/gtest.h>

#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

using ir::Attributes;

TEST(Elementwise, BinaryOpsWithBroadcast) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    GraphBuilder b;
    ir::Value* x = b.Input("x", {2, 3, 5, 7});
    ir::Value* y = b.Input("y", {3, 1, 7});
    ir::Node* n = b.Op(op, {x, y});
    ASSERT_NE(n, nullptr);
    CheckNodeAgainstReference(*n, 1);
  }
}

TEST(Elementwise, UnaryOps) {
  for (const char* op : {"Relu", "Sigmoid", "Erf", "Tanh", "Exp", "Neg", "Identity"}) {
    GraphBuilder b;
    ir::Value* x = b.Input("x", {3, 1, 37});
    ir::Node* n = b.Op(op, {x});
    ASSERT_NE(n, nullptr);
    CheckNodeAgainstReference(*n, 2);
  }
}

// f32 Erf is an inline approximation (not libm): check it across its whole
// range, tails (|x| > 4, erf = +-1 in f32) and zero included, tightly.
TEST(Elementwise, ErfAccurateOverItsRange) {
  GraphBuilder b;
  std::vector<float> xs;
  for (int i = -24; i <= 24; ++i) xs.push_back(static_cast<float>(i) * 0.25f);
  ir::Node* n = b.Op("Erf", {b.ConstF32("x", {1, static_cast<int64_t>(xs.size())}, xs)});
  ASSERT_NE(n, nullptr);
  CheckNodeAgainstReference(*n, 3, 1e-6);
}

TEST(Elementwise, SqrtPowOnPositiveInputs) {
  GraphBuilder b;
  ir::Value* x = b.ConstF32("x", {2, 9}, {0.5f, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17});
  ir::Value* e = b.ConstF32("e", {}, {2.0f});
  ir::Value* e2 = b.Input("e2", {9});
  for (ir::Node* n : {b.Op("Sqrt", {x}), b.Op("Pow", {x, e}), b.Op("Pow", {x, e2})}) {
    ASSERT_NE(n, nullptr);
    CheckNodeAgainstReference(*n, 3);
  }
}

TEST(Elementwise, ClipAndCast) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {4, 33});
  Attributes a;
  a.Set("min", 0.0);
  a.Set("max", 0.5);
  ir::Node* clip = b.Op("Clip", {x}, a);
  ASSERT_NE(clip, nullptr);
  CheckNodeAgainstReference(*clip, 4);
  ir::Value* xi = b.Input("xi", {5, 3}, ir::DType::kI64);
  Attributes c;
  c.Set("to", std::string("f32"));
  ir::Node* cast = b.Op("Cast", {xi}, c);
  ASSERT_NE(cast, nullptr);
  CheckNodeAgainstReference(*cast, 5);
}

TEST(Elementwise, LargeTensorRunsParallel) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 64, 57, 59});
  ir::Value* y = b.Input("y", {1, 64, 57, 59});
  ir::Node* n = b.Op("Add", {x, y});
  ASSERT_NE(n, nullptr);
  KernelSpec spec = CheckNodeAgainstReference(*n, 6);
  ASSERT_TRUE(spec.kernel);
  EXPECT_NE(spec.kernel->ToString().find("parallel for"), std::string::npos);
}

TEST(Movement, Transpose) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 3, 5, 7});
  Attributes a;
  a.Set("perm", std::vector<int64_t>{0, 2, 3, 1});
  ir::Node* n = b.Op("Transpose", {x}, a);
  ASSERT_NE(n, nullptr);
  CheckNodeAgainstReference(*n, 7);
}

TEST(Movement, ReshapeFlattenSqueezeUnsqueeze) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 3, 4, 5});
  ir::Value* shape = b.ConstI64("shape", {3}, {6, 5, 4});
  ir::Node* r = b.Op("Reshape", {x, shape});
  ASSERT_NE(r, nullptr);
  CheckNodeAgainstReference(*r, 8);
  Attributes f;
  f.Set("axis", int64_t{2});
  ir::Node* fl = b.Op("Flatten", {x}, f);
  ASSERT_NE(fl, nullptr);
  CheckNodeAgainstReference(*fl, 9);
  ir::Value* y = b.Input("y", {3, 1, 5});
  Attributes sq;
  sq.Set("axes", std::vector<int64_t>{1});
  ir::Node* s = b.Op("Squeeze", {y}, sq);
  ASSERT_NE(s, nullptr);
  CheckNodeAgainstReference(*s, 10);
  Attributes us;
  us.Set("axes", std::vector<int64_t>{0, 3});
  ir::Node* u = b.Op("Unsqueeze", {y}, us);
  ASSERT_NE(u, nullptr);
  CheckNodeAgainstReference(*u, 11);
}

TEST(Movement, SliceWithStepsAndNegativeIndices) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {4, 10, 6});
  Attributes a;
  a.Set("starts", std::vector<int64_t>{1, -8, 5});
  a.Set("ends", std::vector<int64_t>{4, 100, 0});
  a.Set("axes", std::vector<int64_t>{0, 1, 2});
  a.Set("steps", std::vector<int64_t>{1, 3, -2});
  ir::Node* n = b.Op("Slice", {x}, a);
  ASSERT_NE(n, nullptr);
  CheckNodeAgainstReference(*n, 12);
}

TEST(Movement, GatherConstantAndRuntimeIndices) {
  GraphBuilder b;
  ir::Value* table = b.Input("table", {7, 5});
  ir::Value* idx = b.ConstI64("idx", {2, 3}, {0, 6, -1, 3, 2, 2});
  ir::Node* n = b.Op("Gather", {table, idx});
  ASSERT_NE(n, nullptr);
  CheckNodeAgainstReference(*n, 13);
  ir::Value* ridx = b.Input("ridx", {4}, ir::DType::kI64);
  Attributes a;
  a.Set("axis", int64_t{1});
  ir::Node* g = b.Op("Gather", {table, ridx}, a);
  ASSERT_NE(g, nullptr);
  CheckNodeAgainstReference(*g, 14, 1e-5, 5);
}

TEST(Movement, Concat) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 3, 5});
  ir::Value* y = b.Input("y", {2, 1, 5});
  ir::Value* z = b.Input("z", {2, 4, 5});
  Attributes a;
  a.Set("axis", int64_t{1});
  ir::Node* n = b.Op("Concat", {x, y, z}, a);
  ASSERT_NE(n, nullptr);
  CheckNodeAgainstReference(*n, 15);
}

}  // namespace
}  // namespace keel::codegen::testing
