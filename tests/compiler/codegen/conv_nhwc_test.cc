// The CPU's channels-last pointwise and depthwise convolution kernels
// (compiler/codegen/lower_conv_nhwc.h) against the reference evaluator: the
// weight as an input (read in place or packed at run time) and as a constant in
// its packed form (ops/packed_weight.h: W^T's column panels, or [KH*KW][C]);
// channels not a multiple of the vector width (3, 13, 24, 40) or below it,
// stride 2, pads, dilation, batch 2, 3x3 / 5x5 / 7x7 windows on images narrower
// and wider than the kernel's row groups (16 pixels; blocks of 4 with a rest of 1-3
// pixels, every input address one base per group plus a constant),
// rows whose window is partly padding, a fused residual + Relu; pointwise row
// counts that the GEMM's row tile does not divide (balanced row tiles); both ISAs'
// options. The kernel must be the NHWC one (its views), and the shapes it does
// not take keep the generic lowering.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "compiler/codegen/gemm_panels.h"
#include "compiler/codegen/llvm_cpu_emitter.h"
#include "compiler/codegen/lower_conv_nhwc.h"
#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/packed_weight.h"
#include "compiler/ops/reference.h"
#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

const LowerOptions kAvx2 = LowerOptionsForCpuFeatures("+avx2,+fma");
const LowerOptions kAvx512 = LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f");

struct NhwcCase {
  int64_t n, c, h, w, co, k, stride, pad, dil;  // co == 0: depthwise (co = c, group = c)
  bool bias;
};

bool Depthwise(const NhwcCase& p) { return p.co == 0; }
int64_t OutChannels(const NhwcCase& p) { return Depthwise(p) ? p.c : p.co; }
int64_t OutRows(const NhwcCase& p) { return (p.h + 2 * p.pad - p.dil * (p.k - 1) - 1) / p.stride + 1; }
// "c C HxW k K", for test traces.
std::string Label(const NhwcCase& p) {
  return "c " + std::to_string(p.c) + " " + std::to_string(p.h) + "x" + std::to_string(p.w) + " k " +
         std::to_string(p.k);
}

ir::Attributes Attrs(const NhwcCase& p) {
  ir::Attributes a;
  a.Set("strides", std::vector<int64_t>{p.stride, p.stride});
  a.Set("pads", std::vector<int64_t>{p.pad, p.pad, p.pad, p.pad});
  a.Set("dilations", std::vector<int64_t>{p.dil, p.dil});
  a.Set("group", Depthwise(p) ? p.c : int64_t{1});
  a.Set("keel.channels_last", int64_t{1});
  return a;
}

// The channels-last Conv of case p: X [N,H,W,C]; W OHWI as an input, or a constant packed with
// `packed_rows` rows per panel (0: not packed).
ir::Node* MakeNhwcConv(GraphBuilder& b, const NhwcCase& p, int64_t packed_rows, uint32_t seed) {
  const int64_t co = OutChannels(p), ci = Depthwise(p) ? 1 : p.c;
  const std::vector<int64_t> ws{co, p.k, p.k, ci};
  std::vector<ir::Value*> ins = {b.Input("x", {p.n, p.h, p.w, p.c})};
  ir::Attributes a = Attrs(p);
  if (packed_rows > 0) {
    auto w = ops::MakeTensorF32(ws, RandomFloats(co * p.k * p.k * ci, seed));
    auto packed = ops::PackWeight(*w, {1, co, p.k * p.k * ci}, packed_rows);
    EXPECT_TRUE(packed.ok()) << packed.status().ToString();
    ins.push_back(b.graph().AddConstant("w_packed", *packed));
    a.Set(ops::kPackedRowsAttr, packed_rows);
  } else {
    ins.push_back(b.Input("w", ws));
  }
  if (p.bias) ins.push_back(b.Input("bias", {co}));
  return b.Op("Conv", ins, a);
}

