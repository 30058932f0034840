// Pools (MaxPool, AveragePool with/without count_include_pad and ceil_mode,
// GlobalAveragePool) and row reductions (Softmax, LayerNormalization, ReduceMean).
#include <gtest/gtest.h>

#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

using ir::Attributes;

Attributes Window(std::vector<int64_t> kernel, int64_t stride, int64_t pad, int64_t ceil_mode) {
  Attributes a;
  a.Set("kernel_shape", kernel);
  a.Set("strides", std::vector<int64_t>{stride, stride});
  a.Set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  a.Set("ceil_mode", ceil_mode);
  return a;
}

TEST(Pool, MaxPool) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 5, 13, 12});
  for (int64_t ceil : {0, 1}) {
    ir::Node* n = b.Op("MaxPool", {x}, Window({3, 3}, 2, 1, ceil));
    ASSERT_NE(n, nullptr);
    CheckNodeAgainstReference(*n, 41);
  }
}

TEST(Pool, AveragePool) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 3, 11, 10});
  for (int64_t cip : {0, 1}) {
    Attributes a = Window({3, 2}, 2, 1, 1);
    a.Set("count_include_pad", cip);
    ir::Node* n = b.Op("AveragePool", {x}, a);
    ASSERT_NE(n, nullptr);
    CheckNodeAgainstReference(*n, 42);
  }
}

// Wide rows: interior columns run as 16-lane vector chunks (overlapping last chunk).
TEST(Pool, WideRowsVectorChunks) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 4, 30, 70});
  for (int64_t ceil : {0, 1}) {
    ir::Node* n = b.Op("MaxPool", {x}, Window({3, 3}, 2, 1, ceil));
    ASSERT_NE(n, nullptr);
    CheckNodeAgainstReference(*n, 43);
  }
  for (int64_t cip : {0, 1}) {
    Attributes a = Window({3, 3}, 1, 1, 0);
    a.Set("count_include_pad", cip);
    ir::Node* n = b.Op("AveragePool", {x}, a);
    ASSERT_NE(n, nullptr);
    CheckNodeAgainstReference(*n, 44);
  }
}

TEST(Pool, GlobalAveragePool) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 37, 7, 7});
  ir::Node* n = b.Op("GlobalAveragePool", {x});
  ASSERT_NE(n, nullptr);
  CheckNodeAgainstReference(*n, 43);
}

TEST(Reduce, SoftmaxLastAndMiddleAxis) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 3, 17});
  for (int64_t axis : {-1, 1}) {
    Attributes a;
    a.Set("axis", axis);
    ir::Node* n = b.Op("Softmax", {x}, a);
    ASSERT_NE(n, nullptr);
    CheckNodeAgainstReference(*n, 44);
  }
}

TEST(Reduce, LayerNormalization) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 5, 33});
  ir::Value* scale = b.Input("scale", {33});
  ir::Value* bias = b.Input("bias", {33});
  Attributes a;
  a.Set("axis", int64_t{-1});
  a.Set("epsilon", 1e-5);
  ir::Node* n = b.Op("LayerNormalization", {x, scale, bias}, a);
  ASSERT_NE(n, nullptr);
  CheckNodeAgainstReference(*n, 45);
}

TEST(Reduce, ReduceMeanKeepAndDropDims) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {3, 4, 5, 6});
  for (int64_t keep : {0, 1}) {
    Attributes a;
    a.Set("axes", std::vector<int64_t>{1, 3});
    a.Set("keepdims", keep);
    ir::Node* n = b.Op("ReduceMean", {x}, a);
    ASSERT_NE(n, nullptr);
    CheckNodeAgainstReference(*n, 46);
  }
}

}  // namespace
}  // namespace keel::codegen::testing
