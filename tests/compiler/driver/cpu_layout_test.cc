// tests/compiler/driver/cpu_layout_test.cc — which convolutions the CPU target
// runs channels-last under keelc --layout (cpu_backend.cc: the pointwise and
// depthwise convolutions of components with both kinds and at least 4
// convolutions per edge where an image enters or leaves; the stem before such a
// chain writes NHWC itself, in the output-only form): MobileNetV2 from end to
// end (no transpose: the stem writes NHWC, the mean reads it), ResNet-18 never,
// a chain of three inverted residual blocks yes, a single block (ShuffleNetV2's
// branches) no, two blocks with squeeze-and-excitation (the global pools inside the chain)
// yes; --layout nchw nothing. Also the forms of ResNet-18's convolutions (Winograd
// F(4,3) where its layers are 14x14 and larger, pixels as the GEMM's rows at 7x7
// and for the strided ones). The zoo model comes from KEEL_SHARED_DIR/models
// (skipped when absent).
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>

#include "compiler/driver/backend.h"
#include "compiler/frontend/onnx_importer.h"
#include "compiler/ops/channels_last.h"
#include "compiler/ops/packed_weight.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/winograd.h"
#include "compiler/passes/pass_manager.h"

namespace keel::driver {
namespace {

std::string Zoo(const std::string& name) {
  return (std::filesystem::path(KEEL_SHARED_DIR) / "models" / (name + ".onnx")).string();
}

struct Counts {
  int channels_last = 0, convs = 0, transposes = 0;  // channels_last: convolutions
  int output_only = 0;  // convolutions in the output-only channels-last form
  int winograd = 0, panel_width_rows = 0;  // convolutions in Winograd form; weights in rows of 32 (AVX-512's NR)
  std::vector<int64_t> tiles;  // every convolution's Winograd tile (0: none), in graph order
};

// Runs keelc's pipeline for the CPU target (AVX-512 tiles) with `layout` and counts.
Counts AfterPipeline(ir::Graph& g, Layout layout, WinogradMode winograd = WinogradMode::kAuto,
                     const std::string& cpu = "x86-64-v4") {
  BackendOptions options;
  options.cpu = cpu;
  options.layout = layout;
  options.winograd = winograd;
  auto backend = CreateBackend("cpu", options);
  EXPECT_TRUE(backend.ok());
  if (!backend.ok()) return {};
  passes::PipelineOptions pipeline;
  SetTargetRules(**backend, layout, &pipeline);
  const Status st = passes::RunDefaultPipeline(g, pipeline);
  EXPECT_TRUE(st.ok()) << st.ToString();
  Counts c;
  auto count = [&c](const ir::Node& n) {
    c.channels_last += n.op_type() == "Conv" && ops::IsChannelsLast(n) ? 1 : 0;
    c.convs += n.op_type() == "Conv" ? 1 : 0;
    c.output_only += n.op_type() == "Conv" && ops::IsOutputChannelsLast(n) ? 1 : 0;
    c.transposes += n.op_type() == "Transpose" ? 1 : 0;
    c.winograd += n.op_type() == "Conv" && ops::WinogradTile(n) > 0 ? 1 : 0;
    if (n.op_type() == "Conv") c.tiles.push_back(ops::WinogradTile(n));
    auto rows = n.attrs().GetInt(ops::kPackedRowsAttr, 0);
    c.panel_width_rows += n.op_type() == "Conv" && rows.ok() && *rows == 32 ? 1 : 0;
  };
  for (const ir::Node* n : g.nodes()) {
    if (n->body()) {
      for (const ir::Node* m : n->body()->nodes()) count(*m);
    } else {
      count(*n);
    }
  }
  return c;
}

Counts ZooModel(const std::string& name, Layout layout) {
  auto g = frontend::ImportOnnx(Zoo(name), frontend::ImportOptions{});
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? AfterPipeline(**g, layout) : Counts{};
}

TEST(CpuLayout, MobileNetV2RunsItsChainsChannelsLast) {
  if (!std::filesystem::exists(Zoo("mobilenet_v2"))) GTEST_SKIP() << "mobilenet_v2 not found (KEEL_SHARED_DIR)";
  const Counts c = ZooModel("mobilenet_v2", Layout::kAuto);
  // Every pointwise and depthwise convolution runs NHWC, and the 3x3 stem (3 -> 32 channels)
  // writes NHWC from the NCHW image: no transpose where the chain starts.
  EXPECT_EQ(c.convs, 52);
  EXPECT_EQ(c.channels_last, 52);
  EXPECT_EQ(c.output_only, 1);
  EXPECT_EQ(c.transposes, 0);  // the global pool reads NHWC
  const Counts first = ZooModel("mobilenet_v2", Layout::kChannelsFirst);
  EXPECT_EQ(first.channels_last, 0);
  EXPECT_EQ(first.transposes, 0);
}

TEST(CpuLayout, ResNet18StaysChannelsFirst) {
  if (!std::filesystem::exists(Zoo("resnet18"))) GTEST_SKIP() << "resnet18 not found (KEEL_SHARED_DIR)";
  const Counts c = ZooModel("resnet18", Layout::kAuto);
  EXPECT_EQ(c.channels_last, 0);
  EXPECT_EQ(c.transposes, 0);
  // 3x3 stride 1 from 56x56 to 14x14 (10) Winograd; the three 3x3 stride 1 at 7x7, the three
  // strided 3x3 and the 1x1 stride 2 to 14x14 and 7x7 with pixels as rows, the weight in W^T's
  // column panels (lower_ops.h ConvPixelRows; before, the implicit GEMM with the pixels as
  // columns). The 1x1 stride 2 from 56x56 (800 KB) runs as the stride-1 one over a compact
  // image, 784 pixels: the implicit GEMM's form (LowerOptions::conv_subsample_bytes).
  EXPECT_EQ(c.convs, 20);
  EXPECT_EQ(c.winograd, 10);
  EXPECT_EQ(c.panel_width_rows, 8);
}

// `blocks` inverted residual blocks (1x1 32 -> 128, Relu, depthwise 3x3, Relu, 1x1 128 -> 32, then
// Add of the block's input but in the first block, as in MobileNetV2) after a 3x3 convolution
// and Relu, on a [1, 8, 14, 14] image; a Relu to the graph output. With `se`, each block scales
// the depthwise output by a squeeze-and-excitation block (GlobalAveragePool, 1x1 128 -> 32, Relu,
// 1x1 32 -> 128, HardSigmoid, Mul), as in MobileNetV3.
std::unique_ptr<ir::Graph> Blocks(int blocks, bool se = false) {
  auto g = std::make_unique<ir::Graph>();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-0.2f, 0.2f);
  int constants = 0;
  auto weight = [&](std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng);
    return g->AddConstant("w" + std::to_string(constants++), ops::MakeTensorF32(shape, v));
  };
  auto conv = [&](ir::Value* x, int64_t cin, int64_t cout, int64_t k, int64_t group) {
    ir::Node* n = g->AddNode("Conv", "conv" + std::to_string(constants), {x, weight({cout, cin / group, k, k})}, 1);
    n->attrs().Set("pads", std::vector<int64_t>(4, k / 2));
    n->attrs().Set("group", group);
    return n->output(0);
  };
  auto relu = [&](ir::Value* x) { return g->AddNode("Relu", "relu" + std::to_string(constants++), {x}, 1)->output(0); };
  ir::Value* x = g->AddInput("x", ir::TensorType{ir::DType::kF32, {1, 8, 14, 14}});
  ir::Value* y = relu(conv(x, 8, 32, 3, 1));
  for (int b = 0; b < blocks; ++b) {
    ir::Value* e = relu(conv(y, 32, 128, 1, 1));
    ir::Value* d = relu(conv(e, 128, 128, 3, 128));
    if (se) {
      ir::Value* pooled = g->AddNode("GlobalAveragePool", "pool" + std::to_string(b), {d}, 1)->output(0);
      ir::Value* s = conv(relu(conv(pooled, 128, 32, 1, 1)), 32, 128, 1, 1);
      s = g->AddNode("HardSigmoid", "gate" + std::to_string(b), {s}, 1)->output(0);
      d = g->AddNode("Mul", "scale" + std::to_string(b), {d, s}, 1)->output(0);
    }
    ir::Value* p = conv(d, 128, 32, 1, 1);
    y = b == 0 ? p : g->AddNode("Add", "add" + std::to_string(b), {p, y}, 1)->output(0);
  }
  ir::Node* out = g->AddNode("Relu", "out", {y}, 1, {"y"});
  g->AddOutput(out->output(0));
  return g;
}