// `p` with its weights packed for `rows` rows (0: the weights as an input), lowered with `o` and
// checked against the reference evaluator (seeds `seed` and `seed + 1`); the spec, whose kernel is
// null (a test failure) when it does not lower.
KernelSpec CheckNhwcConv(const NhwcCase& p, int64_t rows, const LowerOptions& o, uint32_t seed) {
  GraphBuilder b;
  ir::Node* n = MakeNhwcConv(b, p, rows, seed);
  if (n == nullptr) {
    ADD_FAILURE() << "the test case does not build";
    return {};
  }
  KernelSpec spec = CheckNodeAgainstReference(*n, seed + 1, 1e-5, 4, o);
  EXPECT_NE(spec.kernel, nullptr);
  return spec;
}

class ConvNhwcTest : public ::testing::TestWithParam<NhwcCase> {};

TEST_P(ConvNhwcTest, MatchesReference) {
  const NhwcCase p = GetParam();
  const NhwcConv form = Depthwise(p) ? NhwcConv::kDepthwise : NhwcConv::kPointwise;
  for (const LowerOptions& o : {kAvx2, kAvx512}) {
    SCOPED_TRACE("gemm_nr " + std::to_string(o.gemm_nr));
    const int64_t packed = NhwcPackedRows(o, form, OutChannels(p));
    std::vector<int64_t> variants{0};
    if (packed > 0) variants.push_back(packed);
    for (int64_t rows : variants) {
      GraphBuilder b;
      ir::Node* n = MakeNhwcConv(b, p, rows, 41);
      ASSERT_NE(n, nullptr);
      EXPECT_EQ(NhwcConvFormOf(*n), form);
      SCOPED_TRACE("packed rows " + std::to_string(rows));
      const KernelSpec spec = CheckNodeAgainstReference(*n, 42, 1e-5, 4, o);
      ASSERT_NE(spec.kernel, nullptr);
      const std::string text = spec.kernel->ToString();
      EXPECT_NE(text.find("x_nhwc"), std::string::npos);
      if (rows > 0) {
        EXPECT_NE(text.find(Depthwise(p) ? "w_taps" : "w_columns"), std::string::npos);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvNhwcTest,
    ::testing::Values(NhwcCase{1, 16, 7, 9, 64, 1, 1, 0, 1, true},    // pointwise: whole panels (packed)
                      NhwcCase{2, 13, 5, 6, 40, 1, 1, 0, 1, true},    // batch 2, odd C, Co not whole panels
                      NhwcCase{1, 40, 9, 9, 24, 1, 1, 0, 1, false},   // projection, 81 pixel rows
                      NhwcCase{1, 333, 4, 5, 32, 1, 1, 0, 1, true},   // K blocking (333 > 320)
                      // Co % NR a narrow tail panel read in place (AVX-512, AVX2): 48 (16, 0),
                      // 120 with K blocking (24 as 16 + 8 lanes, 8), 20 (not packed, 4)
                      NhwcCase{1, 24, 6, 7, 48, 1, 1, 0, 1, true},
                      NhwcCase{1, 330, 5, 5, 120, 1, 1, 0, 1, false},
                      NhwcCase{2, 12, 3, 5, 20, 1, 1, 0, 1, true},
                      // pointwise on 7x7 (49 pixel rows): on AVX-512 balanced row tiles of 13, 13, 13
                      // and 10 where 12-row tiles leave 1 row; 81 and 63 rows above take them too
                      NhwcCase{1, 64, 7, 7, 96, 1, 1, 0, 1, true},
                      NhwcCase{1, 24, 13, 13, 0, 3, 1, 1, 1, true},   // depthwise 3x3: 24 = 16 + 8 overlapping
                      NhwcCase{2, 13, 14, 15, 0, 3, 2, 1, 1, true},   // batch 2, stride 2, 13 channels
                      NhwcCase{1, 40, 7, 7, 0, 5, 1, 2, 1, false},    // 5x5 on 7x7: mostly border
                      NhwcCase{1, 3, 9, 11, 0, 3, 1, 1, 1, true},     // 3 channels: a scalar loop
                      NhwcCase{1, 20, 12, 30, 0, 3, 1, 2, 2, true},   // dilation 2, rows of 30: blocks of 4
                      // 5x5 stride 2, 29 interior pixels: 7 blocks + 1
                      NhwcCase{1, 40, 9, 61, 0, 5, 2, 2, 1, true},
                      // batch 2, 5x5, 23 interior pixels of 27: 5 blocks + 3
                      NhwcCase{2, 24, 6, 27, 0, 5, 1, 2, 1, false},
                      // 3x3 on rows of 112: 110 interior pixels, 27 blocks + 2; 32 channels
                      NhwcCase{1, 32, 3, 112, 0, 3, 1, 1, 1, true},
                      NhwcCase{1, 17, 23, 23, 0, 7, 2, 3, 1, true},   // 7x7 stride 2
                      NhwcCase{1, 8, 6, 6, 0, 5, 1, 0, 1, true},      // no padding: only interior
                      NhwcCase{1, 16, 3, 5, 0, 5, 1, 2, 1, false}     // windows wider than the image
                      ));

// A fused residual + Relu after the convolution (the channels-last store runs the epilogue).
TEST(ConvNhwc, FusedResidualAndRelu) {
  for (const NhwcCase& p : {NhwcCase{1, 24, 9, 10, 64, 1, 1, 0, 1, true}, NhwcCase{2, 40, 8, 9, 0, 3, 1, 1, 1, true}}) {
    GraphBuilder b;
    const int64_t packed = NhwcPackedRows(kAvx512, Depthwise(p) ? NhwcConv::kDepthwise : NhwcConv::kPointwise,
                                          OutChannels(p));
    ir::Node* conv = MakeNhwcConv(b, p, packed, 51);
    ASSERT_NE(conv, nullptr);
    ir::Node* f = FuseResidualRelu(b, *conv);
    const KernelSpec spec = CheckNodeAgainstReference(*f, 52, 1e-5, 4, kAvx512);
    ASSERT_NE(spec.kernel, nullptr);
    EXPECT_NE(spec.kernel->ToString().find("x_nhwc"), std::string::npos);
  }
}

// Output channels past whole panels in a narrow last panel (AVX-512: 40 = 32 + 8, 72 = 64 + 8,
// 56 = 32 + 16 + 8; AVX2 and SSE: whole panels and a tail of whole vectors) on odd pixel counts
// and channels, batch 2, against the reference evaluator on each ISA. A tail piece narrower than
// a vector (the 8 lanes on AVX-512) keeps its accumulators apart from the full panels' tiles
// (lower_gemm.cc, cpu39): in one shared local, LLVM kept each 8-lane tail accumulator in the low
// half of a 16-lane vector and, in the optimized AVX-512 IR, re-inserted it with a shufflevector
// after every multiply-add.
TEST(ConvNhwc, NarrowTailPanelAccumulators) {
  const std::vector<NhwcCase> cases = {
      NhwcCase{1, 72, 5, 7, 40, 1, 1, 0, 1, false},   // 35 pixel rows, K = 72
      NhwcCase{2, 13, 3, 9, 72, 1, 1, 0, 1, true},    // batch 2, 27 rows each, odd K
      NhwcCase{1, 24, 7, 7, 56, 1, 1, 0, 1, true},    // 49 rows, a 24-lane tail (16 + 8)
  };
  const std::vector<std::string> isas = {"+avx2,+fma,+avx512f", "+avx2,+fma", "+sse4.2"};
  uint32_t seed = 80;
  for (const NhwcCase& p : cases) {
    for (const std::string& isa : isas) {
      SCOPED_TRACE(isa + " co " + std::to_string(p.co));
      const LowerOptions o = LowerOptionsForCpuFeatures(isa);
      const int64_t packed = NhwcPackedRows(o, NhwcConv::kPointwise, p.co);
      ASSERT_GT(packed, 0);
      const KernelSpec spec = CheckNhwcConv(p, packed, o, seed);
      seed += 2;
      ASSERT_NE(spec.kernel, nullptr);
      const std::string text = spec.kernel->ToString();
      EXPECT_NE(text.find("w_columns"), std::string::npos);
      if (p.co % (GemmPanelWidth(o) / 2) != 0) {  // a tail piece narrower than a vector
        EXPECT_NE(text.find("_acc_tail"), std::string::npos) << text;
      }
      if (isa == "+avx2,+fma,+avx512f" && __builtin_cpu_supports("avx512f")) {
        CpuTargetOptions target;
        target.cpu = "x86-64-v4";
        Result<std::string> ir = EmitCpuKernelModuleIR({spec}, "narrow_tail", target, true);
        ASSERT_TRUE(ir.ok()) << ir.status().ToString();
        // No 8-lane value widened into a wider vector (the re-insert; 8-lane splats stay 8 wide).
        std::istringstream lines(*ir);
        for (std::string line; std::getline(lines, line);) {
          const bool widened = line.find("shufflevector <8 x float>") != std::string::npos &&
                               (line.find("<16 x i32>") != std::string::npos || line.find("<32 x i32>") != std::string::npos);
          EXPECT_FALSE(widened) << line;
        }
      }
    }
  }
}

// The parallel loop of `text` runs over [0, n) as its `row` variable.
bool HasRowLoop(const std::string& text, int64_t n) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("for row") != std::string::npos && line.find(" in [0, " + std::to_string(n) + ")") != std::string::npos)
      return true;
  }
  return false;
}

