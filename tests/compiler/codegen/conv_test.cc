// Conv2d: implicit GEMM (groups, strides, pads, dilations, 1x1 pointwise, batch > 1,
// odd sizes; default and AVX-512 register tiles; padded-image im2col with
// contiguous and gathered panels) and the direct depthwise kernel (channel
// multiplier 1 and 2; its CPU row form, one row or blocks of rows per
// iteration, heights not a multiple of the block, and its GPU run-of-outputs
// form, which grouped and few-output convolutions take on a GPU too); the plane kernel for wide
// windows on AVX-512; bands of output rows; B packed a
// panel at a time; a pointwise convolution's input read in place; strided runs from column
// phases; full panels read in place from the workspace image a vector at a time.
#include <gtest/gtest.h>

#include "compiler/codegen/lower_conv_direct.h"
#include "compiler/codegen/lower_ops.h"
#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

struct ConvCase {
  int64_t n, c, h, w, co, kh, kw, stride, pad, dil, group;
  bool bias;
};

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

LowerOptions GpuDirectConv() {
  LowerOptions o;
  o.gpu_direct_conv = true;
  return o;
}

bool TakesGpuDirectForm(const ConvCase& p) { return p.group > 1 || GpuDirectDenseConv(p.group, p.co); }

ir::Attributes ConvAttrs(const ConvCase& p) {
  ir::Attributes a;
  a.Set("strides", std::vector<int64_t>{p.stride, p.stride});
  a.Set("pads", std::vector<int64_t>{p.pad, p.pad, p.pad, p.pad});
  a.Set("dilations", std::vector<int64_t>{p.dil, p.dil});
  a.Set("group", p.group);
  return a;
}

