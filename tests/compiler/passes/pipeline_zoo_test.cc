// tests/compiler/passes/pipeline_zoo_test.cc — every model of the zoo through the
// importer and the default pipeline: op histograms are sensible, Verify passes,
// and the compiled (fused) graph evaluated with the reference evaluator matches
// PyTorch's reference output (relative L2 < 1e-4, as shared/models/README.md says).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "compiler/frontend/onnx_importer.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"
#include "compiler/passes/pass_manager.h"

namespace keel::passes {
namespace {

std::vector<float> ReadFloats(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

std::map<std::string, int> Histogram(const ir::Graph& g) {
  std::map<std::string, int> h;
  for (const ir::Node* n : g.nodes()) h[n->op_type()]++;
  return h;
}

int CountBodyOps(const ir::Graph& g, const std::string& op) {
  int c = 0;
  for (const ir::Node* n : g.nodes()) {
    if (n->op_type() == op) ++c;
    if (n->body()) c += CountBodyOps(*n->body(), op);
  }
  return c;
}

class ZooPipelineTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ZooPipelineTest, CompilesAndMatchesReference) {
  const std::string base = std::string(KEEL_SHARED_DIR) + "/models/" + GetParam();
  if (!std::filesystem::exists(base + ".onnx")) GTEST_SKIP() << "model zoo not found at " << base << ".onnx";
  auto g = frontend::ImportOnnx(base + ".onnx", {});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ir::Graph& graph = **g;
  const size_t imported_nodes = graph.num_nodes();
  Status s = RunDefaultPipeline(graph, {});
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(graph.Verify(true).ok());

  auto h = Histogram(graph);
  // Everything computing is fused; only views may remain outside.
  for (const auto& [op, count] : h) {
    EXPECT_TRUE(op == "keel.Fused" || op == "keel.Reshape") << GetParam() << ": unfused " << op << " x" << count;
  }
  EXPECT_GT(h["keel.Fused"], 0);
  EXPECT_LT(graph.num_nodes(), imported_nodes);
  EXPECT_EQ(CountBodyOps(graph, "BatchNormalization"), 0);
  EXPECT_EQ(CountBodyOps(graph, "Shape"), 0);  // all shape computations folded
  EXPECT_EQ(CountBodyOps(graph, "Identity"), 0);

  // Numerics: the compiled graph against PyTorch.
  std::vector<float> input = ReadFloats(base + ".input.bin");
  std::vector<float> expected = ReadFloats(base + ".output.bin");
  const ir::TensorType& in_type = graph.inputs()[0]->type();
  ASSERT_EQ(static_cast<int64_t>(input.size()), in_type.NumElements());
  auto out = ops::EvaluateGraph(graph, {ops::MakeTensorF32(in_type.shape, input)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const ir::TensorData& y = *(*out)[0];
  ASSERT_EQ(static_cast<size_t>(y.type.NumElements()), expected.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    double d = static_cast<double>(y.data<float>()[i]) - expected[i];
    num += d * d;
    den += static_cast<double>(expected[i]) * expected[i];
  }
  double rel = std::sqrt(num / den);
  EXPECT_LT(rel, 1e-4) << GetParam() << ": relative L2 error " << rel;
  std::printf("%s: %zu imported nodes -> %zu (fused %d), rel L2 %.3g\n", GetParam(), imported_nodes,
              graph.num_nodes(), h["keel.Fused"], rel);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooPipelineTest,
                         ::testing::Values("squeezenet1_1", "tiny_bert", "mobilenet_v2", "resnet18"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace keel::passes
