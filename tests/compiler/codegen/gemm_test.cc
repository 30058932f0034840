// Gemm and MatMul through the blocked GEMM: odd sizes (edge tiles in M and N),
// K blocking (K > 320), transposes, alpha/beta, bias broadcast, batched MatMul
// (one parallel region for the whole batch) with broadcasting and 1-D operands.
#include <gtest/gtest.h>

#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

struct GemmCase { int64_t m, n, k; int64_t ta, tb; double alpha, beta; bool bias; };

class GemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmTest, MatchesReference) {
  const GemmCase c = GetParam();
  GraphBuilder b;
  ir::Value* a = b.Input("a", c.ta ? std::vector<int64_t>{c.k, c.m} : std::vector<int64_t>{c.m, c.k});
  ir::Value* w = b.Input("b", c.tb ? std::vector<int64_t>{c.n, c.k} : std::vector<int64_t>{c.k, c.n});
  std::vector<ir::Value*> ins = {a, w};
  if (c.bias) ins.push_back(b.Input("c", {c.n}));
  ir::Node* n =
      b.Op("Gemm", ins, Attrs({{"transA", c.ta}, {"transB", c.tb}, {"alpha", c.alpha}, {"beta", c.beta}}));
  ASSERT_NE(n, nullptr);
  CheckNodeAgainstReference(*n, 21);
  // The AVX-512 lowering: 12- or 8-row x 32-column register tiles, tail row tiles.
  CheckNodeAgainstReference(*n, 21, 1e-5, 4, LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f"));
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmTest,
                         ::testing::Values(GemmCase{1, 1, 1, 0, 0, 1.0, 1.0, false},
                                           GemmCase{6, 16, 8, 0, 0, 1.0, 1.0, true},
                                           GemmCase{7, 17, 9, 0, 0, 1.0, 1.0, true},
                                           GemmCase{1, 1000, 512, 0, 1, 1.0, 1.0, true},
                                           GemmCase{1, 37, 70, 0, 1, 0.5, 1.0, true},  // dot products, K tail
                                           GemmCase{13, 50, 333, 1, 0, 0.5, 2.0, true},
                                           GemmCase{64, 64, 700, 1, 1, 1.0, 0.0, false},
                                           GemmCase{100, 33, 5, 0, 0, 1.0, 1.0, false},
                                           GemmCase{20, 64, 40, 0, 0, 1.0, 1.0, true},
                                           GemmCase{64, 96, 30, 0, 1, 1.0, 1.0, true}));

TEST(MatMul, BatchedWithBroadcast) {
  GraphBuilder b;
  CheckOp(b, "MatMul", {b.Input("a", {2, 3, 5, 7}), b.Input("w", {3, 7, 9})}, {}, 22);
}

// A batch of products in one parallel region (GemmOperands::batch): every
// product's own packed panels and partial sums. 300 rows x K 333 make two M
// blocks (a separate packing pass over (product, panel) pairs) and two K
// blocks; N 21 an edge panel; the AVX-512 tiles too.
TEST(MatMul, BatchedOneRegionKBlockedTwoRowBlocks) {
  GraphBuilder b;
  ir::Node* n = b.Op("MatMul", {b.Input("a", {3, 300, 333}), b.Input("w", {3, 333, 21})});
  ASSERT_NE(n, nullptr);
  KernelSpec spec = CheckNodeAgainstReference(*n, 26, 1e-5);
  ASSERT_TRUE(spec.kernel);
  // One region for packing and one for computing, whatever the batch.
  const std::string text = spec.kernel->ToString();
  size_t regions = 0;
  for (size_t at = text.find("parallel for"); at != std::string::npos; at = text.find("parallel for", at + 1)) ++regions;
  EXPECT_EQ(regions, 2u) << text;
  CheckNodeAgainstReference(*n, 27, 1e-5, 4, LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f"));
}

// B packed by a parallel pass of its own (a second input, several M blocks)
// with a small A: the compute region runs panels outermost, one per column
// block (lower_gemm.cc), so a 2-thread split of its tasks is even and each
// thread computes with the panels its core packed. 96 x 80 times 80 x 200 with
// 6 x 16 tiles: 13 panels x 4 M blocks = 52 tasks (row blocks outermost made
// 8: 2 column blocks of 7 and 6 panels). Serial and threaded runs match the reference.
TEST(MatMul, PanelsOutermostWithSeveralRowBlocks) {
  GraphBuilder b;
  ir::Node* n = b.Op("MatMul", {b.Input("a", {96, 80}), b.Input("w", {80, 200})});
  ASSERT_NE(n, nullptr);
  KernelSpec spec = CheckNodeAgainstReference(*n, 29, 1e-5);
  ASSERT_TRUE(spec.kernel);
  const std::string text = spec.kernel->ToString();
  EXPECT_NE(text.find("parallel for p"), std::string::npos) << text;  // the packing pass, over panels
  const size_t compute = text.find("parallel for t");
  ASSERT_NE(compute, std::string::npos) << text;
  EXPECT_EQ(text.compare(text.find(" in [", compute), 12, " in [0, 52) "), 0) << text;
  CheckNodeAgainstReference(*n, 30, 1e-5, 4, LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f"));
}

// A tail panel of at most half the panel width (N % NR <= NR / 2) gets register tiles of half
// the width (lower_gemm.cc): AVX-512's 32-column panels, N = 169 (a 13x13 image: five panels
// and 9 columns), 48 (a tail of exactly 16: stores unguarded), 9 (the tail panel alone), with
// several row tiles and K blocks (K = 333), against the reference; and the 16-lane tile is there.
// Whether the kernel text has a kLanes loop over [0, lanes).
bool HasLanesLoop(const std::string& text, int64_t lanes) {
  const std::string range = " in [0, " + std::to_string(lanes) + ") {";
  for (size_t at = text.find("lanes for "); at != std::string::npos; at = text.find("lanes for ", at + 1))
    if (text.compare(text.find(" in [", at), range.size(), range) == 0) return true;
  return false;
}

TEST(MatMul, HalfWidthTailPanel) {
  const LowerOptions avx512 = LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f");
  for (int64_t n : {169, 48, 9, 40}) {
    SCOPED_TRACE("N " + std::to_string(n));
    GraphBuilder b;
    ir::Node* node = b.Op("MatMul", {b.Input("a", {30, 333}), b.Input("w", {333, n})});
    ASSERT_NE(node, nullptr);
    KernelSpec spec = CheckNodeAgainstReference(*node, 31, 1e-5, 4, avx512);
    ASSERT_TRUE(spec.kernel);
    const std::string text = spec.kernel->ToString();
    EXPECT_TRUE(HasLanesLoop(text, 16)) << text;
  }
  // A tail wider than half a panel keeps full-width tiles (guarded stores): no 16-lane tile.
  GraphBuilder b;
  ir::Node* node = b.Op("MatMul", {b.Input("a", {30, 40}), b.Input("w", {40, 57})});
  KernelSpec spec = CheckNodeAgainstReference(*node, 32, 1e-5, 4, avx512);
  ASSERT_TRUE(spec.kernel);
  EXPECT_FALSE(HasLanesLoop(spec.kernel->ToString(), 16));
}

// A half-panel tail after full panels, B packed by a pass of its own (several M blocks): the last
// full panel and the tail run as one tile of 1.5 panels where MR x 3 accumulators fit the
// registers and the full panels are at most 8 (LowerOptions::gemm_merged_tail, lower_gemm.cc;
// AVX-512 with 8-row tiles). N = 169 (5 panels and 9 columns, SqueezeNet's 13x13 classifier),
// 137 (4 and 9: the last full panel and the
// tail in different column blocks), 48 (1 and a tail of exactly 16), 40 (1 and 8), with K blocks
// (K = 333) and without (K = 64); M = 40 (5 row tiles of 8) and, with 8-row tiles forced, M = 30
// (a 6-row last tile); against the reference with the option on and off, the merged tile's
// accumulators there only when on. Not merged: 12-row tiles (36 accumulators), AVX2 (16
// registers), a tail wider than half a panel (N = 57), a tail alone (N = 9), a tail after 9 full
// panels (N = 297: the tail under 1/17 of the columns).
TEST(MatMul, MergedTailTile) {
  const LowerOptions avx512 = LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f");
  const LowerOptions avx2 = LowerOptionsForCpuFeatures("+avx2,+fma");
  LowerOptions rows8 = avx512;
  rows8.gemm_mr = 8;
  rows8.gemm_mr_alt = 0;
  struct Case { int64_t m, n, k; const LowerOptions* options; bool merged; };
  for (const Case& c : {Case{40, 169, 333, &avx512, true}, Case{40, 137, 333, &avx512, true},
                        Case{40, 48, 64, &avx512, true}, Case{40, 40, 333, &avx512, true},
                        Case{30, 169, 333, &rows8, true}, Case{30, 169, 333, &avx512, false},
                        Case{40, 169, 333, &avx2, false}, Case{40, 57, 333, &avx512, false},
                        Case{40, 9, 333, &avx512, false}, Case{40, 297, 64, &avx512, false}}) {
    for (bool on : {true, false}) {
      SCOPED_TRACE("M " + std::to_string(c.m) + " N " + std::to_string(c.n) + " K " + std::to_string(c.k) +
                   (on ? " on" : " off"));
      LowerOptions o = *c.options;
      o.gemm_merged_tail = on;
      GraphBuilder b;
      ir::Node* node = b.Op("MatMul", {b.Input("a", {c.m, c.k}), b.Input("w", {c.k, c.n})});
      ASSERT_NE(node, nullptr);
      KernelSpec spec = CheckNodeAgainstReference(*node, 33, 1e-5, 4, o);
      ASSERT_TRUE(spec.kernel);
      const std::string text = spec.kernel->ToString();
      EXPECT_EQ(text.find("acc_merged") != std::string::npos, on && c.merged) << text;
    }
  }
}

TEST(MatMul, SharedWeightFoldsBatchIntoRows) {
  GraphBuilder b;
  KernelSpec spec = CheckOp(b, "MatMul", {b.Input("a", {2, 13, 40}), b.Input("w", {40, 19})}, {}, 23);
  ASSERT_TRUE(spec.kernel);
  EXPECT_NE(spec.kernel->ToString().find("a_rows"), std::string::npos);
}

// A batched A that is no plain buffer (a fused Transpose: BERT's [S, B, E]
// layout) with a shared B still folds its batch into rows: one GEMM of 5 x 3
// rows (B's panels packed once), not 5 products of 3 rows.
TEST(MatMul, FusedTransposeAFoldsIntoRows) {
  for (const LowerOptions& o : {LowerOptions{}, LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f")}) {
    GraphBuilder b;
    ir::Node* f = MakeFused(b.graph(), {b.Input("x", {3, 5, 24}), b.Input("w", {24, 37})},
                            [](GraphBuilder& g, const std::vector<ir::Value*>& v) {
                              ir::Node* t = g.Op("Transpose", {v[0]}, Attrs({{"perm", std::vector<int64_t>{1, 0, 2}}}));
                              ir::Node* mm = g.Op("MatMul", {t->output(0), v[1]});
                              return std::vector<ir::Value*>{mm->output(0)};
                            });
    ASSERT_NE(f, nullptr);
    KernelSpec spec = CheckNodeAgainstReference(*f, 28, 1e-5, 4, o);
    ASSERT_TRUE(spec.kernel);
    // One product's packed panels (not 5): ceil(37 / NR) panels of 24 x NR.
    const int64_t nr = o.gemm_nr, panels = (37 + nr - 1) / nr;
    const std::string text = spec.kernel->ToString();
    EXPECT_NE(text.find("matmul_bpack: f32[" + std::to_string(panels * 24 * nr) + "]"), std::string::npos) << text;
  }
}

TEST(MatMul, OneDimensionalOperands) {
  GraphBuilder b;
  ir::Value* v = b.Input("v", {7});
  CheckOp(b, "MatMul", {v, b.Input("m", {2, 7, 5})}, {}, 24);
  CheckOp(b, "MatMul", {b.Input("m2", {4, 7}), v}, {}, 25);
}

}  // namespace
}  // namespace keel::codegen::testing
