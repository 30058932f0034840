// The B-panel form of MatMul and Gemm (compiler/ops/packed_weight.h: a constant B in the
// GEMM's column panels, codegen/gemm_panels.h) against the reference evaluator: N, M and K not
// multiples of the tiles, K blocking, batched A folded into rows (a plain buffer and a fused
// transpose), Gemm with transA / transB / alpha / beta / bias, a fused bias + residual epilogue,
// both ISAs' tiles; the column layout itself and refusals.
#include <gtest/gtest.h>

#include <random>

#include "compiler/codegen/gemm_panels.h"
#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/packed_weight.h"
#include "compiler/ops/reference.h"
#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

const LowerOptions kAvx2 = LowerOptionsForCpuFeatures("+avx2,+fma");
const LowerOptions kAvx512 = LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f");

TEST(GemmPanels, ColumnLayoutAndRoundTrip) {
  // K = 2, N = 5, 2 columns per panel: panels {0, 1}, {2, 3}, {4, padding}. B(k, n) = 10k + n.
  std::vector<uint8_t> plain, transposed;
  for (int k = 0; k < 2; ++k)
    for (int n = 0; n < 5; ++n) plain.push_back(static_cast<uint8_t>(10 * k + n));
  for (int n = 0; n < 5; ++n)
    for (int k = 0; k < 2; ++k) transposed.push_back(static_cast<uint8_t>(10 * k + n));
  const std::vector<uint8_t> want = {0, 1, 10, 11, 2, 3, 12, 13, 4, 0, 14, 0};
  EXPECT_EQ(PackColumnPanels(plain, 1, 2, 5, 2, false), want);
  EXPECT_EQ(PackColumnPanels(transposed, 1, 2, 5, 2, true), want);
  EXPECT_EQ(UnpackColumnPanels(want, 1, 2, 5, 2), plain);
  for (int64_t k = 0; k < 2; ++k)
    for (int64_t n = 0; n < 5; ++n)
      EXPECT_EQ(want[static_cast<size_t>(ColumnPanelOffset(0, 3, 2, 2, n / 2, k, n % 2))], 10 * k + n);
  // 4-byte elements, 37 columns in 16-wide panels, through the ops form (typed [3, 9, 16]).
  auto b = ops::MakeTensorF32({9, 37}, RandomFloats(9 * 37, 5));
  auto p = ops::PackColumns(*b, {9, 37, 4, false}, 16);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)->type.shape, (std::vector<int64_t>{3, 9, 16}));
  auto back = ops::UnpackColumns(**p, 37);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)->bytes, b->bytes);
  EXPECT_EQ(GemmPanelWidth(kAvx2), 16);
  EXPECT_EQ(GemmPanelWidth(kAvx512), 32);
}

struct BPanelCase {
  std::string op;          // MatMul or Gemm
  std::vector<int64_t> a;  // A's shape (a Gemm's: transposed when ta)
  int64_t k, n;
  int64_t ta = 0, tb = 0;  // Gemm only: tb stores B as [N, K] before packing
  double alpha = 1.0, beta = 1.0;
  bool bias = false;
  bool transpose_a = false;  // A reaches the MatMul through a fused Transpose(perm 1, 0, 2)
};

// B (random, seed) as a constant packed into `nr`-column panels, and the node reading it.
ir::Node* PackedProduct(GraphBuilder& b, const BPanelCase& c, int64_t nr, uint32_t seed) {
  auto w = ops::MakeTensorF32(c.tb ? std::vector<int64_t>{c.n, c.k} : std::vector<int64_t>{c.k, c.n},
                              RandomFloats(c.k * c.n, seed));
  auto packed = ops::PackColumns(*w, {c.k, c.n, 1, c.tb != 0}, nr);
  EXPECT_TRUE(packed.ok()) << packed.status().ToString();
  if (!packed.ok()) return nullptr;
  ir::Value* panels = b.graph().AddConstant("b_panels", *packed);
  ir::Attributes attrs;
  attrs.Set(ops::kPackedColumnsAttr, c.n);
  if (c.op == "Gemm") {
    attrs.Set("transA", c.ta);
    attrs.Set("transB", int64_t{0});
    attrs.Set("alpha", c.alpha);
    attrs.Set("beta", c.beta);
    std::vector<ir::Value*> ins = {b.Input("a", c.a), panels};
    if (c.bias) ins.push_back(b.Input("c", {c.n}));
    return b.Op("Gemm", ins, attrs);
  }
  if (!c.transpose_a) return b.Op("MatMul", {b.Input("a", c.a), panels}, attrs);
  // [d0, d1, K] -> Transpose(1, 0, 2) -> MatMul: A is no plain buffer (BERT's [S, B, E] layout).
  ir::Value* x = b.Input("x", c.a);
  return MakeFused(b.graph(), {x, panels}, [&attrs](GraphBuilder& g, const std::vector<ir::Value*>& v) {
    ir::Node* t = g.Op("Transpose", {v[0]}, Attrs({{"perm", std::vector<int64_t>{1, 0, 2}}}));
    ir::Node* mm = g.Op("MatMul", {t->output(0), v[1]}, attrs);
    return std::vector<ir::Value*>{mm->output(0)};
  });
}

