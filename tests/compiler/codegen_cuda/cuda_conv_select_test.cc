// tests/compiler/codegen_cuda/cuda_conv_select_test.cc — the CUDA back end's
// choice for convolutions of every spatial rank (compiler/driver/cuda_backend.cc
// PickConv): 1-D, 2-D and 3-D Conv nodes with symmetric pads become one
// "cudnn.conv2d" library kernel (the op takes any spatial rank:
// serialization/library_ops.h) whose attributes and argument shapes say what the
// node computes, with bias, residual Add and Relu/Clip folded in; what cuDNN
// cannot take (asymmetric pads) stays a generated kernel. Compile-only: running
// the kernels is tests/vm/cuda's job (GPU machine).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "serialization/executable_reader.h"
#include "serialization/library_ops.h"
#include "tests/compiler/frontend/onnx_test_util.h"

namespace keel::driver {
namespace {

namespace fs = std::filesystem;
namespace lo = ser::library_ops;
using namespace keel::testing_onnx;

struct Dir {
  fs::path path;
  Dir() {
    static int counter = 0;
    path = fs::temp_directory_path() / ("keel_conv_select_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// One library or generated kernel of the compiled executable, as plain values.
struct KernelSeen {
  std::string name, library_op;
  bool library = false;
  std::vector<std::vector<int64_t>> arg_shapes;
  std::map<std::string, std::vector<int64_t>> ints;
  std::map<std::string, std::string> strs;
  std::map<std::string, std::vector<double>> floats;
};

Result<std::vector<KernelSeen>> CompileForCuda(const onnx::ModelProto& m, const Dir& dir,
                                               const std::set<std::string>& disabled_passes = {}) {
  CompileOptions o;
  o.pipeline.disabled = disabled_passes;
  o.model_path = WriteModel(m, dir.path.string(), "model.onnx");
  o.output_path = (dir.path / "model.keel").string();
  o.target = "cuda";
  KEEL_RETURN_IF_ERROR(CompileModel(o).status());
  std::ifstream in(o.output_path, std::ios::binary);
  const std::vector<uint8_t> file{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  KEEL_ASSIGN_OR_RETURN(ser::ExecutableView view, ser::ReadExecutable(file));
  std::vector<KernelSeen> out;
  for (const fb::Kernel* k : *view.root->kernels()) {
    KernelSeen s;
    s.name = k->name()->str();
    s.library = k->kind() == fb::KernelKind::library;
    if (k->library_op() != nullptr) s.library_op = k->library_op()->str();
    if (k->args() != nullptr) {
      for (const fb::KernelArg* a : *k->args()) {
        s.arg_shapes.emplace_back(a->shape() ? std::vector<int64_t>(a->shape()->begin(), a->shape()->end())
                                             : std::vector<int64_t>());
      }
    }
    if (k->attrs() != nullptr) {
      for (const fb::Attr* a : *k->attrs()) {
        const std::string key = a->key()->str();
        if (a->ints() != nullptr) s.ints[key] = {a->ints()->begin(), a->ints()->end()};
        if (a->floats() != nullptr) s.floats[key] = {a->floats()->begin(), a->floats()->end()};
        if (a->str() != nullptr) s.strs[key] = a->str()->str();
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<KernelSeen> Convs(const std::vector<KernelSeen>& ks) {
  std::vector<KernelSeen> c;
  for (const KernelSeen& k : ks)
    if (k.library && k.library_op == lo::kCudnnConv2d) c.push_back(k);
  return c;
}

std::vector<float> Filled(size_t n, float v) { return std::vector<float>(n, v); }

// x [1,4,6,10,10] -> Conv 3-D (group 2, dilations [2,1,1], strides [1,2,2],
// pads 1, bias) -> Relu: one cuDNN kernel with every attribute, rank-5 arguments.
TEST(CudaConvSelect, Conv3dBiasReluIsOneCudnnKernel) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {1, 4, 6, 10, 10});
  AddInitF32(m, "w", {8, 2, 3, 3, 3}, Filled(8 * 2 * 27, 0.01f));
  AddInitF32(m, "b", {8}, Filled(8, 0.5f));
  onnx::NodeProto* conv = AddNode(m, "Conv", {"x", "w", "b"}, {"c"});
  AttrInt(conv, "group", 2);
  AttrInts(conv, "pads", {1, 1, 1, 1, 1, 1});
  AttrInts(conv, "strides", {1, 2, 2});
  AttrInts(conv, "dilations", {2, 1, 1});
  AddNode(m, "Relu", {"c"}, {"y"});
  AddOutput(m, "y");
  Dir dir;
  auto ks = CompileForCuda(m, dir);
  ASSERT_TRUE(ks.ok()) << ks.status().ToString();
  const std::vector<KernelSeen> convs = Convs(*ks);
  ASSERT_EQ(convs.size(), 1u);
  const KernelSeen& k = convs[0];
  EXPECT_NE(k.name.find("_cudnn_conv3d"), std::string::npos) << k.name;
  EXPECT_EQ(k.ints.at(lo::attr::kPads), (std::vector<int64_t>{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(k.ints.at(lo::attr::kStrides), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(k.ints.at(lo::attr::kDilations), (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(k.ints.at(lo::attr::kGroup), (std::vector<int64_t>{2}));
  EXPECT_EQ(k.ints.at(lo::attr::kHasBias), (std::vector<int64_t>{1}));
  EXPECT_EQ(k.ints.at(lo::attr::kHasResidual), (std::vector<int64_t>{0}));
  EXPECT_EQ(k.strs.at(lo::attr::kActivation), lo::value::kActivationRelu);
  // X, W, bias, Y: D = (6 + 2 - 2*2 - 1) + 1 = 4, H = W = (10 + 2 - 2 - 1)/2 + 1 = 5.
  ASSERT_EQ(k.arg_shapes.size(), 4u);
  EXPECT_EQ(k.arg_shapes[0], (std::vector<int64_t>{1, 4, 6, 10, 10}));
  EXPECT_EQ(k.arg_shapes[1], (std::vector<int64_t>{8, 2, 3, 3, 3}));
  EXPECT_EQ(k.arg_shapes[2], (std::vector<int64_t>{8}));
  EXPECT_EQ(k.arg_shapes[3], (std::vector<int64_t>{1, 8, 4, 5, 5}));
  // Nothing of the chain is left for a generated kernel.
  for (const KernelSeen& g : *ks) EXPECT_TRUE(g.library) << g.name;
}

// x [2,6,20] -> Conv 1-D (pads 1, no bias) -> Add residual r -> Relu.
TEST(CudaConvSelect, Conv1dResidualReluIsOneCudnnKernel) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 6, 20});
  AddInput(m, "r", {2, 8, 10});
  AddInitF32(m, "w", {8, 6, 3}, Filled(8 * 6 * 3, 0.02f));  // 8 outputs: fewer are generated
  onnx::NodeProto* conv = AddNode(m, "Conv", {"x", "w"}, {"c"});
  AttrInts(conv, "pads", {1, 1});
  AttrInts(conv, "strides", {2});
  AddNode(m, "Add", {"c", "r"}, {"s"});
  AddNode(m, "Relu", {"s"}, {"y"});
  AddOutput(m, "y");
  Dir dir;
  auto ks = CompileForCuda(m, dir);
  ASSERT_TRUE(ks.ok()) << ks.status().ToString();
  const std::vector<KernelSeen> convs = Convs(*ks);
  ASSERT_EQ(convs.size(), 1u);
  const KernelSeen& k = convs[0];
  EXPECT_NE(k.name.find("_cudnn_conv1d"), std::string::npos) << k.name;
  EXPECT_EQ(k.ints.at(lo::attr::kPads), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(k.ints.at(lo::attr::kStrides), (std::vector<int64_t>{2}));
  EXPECT_EQ(k.ints.at(lo::attr::kDilations), (std::vector<int64_t>{1}));
  EXPECT_EQ(k.ints.at(lo::attr::kHasBias), (std::vector<int64_t>{0}));
  EXPECT_EQ(k.ints.at(lo::attr::kHasResidual), (std::vector<int64_t>{1}));
  EXPECT_EQ(k.strs.at(lo::attr::kActivation), lo::value::kActivationRelu);
  ASSERT_EQ(k.arg_shapes.size(), 4u);  // X, W, residual, Y
  EXPECT_EQ(k.arg_shapes[2], (std::vector<int64_t>{2, 8, 10}));
  EXPECT_EQ(k.arg_shapes[3], (std::vector<int64_t>{2, 8, 10}));
}

// 3-D Conv -> Clip(0, 6): the clipped-ReLU activation with its bounds.
TEST(CudaConvSelect, Conv3dClipKeepsItsBounds) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {1, 3, 4, 8, 8});
  AddInitF32(m, "w", {5, 3, 1, 3, 3}, Filled(5 * 3 * 9, 0.05f));
  AddInitF32(m, "lo", {}, {0.f});
  AddInitF32(m, "hi", {}, {6.f});
  onnx::NodeProto* conv = AddNode(m, "Conv", {"x", "w"}, {"c"});
  AttrInts(conv, "pads", {0, 1, 1, 0, 1, 1});
  AddNode(m, "Clip", {"c", "lo", "hi"}, {"y"});
  AddOutput(m, "y");
  Dir dir;
  auto ks = CompileForCuda(m, dir);
  ASSERT_TRUE(ks.ok()) << ks.status().ToString();
  const std::vector<KernelSeen> convs = Convs(*ks);
  ASSERT_EQ(convs.size(), 1u);
  const KernelSeen& k = convs[0];
  EXPECT_EQ(k.strs.at(lo::attr::kActivation), lo::value::kActivationClip);
  EXPECT_EQ(k.floats.at(lo::attr::kClipMin), (std::vector<double>{0.0}));
  EXPECT_EQ(k.floats.at(lo::attr::kClipMax), (std::vector<double>{6.0}));
  EXPECT_EQ(k.arg_shapes.back(), (std::vector<int64_t>{1, 5, 4, 8, 8}));
}

// Asymmetric pads: cuDNN pads both ends alike, so the conv stays generated (and
// the executable says nothing the VM would refuse at load).
TEST(CudaConvSelect, AsymmetricPadsStayGenerated) {
  for (const std::vector<int64_t>& pads : {std::vector<int64_t>{1, 0, 1, 1, 1, 0}, std::vector<int64_t>{1, 2}}) {
    const bool three_d = pads.size() == 6;
    onnx::ModelProto m = NewModel(17);
    AddInput(m, "x", three_d ? std::vector<int64_t>{1, 3, 6, 7, 8} : std::vector<int64_t>{2, 4, 19});
    const std::vector<int64_t> ws = three_d ? std::vector<int64_t>{4, 3, 3, 2, 3} : std::vector<int64_t>{6, 4, 3};
    AddInitF32(m, "w", ws, Filled(three_d ? 4 * 3 * 18 : 6 * 4 * 3, 0.1f));
    onnx::NodeProto* conv = AddNode(m, "Conv", {"x", "w"}, {"y"});
    AttrInts(conv, "pads", pads);
    AddOutput(m, "y");
    Dir dir;
    auto ks = CompileForCuda(m, dir);
    ASSERT_TRUE(ks.ok()) << ks.status().ToString();
    EXPECT_TRUE(Convs(*ks).empty());
    bool generated = false;
    for (const KernelSeen& k : *ks) generated = generated || !k.library;
    EXPECT_TRUE(generated);
  }
}

// ConvTranspose (3x3 stride 2, pads 1, output_padding 1, bias) -> Relu: one
// cudnn.conv_transpose kernel (cuDNN's data gradient of the forward convolution
// from Y's shape to X's), ONNX's weight layout; asymmetric pads stay generated.
// (The subpixel pass, off here, would make it a forward convolution:
// CudaHalfSelect.DecoderRunsChannelsLastThroughout.)
TEST(CudaConvSelect, ConvTransposeIsOneCudnnKernel) {
  for (const bool symmetric : {true, false}) {
    onnx::ModelProto m = NewModel(17);
    AddInput(m, "x", {2, 6, 5, 7});
    AddInitF32(m, "w", {6, 4, 3, 3}, Filled(6 * 4 * 9, 0.02f));
    AddInitF32(m, "b", {4}, Filled(4, 0.5f));
    onnx::NodeProto* conv = AddNode(m, "ConvTranspose", {"x", "w", "b"}, {"c"});
    AttrInts(conv, "strides", {2, 2});
    AttrInts(conv, "pads", symmetric ? std::vector<int64_t>{1, 1, 1, 1} : std::vector<int64_t>{1, 0, 1, 1});
    AttrInts(conv, "output_padding", {1, 1});
    AddNode(m, "Relu", {"c"}, {"y"});
    AddOutput(m, "y");
    Dir dir;
    auto ks = CompileForCuda(m, dir, {"subpixel"});
    ASSERT_TRUE(ks.ok()) << ks.status().ToString();
    std::vector<KernelSeen> convs;
    for (const KernelSeen& k : *ks)
      if (k.library && k.library_op == lo::kCudnnConvTranspose) convs.push_back(k);
    if (!symmetric) {
      EXPECT_TRUE(convs.empty());
      continue;
    }
    ASSERT_EQ(convs.size(), 1u);
    const KernelSeen& k = convs[0];
    EXPECT_NE(k.name.find("_cudnn_conv_transpose2d"), std::string::npos) << k.name;
    EXPECT_EQ(k.ints.at(lo::attr::kPads), (std::vector<int64_t>{1, 1, 1, 1}));
    EXPECT_EQ(k.ints.at(lo::attr::kStrides), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(k.ints.at(lo::attr::kHasBias), (std::vector<int64_t>{1}));
    EXPECT_EQ(k.strs.at(lo::attr::kActivation), lo::value::kActivationRelu);
    // X, W, bias, Y: H = 2*(5-1) + 1 + 3 - 2 = 10, W = 2*(7-1) + 1 + 3 - 2 = 14.
    ASSERT_EQ(k.arg_shapes.size(), 4u);
    EXPECT_EQ(k.arg_shapes[1], (std::vector<int64_t>{6, 4, 3, 3}));
    EXPECT_EQ(k.arg_shapes[3], (std::vector<int64_t>{2, 4, 10, 14}));
    for (const KernelSeen& g : *ks) EXPECT_TRUE(g.library) << g.name;
  }
}

}  // namespace
}  // namespace keel::driver
