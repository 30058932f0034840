// Convolutions whose constant weight is packed at compile time into the GEMM
// micro-kernel's row panels (compiler/ops/packed_weight.h, codegen/gemm_panels.h)
// against the reference evaluator (the plain convolution on the weight unpacked):
// output channels not a multiple of the panel height (a narrower last panel),
// fewer channels than one panel, groups, strides, padding, batch 2, K blocking,
// 1-D and 3-D convolutions, the Winograd form's U, fused epilogues; the
// default (AVX2, 6 rows) and AVX-512 (12 or 8 rows) register tiles, and a
// panel height the options would not pick (the GEMM follows the weight). Also
// the layout itself, the lowered kernel reading one flat stream, and refusals.
// (The B-panel form of MatMul and Gemm: packed_product_test.cc.)
// Pointwise convolutions on few pixels in their transposed form (weight read as
// column panels), and dense ones (ConvPixelRows).
#include <gtest/gtest.h>

#include <random>

#include "compiler/codegen/gemm_panels.h"
#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/channels_last.h"
#include "compiler/ops/packed_weight.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/winograd.h"
#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

const LowerOptions kAvx2 = LowerOptionsForCpuFeatures("+avx2,+fma");
const LowerOptions kAvx512 = LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f");

TEST(GemmPanels, LayoutAndRoundTrip) {
  // 5 x 2 with 2 rows per panel: panels rows {0,1}, {2,3}, then the last row alone.
  std::vector<uint8_t> plain(10);
  for (int i = 0; i < 10; ++i) plain[static_cast<size_t>(i)] = static_cast<uint8_t>(i);  // A(r, k) = 2r + k
  const std::vector<uint8_t> packed = PackRowPanels(plain, 1, 1, 5, 2, 2);
  EXPECT_EQ(packed, (std::vector<uint8_t>{0, 2, 1, 3, 4, 6, 5, 7, 8, 9}));
  EXPECT_EQ(UnpackRowPanels(packed, 1, 1, 5, 2, 2), plain);
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t k = 0; k < 2; ++k) {
      const int64_t m0 = r < 4 ? r - r % 2 : 4, mr = r < 4 ? 2 : 1;
      EXPECT_EQ(packed[static_cast<size_t>(RowPanelOffset(m0, mr, 2, k, r - m0))], 2 * r + k);
    }
  // A stack of 3 matrices of 4-byte elements, 13 rows (two 6-row panels and a 1-row one).
  std::vector<uint8_t> stack(3 * 13 * 7 * 4);
  for (size_t i = 0; i < stack.size(); ++i) stack[i] = static_cast<uint8_t>(i * 31 % 251);
  const std::vector<uint8_t> p = PackRowPanels(stack, 4, 3, 13, 7, 6);
  EXPECT_NE(p, stack);
  EXPECT_EQ(UnpackRowPanels(p, 4, 3, 13, 7, 6), stack);
  EXPECT_EQ(GemmRowTile(kAvx2, 64), 6);
  EXPECT_EQ(GemmRowTile(kAvx512, 64), 8);
  EXPECT_EQ(GemmRowTile(kAvx512, 36), 12);
}

struct PackedCase {
  std::vector<int64_t> x;  // N, C, spatial...
  int64_t co;
  std::vector<int64_t> kernel;
  int64_t stride, pad, group;
  bool bias;
  int64_t dilation = 1;
  bool output_channels_last = false;  // the output-only channels-last form (ops/channels_last.h)
};

// A Conv whose weight (random, seed) is a constant packed with `mr` rows per panel.
ir::Node* PackedConv(GraphBuilder& b, const PackedCase& p, int64_t mr, uint32_t seed) {
  const size_t sp = p.x.size() - 2;
  std::vector<int64_t> ws{p.co, p.x[1] / p.group};
  ws.insert(ws.end(), p.kernel.begin(), p.kernel.end());
  int64_t k = ws[1];
  for (int64_t d : p.kernel) k *= d;
  auto w = ops::MakeTensorF32(ws, RandomFloats(p.co * k, seed));
  auto packed = ops::PackWeight(*w, {p.group, p.co / p.group, k}, mr);
  EXPECT_TRUE(packed.ok()) << packed.status().ToString();
  std::vector<ir::Value*> ins = {b.Input("x", p.x), b.graph().AddConstant("w_panels", *packed)};
  if (p.bias) ins.push_back(b.Input("bias", {p.co}));
  ir::Attributes a;
  a.Set("strides", std::vector<int64_t>(sp, p.stride));
  a.Set("pads", std::vector<int64_t>(2 * sp, p.pad));
  a.Set("group", p.group);
  if (p.dilation != 1) a.Set("dilations", std::vector<int64_t>(sp, p.dilation));
  a.Set(ops::kPackedRowsAttr, mr);
  if (p.output_channels_last) a.Set(ops::kChannelsLastAttr, ops::kOutputChannelsLast);
  return b.Op("Conv", ins, a);
}

class PackedConvTest : public ::testing::TestWithParam<PackedCase> {};

