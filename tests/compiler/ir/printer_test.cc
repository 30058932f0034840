// tests/compiler/ir/printer_test.cc — the text dump format of printer.h.
#include "compiler/ir/printer.h"

#include <gtest/gtest.h>

namespace keel::ir {
namespace {

TEST(PrinterTest, PrintsNodesConstantsAndAttributes) {
  Graph g;
  g.set_name("tiny");
  Value* x = g.AddInput("input", TensorType{DType::kF32, {1, 3, 8, 8}});
  auto w = std::make_shared<TensorData>();
  w->type = TensorType{DType::kF32, {4, 3, 3, 3}};
  w->bytes.resize(static_cast<size_t>(w->type.ByteSize()));
  Value* wv = g.AddConstant("w0", w);
  Node* conv = g.AddNode("Conv", "/conv1/Conv", {x, wv}, 1, {"y"});
  conv->attrs().Set("strides", std::vector<int64_t>{2, 2});
  conv->attrs().Set("group", int64_t{1});
  conv->output(0)->set_type(TensorType{DType::kF32, {1, 4, 3, 3}});
  g.AddOutput(conv->output(0));
  std::string text = PrintGraph(g);
  EXPECT_NE(text.find("graph tiny(%input: f32[1,3,8,8]) -> (%y) {"), std::string::npos) << text;
  EXPECT_NE(text.find("const %w0: f32[4,3,3,3]  # 432 bytes"), std::string::npos) << text;
  EXPECT_NE(text.find("%y: f32[1,4,3,3] = Conv(%input, %w0) {group=1, strides=[2,2]}  # /conv1/Conv"),
            std::string::npos)
      << text;
  // Deterministic: printing twice gives the same text.
  EXPECT_EQ(text, PrintGraph(g));
}

}  // namespace
}  // namespace keel::ir
