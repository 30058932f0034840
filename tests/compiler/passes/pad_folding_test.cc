// tests/compiler/passes/pad_folding_test.cc — the pad-folding pass
// (compiler/passes/pad_folding.h): a zero Pad before a Conv or an AveragePool
// joins the consumer's pads with the same values (reference evaluator) on odd
// shapes — Inception's Pad + unpadded AveragePool (which then counts its
// padding), a Conv whose own pads the Pad completes to symmetric ones, a
// grouped strided Conv — and what must stay does stay: a non-zero value, a
// channel pad, an asymmetric sum, a pool that excludes its own padding, a
// MaxPool, a Pad with two users.
#include "compiler/passes/pad_folding.h"

#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

ir::Attributes Attrs(std::initializer_list<std::pair<const char*, ir::AttrValue>> kv) {
  ir::Attributes a;
  for (const auto& [k, v] : kv) a.Set(k, v);
  return a;
}
using V = std::vector<int64_t>;

// x [2,4,9,11] -> Pad(pads, value) -> consumer (`op` with `attrs`; Conv gets an
// [6,4/group,3,3] weight) -> output; a second user of the Pad when `shared`.
struct Case {
  const char* name;
  V pads;
  const char* op;
  ir::Attributes attrs;
  bool folds;
  float value = 0.f;
  bool shared = false;
};

std::unique_ptr<ir::Graph> Build(const Case& c) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32({2, 4, 9, 11}));
  std::vector<ir::Value*> pad_in = {x};
  if (c.value != 0.f) pad_in = {x, nullptr, Scalar(*g, "value", c.value)};
  ir::Value* p = Op(*g, "Pad", "pad", pad_in, Attrs({{"pads", c.pads}, {"mode", std::string("constant")}}));
  std::vector<ir::Value*> in = {p};
  if (std::string(c.op) == "Conv") {
    auto group = c.attrs.GetInt("group", 1);
    in.push_back(Const(*g, "w", {6, 4 / *group, 3, 3}, 7));
  }
  g->AddOutput(Op(*g, c.op, "consumer", in, c.attrs));
  if (c.shared) g->AddOutput(Op(*g, "Relu", "other", {p}));
  return g;
}

TEST(PadFolding, FoldsWhereTheValuesStayAndLeavesTheRest) {
  const std::vector<Case> cases = {
      {"inception_avgpool", {0, 0, 1, 1, 0, 0, 1, 1}, "AveragePool", Attrs({{"kernel_shape", V{3, 3}}}), true},
      {"avgpool_counting_own_pads", {0, 0, 0, 2, 0, 0, 0, 2}, "AveragePool",
       Attrs({{"kernel_shape", V{3, 5}}, {"pads", V{1, 0, 1, 0}}, {"count_include_pad", int64_t{1}}, {"strides", V{2, 2}}}),
       true},
      {"conv_completed_to_symmetric", {0, 0, 0, 1, 0, 0, 0, 1}, "Conv",
       Attrs({{"kernel_shape", V{3, 3}}, {"pads", V{1, 0, 1, 0}}}), true},
      {"grouped_strided_conv", {0, 0, 2, 1, 0, 0, 2, 1}, "Conv",
       Attrs({{"kernel_shape", V{3, 3}}, {"group", int64_t{2}}, {"strides", V{2, 3}}, {"dilations", V{1, 2}}}), true},
      {"nonzero_value", {0, 0, 1, 1, 0, 0, 1, 1}, "Conv", Attrs({{"kernel_shape", V{3, 3}}}), false, 0.5f},
      {"channel_pad", {0, 1, 1, 1, 0, 1, 1, 1}, "AveragePool", Attrs({{"kernel_shape", V{3, 3}}}), false},
      {"asymmetric_sum", {0, 0, 1, 0, 0, 0, 0, 0}, "Conv", Attrs({{"kernel_shape", V{3, 3}}}), false},
      {"pool_excluding_its_pads", {0, 0, 1, 1, 0, 0, 1, 1}, "AveragePool",
       Attrs({{"kernel_shape", V{3, 3}}, {"pads", V{1, 1, 1, 1}}}), false},
      {"maxpool", {0, 0, 1, 1, 0, 0, 1, 1}, "MaxPool", Attrs({{"kernel_shape", V{3, 3}}}), false},
      {"two_users", {0, 0, 1, 1, 0, 0, 1, 1}, "Conv", Attrs({{"kernel_shape", V{3, 3}}}), false, 0.f, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ir::Graph* g = nullptr;
    std::unique_ptr<ir::Graph> keep;
    auto fold = [](ir::Graph& graph) -> Status {
      KEEL_RETURN_IF_ERROR(InferShapes(graph));
      PadFoldingPass pass;
      KEEL_RETURN_IF_ERROR(pass.Run(graph));
      return graph.Verify(true);
    };
    EXPECT_LT(CompareAfter([&] { return Build(c); }, fold, {Random({2, 4, 9, 11}, 3)}, &g, &keep), 1e-5);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(Histogram(*g).count("Pad"), c.folds ? 0u : 1u);
  }
}

}  // namespace
}  // namespace keel::passes
