// tests/compiler/codegen/kernel_dedup_test.cc — LoweringKey: what makes two
// nodes lower to the same kernel (and what must keep them apart).
#include "compiler/codegen/kernel_dedup.h"

#include <gtest/gtest.h>

#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

ir::Node* FusedLeakyRelu(GraphBuilder& b, ir::Value* x, ir::Value* w, double alpha) {
  return MakeFused(b.graph(), {x, w}, [alpha](GraphBuilder& fb, const std::vector<ir::Value*>& in) {
    ir::Attributes attrs;
    attrs.Set("alpha", alpha);
    ir::Value* s = fb.Op("Add", {in[0], in[1]})->output(0);
    return std::vector<ir::Value*>{fb.Op("LeakyRelu", {s}, attrs)->output(0)};
  });
}

TEST(LoweringKey, IgnoresNamesButNotAttributesTypesOrConstants) {
  GraphBuilder b;
  ir::Value* x1 = b.Input("x1", {4, 8});
  ir::Value* x2 = b.Input("x2", {4, 8});
  ir::Value* x3 = b.Input("x3", {4, 9});
  ir::Value* w = b.ConstF32("w", {8}, std::vector<float>(8, 0.5f));
  ir::Value* w_copy = b.ConstF32("w_copy", {8}, std::vector<float>(8, 0.5f));
  const std::string first = LoweringKey(*FusedLeakyRelu(b, x1, w, 0.1));
  // Another layer of the same shape on the same constant: the same kernel.
  EXPECT_EQ(LoweringKey(*FusedLeakyRelu(b, x2, w, 0.1)), first);
  // An attribute, a shape or another constant object changes it.
  EXPECT_NE(LoweringKey(*FusedLeakyRelu(b, x2, w, 0.2)), first);
  ir::Value* w9 = b.ConstF32("w9", {9}, std::vector<float>(9, 0.5f));
  EXPECT_NE(LoweringKey(*FusedLeakyRelu(b, x3, w9, 0.1)), first);
  EXPECT_NE(LoweringKey(*FusedLeakyRelu(b, x2, w_copy, 0.1)), first);
}

}  // namespace
}  // namespace keel::codegen::testing
