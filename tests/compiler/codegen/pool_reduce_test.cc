// Pools (MaxPool, AveragePool with/without count_include_pad and ceil_mode,
// GlobalAveragePool) and row reductions (Softmax, LayerNormalization, ReduceMean).
#include <gtest/gtest.h>

#include "compiler/codegen/lower_ops.h"
#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

using ir::Attributes;

Attributes Window(std::vector<int64_t> kernel, int64_t stride, int64_t pad, int64_t ceil_mode) {
  return Attrs({{"kernel_shape", std::move(kernel)},
                {"strides", std::vector<int64_t>{stride, stride}},
                {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                {"ceil_mode", ceil_mode}});
}

// Window(...) plus count_include_pad.
Attributes AverageWindow(std::vector<int64_t> kernel, int64_t stride, int64_t pad, int64_t ceil_mode,
                         int64_t count_include_pad) {
  Attributes a = Window(std::move(kernel), stride, pad, ceil_mode);
  a.Set("count_include_pad", count_include_pad);
  return a;
}

TEST(Pool, MaxPool) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 5, 13, 12});
  for (int64_t ceil : {0, 1}) CheckOp(b, "MaxPool", {x}, Window({3, 3}, 2, 1, ceil), 41);
}

TEST(Pool, AveragePool) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 3, 11, 10});
  for (int64_t cip : {0, 1}) CheckOp(b, "AveragePool", {x}, AverageWindow({3, 2}, 2, 1, 1, cip), 42);
}

// Wide rows: interior columns run as 16-lane vector chunks (overlapping last chunk).
TEST(Pool, WideRowsVectorChunks) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 4, 30, 70});
  for (int64_t ceil : {0, 1}) CheckOp(b, "MaxPool", {x}, Window({3, 3}, 2, 1, ceil), 43);
  for (int64_t cip : {0, 1}) CheckOp(b, "AveragePool", {x}, AverageWindow({3, 3}, 1, 1, 0, cip), 44);
}

// Pools with leading window dims, on rows of at least 4 outputs and 4 input columns, fold those
// dims for every input column first into a padded local row (lower_pool.cc, "pool_cols"), for a
// block of rows per parallel iteration, every output column a vector lane: batch 2, 3 channels,
// ceil_mode, a 2x3 window with dilation 2, 3-D with padded leading dims, rows of 13 outputs, 55
// rows in 4 blocks of 14 (the last overlapping), rows wider than a block (one row per block),
// unpadded rows whose leading window dims need no guard, 15 wide; both ISAs' options. Average
// pools (count_include_pad both ways, ceil_mode past the pads, Inception-v3's 3x3 stride 1 at
// 17x17 and 8x8, strides 2 and 3) and Lp pools likewise. Rows of fewer than 4 outputs, 1-D pools
// and the Indices output keep the taps on the input. The GPU's lowering (LowerOptions::pool_padded_rows
// off) takes the column maxima of max pools only, over their interior columns, as before cpu49.
TEST(Pool, MaxPoolColumnsFirst) {
  const LowerOptions avx2 = LowerOptionsForCpuFeatures("+avx2,+fma");
  const LowerOptions avx512 = LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f");
  Attributes dilated = Attrs({{"kernel_shape", std::vector<int64_t>{2, 3}},
                              {"dilations", std::vector<int64_t>{2, 2}}});
  Attributes volume = Attrs({{"kernel_shape", std::vector<int64_t>{3, 3, 3}},
                             {"strides", std::vector<int64_t>{1, 2, 2}},
                             {"pads", std::vector<int64_t>{1, 1, 1, 1, 1, 1}}});
  struct Case {
    std::vector<int64_t> x;
    Attributes attrs;
    bool columns_first, gpu_columns_first;  // the GPU's: 8 interior outputs over 16 input columns
  };
  const LowerOptions gpu = LowerOptionsForCuda();
  for (const LowerOptions* o : {&avx2, &avx512, &gpu}) {
    for (const Case& t : {Case{{2, 3, 21, 40}, Window({3, 3}, 2, 1, 1), true, true},
                          Case{{1, 2, 9, 34}, dilated, true, true},
                          Case{{1, 2, 5, 6, 37}, volume, true, true},
                          Case{{1, 4, 27, 27}, Window({3, 3}, 2, 0, 1), true, true},
                          Case{{1, 2, 111, 111}, Window({3, 3}, 2, 0, 1), true, true},
                          Case{{1, 2, 4, 2100}, Window({3, 3}, 2, 0, 0), true, true},
                          Case{{2, 3, 12, 36}, Window({2, 2}, 2, 0, 0), true, true},
                          Case{{1, 4, 15, 15}, Window({3, 3}, 2, 0, 1), true, false},
                          Case{{1, 4, 5, 5}, Window({3, 3}, 2, 0, 0), false, false}}) {
      GraphBuilder b;
      ir::Node* n = b.Op("MaxPool", {b.Input("x", t.x)}, t.attrs);
      ASSERT_NE(n, nullptr);
      SCOPED_TRACE(n->input(0)->type().ToString() + (o == &gpu ? " gpu" : ""));
      const KernelSpec spec = CheckNodeAgainstReference(*n, 45, 1e-6, 4, *o);
      ASSERT_NE(spec.kernel, nullptr);
      EXPECT_EQ(spec.kernel->ToString().find("pool_cols") != std::string::npos,
                o == &gpu ? t.gpu_columns_first : t.columns_first);
    }
  }
}