// keelc --winograd auto leaves 3x3 convolutions on fewer than 48 input channels to the implicit
// GEMM where their transformed tiles exceed 4 MB (LowerOptions::winograd_min_input_channels,
// winograd_few_channels_workspace; the estimate alone picks Winograd for all of these): at
// 128x128, 32 -> 47 and 47 -> 48 channels (12-14 MB) stay plain, 48 -> 64 and 64 -> 64 take
// Winograd; at 48x48, 32 -> 32 (1.3 MB) takes it. --winograd f4 still transforms every one.
TEST(CpuLayout, WinogradNeedsFortyEightInputChannelsOnLargeImages) {
  auto graph = [](int64_t size, std::vector<int64_t> channels) {
    auto g = std::make_unique<ir::Graph>();
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
    ir::Value* x = g->AddInput("x", ir::TensorType{ir::DType::kF32, {1, channels[0], size, size}});
    for (size_t i = 1; i < channels.size(); ++i) {
      const int64_t ci = channels[i - 1], co = channels[i];
      std::vector<float> w(static_cast<size_t>(co * ci * 9));
      for (float& v : w) v = dist(rng);
      ir::Value* wv = g->AddConstant("w" + std::to_string(i), ops::MakeTensorF32({co, ci, 3, 3}, w));
      ir::Node* n = g->AddNode("Conv", "conv" + std::to_string(i), {x, wv}, 1);
      n->attrs().Set("pads", std::vector<int64_t>(4, 1));
      x = n->output(0);
    }
    g->AddOutput(g->AddNode("Relu", "out", {x}, 1, {"y"})->output(0));
    return g;
  };
  auto large = graph(128, {32, 47, 48, 64, 64});
  EXPECT_EQ(AfterPipeline(*large, Layout::kAuto).winograd, 2);
  auto f4 = graph(128, {32, 47, 48, 64, 64});
  EXPECT_EQ(AfterPipeline(*f4, Layout::kAuto, WinogradMode::kF4).winograd, 4);
  auto small = graph(48, {32, 32});
  EXPECT_EQ(AfterPipeline(*small, Layout::kAuto).winograd, 1);
}

