// tests/compiler/passes/winograd_test.cc — the Winograd pass and form
// (compiler/passes/winograd.h, compiler/ops/winograd.h): only 3x3 stride-1
// ungrouped convolutions with constant f32 weights are rewritten, the rewritten
// graph evaluates to the same values (the reference takes the transformed
// weight back), a shared weight is transformed once, the weight round trip is
// exact up to rounding, and malformed forms are refused with a clear error.
#include "compiler/passes/winograd.h"

#include <algorithm>
#include <cmath>

#include "compiler/ir/printer.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"
#include "compiler/ops/winograd.h"
#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

std::function<Status(ir::Graph&)> Transform(WinogradPredicate tile) {
  return [tile](ir::Graph& g) -> Status {
    KEEL_RETURN_IF_ERROR(InferShapes(g));
    WinogradPass pass(tile);
    KEEL_RETURN_IF_ERROR(pass.Run(g));
    return g.Verify(true);
  };
}

ir::Node* Conv(ir::Graph& g, const std::string& name, ir::Value* x, ir::Value* w, int64_t cout, int64_t k,
               int64_t stride, int64_t group, uint32_t seed) {
  ir::Node* n = g.AddNode("Conv", name, {x, w, Const(g, name + ".b", {cout}, seed)}, 1);
  n->attrs().Set("pads", std::vector<int64_t>(4, k / 2));
  n->attrs().Set("strides", std::vector<int64_t>{stride, stride});
  n->attrs().Set("group", group);
  return n;
}

// Candidates c1, c2 (sharing one weight) and c5 (padding 2 asymmetric); not
// candidates: a stride-2 3x3, a 1x1, a grouped 3x3.
std::unique_ptr<ir::Graph> Net() {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32({2, 6, 11, 9}));
  ir::Value* shared = Const(*g, "w_shared", {6, 6, 3, 3}, 1);
  ir::Node* c1 = Conv(*g, "c1", x, shared, 6, 3, 1, 1, 2);
  ir::Node* r1 = g->AddNode("Relu", "r1", {c1->output(0)}, 1);
  ir::Node* c2 = Conv(*g, "c2", r1->output(0), shared, 6, 3, 1, 1, 3);
  ir::Node* c3 = Conv(*g, "c3", c2->output(0), Const(*g, "w3", {6, 6, 3, 3}, 4), 6, 3, 2, 1, 5);
  ir::Node* c4 = Conv(*g, "c4", c3->output(0), Const(*g, "w4", {8, 6, 1, 1}, 6), 8, 1, 1, 1, 7);
  ir::Node* c5 = Conv(*g, "c5", c4->output(0), Const(*g, "w5", {8, 4, 3, 3}, 8), 8, 3, 1, 2, 9);
  ir::Node* c6 = Conv(*g, "c6", c5->output(0), Const(*g, "w6", {5, 8, 3, 3}, 10), 5, 3, 1, 1, 11);
  c6->attrs().Set("pads", std::vector<int64_t>{2, 0, 1, 2});
  c6->output(0)->set_name("y");
  g->AddOutput(c6->output(0));
  return g;
}

int CountWinograd(const ir::Graph& g, int64_t m) {
  int c = 0;
  for (const ir::Node* n : g.nodes()) c += ops::WinogradTile(*n) == m ? 1 : 0;
  return c;
}

TEST(WinogradPassTest, SameValuesOnlyCandidatesRewritten) {
  for (int64_t m : {2, 4}) {
    const std::vector<ir::TensorDataPtr> in = {Random({2, 6, 11, 9}, 21)};
    ir::Graph* g = nullptr;
    std::unique_ptr<ir::Graph> keep;
    // The weight comes back exact up to f32 rounding of U: differences relative to the output's size.
    auto ref = Net();
    ASSERT_TRUE(InferShapes(*ref).ok());
    auto want = ops::EvaluateGraph(*ref, in);
    ASSERT_TRUE(want.ok());
    double scale = 0;
    for (double v : ops::TensorToDoubles(*(*want)[0])) scale = std::max(scale, std::abs(v));
    ASSERT_GT(scale, 0.0);
    EXPECT_LT(CompareAfter(Net, Transform([m](const ir::Node&) { return m; }), in, &g, &keep) / scale, 1e-6) << m;
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(CountWinograd(*g, m), 3);  // c1, c2, c6
    const ir::Value* u1 = nullptr;
    for (const ir::Node* n : g->nodes()) {
      if (ops::WinogradTile(*n) == 0) continue;
      EXPECT_EQ(n->input(1)->type().shape[0], (m + 2) * (m + 2));
      if (n->name() == "c1") u1 = n->input(1);
      if (n->name() == "c2") { EXPECT_EQ(n->input(1), u1) << "a shared weight is transformed once"; }
    }
  }
}

TEST(WinogradPassTest, NoPredicateOrZeroNoChange) {
  auto g = Net();
  ASSERT_TRUE(Transform([](const ir::Node&) { return int64_t{0}; })(*g).ok());
  auto h = Net();
  ASSERT_TRUE(Transform({})(*h).ok());
  EXPECT_EQ(CountWinograd(*g, 4) + CountWinograd(*g, 2), 0);
  EXPECT_EQ(ir::PrintGraph(*g), ir::PrintGraph(*h));
}

TEST(WinogradFormTest, WeightRoundTrip) {
  const ir::TensorDataPtr w = Random({5, 3, 3, 3}, 31);
  for (int64_t m : {2, 4}) {
    auto u = ops::WinogradWeight(*w, m);
    ASSERT_TRUE(u.ok()) << u.status().ToString();
    EXPECT_EQ((*u)->type.shape, (std::vector<int64_t>{(m + 2) * (m + 2), 5, 3}));
    auto back = ops::WeightFromWinograd(**u, m);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ((*back)->type.shape, w->type.shape);
    EXPECT_LT(MaxAbsDiff(*w, **back), 1e-5);
  }
  EXPECT_FALSE(ops::WinogradWeight(*w, 3).ok());
  EXPECT_FALSE(ops::WinogradWeight(*Random({5, 3, 5, 5}, 32), 4).ok());
}

TEST(WinogradFormTest, MalformedFormIsRefused) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({1, 3, 8, 8}));
  ir::Node* n = g.AddNode("Conv", "c", {x, Const(g, "u", {16, 4, 3}, 41)}, 1);
  n->attrs().Set(ops::kWinogradAttr, int64_t{4});  // F(4,3) needs 36 planes
  Status s = ops::CanonicalizeNode(*n);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("[36, Co, Ci]"), std::string::npos) << s.ToString();
  n->attrs().Set(ops::kWinogradAttr, int64_t{3});
  s = ops::CanonicalizeNode(*n);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("must be 2 or 4"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace keel::passes