TEST_P(PackedConvTest, MatchesReference) {
  const PackedCase p = GetParam();
  const int64_t mg = p.co / p.group;
  struct Variant {
    int64_t mr;
    LowerOptions options;
  };
  // The tiles each ISA picks, and a panel height no option picks (the GEMM follows the weight).
  for (const Variant& v : {Variant{GemmRowTile(kAvx2, mg), kAvx2}, Variant{GemmRowTile(kAvx512, mg), kAvx512},
                           Variant{5, kAvx2}}) {
    GraphBuilder b;
    ir::Node* n = PackedConv(b, p, v.mr, 71);
    ASSERT_NE(n, nullptr);
    SCOPED_TRACE("rows per panel " + std::to_string(v.mr));
    const KernelSpec spec = CheckNodeAgainstReference(*n, 72, 1e-5, 4, v.options);
    ASSERT_NE(spec.kernel, nullptr);
    const std::string text = spec.kernel->ToString();
    EXPECT_NE(text.find("w_panels"), std::string::npos);
    EXPECT_EQ(text.find("w_rows"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PackedConvTest,
    ::testing::Values(PackedCase{{1, 8, 9, 11}, 13, {3, 3}, 1, 1, 1, true},     // 13 rows: a 1-row last panel (AVX2)
                      PackedCase{{2, 5, 10, 7}, 4, {3, 3}, 2, 1, 1, false},     // fewer rows than a panel, batch 2
                      PackedCase{{1, 12, 8, 8}, 20, {3, 3}, 1, 1, 2, true},     // 2 groups of 10 rows
                      PackedCase{{1, 40, 9, 9}, 36, {3, 3}, 1, 1, 1, false},    // K = 360: K blocking; 36 rows
                      PackedCase{{1, 16, 7, 7}, 64, {1, 1}, 1, 0, 1, true},     // pointwise, 64 rows (AVX-512: 8)
                      PackedCase{{1, 3, 23, 23}, 10, {7, 7}, 2, 3, 1, true},    // stem-like, K = 147
                      PackedCase{{1, 6, 30}, 11, {5}, 1, 2, 1, true},           // 1-D
                      PackedCase{{1, 4, 5, 6, 7}, 9, {3, 3, 3}, 1, 1, 1, false}  // 3-D
                      ));

TEST(PackedConv, FusedReluAndResidual) {
  GraphBuilder b;
  const PackedCase p{{2, 12, 11, 13}, 10, {3, 3}, 1, 1, 1, true};
  ir::Node* conv = PackedConv(b, p, 6, 81);
  ASSERT_NE(conv, nullptr);
  ir::Node* f = FuseResidualRelu(b, *conv);
  CheckNodeAgainstReference(*f, 82, 1e-5, 4, kAvx2);
}

// The transposed form of pointwise convolutions on few pixels (lower_ops.h
// PointwisePixelRows): the weight packed with NR rows per panel is read as W^T's
// column panels, pixels are the GEMM's rows. Pixel counts that leave a row-tile
// tail (9, 17, 49 in balanced tiles of at most 14 rows, AVX-512: 9; 9 + 8; 3 x 13 + 10;
// at most 6 on AVX2: 5 + 4; 6 x 2 + 5; 8 x 6 + 1), batch 2, 1-D, K blocking
// (333), several column panels, bias and a fused residual + Relu; both ISAs.
// Output channels past whole panels in a narrow panel of whole quarter panels: 1.5
// panels at 13x13 over 384 channels (SqueezeNet's squeezes), 1.25 panels in a batch of 2,
// half a panel alone (no whole panel), 2.75 panels with the residual; those with quarter
// panels taken on both ISAs (by default AVX-512 takes them, AVX2 does not).
// The kernel must be the transposed one (its views), and shapes the form does not
// take must say so.
TEST(PackedConv, PointwisePixelRows) {
  for (const LowerOptions* isa : {&kAvx2, &kAvx512}) {
    const int64_t nr = GemmPanelWidth(*isa);
    GraphBuilder d;
    EXPECT_EQ(PointwisePixelRows(*isa, *PackedConv(d, {{1, 384, 13, 13}, nr + nr / 2, {1, 1}, 1, 0, 1, true}, nr, 1)),
              isa == &kAvx512 ? nr : 0);
    EXPECT_EQ(PointwisePixelRows(*isa, *PackedConv(d, {{1, 384, 13, 13}, nr + nr / 4, {1, 1}, 1, 0, 1, true}, nr, 1)),
              isa == &kAvx512 ? nr : 0);
    EXPECT_EQ(PointwisePixelRows(*isa, *PackedConv(d, {{1, 384, 13, 13}, nr + nr / 8, {1, 1}, 1, 0, 1, true}, nr, 1)), 0);
    LowerOptions tail_on = *isa;
    tail_on.pointwise_pixel_rows_tail = nr / 4;
    const LowerOptions* o = &tail_on;
    for (const PackedCase& p : {PackedCase{{1, 37, 3, 3}, 2 * nr, {1, 1}, 1, 0, 1, true},
                                PackedCase{{2, 83, 17}, nr, {1}, 1, 0, 1, false},
                                PackedCase{{1, 333, 7, 7}, 3 * nr, {1, 1}, 1, 0, 1, true},
                                PackedCase{{1, 384, 13, 13}, nr + nr / 2, {1, 1}, 1, 0, 1, true},
                                PackedCase{{2, 96, 5, 5}, nr + nr / 4, {1, 1}, 1, 0, 1, false},
                                PackedCase{{1, 37, 3, 3}, nr / 2, {1, 1}, 1, 0, 1, true}}) {
      GraphBuilder b;
      ir::Node* n = PackedConv(b, p, nr, 101);
      ASSERT_NE(n, nullptr);
      SCOPED_TRACE("x " + n->input(0)->type().ToString() + ", NR " + std::to_string(nr));
      ASSERT_EQ(PointwisePixelRows(*o, *n), nr);
      const KernelSpec spec = CheckNodeAgainstReference(*n, 102, 1e-5, 4, *o);
      ASSERT_NE(spec.kernel, nullptr);
      const std::string text = spec.kernel->ToString();
      EXPECT_NE(text.find("w_columns"), std::string::npos);
      EXPECT_NE(text.find("x_pixels"), std::string::npos);
      // K blocks of about gemm_kc_k_apart (64): 83 and 333 channels have partial sums, 37 not;
      // with the option off, only K above 320 is blocked.
      EXPECT_EQ(text.find("conv_px_cpart") != std::string::npos, p.x[1] > 80);
      LowerOptions off = *o;
      off.gemm_kc_k_apart = 0;
      const KernelSpec wide = CheckNodeAgainstReference(*n, 102, 1e-5, 4, off);
      ASSERT_NE(wide.kernel, nullptr);
      EXPECT_EQ(wide.kernel->ToString().find("conv_px_cpart") != std::string::npos, p.x[1] > 320);
    }
    GraphBuilder b;
    const PackedCase p{{1, 333, 7, 7}, 2 * nr + 3 * nr / 4, {1, 1}, 1, 0, 1, true};
    ir::Node* conv = PackedConv(b, p, nr, 103);
    ASSERT_NE(conv, nullptr);
    ir::Node* f = FuseResidualRelu(b, *conv);
    const KernelSpec spec = CheckNodeAgainstReference(*f, 104, 1e-5, 4, *o);
    ASSERT_NE(spec.kernel, nullptr);
    EXPECT_NE(spec.kernel->ToString().find("w_columns"), std::string::npos);
    // Not taken: output channels past whole panels not whole quarter panels, a stride, a 3x3 kernel, too many
    // pixels, few input channels (the strided stores would cost more than the padding), and
    // an expansion on more than 64 pixels (ResNet-50's 256 -> 1024 at 14x14).
    GraphBuilder r;
    EXPECT_EQ(PointwisePixelRows(*o, *PackedConv(r, {{1, 333, 7, 7}, nr + 1, {1, 1}, 1, 0, 1, false}, nr, 1)), 0);
    EXPECT_EQ(PointwisePixelRows(*o, *PackedConv(r, {{1, 333, 13, 13}, nr, {1, 1}, 2, 0, 1, false}, nr, 1)), 0);
    EXPECT_EQ(PointwisePixelRows(*o, *PackedConv(r, {{1, 64, 7, 7}, nr, {3, 3}, 1, 1, 1, false}, nr, 1)), 0);
    EXPECT_EQ(PointwisePixelRows(*o, *PackedConv(r, {{1, 333, 29, 29}, nr, {1, 1}, 1, 0, 1, false}, nr, 1)), 0);
    EXPECT_EQ(PointwisePixelRows(*o, *PackedConv(r, {{1, 8, 14, 14}, nr, {1, 1}, 1, 0, 1, false}, nr, 1)), 0);
    EXPECT_EQ(PointwisePixelRows(*o, *PackedConv(r, {{1, 256, 14, 14}, 1024, {1, 1}, 1, 0, 1, false}, nr, 1)), 0);
    EXPECT_EQ(PointwisePixelRows(*o, *PackedConv(r, {{1, 1024, 14, 14}, 256, {1, 1}, 1, 0, 1, false}, nr, 1)), nr);
  }
}

// The pixels-as-rows GEMMs prefetch A (the input rows) 16 k ahead where it is at least half the
// cache budget (LowerOptions::gemm_prefetch_a): a 1x1 convolution over 14x14 pixels of 401 and
// 160 channels (307 and 122 KB an image), batch 2, and a 3x3 one over 8x8 pixels of 333 channels
// (749 KB as its K rows, read from the padded copy); the same
// values as the reference with the option on and off on both ISAs, and `prefetch x_...` exactly
// where it applies (B's own prefetches name the weight).
// Pointwise convolutions on more pixels than pointwise_pixel_rows (up to
// pointwise_pixel_rows_one_panel: 784 on AVX-512, 0 on AVX2) with exactly one whole panel of
// output channels and K >= 4 NR take the transposed form without the cost estimate
// (SqueezeNet's 27x27 squeezes 128 -> 32 and 256 -> 32). Odd shapes on both ISAs (the option
// turned on for AVX2): 23x31 pixels over K = 4 NR + 3 with a bias and a fused Relu (row tiles of
// 14 with a tail, K blocks of 64), 2 images of 15x17 without a bias, 1-D over 700, and 28x28
// over 333 channels (K = 333: partial sums); each against the reference evaluator, the kernel
// the transposed one. Not taken: 785 pixels, two panels or half a panel of output channels,
// K = 4 NR - 1, a stride, and the option at 0 (AVX2's default).
TEST(PackedConv, PointwisePixelRowsOnePanel) {
  for (const LowerOptions* isa : {&kAvx2, &kAvx512}) {
    const int64_t nr = GemmPanelWidth(*isa);
    LowerOptions on = *isa;
    on.pointwise_pixel_rows_one_panel = 784;
    SCOPED_TRACE("NR " + std::to_string(nr));
    EXPECT_EQ(isa->pointwise_pixel_rows_one_panel, isa == &kAvx512 ? 784 : 0);
    for (const PackedCase& p : {PackedCase{{1, 4 * nr + 3, 23, 31}, nr, {1, 1}, 1, 0, 1, true},
                                PackedCase{{2, 4 * nr, 15, 17}, nr, {1, 1}, 1, 0, 1, false},
                                PackedCase{{1, 5 * nr + 1, 700}, nr, {1}, 1, 0, 1, true},
                                PackedCase{{1, 333, 28, 28}, nr, {1, 1}, 1, 0, 1, true}}) {
      GraphBuilder b;
      ir::Node* conv = PackedConv(b, p, nr, 111);
      ASSERT_NE(conv, nullptr);
      SCOPED_TRACE("x " + conv->input(0)->type().ToString());
      ASSERT_EQ(PointwisePixelRows(on, *conv), nr);
      LowerOptions off = on;
      off.pointwise_pixel_rows_one_panel = 0;
      EXPECT_EQ(PointwisePixelRows(off, *conv), 0);
      std::vector<ir::Value*> ins = {conv->input(0), conv->input(1)};
      if (p.bias) ins.push_back(conv->input(2));
      const ir::Attributes attrs = conv->attrs();
      ir::Node* f = MakeFused(b.graph(), ins, [&attrs](GraphBuilder& g, const std::vector<ir::Value*>& v) {
        ir::Node* c = g.Op("Conv", v, attrs);
        return std::vector<ir::Value*>{g.Op("Relu", {c->output(0)})->output(0)};
      });
      const KernelSpec spec = CheckNodeAgainstReference(*f, 112, 1e-5, 4, on);
      ASSERT_NE(spec.kernel, nullptr);
      const std::string text = spec.kernel->ToString();
      EXPECT_NE(text.find("w_columns"), std::string::npos);
      EXPECT_NE(text.find("x_pixels"), std::string::npos);
    }
    GraphBuilder r;
    EXPECT_EQ(PointwisePixelRows(on, *PackedConv(r, {{1, 4 * nr, 5, 157}, nr, {1, 1}, 1, 0, 1, false}, nr, 1)), 0);
    EXPECT_EQ(PointwisePixelRows(on, *PackedConv(r, {{1, 8 * nr, 27, 27}, 2 * nr, {1, 1}, 1, 0, 1, false}, nr, 1)), 0);
    EXPECT_EQ(PointwisePixelRows(on, *PackedConv(r, {{1, 8 * nr, 27, 27}, nr / 2, {1, 1}, 1, 0, 1, false}, nr, 1)), 0);
    EXPECT_EQ(PointwisePixelRows(on, *PackedConv(r, {{1, 4 * nr - 1, 27, 27}, nr, {1, 1}, 1, 0, 1, false}, nr, 1)), 0);
    EXPECT_EQ(PointwisePixelRows(on, *PackedConv(r, {{1, 8 * nr, 55, 55}, nr, {1, 1}, 2, 0, 1, false}, nr, 1)), 0);
    EXPECT_EQ(PointwisePixelRows(*isa, *PackedConv(r, {{1, 8 * nr, 27, 27}, nr, {1, 1}, 1, 0, 1, false}, nr, 1)),
              isa == &kAvx512 ? nr : 0);
  }
}

TEST(PackedConv, PixelRowsPrefetchA) {
  for (const LowerOptions* base : {&kAvx2, &kAvx512}) {
    const int64_t nr = GemmPanelWidth(*base);
    struct Case {
      PackedCase p;
      bool pointwise;
      const char* view;
    };
    for (const Case& t : {Case{{{2, 401, 14, 14}, nr, {1, 1}, 1, 0, 1, true}, true, "prefetch x_pixels"},
                          Case{{{1, 160, 14, 14}, nr, {1, 1}, 1, 0, 1, false}, true, "prefetch x_pixels"},
                          Case{{{1, 333, 8, 8}, nr, {3, 3}, 1, 1, 1, false}, false, "prefetch conv_xpad"}}) {
      for (bool on : {false, true}) {
        LowerOptions o = *base;
        o.gemm_prefetch_a = on;
        GraphBuilder b;
        ir::Node* n = PackedConv(b, t.p, nr, 121);
        ASSERT_NE(n, nullptr);
        SCOPED_TRACE("x " + n->input(0)->type().ToString() + ", NR " + std::to_string(nr) + (on ? ", on" : ", off"));
        ASSERT_EQ(t.pointwise ? PointwisePixelRows(o, *n) : ConvPixelRows(o, *n), nr);
        const KernelSpec spec = CheckNodeAgainstReference(*n, 122, 1e-5, 4, o);
        ASSERT_NE(spec.kernel, nullptr);
        // The GEMM's A per image: pixels x K.
        const int64_t a_bytes = t.p.x[1] * t.p.x[2] * t.p.x[3] * 4 * (t.pointwise ? 1 : 9);
        EXPECT_EQ(spec.kernel->ToString().find(t.view) != std::string::npos, on && a_bytes >= o.l2_bytes / 2);
      }
    }
  }
}

// The channels-first implicit GEMM over a weight packed in row panels, run row tile after row
// tile over a task's panels (several M blocks): each row tile's tiles prefetch the next row
// tile's A panel (LowerOptions::gemm_prefetch_a_panels) where the weight is at least half the
// cache budget. 3x3 stride 2 to 31x31 over 64 channels (K = 576: K blocks; 130 rows: a last row
// tile of 10 rows on AVX-512, 4 on AVX2; 961 pixels: a tail panel), a 1x1 over 600 channels in a
// batch of 2 with 90 pixels (a tail panel; 136 rows), both with bias; and a small weight that is
// left alone. Against the reference evaluator with the option on and off, on both ISAs.
TEST(PackedConv, PrefetchNextAPanel) {
  struct Case {
    PackedCase p;
    int64_t k;  // the GEMM's K
  };
  for (const Case& t : {Case{{{1, 64, 61, 61}, 130, {3, 3}, 2, 1, 1, true}, 576},
                        Case{{{2, 600, 9, 10}, 136, {1, 1}, 1, 0, 1, true}, 600},
                        Case{{{1, 16, 20, 20}, 24, {3, 3}, 1, 1, 1, false}, 144}}) {
    for (const LowerOptions* base : {&kAvx2, &kAvx512}) {
      for (bool on : {false, true}) {
        LowerOptions o = *base;
        o.gemm_prefetch_a_panels = on;
        const int64_t mr = GemmRowTile(o, t.p.co);
        GraphBuilder b;
        ir::Node* n = PackedConv(b, t.p, mr, 131);
        ASSERT_NE(n, nullptr);
        SCOPED_TRACE("x " + n->input(0)->type().ToString() + ", NR " + std::to_string(GemmPanelWidth(o)) +
                     (on ? ", on" : ", off"));
        ASSERT_NE(ConvPixelRows(o, *n), mr);  // the weight's panels are not those of the pixels-as-rows form
        const KernelSpec spec = CheckNodeAgainstReference(*n, 132, 1e-5, 4, o);
        ASSERT_NE(spec.kernel, nullptr);
        EXPECT_EQ(spec.kernel->ToString().find("prefetch w_panels") != std::string::npos,
                  on && t.p.co * t.k * 4 >= o.l2_bytes / 2);
      }
    }
  }
}

// A pointwise convolution packed a panel at a time by the panel's first row tile
// (LowerOptions::gemm_first_tile_packs, lower_gemm.cc): that tile reads the input rows in place and
// stores them into the slot, the other row tiles read the slot. Odd shapes, with bias, on SSE,
// AVX2 and AVX-512, against the reference evaluator with the option off and on: 20 output channels
// (a tail row tile) over 16x24 pixels (whole panels); 37 channels on 2 images of 12x20 (240
// pixels: a tail panel of 16 with AVX-512's 32-column panels, packed by its own pass, and one M
// block where there were two); 24 channels over 400 input channels at 8x30 (two K blocks, partial
// sums; a tail panel); 120 channels over 560 at 8x46 (a weight of at least half the cache budget:
// the task's first panel prefetches the next row tile's A panel, `prefetch w_panels`). The kernel
// must differ with the option where a panel is packed a panel at a time, and not where none is
// (15x17 pixels: rows of no whole cache lines; 400 channels at 8x30: more than 32 row tiles share
// each panel, which AVX-512 would otherwise pack by the first tile with its tail panel; a 3x3
// window).
TEST(PackedConv, FirstTilePacksPanels) {
  struct Case {
    PackedCase p;
    bool taken;
  };
  const LowerOptions sse = LowerOptionsForCpuFeatures("");
  for (const Case& t : {Case{{{1, 40, 16, 24}, 20, {1, 1}, 1, 0, 1, true}, true},
                        Case{{{2, 72, 12, 20}, 37, {1, 1}, 1, 0, 1, true}, true},
                        Case{{{1, 400, 8, 30}, 24, {1, 1}, 1, 0, 1, true}, true},
                        Case{{{1, 560, 8, 46}, 120, {1, 1}, 1, 0, 1, true}, true},
                        Case{{{1, 72, 8, 30}, 400, {1, 1}, 1, 0, 1, true}, false},
                        Case{{{1, 72, 15, 17}, 37, {1, 1}, 1, 0, 1, true}, false},
                        Case{{{1, 24, 16, 24}, 20, {3, 3}, 1, 1, 1, true}, false}}) {
    for (const LowerOptions* base : {&sse, &kAvx2, &kAvx512}) {
      std::string kernels[2];
      for (bool on : {false, true}) {
        LowerOptions o = *base;
        o.gemm_first_tile_packs = on;
        o.pointwise_pixel_rows = 0;  // (the channels-first form for every pixel count)
        o.pointwise_pixel_rows_one_panel = 0;
        o.conv_pixel_rows = 0;
        const int64_t mr = GemmRowTile(o, t.p.co);
        GraphBuilder b;
        ir::Node* n = PackedConv(b, t.p, mr, 151);
        ASSERT_NE(n, nullptr);
        SCOPED_TRACE("x " + n->input(0)->type().ToString() + ", co " + std::to_string(t.p.co) + ", NR " +
                     std::to_string(GemmPanelWidth(o)) + (on ? ", on" : ", off"));
        const KernelSpec spec = CheckNodeAgainstReference(*n, 152, 1e-5, 4, o);
        ASSERT_NE(spec.kernel, nullptr);
        kernels[on] = spec.kernel->ToString();
        const int64_t k = t.p.x[1] * t.p.kernel[0] * t.p.kernel[1];
        if (on && t.taken) {
          EXPECT_EQ(kernels[on].find("prefetch w_panels") != std::string::npos, t.p.co * k * 4 >= o.l2_bytes / 2);
        }
      }
      EXPECT_EQ(kernels[0] != kernels[1], t.taken) << "NR " << GemmPanelWidth(*base);
    }
  }
}

// A stem with its weight packed (as keelc packs ResNet's 7x7 stride-2 one): the workspace image's
// vectors read in place by the micro-kernel (LowerOptions::conv_runs_in_place) with the weight's
// row panels as A. 3 -> 64 channels on 2 images to 20x32 and 3 -> 40 (a tail row tile) to 17x48
// (a 16-column tail panel with AVX-512's 32-column panels), with bias; against the reference
// evaluator with the option off and on, on both ISAs: the kernels must differ.
TEST(PackedConv, StemVectorsInPlace) {
  for (const PackedCase& p : {PackedCase{{2, 3, 40, 64}, 64, {7, 7}, 2, 3, 1, true},
                              PackedCase{{1, 3, 34, 96}, 40, {7, 7}, 2, 3, 1, true}}) {
    for (const LowerOptions* base : {&kAvx2, &kAvx512}) {
      std::string kernels[2];
      for (bool on : {false, true}) {
        LowerOptions o = *base;
        o.conv_runs_in_place = on;
        const int64_t mr = GemmRowTile(o, p.co);
        GraphBuilder b;
        ir::Node* n = PackedConv(b, p, mr, 141);
        ASSERT_NE(n, nullptr);
        SCOPED_TRACE("x " + n->input(0)->type().ToString() + ", NR " + std::to_string(GemmPanelWidth(o)) +
                     (on ? ", on" : ", off"));
        ASSERT_NE(ConvPixelRows(o, *n), mr);
        const KernelSpec spec = CheckNodeAgainstReference(*n, 142, 1e-5, 4, o);
        ASSERT_NE(spec.kernel, nullptr);
        kernels[on] = spec.kernel->ToString();
      }
      EXPECT_NE(kernels[0], kernels[1]);
    }
  }
}

// The transposed implicit GEMM of dense convolutions on few pixels (lower_ops.h
// ConvPixelRows): 3x3 stride 2 to a 7x7 image (batch 2: tiles of two output rows
// and a one-row tail on AVX-512), dilation 2 on a 9x10 output (tiles of a whole
// row, or half of one on AVX2), a 1x1 stride 2 (tiles of two 5-pixel rows), 3-D
// (tiles must not cross planes: 5 rows of 6), 1-D with a stride, K blocking (333
// channels x 9 taps), odd channel counts, bias and a fused residual + Relu; both
// ISAs where the output rows allow a tile. The kernel must be this form (its
// origin table and column-panel weight), and shapes it does not take must say so.
TEST(PackedConv, DenseConvPixelRows) {
  struct Case {
    PackedCase p;
    bool avx2;  // AVX2 (at most 6-row tiles) takes it too
  };
  for (const LowerOptions* o : {&kAvx2, &kAvx512}) {
    const int64_t nr = GemmPanelWidth(*o);
    for (const Case& t : {Case{{{2, 13, 14, 14}, 2 * nr, {3, 3}, 2, 1, 1, true}, false},
                          Case{{{1, 5, 11, 12}, nr, {3, 3}, 1, 1, 1, false, 2}, true},
                          Case{{{1, 17, 9, 9}, nr, {1, 1}, 2, 0, 1, true}, true},
                          Case{{{1, 3, 5, 5, 6}, nr, {3, 3, 3}, 1, 1, 1, true}, true},
                          Case{{{2, 7, 20}, nr, {3}, 2, 1, 1, true}, true},
                          Case{{{1, 333, 8, 8}, nr, {3, 3}, 1, 1, 1, false}, true}}) {
      const PackedCase& p = t.p;
      GraphBuilder b;
      ir::Node* n = PackedConv(b, p, nr, 111);
      ASSERT_NE(n, nullptr);
      SCOPED_TRACE("x " + n->input(0)->type().ToString() + ", NR " + std::to_string(nr));
      if (o == &kAvx2 && !t.avx2) {
        EXPECT_EQ(ConvPixelRows(*o, *n), 0);
        continue;
      }
      ASSERT_EQ(ConvPixelRows(*o, *n), nr);
      const KernelSpec spec = CheckNodeAgainstReference(*n, 112, 1e-5, 4, *o);
      ASSERT_NE(spec.kernel, nullptr);
      const std::string text = spec.kernel->ToString();
      EXPECT_NE(text.find("w_columns"), std::string::npos);
      EXPECT_NE(text.find("conv_px_origin"), std::string::npos);
      // K blocks of about gemm_kc_k_apart: K = C x taps above 80.
      EXPECT_EQ(text.find("conv_pxk_cpart") != std::string::npos, p.x[1] * NumElements(p.kernel) > 80);
    }
    GraphBuilder b;
    const PackedCase p{{1, 40, 6, 6}, nr, {3, 3}, 1, 1, 1, true};
    ir::Node* conv = PackedConv(b, p, nr, 113);
    ASSERT_NE(conv, nullptr);
    ASSERT_EQ(ConvPixelRows(*o, *conv), nr);
    ir::Node* f = FuseResidualRelu(b, *conv);
    const KernelSpec spec = CheckNodeAgainstReference(*f, 114, 1e-5, 4, *o);
    ASSERT_NE(spec.kernel, nullptr);
    EXPECT_NE(spec.kernel->ToString().find("conv_px_origin"), std::string::npos);
    // Not taken: output channels not a multiple of NR, more than 784 pixels, output
    // rows of a prime width above the tile (29), and a stride-1 pointwise convolution that
    // PointwisePixelRows leaves (an expansion on more than 64 pixels). (Grouped ones:
    // GroupedConvPixelRows below.)
    GraphBuilder r;
    EXPECT_EQ(ConvPixelRows(*o, *PackedConv(r, {{1, 8, 7, 7}, nr + 1, {3, 3}, 1, 1, 1, false}, nr, 1)), 0);
    EXPECT_EQ(ConvPixelRows(*o, *PackedConv(r, {{1, 8, 30, 30}, nr, {3, 3}, 1, 1, 1, false}, nr, 1)), 0);
    EXPECT_EQ(ConvPixelRows(*o, *PackedConv(r, {{1, 8, 29}, nr, {3}, 1, 1, 1, false}, nr, 1)), 0);
    EXPECT_EQ(ConvPixelRows(*o, *PackedConv(r, {{1, 64, 10, 10}, 4 * nr, {1, 1}, 1, 0, 1, false}, nr, 1)), 0);
  }
}

// Dense convolutions beyond the pixel bound with one panel of output channels
// (LowerOptions::conv_pixel_rows_one_panel: on for AVX-512, off for AVX2, turned on here for
// both): 15 or 17 input channels x 3x3 (K = 135 / 153 >= 4 NR on AVX-512) over 30x30 and, in 2
// images, 35x27 output pixels (row tiles of 10 or 9 and 6 or 3 columns), a bias, against the
// reference evaluator, the kernel the transposed one. Not taken: K = 3 x (4 NR - 1) / 3 < 4 NR,
// two panels, 32x32 outputs (4 KB planes: all NR in one L1 set), the option off.
TEST(PackedConv, DenseConvPixelRowsOnePanelLargeImage) {
  EXPECT_TRUE(kAvx512.conv_pixel_rows_one_panel);
  EXPECT_FALSE(kAvx2.conv_pixel_rows_one_panel);
  for (const LowerOptions* isa : {&kAvx2, &kAvx512}) {
    const int64_t nr = GemmPanelWidth(*isa);
    LowerOptions on = *isa;
    on.conv_pixel_rows_one_panel = true;
    LowerOptions off = on;
    off.conv_pixel_rows_one_panel = false;
    const int64_t c = (4 * nr + 8) / 9;  // K = 9 c >= 4 NR
    for (const PackedCase& p : {PackedCase{{1, c, 30, 30}, nr, {3, 3}, 1, 1, 1, true},
                                PackedCase{{2, c + 2, 37, 29}, nr, {3, 3}, 1, 0, 1, false}}) {
      GraphBuilder b;
      ir::Node* n = PackedConv(b, p, nr, 121);
      ASSERT_NE(n, nullptr);
      SCOPED_TRACE("x " + n->input(0)->type().ToString() + ", NR " + std::to_string(nr));
      ASSERT_EQ(ConvPixelRows(on, *n), nr);
      EXPECT_EQ(ConvPixelRows(off, *n), 0);
      const KernelSpec spec = CheckNodeAgainstReference(*n, 122, 1e-5, 4, on);
      ASSERT_NE(spec.kernel, nullptr);
      const std::string text = spec.kernel->ToString();
      EXPECT_NE(text.find("w_columns"), std::string::npos);
      EXPECT_NE(text.find("conv_px_origin"), std::string::npos);
    }
    GraphBuilder r;
    EXPECT_EQ(ConvPixelRows(on, *PackedConv(r, {{1, (4 * nr - 1) / 3, 30, 30}, nr, {3, 1}, 1, 1, 1, false}, nr, 1)), 0);
    EXPECT_EQ(ConvPixelRows(on, *PackedConv(r, {{1, c, 30, 30}, 2 * nr, {3, 3}, 1, 1, 1, false}, nr, 1)), 0);
    EXPECT_EQ(ConvPixelRows(on, *PackedConv(r, {{1, c, 32, 32}, nr, {3, 3}, 1, 1, 1, false}, nr, 1)), 0);
    EXPECT_EQ(ConvPixelRows(on, *PackedConv(r, {{1, c, 34, 34}, nr, {3, 3}, 1, 0, 1, false}, nr, 1)), 0);
  }
}

// Grouped convolutions of more than one input channel per group with pixels as rows, every group
// a product of one batched GEMM (LowerOptions::grouped_conv_pixel_rows): 2, 3 and 32 groups of 1
// to 16 input channels; each group's output channels a whole panel, two, a half or a quarter
// one (a narrow last panel per group), or a panel and a half; strides 1 and 2, pads 0 and 1,
// dilation 2, batch 2, X read in place (no pads) or through the padded image, and a fused
// residual Add and Relu; both ISAs' tiles, against the reference evaluator. Then the rule:
// depthwise, groups' output channels that are no whole quarter panels, more than 784 pixels, and
// more than 196 with fewer than 16 output channels per group are not taken.
TEST(PackedConv, GroupedConvPixelRows) {
  for (const LowerOptions* o : {&kAvx2, &kAvx512}) {
    const int64_t nr = GemmPanelWidth(*o);
    // {x, co, kernel, stride, pad, group, bias, dilation}; output rows of whole register tiles on
    // both ISAs (AVX2: at most 6 rows, so widths of 3, 4, 6, 8 and 12).
    for (const PackedCase& p : {PackedCase{{1, 6, 6, 6}, 2 * nr, {3, 3}, 1, 1, 2, true},          // Cg 3, a panel each
                                PackedCase{{2, 12, 8, 8}, 3 * nr / 2, {3, 3}, 2, 1, 3, true},     // Cg 4, half panels, batch 2
                                PackedCase{{1, 32, 6, 6}, 8 * nr, {3, 3}, 1, 1, 32, false},       // Cg 1 x 32: quarter panels
                                PackedCase{{1, 96, 12, 12}, 8 * nr, {3, 3}, 1, 1, 32, true},      // Cg 3, quarter panels
                                PackedCase{{1, 64, 8, 8}, 16 * nr, {3, 3}, 2, 1, 32, true},       // Cg 2, half panels, stride 2
                                PackedCase{{1, 32, 12, 12}, 2 * nr, {3, 3}, 1, 2, 2, false, 2},   // Cg 16, dilation 2
                                PackedCase{{1, 16, 8, 8}, 3 * nr, {3, 3}, 1, 0, 2, true},         // Cg 8, 1.5 panels, no pads
                                PackedCase{{1, 24, 6, 6}, 3 * nr, {1, 1}, 1, 0, 3, true},         // pointwise, in place
                                PackedCase{{1, 8, 4, 12}, 2 * nr, {3, 3}, 1, 1, 2, true}}) {       // Cg 4, 4 x 12
      GraphBuilder b;
      ir::Node* n = PackedConv(b, p, nr, 121);
      ASSERT_NE(n, nullptr);
      SCOPED_TRACE("x " + n->input(0)->type().ToString() + ", " + std::to_string(p.co) + " outputs in " +
                   std::to_string(p.group) + " groups, NR " + std::to_string(nr));
      if (p.x[1] == p.group) {  // one input channel per group: the depthwise kernel
        EXPECT_EQ(ConvPixelRows(*o, *n), 0);
        continue;
      }
      ASSERT_EQ(ConvPixelRows(*o, *n), nr);
      const KernelSpec spec = CheckNodeAgainstReference(*n, 122, 1e-5, 4, *o);
      ASSERT_NE(spec.kernel, nullptr);
      const std::string text = spec.kernel->ToString();
      EXPECT_NE(text.find("w_columns"), std::string::npos);
      EXPECT_NE(text.find("conv_px_origin"), std::string::npos);
      EXPECT_NE(text.find("grp"), std::string::npos);
    }
    GraphBuilder b;
    const PackedCase p{{1, 32, 6, 6}, 2 * nr, {3, 3}, 1, 1, 4, true};
    ir::Node* conv = PackedConv(b, p, nr, 123);
    ASSERT_NE(conv, nullptr);
    ASSERT_EQ(ConvPixelRows(*o, *conv), nr);
    ir::Node* f = FuseResidualRelu(b, *conv);
    const KernelSpec spec = CheckNodeAgainstReference(*f, 124, 1e-5, 4, *o);
    ASSERT_NE(spec.kernel, nullptr);
    EXPECT_NE(spec.kernel->ToString().find("conv_px_origin"), std::string::npos);
    GraphBuilder r;
    // Output channels per group: a third of a panel (no whole quarter), one more than a panel.
    EXPECT_EQ(ConvPixelRows(*o, *PackedConv(r, {{1, 8, 6, 6}, 2 * (nr / 3), {3, 3}, 1, 1, 2, false}, nr, 1)), 0);
    EXPECT_EQ(ConvPixelRows(*o, *PackedConv(r, {{1, 8, 6, 6}, 2 * (nr + 1), {3, 3}, 1, 1, 2, false}, nr, 1)), 0);
    // 24 x 24 = 576 pixels: 16 output channels per group take it, 8 not (196 at most: 12 x 12 does);
    // 32 x 32 no.
    EXPECT_EQ(ConvPixelRows(*o, *PackedConv(r, {{1, 8, 24, 24}, 32, {3, 3}, 1, 1, 2, false}, nr, 1)), nr);
    EXPECT_EQ(ConvPixelRows(*o, *PackedConv(r, {{1, 8, 24, 24}, 16, {3, 3}, 1, 1, 2, false}, nr, 1)), 0);
    EXPECT_EQ(ConvPixelRows(*o, *PackedConv(r, {{1, 8, 12, 12}, 16, {3, 3}, 1, 1, 2, false}, nr, 1)), nr);
    EXPECT_EQ(ConvPixelRows(*o, *PackedConv(r, {{1, 8, 32, 32}, 2 * nr, {3, 3}, 1, 1, 2, false}, nr, 1)), 0);
    // Off: the plain implicit GEMM, group by group.
    LowerOptions off = *o;
    off.grouped_conv_pixel_rows = 0;
    EXPECT_EQ(ConvPixelRows(off, *PackedConv(r, {{1, 8, 6, 6}, 2 * nr, {3, 3}, 1, 1, 2, false}, nr, 1)), 0);
  }
}

// A dense convolution in the output-only channels-last form (X NCHW, Y NHWC): pixels as rows
// however many (a stem: each pixel's NR channels one vector store), 3 and 5 input channels,
// batch 2, stride 2 with pads, dilation 2, more pixels than the channels-first bound (784), a
// fused Relu; both ISAs. The same shapes channels-first beyond 784 pixels are not taken, nor
// the form for a pointwise convolution or output channels not a multiple of NR.
TEST(PackedConv, OutputChannelsLastPixelRows) {
  for (const LowerOptions* o : {&kAvx2, &kAvx512}) {
    const int64_t nr = GemmPanelWidth(*o);
    for (const PackedCase& p : {PackedCase{{2, 3, 23, 24}, nr, {3, 3}, 2, 1, 1, true, 1, true},
                                PackedCase{{1, 5, 30, 36}, 2 * nr, {3, 3}, 1, 1, 1, false, 1, true},
                                PackedCase{{1, 3, 17, 18}, nr, {3, 3}, 1, 2, 1, true, 2, true}}) {
      GraphBuilder b;
      ir::Node* n = PackedConv(b, p, nr, 121);
      ASSERT_NE(n, nullptr);
      SCOPED_TRACE("x " + n->input(0)->type().ToString() + ", NR " + std::to_string(nr));
      ASSERT_EQ(ConvPixelRows(*o, *n), nr);
      const KernelSpec spec = CheckNodeAgainstReference(*n, 122, 1e-5, 4, *o);
      ASSERT_NE(spec.kernel, nullptr);
      EXPECT_NE(spec.kernel->ToString().find("conv_px_origin"), std::string::npos);
    }
    GraphBuilder b;
    const PackedCase p{{2, 3, 40, 40}, nr, {3, 3}, 2, 1, 1, true, 1, true};  // 400 pixels an image
    ir::Node* conv = PackedConv(b, p, nr, 123);
    ASSERT_NE(conv, nullptr);
    std::vector<ir::Value*> ins = {conv->input(0), conv->input(1), conv->input(2)};
    const ir::Attributes attrs = conv->attrs();
    ir::Node* f = MakeFused(b.graph(), ins, [&attrs](GraphBuilder& g, const std::vector<ir::Value*>& v) {
      ir::Node* c = g.Op("Conv", {v[0], v[1], v[2]}, attrs);
      return std::vector<ir::Value*>{g.Op("Relu", {c->output(0)})->output(0)};
    });
    const KernelSpec spec = CheckNodeAgainstReference(*f, 124, 1e-5, 4, *o);
    ASSERT_NE(spec.kernel, nullptr);
    EXPECT_NE(spec.kernel->ToString().find("conv_px_origin"), std::string::npos);
    GraphBuilder r;
    EXPECT_EQ(ConvPixelRows(*o, *PackedConv(r, {{1, 5, 30, 36}, 2 * nr, {3, 3}, 1, 1, 1, false}, nr, 1)), 0);
    EXPECT_EQ(ConvPixelRows(*o, *PackedConv(r, {{1, 8, 30, 30}, nr, {1, 1}, 1, 0, 1, false, 1, true}, nr, 1)), 0);
    EXPECT_EQ(ConvPixelRows(*o, *PackedConv(r, {{1, 3, 30, 30}, nr + 1, {3, 3}, 2, 1, 1, false, 1, true}, nr, 1)), 0);
  }
}

// Winograd's U [(m+2)^2, Co, Ci] packed matrix by matrix: odd Co (a short last
// panel), F(2,3) and F(4,3), K blocking, both register tiles; the next row tile's U
// panel prefetched or not (U of 298 KB with 2 or 3 row tiles, of 768 KB over K = 400
// in two K blocks with a row-tile tail, and of 640 KB over 42 tiles).
TEST(PackedConv, WinogradForm) {
  struct Case {
    int64_t n, c, h, w, co, m;
  };
  for (const Case& p : {Case{2, 5, 9, 11, 7, 4}, Case{1, 19, 13, 10, 17, 2}, Case{1, 333, 6, 6, 14, 2},
                        Case{1, 16, 12, 12, 64, 4}, Case{1, 400, 8, 8, 30, 2}, Case{1, 333, 12, 14, 30, 2}}) {
    for (int variant = 0; variant < 4; ++variant) {
      // Each ISA with and without the next row tile's U panel prefetched (gemm_prefetch_a_panels):
      // it must be there exactly where U is at least half the cache budget and has several row tiles.
      LowerOptions o = variant < 2 ? kAvx2 : kAvx512;
      const bool on = variant % 2 == 1;
      o.gemm_prefetch_a_panels = on;
      const int64_t mr = GemmRowTile(o, p.co), nn = (p.m + 2) * (p.m + 2);
      GraphBuilder b;
      auto u = ops::WinogradWeight(*ops::MakeTensorF32({p.co, p.c, 3, 3}, RandomFloats(p.co * p.c * 9, 91)), p.m);
      ASSERT_TRUE(u.ok());
      auto packed = ops::PackWeight(**u, {nn, p.co, p.c}, mr);
      ASSERT_TRUE(packed.ok());
      ir::Attributes a;
      a.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
      a.Set(ops::kWinogradAttr, p.m);
      a.Set(ops::kPackedRowsAttr, mr);
      ir::Node* n = b.Op("Conv", {b.Input("x", {p.n, p.c, p.h, p.w}), b.graph().AddConstant("u", *packed), b.Input("bias", {p.co})}, a);
      ASSERT_NE(n, nullptr);
      SCOPED_TRACE("F(" + std::to_string(p.m) + ",3), Co " + std::to_string(p.co) + ", rows " + std::to_string(mr) +
                   (on ? ", prefetch on" : ", prefetch off"));
      const KernelSpec spec = CheckNodeAgainstReference(*n, 92, 1e-5, 4, o);
      ASSERT_NE(spec.kernel, nullptr);
      EXPECT_NE(spec.kernel->ToString().find("u_panels"), std::string::npos);
      // (A product of at most half a panel of tiles has only the tail panel's narrow tiles, which
      // prefetch nothing: 9 and 16 tiles with AVX-512's 32 lanes.)
      const int64_t tiles = p.n * ((p.h + p.m - 1) / p.m) * ((p.w + p.m - 1) / p.m), nr = GemmPanelWidth(o);
      const bool prefetched = on && nn * p.co * p.c * 4 >= o.l2_bytes / 2 && (p.co + mr - 1) / mr > 1 &&
                              (tiles >= nr || 2 * tiles > nr);
      EXPECT_EQ(spec.kernel->ToString().find("prefetch u_panels") != std::string::npos, prefetched);
    }
  }
}

TEST(PackedConv, DepthwiseAndMalformedAreRefused) {
  // Depthwise: a direct kernel, no GEMM to read panels.
  GraphBuilder b;
  ir::Attributes a;
  a.Set("group", int64_t{4});
  a.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.Set(ops::kPackedRowsAttr, int64_t{6});
  ir::Node* n = b.Op("Conv", {b.Input("x", {1, 4, 8, 8}), b.Input("w", {4, 1, 3, 3})}, a);
  ASSERT_NE(n, nullptr);
  auto spec = LowerNodeToKernel(*n, 0, kAvx2);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("depthwise"), std::string::npos) << spec.status().ToString();
  // A weight whose size disagrees with the matrices it is said to be.
  auto w = ops::MakeTensorF32({4, 3}, RandomFloats(12, 1));
  auto bad = ops::PackWeight(*w, {1, 5, 3}, 6);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("packed weight"), std::string::npos);
  EXPECT_FALSE(ops::PackWeight(*w, {1, 4, 3}, 0).ok());
}

}  // namespace
}  // namespace keel::codegen::testing
