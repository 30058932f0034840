// Conv in Winograd form (compiler/ops/winograd.h, lower_winograd.cc) against
// the reference evaluator (the plain convolution with the weight taken back):
// F(2,3) and F(4,3), output sizes not multiples of the tile (partial tiles at
// the right and bottom), padding 0/1/2 and asymmetric, channel counts that are
// not multiples of the vector width, batch 2, fewer tiles than lanes, K
// blocking, bias, and fused relu / clip / residual epilogues; default (AVX2)
// and AVX-512 register tiles; a deterministic lowering; three parallel regions.
// In bands (LowerOptions::winograd_band_panels): tile counts that bands of
// balanced sizes split unevenly into panels, partial tiles inside the last
// bands, batch 2, K blocking (partial sums per band), a fused residual; one
// parallel region. Full tiles' outputs through a register transpose (winograd_tile_stores) or
// scatters.
#include <gtest/gtest.h>

#include <random>

#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/winograd.h"
#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

// A random [co, ci, 3, 3] filter transformed for F(m,3), as a constant of b's graph.
ir::Value* WinogradWeightConst(GraphBuilder& b, int64_t co, int64_t ci, int64_t m, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> g(static_cast<size_t>(co * ci * 9));
  for (float& v : g) v = dist(rng);
  auto u = ops::WinogradWeight(*ops::MakeTensorF32({co, ci, 3, 3}, g), m);
  EXPECT_TRUE(u.ok()) << u.status().ToString();
  return b.graph().AddConstant("u", *u);
}

ir::Attributes WinogradAttrs(int64_t m, std::vector<int64_t> pads) {
  ir::Attributes a;
  a.Set("pads", std::move(pads));
  a.Set(ops::kWinogradAttr, m);
  return a;
}

struct WinogradCase {
  int64_t n, c, h, w, co, m;
  std::vector<int64_t> pads;
  bool bias;
};

// The Winograd Conv of case p in `b`, its weight drawn from `weight_seed`.
ir::Node* WinogradConvOf(GraphBuilder& b, const WinogradCase& p, uint32_t weight_seed) {
  std::vector<ir::Value*> ins = {b.Input("x", {p.n, p.c, p.h, p.w}), WinogradWeightConst(b, p.co, p.c, p.m, weight_seed)};
  if (p.bias) ins.push_back(b.Input("bias", {p.co}));
  return b.Op("Conv", ins, WinogradAttrs(p.m, p.pads));
}

class WinogradConvTest : public ::testing::TestWithParam<WinogradCase> {};

