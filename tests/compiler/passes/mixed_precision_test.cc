// tests/compiler/passes/mixed_precision_test.cc — the mixed-precision pass on
// small graphs: casts at the model's edges, f32 operands for keep-f32 ops,
// constants converted once (an f32 copy kept only where an f32 op reads it),
// integer data untouched, the values it computes, idempotence and determinism.
#include "compiler/passes/mixed_precision.h"

#include "compiler/ir/printer.h"
#include "compiler/ops/registry.h"
#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

MixedPrecisionOptions Options(Precision p, bool half_io = false) {
  MixedPrecisionOptions o;
  o.precision = p;
  o.half_io = half_io;
  return o;
}

// Shape inference, then the pass; the report through `report` when given.
Status Typed(ir::Graph& g, const MixedPrecisionOptions& options, MixedPrecisionReport* report = nullptr) {
  KEEL_RETURN_IF_ERROR(InferShapes(g));
  KEEL_ASSIGN_OR_RETURN(MixedPrecisionReport r, ApplyMixedPrecision(g, options));
  if (report) *report = r;
  return Status::Ok();
}

// x -> Conv(w, b) -> Relu -> Softmax -> y
std::unique_ptr<ir::Graph> ConvReluSoftmax() {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32({1, 3, 6, 6}));
  ir::Node* conv = g->AddNode("Conv", "conv", {x, Const(*g, "w", {4, 3, 3, 3}, 1), Const(*g, "b", {4}, 2)}, 1);
  ir::Node* relu = g->AddNode("Relu", "relu", {conv->output(0)}, 1);
  ir::Node* sm = g->AddNode("Softmax", "sm", {relu->output(0)}, 1, {"y"});
  g->AddOutput(sm->output(0));
  return g;
}

ir::Node* Only(const ir::Graph& g, const std::string& op) {
  ir::Node* found = nullptr;
  for (ir::Node* n : g.nodes()) {
    if (n->op_type() != op) continue;
    EXPECT_EQ(found, nullptr) << "more than one " << op;
    found = n;
  }
  EXPECT_NE(found, nullptr) << "no " << op;
  return found;
}

int CountConstants(const ir::Graph& g, ir::DType dtype) {
  int n = 0;
  for (const ir::Value* v : g.values()) n += v->is_constant() && v->type().dtype == dtype && !v->uses().empty();
  return n;
}

TEST(MixedPrecisionTest, HalfConvKeepsSoftmaxInF32WithCastsBetween) {
  auto g = ConvReluSoftmax();
  MixedPrecisionReport report;
  ASSERT_TRUE(Typed(*g, Options(Precision::kFp16), &report).ok());
  ASSERT_TRUE(g->Verify(true).ok());

  ir::Node* conv = Only(*g, "Conv");
  // The model input stays f32; the conv reads a cast of it.
  EXPECT_EQ(g->inputs()[0]->type().dtype, ir::DType::kF32);
  ASSERT_NE(conv->input(0)->producer(), nullptr);
  EXPECT_EQ(conv->input(0)->producer()->op_type(), "Cast");
  EXPECT_EQ(conv->input(0)->type().dtype, ir::DType::kF16);
  // Weights and bias converted at compile time; no f32 copy left.
  EXPECT_TRUE(conv->input(1)->is_constant());
  EXPECT_EQ(conv->input(1)->type().dtype, ir::DType::kF16);
  EXPECT_EQ(conv->input(2)->type().dtype, ir::DType::kF16);
  EXPECT_EQ(CountConstants(*g, ir::DType::kF32), 0);
  EXPECT_EQ(Only(*g, "Relu")->output(0)->type().dtype, ir::DType::kF16);
  // Softmax reads and writes f32; it is the model's output, with its name.
  ir::Node* sm = Only(*g, "Softmax");
  EXPECT_EQ(sm->input(0)->type().dtype, ir::DType::kF32);
  EXPECT_EQ(sm->input(0)->producer()->op_type(), "Cast");
  EXPECT_EQ(sm->output(0)->type().dtype, ir::DType::kF32);
  EXPECT_EQ(g->outputs()[0], sm->output(0));
  EXPECT_EQ(g->outputs()[0]->name(), "y");

  EXPECT_EQ(report.casts, 2);
  EXPECT_EQ(report.half_constants, 2);
  EXPECT_EQ(report.half_constant_bytes, (4 * 3 * 3 * 3 + 4) * 2);
  ASSERT_EQ(report.kept_f32.count("Softmax"), 1u);
  EXPECT_EQ(report.kept_f32.at("Softmax").nodes, 1);
  EXPECT_FALSE(report.kept_f32.at("Softmax").reason.empty());
  EXPECT_EQ(report.kept_f32.count("Conv"), 0u);
}