TEST_P(ConvTest, MatchesReference) {
  const ConvCase p = GetParam();
  GraphBuilder b;
  ir::Value* x = b.Input("x", {p.n, p.c, p.h, p.w});
  ir::Value* w = b.Input("w", {p.co, p.c / p.group, p.kh, p.kw});
  std::vector<ir::Value*> ins = {x, w};
  if (p.bias) ins.push_back(b.Input("bias", {p.co}));
  ir::Attributes a = ConvAttrs(p);
  ir::Node* n = b.Op("Conv", ins, a);
  ASSERT_NE(n, nullptr);
  CheckNodeAgainstReference(*n, 31);
  // The AVX-512 lowering: 12- or 8-row x 32-column register tiles, tail row tiles.
  CheckNodeAgainstReference(*n, 31, 1e-5, 4, LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f"));
  // The GPU form of depthwise, grouped and few-output convolutions (a run of outputs per
  // iteration): the kernel IR is device-neutral, so the CPU back end checks it too.
  if (TakesGpuDirectForm(p)) CheckNodeAgainstReference(*n, 31, 1e-5, 4, GpuDirectConv());
  // The CPU depthwise row kernel one row per iteration, in blocks of 3 rows (the default
  // is 4), and in the AVX-512 options' blocks of 8 (the last block overlapping the one before it
  // where 8 does not divide the height), with the plane kernel off (by default it takes outputs
  // up to 32 wide).
  for (int64_t rows : {1, 3, 8}) {
    if (p.c / p.group != 1) break;
    LowerOptions o = rows == 8 ? LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f") : LowerOptions{};
    o.depthwise_rows = rows;
    o.depthwise_plane_width = 0;
    CheckNodeAgainstReference(*n, 31, 1e-5, 4, o);
  }
  // The plane kernel on every depthwise case whose padded plane fits its buffer, also with
  // the AVX-512 options.
  if (p.c / p.group == 1) {
    for (LowerOptions o : {LowerOptions{}, LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f")}) {
      o.depthwise_plane_width = 1 << 20;
      DepthwiseGeom2D g;
      g.H = p.h; g.W = p.w; g.KH = p.kh; g.KW = p.kw; g.sh = g.sw = p.stride; g.dh = g.dw = p.dil;
      g.OH = n->output(0)->type().shape[2];
      g.OW = n->output(0)->type().shape[3];
      if (!DepthwisePlaneApplies(o, g)) continue;
      CheckNodeAgainstReference(*n, 31, 1e-5, 4, o);
    }
  }
}

// Wide windows on AVX-512 (LowerOptions::depthwise_plane_wide_window_width): depthwise
// convolutions whose window has at least 5 columns take the plane kernel ("dwp_plane") up to
// 64 outputs wide, others up to 32 (depthwise_plane_width), and AVX2 keeps 32 for every window.
// Odd shapes: 7x7 on 45x45 with a bias, 5x5 with dilation 2 on 2 images of 30x68 (64 wide), 7x7
// on 70x70 (too wide), 3x3 on 45x45 (too narrow a window); each against the reference evaluator.
TEST(ConvPlane, WideWindowsTakeThePlaneKernelOnAvx512) {
  struct Case {
    ConvCase conv;
    bool plane_avx512;
  };
  for (const Case& t : {Case{{1, 5, 45, 45, 5, 7, 7, 1, 3, 1, 5, true}, true},
                        Case{{2, 3, 30, 68, 3, 5, 5, 1, 2, 2, 3, false}, true},
                        Case{{1, 2, 70, 70, 2, 7, 7, 1, 3, 1, 2, true}, false},
                        Case{{1, 4, 45, 45, 4, 3, 3, 1, 1, 1, 4, true}, false}}) {
    const ConvCase& p = t.conv;
    GraphBuilder b;
    std::vector<ir::Value*> ins{b.Input("x", {p.n, p.c, p.h, p.w}), b.Input("w", {p.co, 1, p.kh, p.kw})};
    if (p.bias) ins.push_back(b.Input("bias", {p.co}));
    ir::Node* n = b.Op("Conv", ins, ConvAttrs(p));
    ASSERT_NE(n, nullptr);
    SCOPED_TRACE(n->input(0)->type().ToString() + " " + std::to_string(p.kh) + "x" + std::to_string(p.kw));
    for (const bool avx512 : {false, true}) {
      const LowerOptions o = LowerOptionsForCpuFeatures(avx512 ? "+avx2,+fma,+avx512f" : "+avx2,+fma");
      const KernelSpec spec = CheckNodeAgainstReference(*n, 47, 1e-5, 4, o);
      ASSERT_NE(spec.kernel, nullptr);
      EXPECT_EQ(spec.kernel->ToString().find("dwp_plane") != std::string::npos, avx512 && t.plane_avx512)
          << (avx512 ? "AVX-512" : "AVX2");
    }
  }
}

// Output-row bands (LowerOptions::conv_row_band_bytes, lower_conv.cc RowBands): a stem-like
// convolution (3 channels, 3x3 stride 2 pad 1, odd Co, 2 images and a bias) whose image and
// output overflow a small budget runs as bands of whole panels, each filling only the image
// rows it reads: 24 output rows of 32 columns in 12 bands of 2 (16-column panels) or 6 bands of
// 4 (AVX-512's 32-column panels). The banded kernel's workspace holds one band's image rows,
// so it is smaller than the unbanded one's; the outputs match the reference either way.
TEST(ConvBands, StemLikeBandsMatchReference) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 3, 48, 64});
  ir::Value* w = b.Input("w", {5, 3, 3, 3});
  ir::Value* bias = b.Input("bias", {5});
  ir::Attributes a = ConvAttrs(ConvCase{2, 3, 48, 64, 5, 3, 3, 2, 1, 1, 1, true});
  ir::Node* n = b.Op("Conv", {x, w, bias}, a);
  ASSERT_NE(n, nullptr);
  for (LowerOptions o : {LowerOptions{}, LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f")}) {
    o.conv_row_band_bytes = 0;
    const KernelSpec whole = CheckNodeAgainstReference(*n, 41, 1e-5, 4, o);
    o.conv_row_band_bytes = o.gemm_nr == 32 ? 10000 : 6000;
    const KernelSpec banded = CheckNodeAgainstReference(*n, 41, 1e-5, 4, o);
    EXPECT_LT(banded.workspace_bytes, whole.workspace_bytes) << "gemm_nr " << o.gemm_nr;
  }
}