// keelc --winograd auto counts a GEMM tail of at most half a panel of tiles as half a panel
// (codegen::GemmComputedColumns) where the transformed weights are at most 3 MB. With AVX-512
// (32-lane panels) 13x13 images (16 tiles for F(4,3), 49 for F(2,3)) take F(4,3) at 64 -> 256
// and 48 -> 192 channels (2.4 and 1.3 MB), 256 -> 256 on 14x14 F(2,3) (F(4,3): 9.4 MB), and
// 512 -> 512 on 7x7 stays the implicit GEMM (F(2,3): 16.8 MB). With AVX2 (16-lane panels),
// 48 -> 192 on 13x13 takes F(2,3) (49 tiles in 56 columns, 0.6 MB) and 256 -> 256 on 14x14
// keeps F(4,3) (F(2,3): 4.2 MB).
TEST(CpuLayout, WinogradHalfPanelTailsWhereTheWeightsAreCached) {
  auto conv = [](int64_t size, int64_t ci, int64_t co, const std::string& cpu = "x86-64-v4") {
    auto g = std::make_unique<ir::Graph>();
    std::mt19937 rng(12);
    std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
    ir::Value* x = g->AddInput("x", ir::TensorType{ir::DType::kF32, {1, ci, size, size}});
    std::vector<float> w(static_cast<size_t>(co * ci * 9));
    for (float& v : w) v = dist(rng);
    ir::Value* wv = g->AddConstant("w", ops::MakeTensorF32({co, ci, 3, 3}, w));
    ir::Node* n = g->AddNode("Conv", "conv", {x, wv}, 1);
    n->attrs().Set("pads", std::vector<int64_t>(4, 1));
    g->AddOutput(g->AddNode("Relu", "out", {n->output(0)}, 1, {"y"})->output(0));
    return AfterPipeline(*g, Layout::kAuto, WinogradMode::kAuto, cpu).tiles;
  };
  EXPECT_EQ(conv(13, 64, 256), std::vector<int64_t>{4});
  EXPECT_EQ(conv(13, 48, 192), std::vector<int64_t>{4});
  EXPECT_EQ(conv(14, 256, 256), std::vector<int64_t>{2});
  EXPECT_EQ(conv(7, 512, 512), std::vector<int64_t>{0});
  EXPECT_EQ(conv(13, 48, 192, "x86-64-v3"), std::vector<int64_t>{2});
  EXPECT_EQ(conv(14, 256, 256, "x86-64-v3"), std::vector<int64_t>{4});
}