TEST(MixedPrecisionTest, HalfResultsStayCloseToF32) {
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    const double diff = CompareAfter(ConvReluSoftmax, [p](ir::Graph& g) { return Typed(g, Options(p)); },
                                     {Random({1, 3, 6, 6}, 7)});
    EXPECT_LT(diff, p == Precision::kFp16 ? 2e-3 : 2e-2) << PrecisionName(p);
    EXPECT_GT(diff, 0.0) << PrecisionName(p) << ": the half graph computes the same bits as f32?";
  }
}

// x -> MatMul(W) -> Add(b) -> y : the half result is cast back under the output's name.
std::unique_ptr<ir::Graph> Linear() {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32({2, 8}));
  ir::Node* mm = g->AddNode("MatMul", "mm", {x, Const(*g, "W", {8, 5}, 3)}, 1);
  ir::Node* add = g->AddNode("Add", "add", {mm->output(0), Const(*g, "bias", {5}, 4)}, 1, {"y"});
  g->AddOutput(add->output(0));
  return g;
}

TEST(MixedPrecisionTest, ModelOutputsAreCastBackToF32UnderTheirNames) {
  auto g = Linear();
  ASSERT_TRUE(Typed(*g, Options(Precision::kBf16)).ok());
  ir::Value* y = g->outputs()[0];
  EXPECT_EQ(y->name(), "y");
  EXPECT_EQ(y->type().dtype, ir::DType::kF32);
  ASSERT_NE(y->producer(), nullptr);
  EXPECT_EQ(y->producer()->op_type(), "Cast");
  EXPECT_EQ(y->producer()->input(0)->type().dtype, ir::DType::kBF16);
  EXPECT_EQ(Only(*g, "MatMul")->input(1)->type().dtype, ir::DType::kBF16);
}

TEST(MixedPrecisionTest, HalfIoMakesInputsAndOutputsHalfWithoutCasts) {
  auto g = Linear();
  MixedPrecisionReport report;
  ASSERT_TRUE(Typed(*g, Options(Precision::kFp16, /*half_io=*/true), &report).ok());
  EXPECT_EQ(g->inputs()[0]->type().dtype, ir::DType::kF16);
  EXPECT_EQ(g->outputs()[0]->type().dtype, ir::DType::kF16);
  EXPECT_EQ(g->outputs()[0]->name(), "y");
  EXPECT_EQ(Histogram(*g).count("Cast"), 0u);
  EXPECT_EQ(report.casts, 0);

  // An output of a keep-f32 op is cast to half, under the output's name.
  auto s = ConvReluSoftmax();
  ASSERT_TRUE(Typed(*s, Options(Precision::kFp16, /*half_io=*/true), &report).ok());
  EXPECT_EQ(s->inputs()[0]->type().dtype, ir::DType::kF16);
  EXPECT_EQ(Only(*s, "Conv")->input(0), s->inputs()[0]);
  ir::Value* y = s->outputs()[0];
  EXPECT_EQ(y->type().dtype, ir::DType::kF16);
  EXPECT_EQ(y->name(), "y");
  ASSERT_NE(y->producer(), nullptr);
  EXPECT_EQ(y->producer()->op_type(), "Cast");
  EXPECT_EQ(y->producer()->input(0), Only(*s, "Softmax")->output(0));
  EXPECT_EQ(report.casts, 2);  // relu -> f32 for Softmax, Softmax -> f16 for the caller
}

