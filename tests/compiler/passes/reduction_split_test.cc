// tests/compiler/passes/reduction_split_test.cc — the reduction-split pass
// (compiler/passes/reduction_split.h): every splittable Reduce op gives the
// same values after the split (reference evaluator) with the cut between
// whole axes, inside an axis (the keel.Reshape pair), with keepdims 0 and 1
// and non-adjacent axes; what must stay does stay: an axis whose only divisor
// would leave parts shorter than kMinPartLength, and a target that asks for
// no split.
#include "compiler/passes/reduction_split.h"

#include <algorithm>

#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT
using V = std::vector<int64_t>;

struct Case {
  const char* name;
  const char* op;
  V shape, axes;
  int64_t keepdims;
  int reshapes;   // keel.Reshape nodes after the pass (0 or 2)
  bool splits = true;
  bool abs = false;  // the input through Abs first (LogSum needs positive sums)
};

std::unique_ptr<ir::Graph> Build(const Case& c) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32(c.shape));
  if (c.abs) x = Op(*g, "Abs", "abs", {x});
  ir::Attributes a;
  a.Set("axes", c.axes);
  a.Set("keepdims", c.keepdims);
  g->AddOutput(Op(*g, c.op, "reduce", {x}, a));
  return g;
}

// At least 64 results: a reduction with fewer over 256 or more elements is split.
int64_t Parts(int64_t rows, int64_t length) { return rows < 64 && length >= 256 ? (64 + rows - 1) / rows : 0; }

TEST(ReductionSplit, SameValuesWhereSplitAndTheRestStays) {
  const std::vector<Case> cases = {
      {"mean_all_between_axes", "ReduceMean", {3, 5, 7, 64}, {0, 1, 2, 3}, 0, 0},
      {"sum_one_axis_split", "ReduceSum", {2, 4096, 3}, {1}, 1, 2},
      {"sum_one_axis_split_dropped", "ReduceSum", {2, 4096, 3}, {1}, 0, 2},
      {"max_apart_axes", "ReduceMax", {2, 30, 5, 64}, {1, 3}, 1, 2},
      {"min_apart_axes_dropped", "ReduceMin", {2, 30, 5, 64}, {1, 3}, 0, 2},
      {"l1", "ReduceL1", {1, 96, 70}, {1, 2}, 1, 2},
      {"l2", "ReduceL2", {1, 96, 70}, {1, 2}, 0, 2},
      {"sum_square_as_norms", "ReduceSumSquare", {4, 3, 1000}, {1, 2}, 1, 2},
      {"log_sum_of_sums", "ReduceLogSum", {1, 512, 9}, {1, 2}, 1, 2, true, true},
      {"log_sum_exp", "ReduceLogSumExp", {2, 16, 300}, {1, 2}, 0, 2},
      {"prod", "ReduceProd", {1, 128, 4}, {1, 2}, 1, 2},
      {"prime_axis_stays", "ReduceMean", {1, 4099, 1}, {1}, 1, 0, false},
      {"many_results_stay", "ReduceSum", {128, 300}, {1}, 1, 0, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ir::Graph* g = nullptr;
    std::unique_ptr<ir::Graph> keep;
    auto split = [](ir::Graph& graph) -> Status {
      KEEL_RETURN_IF_ERROR(InferShapes(graph));
      ReductionSplitPass pass(Parts);
      KEEL_RETURN_IF_ERROR(pass.Run(graph));
      return graph.Verify(true);
    };
    // Values near 1 for the product (thousands of factors in [-1, 1] underflow to 0 alike).
    int64_t n = 1;
    for (int64_t d : c.shape) n *= d;
    std::vector<float> values = RandomValues(n, 5);
    if (std::string(c.op) == "ReduceProd") {
      for (float& v : values) v = 1.f + 0.01f * v;
    }
    const std::vector<ir::TensorDataPtr> in = {ops::MakeTensorF32(c.shape, values)};
    // f32 partials: a few units in the last place of results up to about 1,000 (sums of squares).
    const double diff = CompareAfter([&] { return Build(c); }, split, in, &g, &keep);
    EXPECT_LT(diff, 2e-4);
    ASSERT_NE(g, nullptr);
    const auto h = Histogram(*g);
    const std::vector<ir::Node*> nodes = g->nodes();
    const auto reduces = std::count_if(nodes.begin(), nodes.end(),
                                       [](const ir::Node* n) { return n->op_type().rfind("Reduce", 0) == 0; });
    EXPECT_EQ(reduces, c.splits ? 2 : 1);
    EXPECT_EQ(h.count("keel.Reshape") ? h.at("keel.Reshape") : 0, c.reshapes);
  }
}

TEST(ReductionSplit, TargetWithoutARuleChangesNothing) {
  auto g = Build({"mean", "ReduceMean", {1, 8192}, {1}, 0, 0});
  ASSERT_TRUE(InferShapes(*g).ok());
  ReductionSplitPass pass;
  ASSERT_TRUE(pass.Run(*g).ok());
  EXPECT_EQ(g->nodes().size(), 1u);
}

}  // namespace
}  // namespace keel::passes