// Depthwise layers with two interior output rows per parallel iteration, without row tiles (AVX-512: 3x3 windows,
// 5x5 at stride 1 on rows wider than 16 pixels; one row on AVX2 and SSE, and for 5x5 windows on
// narrow rows or at stride 2, and where the groups are an odd number below 16): even and odd row counts (a last group of one row), interior rows
// starting at an odd row (pads of 1 and 2), batch 2, stride 2, dilation 2, 72 channels (4 chunks
// and an overlapping one), narrow rows (every pixel a chain) and rows of blocks of 4 plus a rest.
TEST(ConvNhwc, DepthwiseRowPairs) {
  struct PairCase {
    NhwcCase p;
    bool pairs_on_avx512;
  };
  const std::vector<PairCase> cases = {
      {NhwcCase{1, 72, 12, 21, 0, 3, 1, 1, 1, true}, true},    // 12 rows: 0-1 alone, 2-9 in pairs, 10-11 alone
      {NhwcCase{1, 24, 14, 20, 0, 3, 1, 1, 1, true}, false},   // 14 rows: 7 pairs, uneven at 2 threads
      {NhwcCase{2, 24, 13, 19, 0, 3, 2, 1, 1, false}, true},   // batch 2, stride 2, 7 rows of 10 pixels
      {NhwcCase{1, 40, 12, 33, 0, 5, 1, 2, 1, true}, true},    // 5x5 on rows of 33: pairs from row 2
      {NhwcCase{2, 20, 9, 9, 0, 3, 1, 1, 1, true}, true},      // batch 2, 9 rows: a last group of one
      {NhwcCase{1, 16, 11, 26, 0, 3, 1, 2, 2, false}, true},   // dilation 2, 11 rows
      {NhwcCase{1, 24, 14, 14, 0, 5, 1, 2, 1, true}, false},   // 5x5 on rows of 14: one row
      {NhwcCase{1, 24, 15, 40, 0, 5, 2, 2, 1, true}, false},   // 5x5 stride 2: one row
  };
  const std::vector<std::string> isas = {"+avx2,+fma,+avx512f", "+avx2,+fma", "+sse4.2"};
  uint32_t seed = 120;
  for (const PairCase& pc : cases) {
    const NhwcCase& p = pc.p;
    const int64_t oh = OutRows(p);
    for (const std::string& isa : isas) {
      SCOPED_TRACE(isa + " " + Label(p));
      LowerOptions o = LowerOptionsForCpuFeatures(isa);
      o.depthwise_nhwc_tile_rows = 0;  // row groups, not tiles (DepthwiseRowTiles)
      const int64_t packed = NhwcPackedRows(o, NhwcConv::kDepthwise, p.c);
      for (int64_t rows : {int64_t{0}, packed}) {
        const KernelSpec spec = CheckNhwcConv(p, rows, o, seed);
        seed += 2;
        ASSERT_NE(spec.kernel, nullptr);
        const std::string text = spec.kernel->ToString();
        EXPECT_NE(text.find("x_nhwc"), std::string::npos);
        // The parallel loop runs over groups of rows: ceil(OH / 2) per image with pairs.
        const bool pairs = pc.pairs_on_avx512 && o.vector_registers >= 32;
        const int64_t groups = p.n * (pairs ? (oh + 1) / 2 : oh);
        EXPECT_TRUE(HasRowLoop(text, groups)) << "no row loop over " << groups << " groups:\n" << text;
        if (rows == 0) continue;
        EXPECT_NE(text.find("w_taps"), std::string::npos);
      }
    }
  }
}