TEST(MixedPrecisionTest, ConstantReadByHalfAndF32OpsKeepsBothCopies) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32({4, 6}));
  ir::Value* c = Const(*g, "c", {4, 6}, 9);
  ir::Node* mul = g->AddNode("Mul", "mul", {x, c}, 1, {"prod"});
  ir::Node* pow = g->AddNode("Pow", "pow", {x, c}, 1, {"power"});
  g->AddOutput(mul->output(0));
  g->AddOutput(pow->output(0));
  MixedPrecisionReport report;
  ASSERT_TRUE(Typed(*g, Options(Precision::kFp16), &report).ok());
  EXPECT_EQ(CountConstants(*g, ir::DType::kF16), 1);
  EXPECT_EQ(CountConstants(*g, ir::DType::kF32), 1);
  EXPECT_EQ(Only(*g, "Mul")->input(1)->type().dtype, ir::DType::kF16);
  EXPECT_EQ(Only(*g, "Pow")->input(1)->type().dtype, ir::DType::kF32);
  EXPECT_EQ(Only(*g, "Pow")->input(0), g->inputs()[0]);
  EXPECT_EQ(report.half_constants, 1);
  EXPECT_EQ(report.f32_constants, 1);
  EXPECT_EQ(report.kept_f32.count("Pow"), 1u);
}

TEST(MixedPrecisionTest, IntegerSubgraphsAreUntouched) {
  // ids (i64) -> Add(1) -> Gather(table) -> y ; the integer Add is neither converted nor reported.
  auto g = std::make_unique<ir::Graph>();
  ir::Value* ids = g->AddInput("ids", ir::TensorType{ir::DType::kI64, {3}});
  ir::Node* inc = g->AddNode("Add", "inc", {ids, g->AddConstant("one", ops::MakeTensorI64({1}, {1}))}, 1);
  ir::Node* gather = g->AddNode("Gather", "gather", {Const(*g, "table", {10, 4}, 5), inc->output(0)}, 1, {"y"});
  g->AddOutput(gather->output(0));
  MixedPrecisionReport report;
  ASSERT_TRUE(Typed(*g, Options(Precision::kFp16), &report).ok());
  ir::Node* add = Only(*g, "Add");
  EXPECT_EQ(add->input(0), g->inputs()[0]);
  EXPECT_EQ(add->output(0)->type().dtype, ir::DType::kI64);
  EXPECT_EQ(add->input(1)->type().dtype, ir::DType::kI64);
  EXPECT_EQ(Only(*g, "Gather")->input(0)->type().dtype, ir::DType::kF16);
  EXPECT_EQ(Only(*g, "Gather")->input(1), add->output(0));
  EXPECT_TRUE(report.kept_f32.empty());
  EXPECT_EQ(g->outputs()[0]->type().dtype, ir::DType::kF32);
}

TEST(MixedPrecisionTest, ExpKeepsF32ButNeighboursRunInHalf) {
  // x -> Mul(2) -> Exp -> Mul(3) -> y: Exp reads the first Mul's half result cast back.
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32({8}));
  ir::Node* m1 = g->AddNode("Mul", "m1", {x, g->AddConstant("two", ops::MakeTensorF32({1}, {2.0f}))}, 1);
  ir::Node* e = g->AddNode("Exp", "e", {m1->output(0)}, 1);
  ir::Node* m2 = g->AddNode("Mul", "m2", {e->output(0), g->AddConstant("three", ops::MakeTensorF32({1}, {3.0f}))}, 1);
  g->AddOutput(m2->output(0));
  MixedPrecisionReport report;
  ASSERT_TRUE(Typed(*g, Options(Precision::kFp16), &report).ok());
  EXPECT_EQ(m1->output(0)->type().dtype, ir::DType::kF16);
  EXPECT_EQ(e->input(0)->type().dtype, ir::DType::kF32);
  EXPECT_EQ(e->output(0)->type().dtype, ir::DType::kF32);
  EXPECT_EQ(m2->output(0)->type().dtype, ir::DType::kF16);
  EXPECT_EQ(report.kept_f32.count("Exp"), 1u);
  EXPECT_EQ(report.casts, 4);  // x in, m1 out -> f32, e out -> f16, m2 out -> f32
}

