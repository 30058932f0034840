// tests/compiler/passes/weight_packing_test.cc — the weight-packing pass and
// form (compiler/passes/weight_packing.h, compiler/ops/packed_weight.h): GEMM
// convolutions with constant weights (plain, grouped, Winograd form) are
// packed, depthwise ones and those with a computed weight are not; the
// rewritten graph evaluates to exactly the same values (a permutation of the
// weight, no arithmetic); a shared weight is packed once; the weight keeps its
// type; no predicate changes nothing. MatMul/Gemm with a constant B take the
// B-panel form the same way (a computed B does not; transB is cleared; shape
// inference on the rewritten graph gives the same types).
#include "compiler/passes/weight_packing.h"

#include "compiler/ir/printer.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"
#include "compiler/ops/winograd.h"
#include "compiler/passes/winograd.h"
#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

ir::Node* Conv(ir::Graph& g, const std::string& name, ir::Value* x, ir::Value* w, int64_t cout, int64_t k,
               int64_t group, uint32_t seed) {
  ir::Node* n = g.AddNode("Conv", name, {x, w, Const(g, name + ".b", {cout}, seed)}, 1);
  n->attrs().Set("pads", std::vector<int64_t>(4, k / 2));
  n->attrs().Set("group", group);
  return n;
}

// c1, c2 share a weight; c3 grouped (2 groups of 4 channels); c4 depthwise; c5
// reads a weight computed from an input (not a constant); c6 a 3x3 the
// Winograd pass may take.
std::unique_ptr<ir::Graph> Net() {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32({1, 8, 9, 7}));
  ir::Value* wdyn = g->AddInput("wdyn", F32({8, 8, 1, 1}));
  ir::Value* shared = Const(*g, "w_shared", {8, 8, 3, 3}, 1);
  ir::Node* c1 = Conv(*g, "c1", x, shared, 8, 3, 1, 2);
  ir::Node* c2 = Conv(*g, "c2", c1->output(0), shared, 8, 3, 1, 3);
  ir::Node* c3 = Conv(*g, "c3", c2->output(0), Const(*g, "w3", {8, 4, 3, 3}, 4), 8, 3, 2, 5);
  ir::Node* c4 = Conv(*g, "c4", c3->output(0), Const(*g, "w4", {8, 1, 3, 3}, 6), 8, 3, 8, 7);
  ir::Node* c5 = Conv(*g, "c5", c4->output(0), wdyn, 8, 1, 1, 8);
  ir::Node* c6 = Conv(*g, "c6", c5->output(0), Const(*g, "w6", {13, 8, 3, 3}, 9), 13, 3, 1, 10);
  c6->output(0)->set_name("y");
  g->AddOutput(c6->output(0));
  return g;
}

// Net, with c6 in Winograd F(4,3) form when `winograd` (the reference for the packing).
std::function<std::unique_ptr<ir::Graph>()> Build(bool winograd) {
  return [winograd]() {
    auto g = Net();
    if (winograd) {
      EXPECT_TRUE(InferShapes(*g).ok());
      WinogradPass w([](const ir::Node& n) { return n.name() == "c6" ? int64_t{4} : int64_t{0}; });
      EXPECT_TRUE(w.Run(*g).ok());
    }
    return g;
  };
}

std::function<Status(ir::Graph&)> Transform(WeightPackingPredicate rows) {
  return [rows](ir::Graph& g) -> Status {
    KEEL_RETURN_IF_ERROR(InferShapes(g));
    WeightPackingPass pass(rows);
    KEEL_RETURN_IF_ERROR(pass.Run(g));
    return g.Verify(true);
  };
}

TEST(WeightPackingPassTest, SameValuesOnlyGemmConstantsPacked) {
  for (bool winograd : {false, true}) {
    const std::vector<ir::TensorDataPtr> in = {Random({1, 8, 9, 7}, 21), Random({8, 8, 1, 1}, 22)};
    ir::Graph* g = nullptr;
    std::unique_ptr<ir::Graph> keep;
    auto rows = [](const ir::Node&, const ops::WeightMatrices& m) { return m.m > 6 ? int64_t{6} : int64_t{4}; };
    // The packing only moves weights: the reference evaluates the same arithmetic in the same order.
    EXPECT_EQ(CompareAfter(Build(winograd), Transform(rows), in, &g, &keep), 0.0) << winograd;
    ASSERT_NE(g, nullptr);
    const ir::Value* w1 = nullptr;
    int packed = 0;
    for (const ir::Node* n : g->nodes()) {
      const int64_t mr = ops::PackedWeightRows(*n);
      if (n->name() == "c4" || n->name() == "c5") {
        EXPECT_EQ(mr, 0) << n->name();
        continue;
      }
      ++packed;
      EXPECT_EQ(mr, n->name() == "c3" ? 4 : 6) << n->name();  // c3: 4 rows per group
      if (n->name() == "c1") {
        w1 = n->input(1);
        EXPECT_EQ(w1->type().shape, (std::vector<int64_t>{8, 8, 3, 3}));
      }
      if (n->name() == "c2") { EXPECT_EQ(n->input(1), w1) << "a shared weight is packed once"; }
      if (n->name() == "c6") { EXPECT_EQ(ops::WinogradTile(*n), winograd ? 4 : 0); }
    }
    EXPECT_EQ(packed, 4);
  }
}