// A panel at a time (LowerOptions::gemm_panel_at_a_time, lower_gemm.cc): each B panel packed
// into the task's one slot right before every row tile runs on it. Odd shapes: 19 output
// channels (a tail row tile with 6-, 8- and 12-row tiles), a 7x7 stride-2 window on 61x63 (31 x 32
// outputs: 62 or 31 panels, several per task), 2 images; 5 channels (K = 245, one K block) and 8
// (K = 392: two K blocks, the partial sums reloaded per panel). Both forms match the reference;
// the packed B then holds a panel per task instead of all of B (a smaller workspace). On 61x65
// (31 x 33 outputs, a ragged N) the option changes nothing: the tasks keep their panels.
TEST(ConvPanels, PanelAtATimeMatchesReference) {
  for (int64_t c : {5, 8}) {
    for (int64_t w : {63, 65}) {
      GraphBuilder b;
      ir::Value* x = b.Input("x", {2, c, 61, w});
      ir::Value* wt = b.Input("w", {19, c, 7, 7});
      ir::Value* bias = b.Input("bias", {19});
      ir::Node* n = b.Op("Conv", {x, wt, bias}, ConvAttrs(ConvCase{2, c, 61, w, 19, 7, 7, 2, 3, 1, 1, true}));
      ASSERT_NE(n, nullptr);
      for (LowerOptions o : {LowerOptions{}, LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f")}) {
        o.conv_runs_in_place = false;  // (rows of 32 would be read in place, nothing packed)
        o.gemm_panel_at_a_time = false;
        const KernelSpec tasks = CheckNodeAgainstReference(*n, 43, 1e-5, 4, o);
        o.gemm_panel_at_a_time = true;
        const KernelSpec panels = CheckNodeAgainstReference(*n, 43, 1e-5, 4, o);
        if (w == 63) {
          EXPECT_LT(panels.workspace_bytes, tasks.workspace_bytes) << "C " << c << ", gemm_nr " << o.gemm_nr;
        } else {
          EXPECT_EQ(panels.workspace_bytes, tasks.workspace_bytes) << "C " << c << ", gemm_nr " << o.gemm_nr;
        }
      }
    }
  }
}

// Column phases (LowerOptions::conv_column_phases, lower_conv.cc ImplicitGemmConv): a last-dim
// stride of 2..4 copies the padded image as `stride` column phases, so that the packing's runs
// read consecutive elements. Odd shapes: a 7x7 stride-2 stem-like window on 2 images of 45x67
// (padded rows of 73: phases of 37 and 36 columns) with 19 output channels and a bias, stride 3
// with dilation 2 and 2 groups, a 4x4 stride-4 patchify without padding, 1-D stride 2 and 3-D
// stride 2; each with the option off and on, on both ISAs, against the reference evaluator, and
// the kernel must differ (its fill and tables). Stride 1 (no phases) and stride 5 (gathered,
// not run by run) give the same kernel either way.
TEST(ConvPhases, StridedRunsFromColumnPhases) {
  struct Case {
    std::vector<int64_t> x, w;
    int64_t stride, pad, dil, group;
    bool phased;
  };
  const std::vector<Case> cases = {
      {{2, 3, 45, 67}, {19, 3, 7, 7}, 2, 3, 1, 1, true},    {{1, 8, 40, 53}, {12, 4, 3, 3}, 3, 2, 2, 2, true},
      {{1, 3, 36, 44}, {24, 3, 4, 4}, 4, 0, 1, 1, true},    {{2, 5, 301}, {7, 5, 5}, 2, 2, 1, 1, true},
      {{1, 3, 9, 20, 70}, {6, 3, 3, 3, 3}, 2, 1, 1, 1, true}, {{1, 4, 30, 70}, {9, 4, 3, 3}, 1, 1, 1, 1, false},
      {{1, 4, 30, 200}, {9, 4, 3, 3}, 5, 1, 1, 1, false}};
  for (const Case& t : cases) {
    const size_t sp = t.x.size() - 2;
    GraphBuilder b;
    ir::Value* x = b.Input("x", t.x);
    ir::Value* w = b.Input("w", t.w);
    ir::Value* bias = b.Input("bias", {t.w[0]});
    ir::Attributes a;
    a.Set("strides", std::vector<int64_t>(sp, t.stride));
    a.Set("pads", std::vector<int64_t>(2 * sp, t.pad));
    a.Set("dilations", std::vector<int64_t>(sp, t.dil));
    a.Set("group", t.group);
    ir::Node* n = b.Op("Conv", {x, w, bias}, a);
    ASSERT_NE(n, nullptr);
    for (LowerOptions o : {LowerOptions{}, LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f")}) {
      SCOPED_TRACE("x " + n->input(0)->type().ToString() + ", stride " + std::to_string(t.stride) + ", gemm_nr " +
                   std::to_string(o.gemm_nr));
      o.conv_column_phases = false;
      const KernelSpec plain = CheckNodeAgainstReference(*n, 45, 1e-5, 4, o);
      o.conv_column_phases = true;
      const KernelSpec phased = CheckNodeAgainstReference(*n, 45, 1e-5, 4, o);
      ASSERT_NE(plain.kernel, nullptr);
      ASSERT_NE(phased.kernel, nullptr);
      EXPECT_EQ(plain.kernel->ToString() != phased.kernel->ToString(), t.phased);
    }
  }
}

// Full panels read in place a vector at a time (LowerOptions::conv_runs_in_place, lower_conv.cc
// ImplicitGemmConv, GemmOperands::b_vector): where the runs are unit-stride (column phases, or
// stride 1) and the output rows are whole vectors (NR / 2 columns: 4 with SSE, 8 with AVX2, 16
// with AVX-512), the micro-kernel reads the workspace image itself and packs only a tail panel.
// Odd shapes: a 7x7 stride-2 stem-like window on 2 images with 19 output channels and a bias
// (rows of 32), rows of 48 (a 16-column tail panel with 32-column panels), stride 1, a 4x4
// stride-4 patchify (rows of 16), stride 2 with 2 groups, 1-D, rows of 24 (whole vectors but with
// AVX-512), rows of 30 (with none) and 8 channels (K = 392: two K blocks, partial sums); each
// with the option off and on, on SSE, AVX2 and AVX-512, against the reference evaluator. Where it
// applies the kernel differs and its workspace is smaller (no packed panels but a tail);
// elsewhere (rows of 30 or of 24 on AVX-512, or strided runs without column phases) the kernel
// is the same.
TEST(ConvRunsInPlace, VectorsReadFromTheImage) {
  struct Case {
    std::vector<int64_t> x, w;
    int64_t stride, pad, group;
    int64_t out_width;
  };
  const std::vector<Case> cases = {
      {{2, 3, 30, 64}, {19, 3, 7, 7}, 2, 3, 1, 32}, {{1, 3, 26, 96}, {10, 3, 7, 7}, 2, 3, 1, 48},
      {{1, 4, 20, 64}, {9, 4, 3, 3}, 1, 1, 1, 64},  {{1, 3, 36, 64}, {24, 3, 4, 4}, 4, 0, 1, 16},
      {{1, 8, 40, 64}, {12, 4, 3, 3}, 2, 1, 2, 32}, {{2, 5, 128}, {7, 5, 5}, 2, 2, 1, 64},
      {{1, 3, 48, 48}, {11, 3, 3, 3}, 2, 1, 1, 24}, {{1, 3, 30, 60}, {19, 3, 7, 7}, 2, 3, 1, 30},
      {{1, 8, 24, 64}, {6, 8, 7, 7}, 2, 3, 1, 32}};
  for (const Case& t : cases) {
    const size_t sp = t.x.size() - 2;
    GraphBuilder b;
    ir::Node* n = b.Op("Conv", {b.Input("x", t.x), b.Input("w", t.w), b.Input("bias", {t.w[0]})},
                       Attrs({{"strides", std::vector<int64_t>(sp, t.stride)},
                              {"pads", std::vector<int64_t>(2 * sp, t.pad)},
                              {"group", t.group}}));
    ASSERT_NE(n, nullptr);
    ASSERT_EQ(n->output(0)->type().shape.back(), t.out_width);
    for (bool phases : {true, false}) {
      for (LowerOptions o : {LowerOptionsForCpuFeatures("+sse4.2"), LowerOptionsForCpuFeatures("+avx2,+fma"),
                             LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f")}) {
        SCOPED_TRACE("x " + n->input(0)->type().ToString() + ", stride " + std::to_string(t.stride) + ", NR " +
                     std::to_string(o.gemm_nr) + (phases ? "" : ", no column phases"));
        o.conv_column_phases = phases;
        o.conv_runs_in_place = false;
        const KernelSpec packed = CheckNodeAgainstReference(*n, 49, 1e-5, 4, o);
        o.conv_runs_in_place = true;
        const KernelSpec in_place = CheckNodeAgainstReference(*n, 49, 1e-5, 4, o);
        ASSERT_NE(packed.kernel, nullptr);
        ASSERT_NE(in_place.kernel, nullptr);
        const bool applies = (phases || t.stride == 1) && t.out_width % (o.gemm_nr / 2) == 0;
        EXPECT_EQ(packed.kernel->ToString() != in_place.kernel->ToString(), applies);
        if (applies) {
          EXPECT_LT(in_place.workspace_bytes, packed.workspace_bytes);
        }
      }
    }
  }
}

// Pointwise convolutions whose input the GEMM reads in place (LowerOptions::gemm_b_in_place_rows,
// lower_gemm.cc): full panels straight from X, a tail panel packed. Pixels in whole panels
// (16x16 with 16- and 32-column panels) under one row tile, with a tail (17x19), 2 images, 2
// groups, 1-D, odd channel counts (tail row tiles), bias; at least 8 panels, so that the tasks
// keep one M block (fewer panels split the rows between tasks, which then pack B). Both forms
// match the reference, and the in-place one's workspace holds at most the tail panel. Packed
// still: K = 300 (one row tile: 300 > 256), and whole panels under several row tiles (packed a
// panel at a time, kept in L1 for all of them).
TEST(ConvInPlace, PointwiseInputReadInPlace) {
  struct Case {
    ConvCase p;
    bool in_place;
  };
  for (const Case& c : {Case{{2, 16, 16, 16, 5, 1, 1, 1, 0, 1, 1, true}, true},
                        Case{{1, 13, 17, 19, 10, 1, 1, 1, 0, 1, 1, false}, true},
                        Case{{1, 12, 17, 19, 10, 1, 1, 1, 0, 1, 2, true}, true},
                        Case{{1, 300, 16, 16, 4, 1, 1, 1, 0, 1, 1, false}, false},
                        Case{{1, 16, 16, 16, 19, 1, 1, 1, 0, 1, 1, false}, false}}) {
    const ConvCase& p = c.p;
    GraphBuilder b;
    std::vector<ir::Value*> ins = {b.Input("x", {p.n, p.c, p.h, p.w}), b.Input("w", {p.co, p.c / p.group, 1, 1})};
    if (p.bias) ins.push_back(b.Input("bias", {p.co}));
    ir::Node* n = b.Op("Conv", ins, ConvAttrs(p));
    ASSERT_NE(n, nullptr);
    for (LowerOptions o : {LowerOptionsForCpuFeatures("+avx2,+fma"), LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f")}) {
      SCOPED_TRACE("C " + std::to_string(p.c) + ", Co " + std::to_string(p.co) + ", " + std::to_string(p.h) + "x" +
                   std::to_string(p.w) + ", NR " + std::to_string(o.gemm_nr));
      o.gemm_b_in_place_rows = 0;
      const KernelSpec packed = CheckNodeAgainstReference(*n, 47, 1e-5, 4, o);
      o.gemm_b_in_place_rows = 256;
      const KernelSpec in_place = CheckNodeAgainstReference(*n, 47, 1e-5, 4, o);
      if (!c.in_place) {
        EXPECT_EQ(in_place.workspace_bytes, packed.workspace_bytes);
      } else {
        EXPECT_LT(in_place.workspace_bytes, packed.workspace_bytes);
        EXPECT_EQ(in_place.workspace_bytes == 0, p.h * p.w % o.gemm_nr == 0);
      }
    }
  }
  // 1-D, with a tail panel.
  GraphBuilder b;
  ir::Attributes a;
  a.Set("strides", std::vector<int64_t>{1});
  a.Set("pads", std::vector<int64_t>{0, 0});
  ir::Node* n = b.Op("Conv", {b.Input("x", {1, 7, 301}), b.Input("w", {5, 7, 1})}, a);
  ASSERT_NE(n, nullptr);
  CheckNodeAgainstReference(*n, 48, 1e-5, 4, LowerOptionsForCpuFeatures("+avx2,+fma"));
  CheckNodeAgainstReference(*n, 48, 1e-5, 4, LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f"));
}

// Strided 1x1 convolutions without padding run as the stride-1 one over a compact copy of the
// pixels they read (LowerOptions::conv_subsample_bytes, lower_conv.cc): odd extents, 2
// images, 2 groups, stride 3, a tail panel (17x15 pixels), 1-D and 3-D, bias; with the option
// on and off against the reference, and another workspace with it (the compact image: smaller
// than the whole image's copy, where the in-place form makes one).
TEST(ConvCompact, StridedPointwiseOverCompactImage) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{2, 5, 9, 11}, {2, 2}}, {{1, 7, 34, 30}, {2, 2}}, {{1, 6, 13, 13}, {3, 3}}, {{1, 4, 10, 9}, {2, 3}},
      {{1, 7, 301}, {3}}, {{1, 3, 5, 6, 7}, {2, 2, 2}}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<int64_t>& xs = cases[i].first;
    const std::vector<int64_t>& s = cases[i].second;
    const int64_t group = i == 2 ? 2 : 1, co = i == 1 ? 9 : 6;
    GraphBuilder b;
    std::vector<int64_t> ws = {co, xs[1] / group};
    for (size_t d = 2; d < xs.size(); ++d) ws.push_back(1);
    std::vector<ir::Value*> ins = {b.Input("x", xs), b.Input("w", ws)};
    if (i % 2 == 0) ins.push_back(b.Input("bias", {co}));
    ir::Attributes a;
    a.Set("strides", s);
    a.Set("pads", std::vector<int64_t>(2 * s.size(), 0));
    a.Set("group", group);
    ir::Node* n = b.Op("Conv", ins, a);
    ASSERT_NE(n, nullptr);
    for (LowerOptions o : {LowerOptionsForCpuFeatures("+avx2,+fma"), LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f")}) {
      SCOPED_TRACE("x " + n->input(0)->type().ToString() + ", NR " + std::to_string(o.gemm_nr));
      o.conv_subsample_bytes = 0;
      const KernelSpec in_place = CheckNodeAgainstReference(*n, 49, 1e-5, 4, o);
      o.conv_subsample_bytes = 1;  // any image
      const KernelSpec compact = CheckNodeAgainstReference(*n, 49, 1e-5, 4, o);
      ASSERT_NE(compact.kernel, nullptr);
      EXPECT_NE(compact.workspace_bytes, in_place.workspace_bytes);
      const std::vector<int64_t>& ys = n->output(0)->type().shape;
      if (NumElements(std::vector<int64_t>(ys.begin() + 2, ys.end())) >= o.gemm_nr) {
        EXPECT_LT(compact.workspace_bytes, in_place.workspace_bytes);
      }
    }
  }
}

// The channels-last form (compiler/ops/channels_last.h): X [N,H,W,C], W [Co,kh,kw,C/g],
// Y [N,H',W',Co], lowered as its channels-first twin reading and writing through the
// permutation; the reference moves the data back and convolves channels-first.
TEST_P(ConvTest, ChannelsLastMatchesReference) {
  const ConvCase p = GetParam();
  GraphBuilder b;
  ir::Value* x = b.Input("x", {p.n, p.h, p.w, p.c});
  ir::Value* w = b.Input("w", {p.co, p.kh, p.kw, p.c / p.group});
  std::vector<ir::Value*> ins = {x, w};
  if (p.bias) ins.push_back(b.Input("bias", {p.co}));
  ir::Attributes a = ConvAttrs(p);
  a.Set("keel.channels_last", int64_t{1});
  ir::Node* n = b.Op("Conv", ins, a);
  ASSERT_NE(n, nullptr);
  const int64_t oh = (p.h + 2 * p.pad - p.dil * (p.kh - 1) - 1) / p.stride + 1;
  const int64_t ow = (p.w + 2 * p.pad - p.dil * (p.kw - 1) - 1) / p.stride + 1;
  EXPECT_EQ(n->output(0)->type().shape, (std::vector<int64_t>{p.n, oh, ow, p.co}));
  CheckNodeAgainstReference(*n, 37);
  // Channels innermost in the GPU form's iteration order.
  if (TakesGpuDirectForm(p)) CheckNodeAgainstReference(*n, 37, 1e-5, 4, GpuDirectConv());
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTest,
    ::testing::Values(ConvCase{1, 3, 17, 19, 8, 3, 3, 1, 1, 1, 1, true},     // odd spatial, small C
                      ConvCase{2, 8, 9, 9, 13, 3, 3, 2, 1, 1, 1, true},      // batch, stride 2, odd Co
                      ConvCase{1, 16, 8, 8, 32, 1, 1, 1, 0, 1, 1, false},    // pointwise
                      ConvCase{1, 3, 23, 23, 8, 7, 7, 2, 3, 1, 1, true},     // resnet stem-like
                      ConvCase{1, 8, 11, 11, 8, 3, 3, 1, 2, 2, 1, true},     // dilation
                      ConvCase{1, 8, 10, 10, 12, 3, 3, 1, 1, 1, 4, true},    // grouped
                      ConvCase{1, 40, 12, 12, 24, 3, 3, 1, 1, 1, 1, false},  // K = 360 > 320: K blocking
                      ConvCase{1, 16, 20, 40, 20, 3, 3, 1, 1, 1, 1, true},   // wide rows: contiguous panels; M tail
                      ConvCase{1, 8, 34, 34, 64, 3, 3, 1, 0, 1, 1, false},   // no padding: direct reads, M = 64
                      ConvCase{1, 16, 14, 14, 24, 1, 1, 2, 0, 1, 1, false},  // 1x1 stride 2 (downsample)
                      ConvCase{1, 16, 13, 13, 16, 3, 3, 1, 1, 1, 16, true},  // depthwise
                      ConvCase{2, 8, 14, 15, 8, 3, 3, 2, 1, 1, 8, true},     // depthwise stride 2
                      ConvCase{1, 4, 9, 9, 8, 5, 5, 1, 2, 1, 4, false},      // depthwise multiplier 2
                      ConvCase{1, 8, 20, 70, 8, 3, 3, 2, 1, 1, 8, true},     // depthwise wide rows, stride 2
                      ConvCase{1, 8, 12, 40, 8, 3, 3, 1, 2, 2, 8, false},    // depthwise dilation 2
                      ConvCase{2, 12, 9, 11, 12, 7, 7, 1, 3, 1, 12, true},   // depthwise 7x7 (ConvNeXt's)
                      ConvCase{1, 3, 21, 36, 3, 7, 7, 1, 3, 1, 3, true},     // 7x7 on rows of 36: 3 blocks of 8
                      // Depthwise 1x11, pad 5: five border columns a side (the guarded loop, not
                      // unrolled border columns) and rows whose whole window is padding.
                      ConvCase{1, 6, 9, 30, 6, 1, 11, 1, 5, 1, 6, true},
                      // Depthwise with 3 output rows: fewer than a block of rows (one block of 3).
                      ConvCase{1, 6, 3, 20, 6, 3, 3, 1, 1, 1, 6, true},
                      // Depthwise stride 2, odd width: a right border column of its own.
                      ConvCase{1, 5, 7, 16, 5, 3, 3, 2, 1, 1, 5, false},
                      // MnasNet's last stage: 5x5 pad 2 on 7x7 (a 3-column interior), stride 1
                      // and stride 2 from an odd 15x15; ConvNeXt's 7x7 pad 3 on 7x7 (1 column).
                      ConvCase{2, 7, 7, 7, 7, 5, 5, 1, 2, 1, 7, true},
                      ConvCase{1, 9, 15, 15, 9, 5, 5, 2, 2, 1, 9, true},
                      ConvCase{1, 5, 7, 7, 5, 7, 7, 1, 3, 1, 5, false},
                      // Plane kernel with stride 2 and dilation 2 (taps in other phases), and a
                      // non-square odd plane with multiplier 3.
                      ConvCase{1, 4, 13, 11, 4, 3, 3, 2, 2, 2, 4, true},
                      ConvCase{1, 3, 6, 19, 9, 3, 3, 1, 1, 1, 3, true},
                      // Plane kernel rows of vector chunks (copies and stores), the last chunk
                      // overlapping the one before: a 19-wide output at stride 2 (MobileNetV2's
                      // downsampling shape), a 20-wide one at stride 1.
                      ConvCase{1, 6, 40, 37, 6, 3, 3, 2, 1, 1, 6, true},
                      ConvCase{1, 4, 18, 20, 4, 3, 3, 1, 1, 1, 4, false},
                      // Plane kernel rows sharing their zero columns (a phase pitch below the
                      // padded width): 5x5 stride 2 from 14x14 (pitch 8 for 9), multiplier 2
                      // on a 9x7 image (9 for 11), dilation 2 (9 for 11).
                      ConvCase{1, 5, 14, 14, 5, 5, 5, 2, 2, 1, 5, true},
                      ConvCase{1, 4, 9, 7, 8, 5, 5, 1, 2, 1, 4, true},
                      ConvCase{1, 3, 7, 7, 3, 3, 3, 1, 2, 2, 3, false},
                      // Plane kernel copying 4 small planes per iteration: 2 images x 9 output
                      // channels (multiplier 3) = 18 planes, so the last iteration repeats
                      // its last plane; 5 planes of a 5x5 on 6x5 (4, then the last one 4 times).
                      ConvCase{2, 3, 7, 7, 9, 5, 5, 1, 2, 1, 3, true},
                      ConvCase{1, 5, 6, 5, 5, 5, 5, 1, 2, 1, 5, false},
                      // Row-offset table with image and group folded in: direct gathers (stride 5,
                      // no padding) over 2 images x 2 groups, and K = 7 * 5 * 5 = 175 rows of odd taps.
                      ConvCase{2, 14, 17, 17, 6, 5, 5, 5, 0, 1, 2, true},
                      // ResNeXt's grouped 3x3 (4 channels per group), stride 2, odd plane.
                      ConvCase{1, 32, 9, 9, 32, 3, 3, 2, 1, 1, 8, true},
                      // Dilated odd kernel with K blocking (K = 36 * 3 * 3 = 324 > 320), 2 images.
                      ConvCase{2, 36, 11, 9, 10, 3, 3, 1, 2, 2, 1, false},
                      // Dense, to few output channels (a segmentation or depth head): the GPU direct form.
                      ConvCase{2, 16, 9, 11, 2, 1, 1, 1, 0, 1, 1, true},
                      ConvCase{1, 5, 7, 9, 3, 3, 3, 1, 1, 1, 1, false},
                      ConvCase{2, 9, 10, 13, 1, 3, 3, 2, 1, 2, 1, true}));

// ConvTranspose: the CPU's implicit GEMM over the scattered image and the GPU's
// one-output-per-iteration gather (LowerOptions::gpu_direct_conv), both against
// the reference: strides with output padding and asymmetric pads, groups with
// dilation, 1-D with an output shape, a UNet's 2x2 stride-2 upsampling.
TEST(ConvTranspose, CpuAndGpuFormsMatchReference) {
  struct Case {
    std::vector<int64_t> x, w;
    bool bias;
    ir::Attributes attrs;
  };
  const std::vector<Case> cases = {
      {{1, 3, 5, 6}, {3, 4, 3, 3}, true,
       Attrs({{"strides", std::vector<int64_t>{2, 3}}, {"output_padding", std::vector<int64_t>{1, 2}},
              {"pads", std::vector<int64_t>{1, 0, 0, 1}}})},
      {{2, 4, 4, 5}, {4, 3, 2, 3}, false,
       Attrs({{"group", int64_t{2}}, {"dilations", std::vector<int64_t>{2, 1}}, {"strides", std::vector<int64_t>{2, 1}}})},
      {{1, 2, 7}, {2, 3, 4}, false,
       Attrs({{"strides", std::vector<int64_t>{2}}, {"output_shape", std::vector<int64_t>{16}}})},
      {{1, 8, 6, 6}, {8, 4, 2, 2}, true, Attrs({{"strides", std::vector<int64_t>{2, 2}}})},
  };
  uint32_t seed = 60;
  for (const Case& c : cases) {
    GraphBuilder b;
    std::vector<ir::Value*> ins = {b.Input("x", c.x), b.Input("w", c.w)};
    if (c.bias) ins.push_back(b.Input("bias", {c.w[1] * c.attrs.GetInt("group", 1).value()}));
    ir::Node* n = b.Op("ConvTranspose", ins, c.attrs);
    ASSERT_NE(n, nullptr);
    CheckNodeAgainstReference(*n, seed);
    CheckNodeAgainstReference(*n, seed, 1e-5, 4, GpuDirectConv());
    ++seed;
  }
}

}  // namespace
}  // namespace keel::codegen::testing