// Two pre-norm blocks: r1 = x + Gemm(LN(x), W1, b1); r2 = r1 + (MatMul(LN(r1), W2) + b2) -> LN -> y.
std::unique_ptr<ir::Graph> PreNormBlocks() {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32({5, 8}));
  auto ln = [&](ir::Value* v, const std::string& name) {
    ir::Node* n = g->AddNode("LayerNormalization", name, {v, Const(*g, name + ".s", {8}, 21), Const(*g, name + ".b", {8}, 22)}, 1);
    n->attrs().Set("axis", int64_t{-1});
    return n->output(0);
  };
  ir::Node* gemm = g->AddNode("Gemm", "gemm", {ln(x, "ln1"), Const(*g, "W1", {8, 8}, 23), Const(*g, "b1", {8}, 24)}, 1);
  ir::Node* r1 = g->AddNode("Add", "r1", {x, gemm->output(0)}, 1);
  ir::Node* mm = g->AddNode("MatMul", "mm", {ln(r1->output(0), "ln2"), Const(*g, "W2", {8, 8}, 25)}, 1);
  ir::Node* bias = g->AddNode("Add", "b2", {mm->output(0), Const(*g, "b2c", {8}, 26)}, 1);
  ir::Node* r2 = g->AddNode("Add", "r2", {r1->output(0), bias->output(0)}, 1);
  ir::Node* out = g->AddNode("LayerNormalization", "ln3", {r2->output(0), Const(*g, "s3", {8}, 27), Const(*g, "b3", {8}, 28)}, 1, {"y"});
  out->attrs().Set("axis", int64_t{-1});
  g->AddOutput(out->output(0));
  return g;
}

ir::Node* Named(const ir::Graph& g, const std::string& name) {
  for (ir::Node* n : g.nodes())
    if (n->name() == name) return n;
  ADD_FAILURE() << "no node " << name;
  return nullptr;
}

// bf16 keeps the residual stream f32: r1 (read by a LayerNorm and by r2) stays
// f32, and so does the bias of the Gemm it adds (split off the Gemm, f32
// constant). r2 feeds only the last LayerNorm: half, as is b2 before it. f16
// keeps everything half.
TEST(MixedPrecisionTest, Bf16KeepsTheResidualStreamInF32) {
  auto g = PreNormBlocks();
  MixedPrecisionReport report;
  ASSERT_TRUE(Typed(*g, Options(Precision::kBf16), &report).ok());
  ASSERT_TRUE(g->Verify(true).ok());
  ir::Node* r1 = Named(*g, "r1");
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(r1->output(0)->type().dtype, ir::DType::kF32);
  EXPECT_EQ(r1->input(0), g->inputs()[0]);  // reads the model input itself
  ir::Node* split = Named(*g, "gemm.bias");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->output(0)->type().dtype, ir::DType::kF32);
  EXPECT_EQ(split->input(1)->type().dtype, ir::DType::kF32);  // the bias constant
  ir::Node* product = split->input(0)->producer();  // Cast of the Gemm's half product
  ASSERT_NE(product, nullptr);
  EXPECT_EQ(product->op_type(), "Cast");
  ir::Node* gemm = product->input(0)->producer();
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->op_type(), "Gemm");
  EXPECT_EQ(gemm->inputs().size(), 2u);
  EXPECT_EQ(gemm->output(0)->type().dtype, ir::DType::kBF16);
  EXPECT_EQ(Named(*g, "r2")->output(0)->type().dtype, ir::DType::kBF16);
  EXPECT_EQ(Named(*g, "b2")->output(0)->type().dtype, ir::DType::kBF16);
  EXPECT_EQ(Only(*g, "MatMul")->output(0)->type().dtype, ir::DType::kBF16);
  ASSERT_EQ(report.kept_f32.count("Add"), 1u);
  EXPECT_EQ(report.kept_f32.at("Add").nodes, 2);

  auto h = PreNormBlocks();
  ASSERT_TRUE(Typed(*h, Options(Precision::kFp16)).ok());
  EXPECT_EQ(Named(*h, "r1")->output(0)->type().dtype, ir::DType::kF16);
  EXPECT_EQ(Histogram(*h).at("Gemm"), 1);
  EXPECT_EQ(Only(*h, "Gemm")->inputs().size(), 3u);

  // The values: within bf16's tolerance.
  const double diff = CompareAfter(PreNormBlocks, [](ir::Graph& gr) { return Typed(gr, Options(Precision::kBf16)); },
                                   {Random({5, 8}, 29)});
  EXPECT_LT(diff, 2e-2);
  EXPECT_GT(diff, 0.0);
}