// Depthwise layers in row tiles walked chunk by chunk (LowerOptions::depthwise_nhwc_tile_rows:
// on by default with AVX-512, forced on here for AVX2, where the tiles have no row pairs): channel
// counts with a rest of 8, 4, 2 and 1 lanes past whole 16-lane chunks (a chunk of 8 or 4 lanes of
// its own, else an overlapping 16-lane one), odd row counts, tiles of an odd number of rows (a
// last row without a pair) and a ragged last tile, batch 2, stride 2, pads of 2, dilation 2. Tile
// sizes 16 and 3 (2 tiles of up to 16 rows; ceil(OH / 3) rounded up to an even count). Each is
// run serially and on threads against the reference evaluator. 5x5 windows and 16 channels or
// fewer keep the row groups.
TEST(ConvNhwc, DepthwiseRowTiles) {
  const std::vector<NhwcCase> cases = {
      NhwcCase{1, 72, 12, 21, 0, 3, 1, 1, 1, true},   // 72 = 4 x 16 + 8, 12 rows
      NhwcCase{1, 36, 15, 20, 0, 3, 1, 1, 1, false},  // 36 = 2 x 16 + 4, 15 rows
      NhwcCase{2, 50, 13, 19, 0, 3, 2, 1, 1, true},   // 50 = 3 x 16 + 2, batch 2, stride 2: 7 rows
      NhwcCase{1, 17, 9, 9, 0, 3, 1, 1, 1, true},     // 17 = 16 + 1, rows of 9 pixels
      NhwcCase{2, 24, 11, 26, 0, 3, 1, 2, 2, false},  // dilation 2, pads of 2, 11 rows
      NhwcCase{1, 40, 7, 7, 0, 3, 1, 1, 1, true},     // 7x7: tiles of 4 and 3 rows
      NhwcCase{1, 40, 12, 33, 0, 5, 1, 2, 1, true},   // 5x5: not tiled
      NhwcCase{1, 16, 12, 20, 0, 3, 1, 1, 1, true},   // one chunk: not tiled
  };
  const std::vector<std::string> isas = {"+avx2,+fma,+avx512f", "+avx2,+fma"};
  uint32_t seed = 340;
  for (const NhwcCase& p : cases) {
    const int64_t oh = OutRows(p);
    for (const std::string& isa : isas) {
      for (int64_t tile_rows : {int64_t{16}, int64_t{3}}) {
        SCOPED_TRACE(isa + " " + Label(p) + " tile rows " + std::to_string(tile_rows));
        LowerOptions o = LowerOptionsForCpuFeatures(isa);
        o.depthwise_nhwc_tile_rows = tile_rows;
        const bool tiled = p.c > 16 && p.k <= 3 && oh >= 4;
        int64_t tiles = std::max<int64_t>(2, (oh + tile_rows - 1) / tile_rows);
        tiles += tiles % 2;
        const int64_t rt = (oh + tiles - 1) / tiles;
        const int64_t packed = NhwcPackedRows(o, NhwcConv::kDepthwise, p.c);
        for (int64_t rows : {int64_t{0}, packed}) {
          const KernelSpec spec = CheckNhwcConv(p, rows, o, seed);
          seed += 2;
          ASSERT_NE(spec.kernel, nullptr);
          const std::string text = spec.kernel->ToString();
          EXPECT_NE(text.find("x_nhwc"), std::string::npos);
          EXPECT_EQ(text.find("for tr") != std::string::npos, tiled) << text;
          if (tiled) {
            EXPECT_TRUE(HasRowLoop(text, p.n * ((oh + rt - 1) / rt))) << text;
          }
        }
      }
    }
  }
}