class PackedProductTest : public ::testing::TestWithParam<BPanelCase> {};

TEST_P(PackedProductTest, MatchesReference) {
  const BPanelCase c = GetParam();
  for (const LowerOptions* o : {&kAvx2, &kAvx512}) {
    GraphBuilder b;
    ir::Node* n = PackedProduct(b, c, GemmPanelWidth(*o), 101);
    ASSERT_NE(n, nullptr);
    SCOPED_TRACE(c.op + ", panel width " + std::to_string(GemmPanelWidth(*o)));
    const KernelSpec spec = CheckNodeAgainstReference(*n, 102, 1e-5, 4, *o);
    ASSERT_NE(spec.kernel, nullptr);
    const std::string text = spec.kernel->ToString();
    EXPECT_NE(text.find("b_panels"), std::string::npos);
    EXPECT_EQ(text.find("_bpack"), std::string::npos) << "no packing at run time";
    // The row tiles of each K block prefetch B ahead (LowerOptions::gemm_prefetch_b);
    // without it the same numbers and no prefetch.
    EXPECT_NE(text.find("prefetch b_panels"), std::string::npos);
    LowerOptions plain = *o;
    plain.gemm_prefetch_b = false;
    const KernelSpec without = CheckNodeAgainstReference(*n, 102, 1e-5, 4, plain);
    ASSERT_NE(without.kernel, nullptr);
    EXPECT_EQ(without.kernel->ToString().find("prefetch"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PackedProductTest,
    ::testing::Values(BPanelCase{"MatMul", {2, 13, 40}, 40, 19},        // batch folded into rows; N < one panel
                      BPanelCase{"MatMul", {37, 333}, 333, 50},         // K blocking, M and N tails
                      BPanelCase{"MatMul", {1, 1, 16}, 16, 40},         // one row
                      BPanelCase{"MatMul", {1, 64, 70}, 70, 96},        // whole tiles in N (3 or 6 panels)
                      BPanelCase{"MatMul", {301, 72}, 72, 40},          // rows in several M blocks, 2-3 panels
                      BPanelCase{"MatMul", {5, 3, 24}, 24, 33, 0, 0, 1.0, 1.0, false, true},  // fused transpose
                      BPanelCase{"Gemm", {7, 9}, 9, 17, 0, 1, 0.5, 2.0, true},   // transB, alpha, beta, bias
                      BPanelCase{"Gemm", {9, 7}, 9, 65, 1, 0, 1.0, 1.0, true},   // transA
                      BPanelCase{"Gemm", {1, 64}, 64, 33, 0, 0, 1.0, 1.0, false},  // one row, B not transposed
                      BPanelCase{"Gemm", {100, 400}, 400, 48, 0, 1, 1.0, 0.0, false}));  // K blocking, transB

// BERT's feed-forward output: MatMul + bias + residual, fused, with B in panels.
TEST(PackedProduct, FusedBiasAndResidual) {
  for (const LowerOptions* o : {&kAvx2, &kAvx512}) {
    GraphBuilder b;
    const BPanelCase c{"MatMul", {1, 20, 70}, 70, 45};
    ir::Node* mm = PackedProduct(b, c, GemmPanelWidth(*o), 111);
    ASSERT_NE(mm, nullptr);
    std::vector<ir::Value*> ins = {mm->input(0), mm->input(1), b.Input("bias", {45}), b.Input("res", {1, 20, 45})};
    const ir::Attributes attrs = mm->attrs();
    ir::Node* f = MakeFused(b.graph(), ins, [&attrs](GraphBuilder& g, const std::vector<ir::Value*>& v) {
      ir::Node* m = g.Op("MatMul", {v[0], v[1]}, attrs);
      ir::Node* add = g.Op("Add", {v[2], m->output(0)});
      ir::Node* res = g.Op("Add", {add->output(0), v[3]});
      return std::vector<ir::Value*>{res->output(0)};
    });
    ASSERT_NE(f, nullptr);
    CheckNodeAgainstReference(*f, 112, 1e-5, 4, *o);
  }
}

// A large weight with all of A in one block: tasks of column blocks alone, balanced, a multiple of
// 8 of them where there are that many panels (LowerOptions::gemm_weight_column_tasks_bytes). A
// small cache budget and weight size bring the rule to small shapes:
// 37 rows (not whole row tiles), 300 columns (a tail panel), 19 or 10 panels in 8 blocks, where the
// default blocking makes 10 tasks of 2 row blocks (AVX2) or 8 of 2 (AVX-512).
TEST(PackedProduct, WeightSplitByColumnsAlone) {
  for (const LowerOptions* isa : {&kAvx2, &kAvx512}) {
    LowerOptions o = *isa;
    o.l2_bytes = 64 * 1024;
    o.gemm_weight_column_tasks_bytes = 72 * 300 * 4;
    GraphBuilder b;
    ir::Node* n = PackedProduct(b, BPanelCase{"MatMul", {1, 37, 72}, 72, 300}, GemmPanelWidth(o), 141);
    ASSERT_NE(n, nullptr);
    SCOPED_TRACE("panel width " + std::to_string(GemmPanelWidth(o)));
    const KernelSpec spec = CheckNodeAgainstReference(*n, 142, 1e-5, 4, o);
    ASSERT_NE(spec.kernel, nullptr);
    const std::string text = spec.kernel->ToString();
    // 8 tasks, each every row tile ([0, Mt) for t / 8 = 0) and a balanced share of the panels.
    const int64_t mt = (37 + GemmRowTile(o, 37) - 1) / GemmRowTile(o, 37), panels = (300 + GemmPanelWidth(o) - 1) / GemmPanelWidth(o);
    EXPECT_NE(text.find("parallel for t in [0, 8)"), std::string::npos);
    EXPECT_NE(text.find("for mt in [((t / 8) * " + std::to_string(mt) + ")"), std::string::npos);
    EXPECT_NE(text.find("for p in [(((t % 8) * " + std::to_string(panels) + ") / 8)"), std::string::npos);
    // Under the size: the same numbers, from the blocking that splits the rows too.
    o.gemm_weight_column_tasks_bytes = 72 * 300 * 4 + 1;
    const KernelSpec off = CheckNodeAgainstReference(*n, 142, 1e-5, 4, o);
    ASSERT_NE(off.kernel, nullptr);
    EXPECT_EQ(off.kernel->ToString().find("for mt in [((t / 8) * " + std::to_string(mt) + ")"), std::string::npos);
  }
}

// One-column panels ([N, K, 1]: B transposed, the CUDA back end's form for
// cuBLASLt) lowered where the GEMM reads wider panels: B read in place as the
// [K, N] matrix it stands for, the same numbers as the reference.
TEST(PackedProduct, OneColumnPanelsReadAsTheTransposedB) {
  for (const BPanelCase& c : {BPanelCase{"MatMul", {2, 13, 40}, 40, 19}, BPanelCase{"MatMul", {37, 333}, 333, 50},
                              BPanelCase{"Gemm", {9, 7}, 9, 65, 1, 0, 1.0, 1.0, true},
                              BPanelCase{"Gemm", {7, 9}, 9, 17, 0, 1, 0.5, 2.0, true}}) {
    for (const LowerOptions* o : {&kAvx2, &kAvx512}) {
      GraphBuilder b;
      ir::Node* n = PackedProduct(b, c, 1, 131);
      ASSERT_NE(n, nullptr);
      ASSERT_EQ(n->input(1)->type().shape, (std::vector<int64_t>{c.n, c.k, 1}));
      SCOPED_TRACE(c.op + ", panel width " + std::to_string(GemmPanelWidth(*o)));
      const KernelSpec spec = CheckNodeAgainstReference(*n, 132, 1e-5, 4, *o);
      ASSERT_NE(spec.kernel, nullptr);
      EXPECT_EQ(spec.kernel->ToString().find("b_panels"), std::string::npos) << "B read as a plain operand";
    }
  }
}

TEST(PackedProduct, WrongPanelWidthAndMalformedAreRefused) {
  // Panels 16 wide lowered for AVX-512 (32-wide tiles): a clear error, not a wrong result.
  GraphBuilder b;
  ir::Node* n = PackedProduct(b, BPanelCase{"MatMul", {8, 24}, 24, 40}, 16, 121);
  ASSERT_NE(n, nullptr);
  auto spec = LowerNodeToKernel(*n, 0, kAvx512);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("panel width 32"), std::string::npos) << spec.status().ToString();
  // Sizes that disagree with the matrix, and panels of a different column count.
  auto w = ops::MakeTensorF32({4, 3}, RandomFloats(12, 1));
  EXPECT_FALSE(ops::PackColumns(*w, {4, 5, 1, false}, 16).ok());
  EXPECT_FALSE(ops::PackColumns(*w, {4, 3, 1, false}, 0).ok());
  auto p = ops::PackColumns(*w, {4, 3, 1, false}, 2);  // [2, 4, 2]
  ASSERT_TRUE(p.ok());
  auto bad = ops::UnpackColumns(**p, 5);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("B panels"), std::string::npos);
}

}  // namespace
}  // namespace keel::codegen::testing