TEST(Pool, AverageAndLpColumnsFirst) {
  const LowerOptions avx2 = LowerOptionsForCpuFeatures("+avx2,+fma");
  const LowerOptions avx512 = LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f");
  Attributes lp = Window({3, 2}, 2, 1, 1);
  lp.Set("p", int64_t{3});
  Attributes stride3 = AverageWindow({3, 3}, 3, 1, 1, 0);
  Attributes volume = AverageWindow({3, 3, 3}, 1, 1, 0, 1);
  volume.Set("strides", std::vector<int64_t>{1, 2, 2});
  volume.Set("pads", std::vector<int64_t>{1, 1, 1, 1, 1, 1});
  struct Case {
    const char* op;
    std::vector<int64_t> x;
    Attributes attrs;
    bool columns_first;
  };
  for (const LowerOptions* o : {&avx2, &avx512}) {
    for (const Case& t : {Case{"AveragePool", {1, 5, 17, 17}, AverageWindow({3, 3}, 1, 1, 0, 1), true},
                          Case{"AveragePool", {1, 5, 17, 17}, AverageWindow({3, 3}, 1, 1, 0, 0), true},
                          Case{"AveragePool", {2, 3, 8, 8}, AverageWindow({3, 3}, 1, 1, 0, 1), true},
                          Case{"AveragePool", {1, 3, 11, 10}, AverageWindow({3, 2}, 2, 1, 1, 1), true},
                          Case{"AveragePool", {1, 3, 11, 10}, AverageWindow({3, 2}, 2, 1, 1, 0), true},
                          Case{"AveragePool", {1, 2, 20, 37}, stride3, true},
                          Case{"AveragePool", {1, 2, 5, 6, 9}, volume, true},
                          Case{"LpPool", {1, 3, 9, 20}, lp, true},
                          Case{"AveragePool", {1, 3, 6, 6}, AverageWindow({3, 3}, 2, 1, 0, 0), false}}) {
      GraphBuilder b;
      ir::Node* n = b.Op(t.op, {b.Input("x", t.x)}, t.attrs);
      ASSERT_NE(n, nullptr);
      SCOPED_TRACE(std::string(t.op) + " " + n->input(0)->type().ToString() + " cip " +
                   std::to_string(t.attrs.GetInt("count_include_pad", 0).value()));
      const KernelSpec spec = CheckNodeAgainstReference(*n, 46, 1e-5, 4, *o);
      ASSERT_NE(spec.kernel, nullptr);
      EXPECT_EQ(spec.kernel->ToString().find("pool_cols") != std::string::npos, t.columns_first);
      if (o == &avx512) {  // the GPU's lowering keeps the taps on the input
        const KernelSpec g = CheckNodeAgainstReference(*n, 47, 1e-5, 4, LowerOptionsForCuda());
        ASSERT_NE(g.kernel, nullptr);
        EXPECT_EQ(g.kernel->ToString().find("pool_cols"), std::string::npos);
      }
    }
  }
}

TEST(Pool, GlobalAveragePool) {
  GraphBuilder b;
  CheckOp(b, "GlobalAveragePool", {b.Input("x", {2, 37, 7, 7})}, {}, 43);
}