TEST(WeightPackingPassTest, NoPredicateOrZeroNoChange) {
  auto g = Net();
  ASSERT_TRUE(Transform([](const ir::Node&, const ops::WeightMatrices&) { return int64_t{0}; })(*g).ok());
  auto h = Net();
  ASSERT_TRUE(Transform({})(*h).ok());
  for (const ir::Node* n : g->nodes()) EXPECT_EQ(ops::PackedWeightRows(*n), 0);
  EXPECT_EQ(ir::PrintGraph(*g), ir::PrintGraph(*h));
}

TEST(WeightPackingFormTest, WeightRoundTrip) {
  const ir::TensorDataPtr w = Random({13, 5, 3, 3}, 31);
  const ops::WeightMatrices mx{1, 13, 45};
  for (int64_t mr : {1, 4, 6, 8, 12, 13, 20}) {
    auto p = ops::PackWeight(*w, mx, mr);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ((*p)->type, w->type);
    auto back = ops::UnpackWeight(**p, mx, mr);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ((*back)->bytes, w->bytes) << mr;
  }
}

// m1 and m2 share B (12 x 12); g1 a Gemm with transB, alpha, beta and a bias; m3 reads a computed B.
std::unique_ptr<ir::Graph> ProductNet() {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32({2, 5, 12}));
  ir::Value* y = g->AddInput("y", F32({7, 12}));
  ir::Value* wdyn = g->AddInput("wdyn", F32({9, 4}));
  ir::Value* shared = Const(*g, "w_shared", {12, 12}, 41);
  ir::Node* m1 = g->AddNode("MatMul", "m1", {x, shared}, 1);
  ir::Node* m2 = g->AddNode("MatMul", "m2", {m1->output(0), shared}, 1);
  ir::Node* g1 = g->AddNode("Gemm", "g1", {y, Const(*g, "wt", {9, 12}, 42), Const(*g, "c", {9}, 43)}, 1);
  g1->attrs().Set("transB", int64_t{1});
  g1->attrs().Set("alpha", 0.5);
  g1->attrs().Set("beta", 2.0);
  ir::Node* m3 = g->AddNode("MatMul", "m3", {g1->output(0), wdyn}, 1);
  m2->output(0)->set_name("z");
  m3->output(0)->set_name("w");
  g->AddOutput(m2->output(0));
  g->AddOutput(m3->output(0));
  return g;
}

TEST(WeightPackingPassTest, ProductsTakeBPanels) {
  const std::vector<ir::TensorDataPtr> in = {Random({2, 5, 12}, 44), Random({7, 12}, 45), Random({9, 4}, 46)};
  auto columns = [](const ir::Node&, const ops::BMatrix&) { return int64_t{8}; };
  auto transform = [columns](ir::Graph& g) -> Status {
    KEEL_RETURN_IF_ERROR(InferShapes(g));
    WeightPackingPass pass({}, columns);
    KEEL_RETURN_IF_ERROR(pass.Run(g));
    return g.Verify(true);
  };
  ir::Graph* g = nullptr;
  std::unique_ptr<ir::Graph> keep;
  // Only B's layout changes: the reference computes the same products in the same order.
  EXPECT_EQ(CompareAfter(ProductNet, transform, in, &g, &keep), 0.0);
  ASSERT_NE(g, nullptr);
  const ir::Value* b1 = nullptr;
  for (const ir::Node* n : g->nodes()) {
    if (n->name() == "m3") {
      EXPECT_EQ(ops::PackedColumns(*n), 0) << "a computed B stays as it is";
      continue;
    }
    if (n->name() == "m1") b1 = n->input(1);
    if (n->name() == "m2") { EXPECT_EQ(n->input(1), b1) << "a shared B is packed once"; }
    const int64_t want_n = n->name() == "g1" ? 9 : 12;
    EXPECT_EQ(ops::PackedColumns(*n), want_n) << n->name();
    EXPECT_EQ(n->input(1)->type().shape, (std::vector<int64_t>{(want_n + 7) / 8, 12, 8})) << n->name();
    if (n->name() == "g1") { EXPECT_EQ(*n->attrs().GetInt("transB", 1), 0); }
  }
  // The form's type rule gives the types the plain products had.
  std::vector<ir::TensorType> before;
  for (const ir::Value* v : g->outputs()) before.push_back(v->type());
  ASSERT_TRUE(InferShapes(*g).ok());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(g->outputs()[i]->type(), before[i]);
  // Deterministic: the same graph twice.
  auto h = ProductNet();
  ASSERT_TRUE(transform(*h).ok());
  EXPECT_EQ(ir::PrintGraph(*g), ir::PrintGraph(*h));
}

TEST(WeightPackingPassTest, ProductsNotPackedWhenThePredicateSaysZero) {
  auto g = ProductNet();
  ASSERT_TRUE(InferShapes(*g).ok());
  WeightPackingPass pass([](const ir::Node&, const ops::WeightMatrices&) { return int64_t{6}; },
                         [](const ir::Node&, const ops::BMatrix&) { return int64_t{0}; });
  ASSERT_TRUE(pass.Run(*g).ok());
  for (const ir::Node* n : g->nodes()) EXPECT_EQ(ops::PackedColumns(*n), 0) << n->name();
}

}  // namespace
}  // namespace keel::passes