TEST(CpuLayout, ChainsNeedFourConvolutionsPerEdge) {
  // Three blocks: 9 convolutions, 2 edges (from the 3x3, to the graph output): the 3x3 (32
  // output channels, AVX-512's NR) writes NHWC through its Relu, a transpose to the output.
  auto three = Blocks(3);
  const Counts c3 = AfterPipeline(*three, Layout::kAuto);
  EXPECT_EQ(c3.channels_last, 10);
  EXPECT_EQ(c3.output_only, 1);
  EXPECT_EQ(c3.transposes, 1);
  // Two blocks: 6 for 2.
  auto two = Blocks(2);
  EXPECT_EQ(AfterPipeline(*two, Layout::kAuto).channels_last, 0);
  // One block: 3 convolutions for 2 edges stays NCHW, also under --layout nhwc (the same rule).
  for (Layout layout : {Layout::kAuto, Layout::kChannelsLast}) {
    auto one = Blocks(1);
    const Counts c1 = AfterPipeline(*one, layout);
    EXPECT_EQ(c1.channels_last, 0);
    EXPECT_EQ(c1.transposes, 0);
  }
  auto first = Blocks(3);
  EXPECT_EQ(AfterPipeline(*first, Layout::kChannelsFirst).channels_last, 0);
}

TEST(CpuLayout, SqueezeAndExcitationBlocksStayInTheChain) {
  // Two blocks with squeeze-and-excitation: 10 convolutions and the stem, 2 edges. The global
  // pools are inside the chain (their channels-last form reads it), so the pooled pixel's 1x1
  // convolutions run NHWC too and nothing is transposed but the graph output. Counted as edges
  // (one where the image enters the pool, one where the gate comes back), the 4 more made 6
  // edges for 10 convolutions: every convolution channels-first.
  auto two = Blocks(2, /*se=*/true);
  const Counts c = AfterPipeline(*two, Layout::kAuto);
  EXPECT_EQ(c.convs, 11);
  EXPECT_EQ(c.channels_last, 11);
  EXPECT_EQ(c.output_only, 1);
  EXPECT_EQ(c.transposes, 1);
  auto first = Blocks(2, /*se=*/true);
  EXPECT_EQ(AfterPipeline(*first, Layout::kChannelsFirst).channels_last, 0);
}

}  // namespace
}  // namespace keel::driver