// The CPU's lane forms of global pools (LowerOptions::lane_row_reductions): channels-first planes of
// at least 16 pixels fold 16 partial results per lane (lower_rows.h LaneReduce: whole chunks, a
// tail, 7x7), channels-last input of at least 16 channels sums 16 neighbouring channels per vector
// (37 channels: the last chunk overlaps). Average, max and Lp (p 2 and 3), each against the
// reference; smaller planes or fewer channels keep the scalar loop, and so does the GPU's lowering.
TEST(Pool, GlobalPoolLaneForms) {
  struct Case {
    std::vector<int64_t> x;
    bool channels_last, lanes;
  };
  const std::vector<Case> cases = {{{2, 5, 7, 7}, false, true},   {{1, 3, 4, 4}, false, true},
                                   {{1, 4, 8, 9}, false, true},   {{2, 6, 3, 5}, false, false},
                                   {{2, 7, 7, 37}, true, true},   {{1, 3, 5, 16}, true, true},
                                   {{1, 5, 5, 12}, true, false}};
  uint32_t seed = 70;
  for (const Case& t : cases) {
    for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
      for (int64_t p : {2, 3}) {
        if (p == 3 && std::string(op) != "GlobalLpPool") continue;
        GraphBuilder b;
        Attributes a = std::string(op) == "GlobalLpPool" ? Attrs({{"p", p}}) : Attributes();
        if (t.channels_last) a.Set("keel.channels_last", int64_t{1});
        ir::Node* n = b.Op(op, {b.Input("x", t.x)}, a);
        ASSERT_NE(n, nullptr);
        SCOPED_TRACE(std::string(op) + " p " + std::to_string(p) + " " + n->input(0)->type().ToString() +
                     (t.channels_last ? " channels-last" : ""));
        const KernelSpec spec = CheckNodeAgainstReference(*n, seed++, 1e-5);
        ASSERT_NE(spec.kernel, nullptr);
        const std::string text = spec.kernel->ToString();
        EXPECT_EQ(text.find(t.channels_last ? "gpool_lanes" : "row_lanes") != std::string::npos, t.lanes);
        const KernelSpec gpu = CheckNodeAgainstReference(*n, seed++, 1e-5, 4, LowerOptionsForCuda());
        ASSERT_NE(gpu.kernel, nullptr);
        EXPECT_EQ(gpu.kernel->ToString().find("lanes"), std::string::npos);
      }
    }
  }
}

// Channels-last forms (compiler/ops/channels_last.h): X [N,H,W,C], output likewise.
TEST(Pool, ChannelsLast) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 13, 12, 5});
  Attributes max = Window({3, 3}, 2, 1, 0);
  max.Set("keel.channels_last", int64_t{1});
  ir::Node* n = b.Op("MaxPool", {x}, max);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->output(0)->type().shape, (std::vector<int64_t>{2, 7, 6, 5}));
  CheckNodeAgainstReference(*n, 47);
  Attributes avg = AverageWindow({3, 2}, 2, 1, 1, 0);
  avg.Set("keel.channels_last", int64_t{1});
  CheckOp(b, "AveragePool", {x}, avg, 48);
  ir::Node* g = b.Op("GlobalAveragePool", {x}, Attrs({{"keel.channels_last", int64_t{1}}}));
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->output(0)->type().shape, (std::vector<int64_t>{2, 1, 1, 5}));
  CheckNodeAgainstReference(*g, 49);
}

// Channels-last windowed pools run one output pixel per parallel iteration, channels innermost,
// the taps unrolled (lower_pool.cc ChannelsLastPool): padded borders with and without
// count_include_pad, a ceil_mode overhang past the pads, dilation, Lp, a 3-D window, f16; a
// window of more than 64 taps keeps the row form. Each against the reference.
TEST(Pool, ChannelsLastPixelForm) {
  struct Case {
    const char* op;
    std::vector<int64_t> x;  // channels-last
    Attributes attrs;
    ir::DType dtype = ir::DType::kF32;
    bool pixel_form = true;
  };
  Attributes dilated = Attrs({{"kernel_shape", std::vector<int64_t>{2, 3}},
                              {"dilations", std::vector<int64_t>{2, 2}},
                              {"pads", std::vector<int64_t>{1, 2, 0, 1}}});
  Attributes lp = Window({3, 3}, 1, 1, 0);
  lp.Set("p", int64_t{3});
  Attributes volume = AverageWindow({3, 3, 3}, 1, 1, 0, 1);
  volume.Set("strides", std::vector<int64_t>{1, 2, 2});
  volume.Set("pads", std::vector<int64_t>{1, 1, 1, 1, 1, 1});
  std::vector<Case> cases = {
      {"AveragePool", {2, 9, 9, 6}, AverageWindow({3, 3}, 1, 1, 0, 1)},
      {"AveragePool", {2, 9, 9, 6}, AverageWindow({3, 3}, 1, 1, 0, 0)},
      {"AveragePool", {1, 10, 11, 3}, AverageWindow({3, 2}, 2, 1, 1, 1)},
      {"AveragePool", {1, 10, 11, 3}, AverageWindow({3, 2}, 2, 1, 1, 0)},
      {"MaxPool", {2, 13, 12, 5}, Window({3, 3}, 2, 1, 1)},
      {"MaxPool", {1, 9, 14, 4}, dilated},
      {"LpPool", {1, 7, 8, 4}, lp},
      {"AveragePool", {1, 4, 6, 7, 3}, volume},
      {"AveragePool", {2, 8, 8, 16}, AverageWindow({3, 3}, 1, 1, 0, 1), ir::DType::kF16},
      {"AveragePool", {1, 12, 12, 3}, AverageWindow({9, 9}, 1, 4, 0, 0), ir::DType::kF32, false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Case& t = cases[i];
    GraphBuilder b;
    t.attrs.Set("keel.channels_last", int64_t{1});
    ir::Node* n = b.Op(t.op, {b.Input("x", t.x, t.dtype)}, t.attrs);
    ASSERT_NE(n, nullptr);
    SCOPED_TRACE(std::string(t.op) + " " + n->input(0)->type().ToString());
    const KernelSpec spec = CheckNodeAgainstReference(*n, static_cast<uint32_t>(60 + i),
                                                      t.dtype == ir::DType::kF16 ? 2e-3 : 1e-5);
    ASSERT_NE(spec.kernel, nullptr);
    // The row form's vector chunks and scalar borders keep a local accumulator; the pixel form none.
    EXPECT_EQ(spec.kernel->ToString().find("pool_") == std::string::npos, t.pixel_form);
  }
}

TEST(Reduce, SoftmaxLastAndMiddleAxis) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 3, 17});
  for (int64_t axis : {-1, 1}) CheckOp(b, "Softmax", {x}, Attrs({{"axis", axis}}), 44);
}