TEST_P(WinogradConvTest, MatchesReference) {
  const WinogradCase p = GetParam();
  GraphBuilder b;
  ir::Node* n = WinogradConvOf(b, p, 7);
  ASSERT_NE(n, nullptr);
  const int64_t oh = p.h + p.pads[0] + p.pads[2] - 2, ow = p.w + p.pads[1] + p.pads[3] - 2;
  EXPECT_EQ(n->output(0)->type().shape, (std::vector<int64_t>{p.n, p.co, oh, ow}));
  CheckNodeAgainstReference(*n, 61, 1e-5);
  CheckNodeAgainstReference(*n, 62, 1e-5, 4, LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f"));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, WinogradConvTest,
    ::testing::Values(WinogradCase{2, 5, 9, 11, 7, 4, {1, 1, 1, 1}, true},      // batch 2, odd sizes, partial tiles
                      WinogradCase{1, 19, 13, 10, 17, 4, {0, 0, 0, 0}, true},   // no padding
                      WinogradCase{1, 8, 7, 7, 12, 4, {2, 2, 2, 2}, false},     // padding 2
                      WinogradCase{1, 6, 10, 9, 5, 4, {2, 0, 1, 2}, true},      // asymmetric padding
                      WinogradCase{1, 32, 14, 14, 40, 4, {1, 1, 1, 1}, true},   // full tiles in lanes + M tail
                      WinogradCase{1, 24, 30, 34, 16, 4, {1, 1, 1, 1}, false},  // many tiles, overlapped last chunk
                      WinogradCase{1, 3, 3, 3, 4, 4, {0, 0, 0, 0}, false},      // one 1x1 output: one partial tile
                      WinogradCase{2, 16, 6, 5, 9, 2, {1, 1, 1, 1}, true},      // F(2,3)
                      WinogradCase{1, 9, 17, 21, 11, 2, {0, 1, 2, 0}, false},   // F(2,3), asymmetric
                      WinogradCase{1, 333, 6, 6, 8, 2, {1, 1, 1, 1}, true}));   // K = 333 > 320: K blocking

// Bands on (up to 8 panels) for the default (AVX2, 16-tile panels) and AVX-512 (32-tile) options.
std::vector<LowerOptions> BandOptions() {
  LowerOptions avx2, avx512 = LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f");
  avx2.winograd_band_panels = 8;
  avx512.winograd_band_panels = 8;
  return {avx2, avx512};
}

class WinogradBandsTest : public ::testing::TestWithParam<WinogradCase> {};

TEST_P(WinogradBandsTest, MatchesReference) {
  const WinogradCase p = GetParam();
  GraphBuilder b;
  ir::Node* n = WinogradConvOf(b, p, 12);
  ASSERT_NE(n, nullptr);
  uint32_t seed = 70;
  for (const LowerOptions& o : BandOptions()) CheckNodeAgainstReference(*n, seed++, 1e-5, 4, o);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, WinogradBandsTest,
    ::testing::Values(WinogradCase{1, 16, 28, 28, 24, 4, {1, 1, 1, 1}, true},   // 49 full tiles: 13/12 or 25/24 a band
                      WinogradCase{2, 5, 9, 11, 7, 4, {1, 1, 1, 1}, true},      // batch 2, 18 tiles, partial ones
                      WinogradCase{2, 6, 13, 9, 10, 4, {1, 1, 1, 1}, false},    // batch 2, 24 tiles, partial ones
                      WinogradCase{1, 9, 17, 21, 11, 2, {0, 1, 2, 0}, true},    // F(2,3), 90 tiles, a partial row
                      WinogradCase{1, 24, 30, 34, 16, 4, {1, 1, 1, 1}, false},  // 72 tiles, overlapped chunks
                      WinogradCase{1, 333, 12, 12, 8, 2, {1, 1, 1, 1}, true}));  // K blocking: partial sums per band

TEST(WinogradConv, BandsFusedResidual) {
  GraphBuilder b;
  std::vector<ir::Value*> ins = {b.Input("x", {1, 12, 23, 19}), WinogradWeightConst(b, 10, 12, 4, 13),
                                 b.Input("bias", {10}), b.Input("res", {1, 10, 23, 19})};
  ir::Node* f = MakeFused(b.graph(), ins, [](GraphBuilder& g, const std::vector<ir::Value*>& v) {
    ir::Node* conv = g.Op("Conv", {v[0], v[1], v[2]}, WinogradAttrs(4, {1, 1, 1, 1}));
    ir::Node* add = g.Op("Add", {conv->output(0), v[3]});
    ir::Node* relu = g.Op("Relu", {add->output(0)});
    return std::vector<ir::Value*>{relu->output(0)};
  });
  uint32_t seed = 80;
  for (const LowerOptions& o : BandOptions()) CheckNodeAgainstReference(*f, seed++, 1e-5, 4, o);
}

TEST(WinogradConv, FusedReluAndResidual) {
  GraphBuilder b;
  std::vector<ir::Value*> ins = {b.Input("x", {2, 12, 11, 13}), WinogradWeightConst(b, 10, 12, 4, 8),
                                 b.Input("bias", {10}), b.Input("res", {2, 10, 11, 13})};
  ir::Node* f = MakeFused(b.graph(), ins, [](GraphBuilder& g, const std::vector<ir::Value*>& v) {
    ir::Node* conv = g.Op("Conv", {v[0], v[1], v[2]}, WinogradAttrs(4, {1, 1, 1, 1}));
    ir::Node* add = g.Op("Add", {conv->output(0), v[3]});
    ir::Node* relu = g.Op("Relu", {add->output(0)});
    return std::vector<ir::Value*>{relu->output(0)};
  });
  CheckNodeAgainstReference(*f, 63, 1e-5);
  CheckNodeAgainstReference(*f, 64, 1e-5, 4, LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f"));
}

TEST(WinogradConv, FusedClip) {
  GraphBuilder b;
  std::vector<ir::Value*> ins = {b.Input("x", {1, 9, 10, 7}), WinogradWeightConst(b, 6, 9, 4, 9), b.Input("bias", {6})};
  ir::Node* f = MakeFused(b.graph(), ins, [](GraphBuilder& g, const std::vector<ir::Value*>& v) {
    ir::Node* conv = g.Op("Conv", {v[0], v[1], v[2]}, WinogradAttrs(4, {1, 1, 1, 1}));
    ir::Attributes c;
    c.Set("min", 0.0);
    c.Set("max", 0.5);
    ir::Node* clip = g.Op("Clip", {conv->output(0)}, c);
    return std::vector<ir::Value*>{clip->output(0)};
  });
  CheckNodeAgainstReference(*f, 65, 1e-5);
}

TEST(WinogradConv, DeterministicLowering) {
  GraphBuilder b;
  ir::Node* n = b.Op("Conv", {b.Input("x", {1, 8, 9, 9}), WinogradWeightConst(b, 8, 8, 4, 10)},
                     WinogradAttrs(4, {1, 1, 1, 1}));
  ASSERT_NE(n, nullptr);
  auto first = LowerNodeToKernel(*n, 0, {});
  auto second = LowerNodeToKernel(*n, 0, {});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->kernel->ToString(), second->kernel->ToString());
}

// The transforms and all n² GEMMs take three parallel regions (thread-pool
// fork-joins) in all, not one or two per GEMM; the GEMMs read V's panels as
// the input transform wrote them (no packing workspace).
TEST(WinogradConv, ThreeParallelRegionsNoPacking) {
  for (int64_t m : {2, 4}) {
    GraphBuilder b;
    ir::Node* n = b.Op("Conv", {b.Input("x", {1, 64, 28, 28}), WinogradWeightConst(b, 64, 64, m, 11)},
                       WinogradAttrs(m, {1, 1, 1, 1}));
    ASSERT_NE(n, nullptr);
    auto spec = LowerNodeToKernel(*n, 0, {});
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    const std::string text = spec->kernel->ToString();
    size_t regions = 0;
    for (size_t at = text.find("parallel for"); at != std::string::npos; at = text.find("parallel for", at + 1)) ++regions;
    EXPECT_EQ(regions, 3u) << "F(" << m << ",3)";
    EXPECT_EQ(text.find("bpack"), std::string::npos) << "F(" << m << ",3)";
  }
}

// LowerOptions::winograd_tile_loads: interior tiles (60 of the 112 or 420) read their patches as row
// vectors through a register transpose (the `wino_dd` local), the chunks with border tiles by gathers.
// LowerOptions::winograd_tile_stores: full tiles write their outputs through the register
// transpose (the `wino_yt` local) on AVX2 (8 lanes: F(4,3) two 8 x 8 blocks, F(2,3) two 4 x 4) and
// AVX-512 (16 lanes: F(4,3) one 16 x 16 block, F(2,3) four 4 x 4), with a fused residual and relu,
// an overlapped last chunk and partial tiles. Against the reference with the option on and off.
TEST(WinogradConv, TileLoadsAndStoresThroughTranspose) {
  for (const bool avx512 : {false, true})
    for (const bool on : {false, true})
      for (int64_t m : {2, 4}) {
        GraphBuilder b;
        std::vector<ir::Value*> ins = {b.Input("x", {2, 12, 30, 27}), WinogradWeightConst(b, 10, 12, m, 14),
                                       b.Input("bias", {10}), b.Input("res", {2, 10, 30, 27})};
        ir::Node* f = MakeFused(b.graph(), ins, [m](GraphBuilder& g, const std::vector<ir::Value*>& v) {
          ir::Node* conv = g.Op("Conv", {v[0], v[1], v[2]}, WinogradAttrs(m, {1, 1, 1, 1}));
          ir::Node* add = g.Op("Add", {conv->output(0), v[3]});
          ir::Node* relu = g.Op("Relu", {add->output(0)});
          return std::vector<ir::Value*>{relu->output(0)};
        });
        LowerOptions o = avx512 ? LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f") : LowerOptions{};
        o.winograd_tile_stores = on;
        o.winograd_tile_loads = on;
        auto spec = LowerNodeToKernel(*f, 0, o);
        ASSERT_TRUE(spec.ok()) << spec.status().ToString();
        const std::string text = spec->kernel->ToString();
        EXPECT_EQ(text.find("wino_yt") != std::string::npos, on) << "avx512 " << avx512 << " on " << on << " F(" << m << ",3)";
        EXPECT_EQ(text.find("wino_dd") != std::string::npos, on) << "avx512 " << avx512 << " on " << on << " F(" << m << ",3)";
        CheckNodeAgainstReference(*f, static_cast<uint32_t>(90 + 4 * avx512 + 2 * on + (m == 4)), 1e-5, 4, o);
      }
}

// In bands: one parallel region (the bands), none inside it, and still no packing workspace; only
// where the tiles fill 2 to winograd_band_panels panels.
TEST(WinogradConv, BandsOneParallelRegion) {
  GraphBuilder b;
  ir::Node* n = b.Op("Conv", {b.Input("x", {1, 64, 28, 28}), WinogradWeightConst(b, 64, 64, 4, 14)},
                     WinogradAttrs(4, {1, 1, 1, 1}));
  ASSERT_NE(n, nullptr);
  auto regions = [&](int64_t band_panels) {
    LowerOptions o;
    o.winograd_band_panels = band_panels;
    auto spec = LowerNodeToKernel(*n, 0, o);
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    if (!spec.ok()) return size_t{0};
    const std::string text = spec->kernel->ToString();
    EXPECT_EQ(text.find("bpack"), std::string::npos);
    size_t count = 0;
    for (size_t at = text.find("parallel for"); at != std::string::npos; at = text.find("parallel for", at + 1)) ++count;
    return count;
  };
  // 49 tiles: 4 panels of 16 (AVX2, the default options).
  EXPECT_EQ(regions(4), 1u);
  EXPECT_EQ(regions(3), 3u);
  EXPECT_EQ(regions(0), 3u);
}

}  // namespace
}  // namespace keel::codegen::testing