TEST(MixedPrecisionTest, SecondRunChangesNothingAndRunsAreDeterministic) {
  auto a = ConvReluSoftmax();
  auto b = ConvReluSoftmax();
  ASSERT_TRUE(Typed(*a, Options(Precision::kFp16)).ok());
  ASSERT_TRUE(Typed(*b, Options(Precision::kFp16)).ok());
  const std::string once = ir::PrintGraph(*a);
  EXPECT_EQ(once, ir::PrintGraph(*b));
  auto again = ApplyMixedPrecision(*a, Options(Precision::kFp16));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(ir::PrintGraph(*a), once);
  EXPECT_EQ(again->casts, 0);  // none added
  EXPECT_EQ(again->half_constants, 0);  // already half: the graph's own half data now
  EXPECT_EQ(Histogram(*a).at("Cast"), 2);
}

TEST(MixedPrecisionTest, Fp32AndTf32LeaveTheGraphAlone) {
  for (Precision p : {Precision::kFp32, Precision::kTf32}) {
    auto a = ConvReluSoftmax();
    auto b = ConvReluSoftmax();
    ASSERT_TRUE(InferShapes(*a).ok());
    ASSERT_TRUE(Typed(*b, Options(p)).ok());
    EXPECT_EQ(ir::PrintGraph(*a), ir::PrintGraph(*b)) << PrecisionName(p);
  }
}

TEST(MixedPrecisionTest, PrecisionNamesParseAndBadOnesAreErrors) {
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16}) {
    auto parsed = ParsePrecision(PrecisionName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  auto bad = ParsePrecision("fp8");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fp8"), std::string::npos);
  EXPECT_EQ(HalfDType(Precision::kBf16), ir::DType::kBF16);
  EXPECT_EQ(HalfDType(Precision::kTf32), ir::DType::kF32);
}

TEST(MixedPrecisionTest, RegistryPoliciesResolve) {
  const ops::Registry& r = ops::Registry::Get();
  ASSERT_TRUE(r.RegistrationError().ok()) << r.RegistrationError().ToString();
  std::string why;
  EXPECT_EQ(ops::ResolveHalfPolicy(*r.Find("MatMul"), &why), ops::HalfPolicy::kHalf);
  EXPECT_EQ(ops::ResolveHalfPolicy(*r.Find("Relu"), &why), ops::HalfPolicy::kHalf);
  EXPECT_EQ(ops::ResolveHalfPolicy(*r.Find("Transpose"), &why), ops::HalfPolicy::kHalf);
  EXPECT_EQ(ops::ResolveHalfPolicy(*r.Find("Cast"), &why), ops::HalfPolicy::kUntouched);
  EXPECT_EQ(ops::ResolveHalfPolicy(*r.Find("LayerNormalization"), &why), ops::HalfPolicy::kKeepF32);
  EXPECT_FALSE(why.empty());
  // Every op resolves to a concrete policy, and every f32 one says why.
  for (const ops::OpDef* def : r.All()) {
    const ops::HalfPolicy p = ops::ResolveHalfPolicy(*def, &why);
    EXPECT_NE(p, ops::HalfPolicy::kAuto) << def->name;
    if (p == ops::HalfPolicy::kKeepF32) {
      EXPECT_FALSE(why.empty()) << def->name;
    }
  }
}

}  // namespace
}  // namespace keel::passes