// The CPU's lane form (LowerOptions::lane_row_reductions): whole chunks of 16
// lanes only, chunks and a tail, a row longer than the exponentials' buffer,
// a strided (middle-axis) row; Softmax and LogSoftmax.
TEST(Reduce, SoftmaxLaneForms) {
  GraphBuilder b;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    CheckOp(b, op, {b.Input("x16", {3, 16})}, Attrs({{"axis", int64_t{-1}}}), 50);
    CheckOp(b, op, {b.Input("x47", {2, 47})}, Attrs({{"axis", int64_t{-1}}}), 51);
    CheckOp(b, op, {b.Input("x5000", {1, 5000})}, Attrs({{"axis", int64_t{-1}}}), 52);
    CheckOp(b, op, {b.Input("x20", {2, 20, 3})}, Attrs({{"axis", int64_t{1}}}), 53);
  }
}

TEST(Reduce, LayerNormalization) {
  GraphBuilder b;
  CheckOp(b, "LayerNormalization", {b.Input("x", {2, 5, 33}), b.Input("scale", {33}), b.Input("bias", {33})},
          Attrs({{"axis", int64_t{-1}}, {"epsilon", 1e-5}}), 45);
}

TEST(Reduce, ReduceMeanKeepAndDropDims) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {3, 4, 5, 6});
  for (int64_t keep : {0, 1}) {
    CheckOp(b, "ReduceMean", {x}, Attrs({{"axes", std::vector<int64_t>{1, 3}}, {"keepdims", keep}}), 46);
  }
}

// Reductions that keep the innermost axis run as columns (lower_reduce.cc
// ColumnReduce): a channels-last global mean (MnasNet's), kept axes before the
// reduced ones, an extent of 37 (two blocks of 16 lanes and one overlapping
// block), both keepdims, max and sum-of-squares recipes; an innermost extent
// below 16 keeps the row form.
TEST(Reduce, ColumnsWhenTheInnermostAxisIsKept) {
  struct Case {
    std::string op;
    std::vector<int64_t> shape, axes;
    bool columns;
  };
  const std::vector<Case> cases = {
      {"ReduceMean", {1, 7, 7, 80}, {1, 2}, true},
      {"ReduceMean", {2, 3, 5, 37}, {1, 2}, true},
      {"ReduceMax", {3, 9, 37}, {1}, true},
      {"ReduceSumSquare", {4, 6, 2, 21}, {0, 2}, true},
      {"ReduceMean", {2, 5, 7, 9}, {1, 2}, false},
  };
  uint32_t seed = 47;
  for (const Case& c : cases) {
    for (int64_t keep : {0, 1}) {
      SCOPED_TRACE(c.op + " keepdims " + std::to_string(keep));
      GraphBuilder b;
      KernelSpec spec = CheckOp(b, c.op, {b.Input("x", c.shape)}, Attrs({{"axes", c.axes}, {"keepdims", keep}}), seed++);
      ASSERT_NE(spec.kernel, nullptr);
      EXPECT_EQ(spec.kernel->ToString().find("reduce_cols") != std::string::npos, c.columns);
    }
  }
}

}  // namespace
}  // namespace keel::codegen::testing