// Shapes without an NHWC kernel: a 3x3 dense convolution, a strided or padded 1x1, a channel
// multiplier of 2, a depthwise window with more than 16 border columns; channels-first nodes
// are classified by the same rule.
TEST(ConvNhwc, Forms) {
  GraphBuilder b;
  auto conv = [&b](std::vector<int64_t> x, std::vector<int64_t> w, int64_t group, int64_t stride, int64_t pad,
                   bool last) {
    ir::Attributes a;
    a.Set("strides", std::vector<int64_t>{stride, stride});
    a.Set("pads", std::vector<int64_t>{pad, pad, pad, pad});
    a.Set("group", group);
    if (last) a.Set("keel.channels_last", int64_t{1});
    return b.Op("Conv", {b.Input("x", x), b.Input("w", w)}, a);
  };
  EXPECT_EQ(NhwcConvFormOf(*conv({1, 8, 8, 8}, {8, 3, 3, 8}, 1, 1, 1, true)), NhwcConv::kNone);
  EXPECT_EQ(NhwcConvFormOf(*conv({1, 8, 8, 8}, {8, 1, 1, 8}, 1, 2, 0, true)), NhwcConv::kNone);
  EXPECT_EQ(NhwcConvFormOf(*conv({1, 8, 8, 8}, {8, 1, 1, 8}, 1, 1, 1, true)), NhwcConv::kNone);
  EXPECT_EQ(NhwcConvFormOf(*conv({1, 8, 8, 4}, {8, 3, 3, 1}, 4, 1, 1, true)), NhwcConv::kNone);
  EXPECT_EQ(NhwcConvFormOf(*conv({1, 4, 40, 4}, {4, 35, 35, 1}, 4, 1, 17, true)), NhwcConv::kNone);
  EXPECT_EQ(NhwcConvFormOf(*conv({1, 8, 8, 8}, {16, 1, 1, 8}, 1, 1, 0, true)), NhwcConv::kPointwise);
  EXPECT_EQ(NhwcConvFormOf(*conv({1, 8, 8, 8}, {8, 3, 3, 1}, 8, 2, 1, true)), NhwcConv::kDepthwise);
  EXPECT_EQ(NhwcConvFormOf(*conv({1, 8, 9, 9}, {16, 8, 1, 1}, 1, 1, 0, false)), NhwcConv::kPointwise);
  EXPECT_EQ(NhwcConvFormOf(*conv({1, 8, 9, 9}, {8, 1, 3, 3}, 8, 1, 1, false)), NhwcConv::kDepthwise);
  // A channels-last dense 3x3 keeps the generic lowering (through index functions): still correct.
  ir::Node* dense = conv({1, 6, 7, 5}, {4, 3, 3, 5}, 1, 1, 1, true);
  const KernelSpec spec = CheckNodeAgainstReference(*dense, 61, 1e-5, 4, kAvx512);
  ASSERT_NE(spec.kernel, nullptr);
  EXPECT_EQ(spec.kernel->ToString().find("x_nhwc"), std::string::npos);
}

}  // namespace
}  // namespace keel::codegen::testing
