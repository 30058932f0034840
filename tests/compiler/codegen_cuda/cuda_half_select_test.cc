// tests/compiler/codegen_cuda/cuda_half_select_test.cc — the CUDA back end's
// library choice for half graphs (compiler/driver/cuda_backend.cc): with
// --precision fp16|bf16, Conv (1-D, 2-D, 3-D, with bias / residual / Relu),
// Gemm (with its bias and Relu), batched MatMul and MaxPool become the same
// cublas.gemm / cudnn.conv2d / cudnn.pool2d kernels, with the same attributes
// and shapes, as in the fp32 compile of the same model; only their argument
// dtypes differ (f16/bf16, serialized with the kernel). The fp32 compile keeps
// f32 arguments, and the CUDA host-program emitter plans each half library
// kernel with its element type. Compile-only (no GPU): running the half kernels is
// tests/vm/cuda/cuda_half_library_kernels_test's job.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/driver/cuda_host_emitter.h"
#include "serialization/executable_reader.h"
#include "serialization/library_ops.h"
#include "tests/compiler/frontend/onnx_test_util.h"

namespace keel::driver {
namespace {

namespace fs = std::filesystem;
namespace lo = ser::library_ops;
using namespace keel::testing_onnx;
using passes::Precision;

struct Dir {
  fs::path path;
  Dir() {
    static int counter = 0;
    path = fs::temp_directory_path() / ("keel_half_select_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// One library kernel of a compiled executable, as plain values.
struct LibraryKernelSeen {
  std::string name, op;
  std::vector<ser::DType> dtypes;  // per argument
  std::vector<std::vector<int64_t>> shapes;
  std::string attrs;  // every attribute, printed
};

struct Compiled {
  std::vector<uint8_t> file;
  std::vector<LibraryKernelSeen> library;
  size_t generated = 0;
  std::vector<std::string> generated_names;
};

Result<Compiled> CompileForCuda(const onnx::ModelProto& m, Precision precision, Layout layout = Layout::kAuto,
                                std::vector<std::string> disabled_passes = {}) {
  Dir dir;
  CompileOptions o;
  o.pipeline.disabled.insert(disabled_passes.begin(), disabled_passes.end());
  o.model_path = WriteModel(m, dir.path.string(), "model.onnx");
  o.output_path = (dir.path / "model.keel").string();
  o.target = "cuda";
  o.pipeline.mixed_precision.precision = precision;
  o.backend.layout = layout;
  // Half model I/O: the tests look at the anchors themselves, not at the casts
  // an f32 model edge would add.
  o.pipeline.mixed_precision.half_io = precision == Precision::kFp16 || precision == Precision::kBf16;
  KEEL_RETURN_IF_ERROR(CompileModel(o).status());
  Compiled c;
  std::ifstream in(o.output_path, std::ios::binary);
  c.file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  KEEL_ASSIGN_OR_RETURN(ser::ExecutableView view, ser::ReadExecutable(c.file));
  for (const fb::Kernel* k : *view.root->kernels()) {
    if (k->kind() != fb::KernelKind::library) {
      ++c.generated;
      c.generated_names.push_back(k->name()->str());
      continue;
    }
    LibraryKernelSeen s;
    s.name = k->name()->str();
    s.op = k->library_op() ? k->library_op()->str() : "";
    if (k->args() != nullptr) {
      for (const fb::KernelArg* a : *k->args()) {
        s.dtypes.push_back(ser::FromFb(a->dtype()));
        s.shapes.emplace_back(a->shape() ? std::vector<int64_t>(a->shape()->begin(), a->shape()->end())
                                         : std::vector<int64_t>());
      }
    }
    if (k->attrs() != nullptr) {
      for (const fb::Attr* a : *k->attrs()) {
        s.attrs += a->key()->str() + "=";
        if (a->ints()) for (int64_t v : *a->ints()) s.attrs += std::to_string(v) + ",";
        if (a->floats()) for (double v : *a->floats()) s.attrs += std::to_string(v) + ",";
        if (a->str()) s.attrs += a->str()->str();
        s.attrs += ";";
      }
    }
    c.library.push_back(std::move(s));
  }
  return c;
}

std::vector<float> Filled(size_t n, float v) { return std::vector<float>(n, v); }

// The generated transpose kernels of a compile (the layout pass's, by name).
size_t Transposes(const Compiled& c) {
  size_t n = 0;
  for (const std::string& name : c.generated_names) n += name.find("transpose") != std::string::npos;
  return n;
}

// Half products take a constant [K, N] weight transposed, as [N, K] panels one
// column wide (CudaBackend::PackedBColumns): the same cuBLASLt call with B
// transposed. `h` spelled as the f32 compile `f` has it.
LibraryKernelSeen AsF32Spelling(LibraryKernelSeen h, const LibraryKernelSeen& f) {
  const std::string nk = std::string(lo::attr::kTransB) + "=1,", kn = std::string(lo::attr::kTransB) + "=0,";
  if (h.op != lo::kCublasGemm || h.shapes.size() < 2 || h.attrs.find(nk) == std::string::npos ||
      f.attrs.find(kn) == std::string::npos) {
    return h;
  }
  const std::vector<int64_t> s = h.shapes[1];
  if (s.size() != 3 || s[2] != 1) return h;
  h.attrs.replace(h.attrs.find(nk), nk.size(), kn);
  h.shapes[1] = {s[1], s[0]};
  return h;
}

// Compiles `m` in fp32, and in fp16 and bf16 with the model's NCHW layout
// (--layout nchw; the default, channels-last, is ChannelsLastByDefault's): the half compiles pick exactly the fp32
// compile's library kernels (names, ops, attributes, shapes), every argument in
// the half type; the fp32 one keeps f32. Returns the fp16 compile.
Compiled ExpectSamePicks(const onnx::ModelProto& m, const std::vector<std::string>& ops) {
  auto f32 = CompileForCuda(m, Precision::kFp32);
  EXPECT_TRUE(f32.ok()) << f32.status().ToString();
  if (!f32.ok()) return {};
  std::vector<std::string> seen_ops;
  for (const LibraryKernelSeen& k : f32->library) {
    seen_ops.push_back(k.op);
    for (ser::DType t : k.dtypes) EXPECT_EQ(t, ser::DType::kF32) << k.name;
  }
  EXPECT_EQ(seen_ops, ops);
  Compiled fp16;
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    SCOPED_TRACE(passes::PrecisionName(p));
    const ser::DType want = p == Precision::kFp16 ? ser::DType::kF16 : ser::DType::kBF16;
    auto half = CompileForCuda(m, p, Layout::kChannelsFirst);  // the fp32 compile's layout
    EXPECT_TRUE(half.ok()) << half.status().ToString();
    if (!half.ok()) continue;
    EXPECT_EQ(half->generated, f32->generated);
    EXPECT_EQ(half->library.size(), f32->library.size());
    for (size_t i = 0; i < half->library.size() && i < f32->library.size(); ++i) {
      const LibraryKernelSeen& f = f32->library[i];
      const LibraryKernelSeen h = AsF32Spelling(half->library[i], f);
      EXPECT_EQ(h.name, f.name);
      EXPECT_EQ(h.op, f.op);
      EXPECT_EQ(h.attrs, f.attrs) << h.name;
      EXPECT_EQ(h.shapes, f.shapes) << h.name;
      for (ser::DType t : h.dtypes) EXPECT_EQ(t, want) << h.name;
    }
    if (p == Precision::kFp16) fp16 = std::move(*half);
  }
  return fp16;
}

TEST(CudaHalfSelect, ConvolutionsOfEveryRankAreCudnnKernels) {
  onnx::ModelProto m = NewModel(17);
  // 2-D conv + bias + Relu, a residual Add (over 8 channels: bf16 runs fewer as a
  // GEMM, Bf16ConvolutionOverFewChannelsRunsAsAGemm below).
  AddInput(m, "x", {1, 8, 10, 10});
  AddInput(m, "r", {1, 8, 10, 10});
  AddInitF32(m, "w", {8, 8, 3, 3}, Filled(8 * 8 * 9, 0.01f));
  AddInitF32(m, "b", {8}, Filled(8, 0.5f));
  onnx::NodeProto* conv = AddNode(m, "Conv", {"x", "w", "b"}, {"c"});
  AttrInts(conv, "pads", {1, 1, 1, 1});
  AddNode(m, "Add", {"c", "r"}, {"s"});
  AddNode(m, "Relu", {"s"}, {"y"});
  AddOutput(m, "y");
  ExpectSamePicks(m, {lo::kCudnnConv2d});

  onnx::ModelProto m1 = NewModel(17);
  AddInput(m1, "x", {2, 6, 20});
  AddInitF32(m1, "w", {8, 6, 3}, Filled(8 * 6 * 3, 0.02f));  // 8 outputs: fewer are generated
  AddInitF32(m1, "b", {8}, Filled(8, 0.1f));
  onnx::NodeProto* c1 = AddNode(m1, "Conv", {"x", "w", "b"}, {"c"});
  AttrInts(c1, "pads", {1, 1});
  AttrInts(c1, "strides", {2});
  AddNode(m1, "Relu", {"c"}, {"y"});
  AddOutput(m1, "y");
  ExpectSamePicks(m1, {lo::kCudnnConv2d});

  onnx::ModelProto m3 = NewModel(17);
  AddInput(m3, "x", {1, 4, 6, 10, 10});
  AddInitF32(m3, "w", {8, 2, 3, 3, 3}, Filled(8 * 2 * 27, 0.01f));
  AddInitF32(m3, "b", {8}, Filled(8, 0.5f));
  onnx::NodeProto* c3 = AddNode(m3, "Conv", {"x", "w", "b"}, {"y"});
  AttrInt(c3, "group", 2);
  AttrInts(c3, "pads", {1, 1, 1, 1, 1, 1});
  AddOutput(m3, "y");
  ExpectSamePicks(m3, {lo::kCudnnConv2d});
}

TEST(CudaHalfSelect, GemmMatMulAndPoolAreLibraryKernels) {
  onnx::ModelProto m = NewModel(17);
  // MaxPool -> Flatten -> Gemm (bias C) -> Relu; and a batched MatMul of two inputs.
  AddInput(m, "x", {2, 3, 8, 8});
  AddInput(m, "p", {4, 16, 32});
  AddInput(m, "q", {4, 32, 8});
  onnx::NodeProto* pool = AddNode(m, "MaxPool", {"x"}, {"pooled"});
  AttrInts(pool, "kernel_shape", {2, 2});
  AttrInts(pool, "strides", {2, 2});
  AddNode(m, "Flatten", {"pooled"}, {"flat"});
  AddInitF32(m, "w", {48, 10}, Filled(48 * 10, 0.01f));
  AddInitF32(m, "bias", {10}, Filled(10, 0.25f));
  AddNode(m, "Gemm", {"flat", "w", "bias"}, {"g"});
  AddNode(m, "Relu", {"g"}, {"y"});
  AddNode(m, "MatMul", {"p", "q"}, {"z"});
  AddOutput(m, "y");
  AddOutput(m, "z");
  Compiled half = ExpectSamePicks(m, {lo::kCudnnPool2d, lo::kCublasGemm, lo::kCublasGemm});
  // The half Gemm kept its row bias and relu epilogue (checked equal to fp32's
  // attributes above; spelled out here so the test says what it protects).
  bool saw_relu_bias = false;
  for (const LibraryKernelSeen& k : half.library)
    saw_relu_bias = saw_relu_bias || (k.op == lo::kCublasGemm && k.attrs.find("epilogue=relu") != std::string::npos &&
                                      k.attrs.find("has_bias=1,") != std::string::npos);
  EXPECT_TRUE(saw_relu_bias);

  // The host program runs the half library kernels with the VM's own calls
  // (vm/cuda/library_calls*.h): each is planned with its f16 element type.
  Result<std::string> src = EmitCudaHostSource(half.file, CudaHostOptions{});
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  const size_t begin = src->find("static void ResolveKernels()");
  ASSERT_NE(begin, std::string::npos);
  const std::string resolve = src->substr(begin, src->find("\n}\n", begin) - begin);
  size_t f16_plans = 0;
  for (size_t p = resolve.find("cl::ElementType::kF16"); p != std::string::npos;
       p = resolve.find("cl::ElementType::kF16", p + 1)) {
    ++f16_plans;
  }
  // One per library kernel (the pool and both GEMMs), and each GEMM's result type (f16 too:
  // half I/O here, no widening cast after them).
  EXPECT_EQ(f16_plans, half.library.size() + 2);
  EXPECT_EQ(resolve.find("cl::ElementType::kF32"), std::string::npos);
  for (const LibraryKernelSeen& k : half.library) EXPECT_NE(resolve.find("\"" + k.name + "\""), std::string::npos) << k.name;
}

// A residual Add after a GEMM's bias is cuBLASLt's C matrix: MatMul + row bias +
// residual + Relu is one cublas.gemm in every precision, no generated kernel.
TEST(CudaHalfSelect, GemmResidualIsTheCMatrix) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 16, 32});
  AddInput(m, "r", {2, 16, 24});
  AddInitF32(m, "w", {32, 24}, Filled(32 * 24, 0.01f));
  AddInitF32(m, "bias", {24}, Filled(24, 0.25f));
  AddNode(m, "MatMul", {"x", "w"}, {"xw"});
  AddNode(m, "Add", {"xw", "bias"}, {"b"});
  AddNode(m, "Add", {"r", "b"}, {"s"});
  AddNode(m, "Relu", {"s"}, {"y"});
  AddOutput(m, "y");
  Compiled half = ExpectSamePicks(m, {lo::kCublasGemm});
  ASSERT_EQ(half.library.size(), 1u);
  EXPECT_EQ(half.generated, 0u);
  EXPECT_NE(half.library[0].attrs.find("has_residual=1,"), std::string::npos) << half.library[0].attrs;
  EXPECT_NE(half.library[0].attrs.find("epilogue=relu"), std::string::npos) << half.library[0].attrs;
  EXPECT_EQ(half.library[0].shapes.size(), 5u);  // A, B, bias, residual, Y
}

// Half products read a constant weight as [N, K] (PyTorch's nn.Linear layout,
// where cuBLASLt's kernels were faster: CudaBackend::PackedBColumns); fp32 keeps
// [K, N]. A Gemm whose weight is [N, K] already (transB) and a product of two
// activations are unchanged.
TEST(CudaHalfSelect, HalfProductsReadTheirWeightTransposed) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 16, 32});
  AddInput(m, "p", {4, 16, 32});
  AddInput(m, "q", {4, 32, 8});
  AddInitF32(m, "w", {32, 24}, Filled(32 * 24, 0.01f));
  AddInitF32(m, "wt", {24, 32}, Filled(24 * 32, 0.02f));
  AddNode(m, "MatMul", {"x", "w"}, {"y"});
  AddInput(m, "f", {4, 32});
  onnx::NodeProto* g = AddNode(m, "Gemm", {"f", "wt"}, {"z"});
  AttrInt(g, "transB", 1);
  AddNode(m, "MatMul", {"p", "q"}, {"u"});
  AddOutput(m, "y");
  AddOutput(m, "z");
  AddOutput(m, "u");
  const std::string nk = std::string(lo::attr::kTransB) + "=1,";
  for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kBf16}) {
    SCOPED_TRACE(passes::PrecisionName(p));
    auto c = CompileForCuda(m, p);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ASSERT_EQ(c->library.size(), 3u);
    const bool half = p != Precision::kFp32;
    std::map<std::vector<int64_t>, bool> transposed_b;  // B's shape -> trans_b
    for (const LibraryKernelSeen& k : c->library) {
      ASSERT_EQ(k.op, lo::kCublasGemm);
      transposed_b[k.shapes[1]] = k.attrs.find(nk) != std::string::npos;
    }
    const std::vector<int64_t> w_form = half ? std::vector<int64_t>{24, 32, 1} : std::vector<int64_t>{32, 24};
    ASSERT_EQ(transposed_b.count(w_form), 1u);
    EXPECT_EQ(transposed_b[w_form], half);
    const std::vector<int64_t> gemm_nk = {24, 32}, activations = {4, 32, 8};
    EXPECT_TRUE(transposed_b[gemm_nk]);        // the Gemm's own [N, K]
    EXPECT_FALSE(transposed_b[activations]);  // two activations
  }
}

// The erf form of GELU after a GEMM's bias (as exporters spell it: five nodes)
// is one cublas.gemm with cuBLASLt's GELU epilogue in half precision (where
// mixed precision gives Gelu its tanh form); fp32 keeps the erf form, a
// generated kernel after the GEMM.
TEST(CudaHalfSelect, ErfGeluAfterBiasIsTheGemmEpilogueInHalf) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 16, 32});
  AddInitF32(m, "w", {32, 24}, Filled(32 * 24, 0.01f));
  AddInitF32(m, "bias", {24}, Filled(24, 0.25f));
  AddInitF32(m, "sqrt2", {}, {1.4142135f});
  AddInitF32(m, "one", {}, {1.f});
  AddInitF32(m, "half", {}, {0.5f});
  AddNode(m, "MatMul", {"x", "w"}, {"xw"});
  AddNode(m, "Add", {"xw", "bias"}, {"b"});
  AddNode(m, "Div", {"b", "sqrt2"}, {"d"});
  AddNode(m, "Erf", {"d"}, {"e"});
  AddNode(m, "Add", {"e", "one"}, {"a"});
  AddNode(m, "Mul", {"b", "a"}, {"ba"});
  AddNode(m, "Mul", {"ba", "half"}, {"y"});
  AddOutput(m, "y");
  for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kBf16}) {
    SCOPED_TRACE(passes::PrecisionName(p));
    auto c = CompileForCuda(m, p);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ASSERT_EQ(c->library.size(), 1u);
    const bool half = p != Precision::kFp32;
    EXPECT_EQ(c->library[0].attrs.find("epilogue=gelu_tanh") != std::string::npos, half) << c->library[0].attrs;
    EXPECT_NE(c->library[0].attrs.find("has_bias=1,"), std::string::npos) << c->library[0].attrs;
    EXPECT_EQ(c->generated, half ? 0u : 1u);
  }
}

// A 7x7 stride-2 convolution over 3 channels (ResNet's stem) runs in bf16 as
// space-to-depth and a 4x4 stride-1 convolution over 16 channels (cuDNN has no
// fast bf16 kernel for the stem, see cuda_backend.cc); fp16 and fp32 keep it.
TEST(CudaHalfSelect, Bf16StemRunsAfterSpaceToDepth) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 3, 32, 32});
  AddInitF32(m, "w", {8, 3, 7, 7}, Filled(8 * 3 * 7 * 7, 0.01f));
  onnx::NodeProto* conv = AddNode(m, "Conv", {"x", "w"}, {"y"});
  AttrInts(conv, "kernel_shape", {7, 7});
  AttrInts(conv, "strides", {2, 2});
  AttrInts(conv, "pads", {3, 3, 3, 3});
  AddOutput(m, "y");
  for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kBf16}) {
    SCOPED_TRACE(passes::PrecisionName(p));
    auto c = CompileForCuda(m, p);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ASSERT_EQ(c->library.size(), 1u);
    ASSERT_EQ(c->library[0].op, lo::kCudnnConv2d);
    const std::vector<int64_t>& w = c->library[0].shapes[1];  // the weight as the call reads it
    const bool s2d = p == Precision::kBf16;
    EXPECT_EQ(w, s2d ? std::vector<int64_t>({8, 4, 4, 16}) : p == Precision::kFp16 ? std::vector<int64_t>({8, 7, 7, 3})
                                                                                      : std::vector<int64_t>({8, 3, 7, 7}));
  }
}

// A convolution over fewer than 8 channels (VGG's 3x3 stem, mc3_18's 3x7x7
// video stem) runs in half precision as keel.Im2Col and one GEMM whose K is the
// window rounded up to 8 (cuDNN has no fast bf16 kernel for it, and its f16 one
// is slower than the GEMM, see cuda_backend.cc); fp32 keeps cuDNN, and a
// convolution over 8 channels keeps a convolution kernel. (ResNet's strided 7x7 stem keeps cuDNN's f16
// first-layer kernel: Bf16StemRunsAfterSpaceToDepth.)
TEST(CudaHalfSelect, Bf16ConvolutionOverFewChannelsRunsAsAGemm) {
  struct Case {
    std::vector<int64_t> x, w, strides, pads;
    int64_t columns;  // the GEMM's K in half precision; 0: cuDNN there too
  };
  for (const Case& t : {Case{{2, 3, 20, 18}, {16, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, 32},
                        Case{{1, 3, 6, 14, 14}, {16, 3, 3, 7, 7}, {1, 2, 2}, {1, 3, 3, 1, 3, 3}, 448},
                        Case{{2, 8, 20, 18}, {16, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, 0}}) {
    onnx::ModelProto m = NewModel(17);
    AddInput(m, "x", t.x);
    int64_t n = 1;
    for (int64_t d : t.w) n *= d;
    AddInitF32(m, "w", t.w, Filled(static_cast<size_t>(n), 0.01f));
    onnx::NodeProto* conv = AddNode(m, "Conv", {"x", "w"}, {"y"});
    AttrInts(conv, "strides", t.strides);
    AttrInts(conv, "pads", t.pads);
    AddOutput(m, "y");
    for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kBf16}) {
      SCOPED_TRACE(std::string(passes::PrecisionName(p)) + " over " + std::to_string(t.x[1]) + " channels, " +
                   std::to_string(t.x.size() - 2) + "-D");
      auto c = CompileForCuda(m, p);
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      ASSERT_EQ(c->library.size(), 1u);
      if (p != Precision::kFp32 && t.columns != 0) {
        EXPECT_EQ(c->library[0].op, lo::kCublasGemm);
        EXPECT_EQ(c->library[0].shapes[0][0], t.columns);  // A transposed: [columns, pixels]
        EXPECT_EQ(c->library[0].shapes[1], (std::vector<int64_t>{t.columns, t.w[0]}));
        bool gather = false;
        for (const std::string& name : c->generated_names) gather = gather || name.find("im2col") != std::string::npos;
        EXPECT_TRUE(gather);
      } else {
        EXPECT_NE(c->library[0].op, lo::kCublasGemm);
      }
    }
  }
}

// A convolution to at most four channels (a segmentation head's 1x1 to two
// classes) is a generated kernel in every precision, channels-last where its
// input is (codegen::GpuDirectDenseConv: cuDNN's kernels for it are slow); one to
// eight channels stays cuDNN's. Such a head at 128x128 in half precision, and a
// depthwise convolution over two channels there, aborted keelc (an LLVM NVPTX
// selection failure on `it % 2`, llvm_nvptx_emitter.cc AvoidOneBitNarrowing):
// they must compile.
TEST(CudaHalfSelect, ConvolutionToFewChannelsIsGenerated) {
  for (int64_t co : {2, 8, 0}) {  // 0: the depthwise one over 2 channels
    const int64_t c = co == 0 ? 2 : 16, out = co == 0 ? 2 : co;
    onnx::ModelProto m = NewModel(17);
    AddInput(m, "x", {1, c, 128, 128});
    AddInitF32(m, "w0", {c, c, 3, 3}, Filled(static_cast<size_t>(c * c * 9), 0.01f));
    AddInitF32(m, "w", {out, co == 0 ? 1 : c, 1, 1}, Filled(static_cast<size_t>(out * (co == 0 ? 1 : c)), 0.01f));
    AddInitF32(m, "b", {out}, Filled(static_cast<size_t>(out), 0.5f));
    AttrInts(AddNode(m, "Conv", {"x", "w0"}, {"h"}), "pads", {1, 1, 1, 1});
    onnx::NodeProto* head = AddNode(m, "Conv", {"h", "w", "b"}, {"y"});
    if (co == 0) AttrInt(head, "group", c);
    AddOutput(m, "y");
    for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kBf16}) {
      SCOPED_TRACE(std::string(passes::PrecisionName(p)) + ", " + std::to_string(co) + " output channels");
      auto c = CompileForCuda(m, p);
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      // The 16-channel 3x3 convolution is a library kernel, cuDNN's or in half precision
      // Keel's own (the 2-channel one is generated too, or in half precision the im2col
      // pass's GEMM).
      size_t cudnn = 0;
      for (const LibraryKernelSeen& k : c->library) cudnn += k.op == lo::kCudnnConv2d || k.op == lo::kKeelConv2d;
      EXPECT_EQ(cudnn, co == 8 ? 2u : co == 2 ? 1u : 0u);
      bool conv = false;
      for (const std::string& name : c->generated_names) conv = conv || name.find("conv") != std::string::npos;
      EXPECT_EQ(conv, co != 8);
    }
  }
}

// Channels-last half convolutions with few channels and many pixels run Keel's
// own tensor-core kernel (keel.conv2d, cuda_backend_conv.h UsesKeelConv) with
// cudnn.conv2d's arguments and attributes; beyond its rule (more than 32
// outputs, more than 64 inputs, channels not a multiple of 8, strides, 1x1
// windows and windows beyond 3x3, fewer than 2^17 output pixels) and in fp32
// or channels-first, cuDNN's.
TEST(CudaHalfSelect, FewChannelConvolutionsRunKeelsKernel) {
  struct Case {
    int64_t batch, c, k, kernel, stride;
    bool keel;
  };
  for (const Case& t : {Case{2, 16, 16, 3, 1, true}, Case{2, 64, 32, 3, 1, true}, Case{2, 8, 8, 2, 1, true},
                        Case{2, 32, 16, 1, 1, false},
                        Case{1, 16, 16, 3, 1, false}, Case{2, 16, 64, 3, 1, false}, Case{2, 128, 16, 3, 1, false},
                        Case{2, 12, 16, 3, 1, false}, Case{2, 16, 16, 3, 2, false}, Case{2, 16, 16, 5, 1, false}}) {
    onnx::ModelProto m = NewModel(17);
    AddInput(m, "x", {t.batch, t.c, 256, 256});  // 2^17 output pixels at batch 2 and stride 1
    AddInitF32(m, "w", {t.k, t.c, t.kernel, t.kernel}, Filled(static_cast<size_t>(t.k * t.c * t.kernel * t.kernel), 0.01f));
    AddInitF32(m, "b", {t.k}, Filled(static_cast<size_t>(t.k), 0.5f));
    onnx::NodeProto* conv = AddNode(m, "Conv", {"x", "w", "b"}, {"c"});
    const int64_t pad = t.kernel / 2;
    AttrInts(conv, "pads", {pad, pad, pad, pad});
    AttrInts(conv, "strides", {t.stride, t.stride});
    AddNode(m, "Relu", {"c"}, {"y"});
    AddOutput(m, "y");
    for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kBf16}) {
      for (Layout layout : {Layout::kAuto, Layout::kChannelsFirst}) {
        SCOPED_TRACE(std::string(passes::PrecisionName(p)) + (layout == Layout::kAuto ? " auto" : " nchw") + ", batch " +
                     std::to_string(t.batch) + ", " + std::to_string(t.c) + " -> " + std::to_string(t.k) + ", " +
                     std::to_string(t.kernel) + "x" + std::to_string(t.kernel) + " stride " + std::to_string(t.stride));
        auto c = CompileForCuda(m, p, layout);
        ASSERT_TRUE(c.ok()) << c.status().ToString();
        ASSERT_EQ(c->library.size(), 1u);
        const bool keel = t.keel && p != Precision::kFp32 && layout == Layout::kAuto;
        const LibraryKernelSeen& k = c->library[0];
        EXPECT_EQ(k.op, keel ? lo::kKeelConv2d : lo::kCudnnConv2d) << k.name;
        if (!keel) continue;
        EXPECT_NE(k.name.find("_keel_conv2d"), std::string::npos) << k.name;
        EXPECT_NE(k.attrs.find("layout=nhwc"), std::string::npos) << k.attrs;
        EXPECT_NE(k.attrs.find("has_bias=1"), std::string::npos) << k.attrs;
        EXPECT_NE(k.attrs.find("activation=relu"), std::string::npos) << k.attrs;
        EXPECT_EQ(k.shapes[1], (std::vector<int64_t>{t.k, t.kernel, t.kernel, t.c}));  // W KRSC
      }
    }
  }
}

// A patch embedding (ViT's 16x16 stride-16 convolution over 3 channels) runs in
// half precision as SpaceToDepth and a 1x1 convolution over the 768 values of
// each patch (a GEMM on the tensor cores); fp32 keeps the convolution, and an
// overlapping or padded strided conv over 3 channels stays as it is in f16.
TEST(CudaHalfSelect, PatchEmbeddingRunsAsAOneByOneConvolution) {
  for (const bool patches : {true, false}) {
    onnx::ModelProto m = NewModel(17);
    AddInput(m, "x", {2, 3, 64, 64});
    const int64_t k = patches ? 16 : 17;
    AddInitF32(m, "w", {32, 3, k, k}, Filled(32 * 3 * k * k, 0.01f));
    onnx::NodeProto* conv = AddNode(m, "Conv", {"x", "w"}, {"y"});
    AttrInts(conv, "strides", {16, 16});
    if (!patches) AttrInts(conv, "pads", {8, 8, 8, 8});
    AddOutput(m, "y");
    for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kBf16}) {
      SCOPED_TRACE(std::string(passes::PrecisionName(p)) + (patches ? " patches" : " overlapping"));
      auto c = CompileForCuda(m, p);
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      ASSERT_EQ(c->library.size(), 1u);
      const std::vector<int64_t>& w = c->library[0].shapes[1];
      if (p == Precision::kFp32) {
        EXPECT_EQ(w, (std::vector<int64_t>{32, 3, k, k}));
      } else if (patches) {
        EXPECT_EQ(w, (std::vector<int64_t>{32, 1, 1, 768}));  // OHWI over the patch's values
        EXPECT_EQ(c->library[0].shapes[0], (std::vector<int64_t>{2, 4, 4, 768}));
      } else {
        EXPECT_EQ(w, (std::vector<int64_t>{32, k, k, 3}));
      }
    }
  }
}

// Scaled dot-product attention (PyTorch's multi-head export shape) is one
// keel.attention kernel in half precision, reading Q, K and V where the
// projection wrote them; in fp32 its GEMMs stay cuBLASLt calls. The host
// program launches the same kernel.
TEST(CudaHalfSelect, AttentionIsOneKernelInHalf) {
  onnx::ModelProto m = NewModel(17);
  const int64_t S = 6, B = 2, H = 2, D = 16, E = H * D;
  AddInput(m, "x", {S, B, E});
  AddInitF32(m, "w", {E, 3 * E}, Filled(E * 3 * E, 0.02f));
  AddNode(m, "MatMul", {"x", "w"}, {"qkv"});
  for (int i = 0; i < 3; ++i) {
    const std::string n = std::to_string(i);
    AddInitI64(m, "st" + n, {1}, {i * E});
    AddInitI64(m, "en" + n, {1}, {(i + 1) * E});
    AddInitI64(m, "ax" + n, {1}, {2});
    AddNode(m, "Slice", {"qkv", "st" + n, "en" + n, "ax" + n}, {"s" + n});
    AddInitI64(m, "shape" + n, {3}, {S, B * H, D});
    AddNode(m, "Reshape", {"s" + n, "shape" + n}, {"h" + n});
  }
  AttrInts(AddNode(m, "Transpose", {"h0"}, {"q"}), "perm", {1, 0, 2});
  AttrInts(AddNode(m, "Transpose", {"h1"}, {"kt"}), "perm", {1, 2, 0});
  AttrInts(AddNode(m, "Transpose", {"h2"}, {"v"}), "perm", {1, 0, 2});
  AddNode(m, "MatMul", {"q", "kt"}, {"scores"});
  AddNode(m, "Softmax", {"scores"}, {"p"});
  AddNode(m, "MatMul", {"p", "v"}, {"o"});
  AttrInts(AddNode(m, "Transpose", {"o"}, {"y"}), "perm", {1, 0, 2});
  AddOutput(m, "y");
  auto count = [](const Compiled& c, const char* op) {
    size_t n = 0;
    for (const LibraryKernelSeen& k : c.library) n += k.op == op;
    return n;
  };
  auto f32 = CompileForCuda(m, Precision::kFp32);
  ASSERT_TRUE(f32.ok()) << f32.status().ToString();
  EXPECT_EQ(count(*f32, lo::kKeelAttention), 0u);
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    SCOPED_TRACE(passes::PrecisionName(p));
    auto half = CompileForCuda(m, p);
    ASSERT_TRUE(half.ok()) << half.status().ToString();
    ASSERT_EQ(count(*half, lo::kKeelAttention), 1u);
    EXPECT_EQ(count(*half, lo::kCublasGemm), 1u);  // the projection only
    EXPECT_EQ(half->generated, 0u) << "no slice, transpose or softmax kernel is left";
    for (const LibraryKernelSeen& k : half->library) {
      if (k.op != lo::kKeelAttention) continue;
      EXPECT_NE(k.attrs.find("batch=2,2,;"), std::string::npos) << k.attrs;
      EXPECT_NE(k.attrs.find("dims=6,6,16,16,;"), std::string::npos) << k.attrs;
      EXPECT_EQ(k.shapes.size(), 4u);  // Q, K, V (all the projection) and Y
    }
    Result<std::string> src = EmitCudaHostSource(half->file, CudaHostOptions{});
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    EXPECT_NE(src->find("AttentionPlanKernel("), std::string::npos);
    EXPECT_NE(src->find("AttentionRun("), std::string::npos);
  }
}

// The default layout at half precision (--layout auto): a conv-relu-conv-residual
// block runs as NHWC cudnn.conv2d kernels (layout attribute, channels-last
// shapes), the residual and relu still fused into the second call; the only
// generated kernels are the two transposes where NCHW data enters and leaves.
TEST(CudaHalfSelect, ChannelsLastByDefault) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {1, 8, 10, 10});
  AddInitF32(m, "w1", {8, 8, 3, 3}, Filled(8 * 8 * 9, 0.01f));
  AddInitF32(m, "w2", {8, 8, 3, 3}, Filled(8 * 8 * 9, 0.02f));
  onnx::NodeProto* c1 = AddNode(m, "Conv", {"x", "w1"}, {"c1"});
  AttrInts(c1, "pads", {1, 1, 1, 1});
  AddNode(m, "Relu", {"c1"}, {"r1"});
  onnx::NodeProto* c2 = AddNode(m, "Conv", {"r1", "w2"}, {"c2"});
  AttrInts(c2, "pads", {1, 1, 1, 1});
  AddNode(m, "Add", {"c2", "r1"}, {"s"});
  AddNode(m, "Relu", {"s"}, {"y"});
  AddOutput(m, "y");
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    SCOPED_TRACE(passes::PrecisionName(p));
    auto c = CompileForCuda(m, p);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->generated, 2u);
    ASSERT_EQ(c->library.size(), 2u);
    for (const LibraryKernelSeen& k : c->library) {
      EXPECT_EQ(k.op, lo::kCudnnConv2d);  // few pixels for Keel's kernel (FewChannelConvolutionsRunKeelsKernel)
      EXPECT_NE(k.attrs.find("layout=nhwc"), std::string::npos) << k.attrs;
      EXPECT_EQ(k.shapes[0], (std::vector<int64_t>{1, 10, 10, 8})) << k.name;
      EXPECT_EQ(k.shapes[1], (std::vector<int64_t>{8, 3, 3, 8})) << k.name;
    }
    EXPECT_NE(c->library[1].attrs.find("has_residual=1"), std::string::npos) << c->library[1].attrs;
    EXPECT_NE(c->library[1].attrs.find("activation=relu"), std::string::npos) << c->library[1].attrs;
    // --layout nchw keeps the model's layout: no transposes.
    auto nchw = CompileForCuda(m, p, Layout::kChannelsFirst);
    ASSERT_TRUE(nchw.ok());
    EXPECT_EQ(nchw->generated, 0u);
  }
}

// A decoder stage at half precision: ConvTranspose upsampling (cuDNN's data
// gradient, cudnn.conv_transpose), a bilinear Resize (its per-axis geometry moved
// to NHWC) and the skip Concat all run channels-last between the NHWC
// convolutions: the only transposes are where NCHW data enters and leaves.
TEST(CudaHalfSelect, DecoderRunsChannelsLastThroughout) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {1, 8, 8, 8});
  AddInitF32(m, "w1", {16, 8, 3, 3}, Filled(16 * 8 * 9, 0.01f));
  AddInitF32(m, "wt", {16, 8, 2, 2}, Filled(16 * 8 * 4, 0.02f));  // ConvTranspose: [C_in, C_out, kh, kw]
  AddInitF32(m, "bt", {8}, Filled(8, 0.1f));
  AddInitF32(m, "w2", {8, 16, 1, 1}, Filled(8 * 16, 0.03f));
  AddInitF32(m, "w3", {8, 16, 3, 3}, Filled(8 * 16 * 9, 0.01f));
  AddInitF32(m, "scales", {4}, {1.f, 1.f, 2.f, 2.f});
  onnx::NodeProto* c1 = AddNode(m, "Conv", {"x", "w1"}, {"c1"});
  AttrInts(c1, "pads", {1, 1, 1, 1});
  AddNode(m, "Relu", {"c1"}, {"r1"});
  onnx::NodeProto* up = AddNode(m, "ConvTranspose", {"r1", "wt", "bt"}, {"u"});
  AttrInts(up, "strides", {2, 2});
  onnx::NodeProto* rs = AddNode(m, "Resize", {"r1", "", "scales"}, {"z"});
  AttrString(rs, "mode", "linear");
  AddNode(m, "Conv", {"z", "w2"}, {"v"});
  onnx::NodeProto* cat = AddNode(m, "Concat", {"u", "v"}, {"j"});
  AttrInt(cat, "axis", 1);
  onnx::NodeProto* c3 = AddNode(m, "Conv", {"j", "w3"}, {"y"});
  AttrInts(c3, "pads", {1, 1, 1, 1});
  AddOutput(m, "y");
  // The upsampling runs as cuDNN's data gradient with the subpixel pass off, and as a
  // forward convolution to 4 x 8 channels and a channels-last DepthToSpace with it on
  // (the default; passes/subpixel_conv_transpose.h).
  for (const bool subpixel : {false, true})
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    SCOPED_TRACE(std::string(passes::PrecisionName(p)) + (subpixel ? ", subpixel" : ""));
    auto c = CompileForCuda(m, p, Layout::kAuto, subpixel ? std::vector<std::string>{} : std::vector<std::string>{"subpixel"});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    size_t conv_transposes = 0;
    EXPECT_EQ(Transposes(*c), 2u);
    // The two transposes, the Resize, the Concat (and the pixel shuffle).
    EXPECT_EQ(c->generated, subpixel ? 5u : 4u);
    for (const LibraryKernelSeen& k : c->library) {
      EXPECT_NE(k.attrs.find("layout=nhwc"), std::string::npos) << k.name << " " << k.attrs;
      if (subpixel && k.shapes.size() > 1 && k.shapes[1] == std::vector<int64_t>{32, 1, 1, 16}) ++conv_transposes;
      if (k.op != lo::kCudnnConvTranspose) continue;
      ++conv_transposes;
      EXPECT_EQ(k.shapes[0], (std::vector<int64_t>{1, 8, 8, 16}));   // X NHWC
      EXPECT_EQ(k.shapes[1], (std::vector<int64_t>{16, 2, 2, 8}));   // W [C_in, kh, kw, C_out]
      EXPECT_EQ(k.shapes[2], (std::vector<int64_t>{8}));             // bias
      EXPECT_EQ(k.shapes[3], (std::vector<int64_t>{1, 16, 16, 8}));  // Y NHWC
      EXPECT_NE(k.attrs.find("strides=2,2,"), std::string::npos) << k.attrs;
      EXPECT_NE(k.attrs.find("has_bias=1"), std::string::npos) << k.attrs;
    }
    EXPECT_EQ(conv_transposes, 1u);
  }
}

// Inception's pooling branch as PyTorch exports it (Pad, then AveragePool) stays
// channels-last between its convolutions: the Pad moves its pads along
// (OpDef::permute_axes) instead of taking a transpose on each side.
TEST(CudaHalfSelect, PadStaysChannelsLast) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 8, 9, 9});
  AddInitF32(m, "w1", {16, 8, 1, 1}, Filled(16 * 8, 0.01f));
  AddInitF32(m, "w2", {8, 16, 1, 1}, Filled(8 * 16, 0.02f));
  AddInitI64(m, "pads", {8}, {0, 0, 1, 2, 0, 0, 1, 2});
  AddNode(m, "Conv", {"x", "w1"}, {"c1"});
  AddNode(m, "Pad", {"c1", "pads"}, {"p"});
  onnx::NodeProto* pool = AddNode(m, "AveragePool", {"p"}, {"a"});
  AttrInts(pool, "kernel_shape", {3, 5});
  AddNode(m, "Conv", {"a", "w2"}, {"y"});
  AddOutput(m, "y");
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    SCOPED_TRACE(passes::PrecisionName(p));
    auto c = CompileForCuda(m, p);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(Transposes(*c), 2u);  // in and out
    for (const LibraryKernelSeen& k : c->library) EXPECT_NE(k.attrs.find("layout=nhwc"), std::string::npos) << k.name;
  }
}

// A channels-last max pool between two NHWC convolutions is generated (lower_pool.cc's
// pixel form, faster than cuDNN's NHWC pools; docs/PRECISION.md), with no transpose
// around it; a MaxPool that also returns Indices (numbered in NCHW) stays channels-first.
TEST(CudaHalfSelect, ChannelsLastMaxPoolIsGenerated) {
  for (bool indices : {false, true}) {
    SCOPED_TRACE(indices ? "with Indices" : "values only");
    onnx::ModelProto m = NewModel(17);
    AddInput(m, "x", {2, 8, 15, 15});
    AddInitF32(m, "w1", {16, 8, 1, 1}, Filled(16 * 8, 0.01f));
    AddInitF32(m, "w2", {8, 16, 1, 1}, Filled(8 * 16, 0.02f));
    AddNode(m, "Conv", {"x", "w1"}, {"c1"});
    std::vector<std::string> outs = {"p"};
    if (indices) outs.push_back("i");
    onnx::NodeProto* pool = AddNode(m, "MaxPool", {"c1"}, outs);
    AttrInts(pool, "kernel_shape", {3, 3});
    AttrInts(pool, "strides", {2, 2});
    AttrInts(pool, "pads", {1, 1, 1, 1});
    AddNode(m, "Conv", {"p", "w2"}, {"y"});
    AddOutput(m, "y");
    if (indices) AddOutput(m, "i");
    auto c = CompileForCuda(m, Precision::kFp16);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    for (const LibraryKernelSeen& k : c->library) EXPECT_NE(k.op, lo::kCudnnPool2d) << k.name;
    size_t pools = 0;
    for (const std::string& name : c->generated_names) pools += name.find("maxpool") != std::string::npos;
    EXPECT_EQ(pools, 1u);
    // Values only: transposes where x enters and y leaves; with Indices the pool runs NCHW, so
    // its input and output cross layouts too.
    EXPECT_EQ(Transposes(*c), indices ? 4u : 2u);
  }
}

// 3-D convolutions (video, volumes) at half precision run NDHWC too: a
// conv-relu-conv-residual block, a global average pool and the classifier. The
// one transpose is where the NCDHW clip enters; the pooled [N,1,1,1,C] goes
// back to NCDHW as a view.
TEST(CudaHalfSelect, ThreeDimensionalConvsRunChannelsLast) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 8, 4, 10, 10});
  AddInitF32(m, "w1", {8, 8, 3, 3, 3}, Filled(8 * 8 * 27, 0.01f));
  AddInitF32(m, "w2", {8, 8, 1, 3, 3}, Filled(8 * 8 * 9, 0.02f));
  AddInitF32(m, "fc", {8, 5}, Filled(8 * 5, 0.1f));
  onnx::NodeProto* c1 = AddNode(m, "Conv", {"x", "w1"}, {"c1"});
  AttrInts(c1, "pads", {1, 1, 1, 1, 1, 1});
  AddNode(m, "Relu", {"c1"}, {"r1"});
  onnx::NodeProto* c2 = AddNode(m, "Conv", {"r1", "w2"}, {"c2"});
  AttrInts(c2, "pads", {0, 1, 1, 0, 1, 1});
  AddNode(m, "Add", {"c2", "r1"}, {"s"});
  AddNode(m, "Relu", {"s"}, {"r2"});
  AddNode(m, "GlobalAveragePool", {"r2"}, {"p"});
  AddNode(m, "Flatten", {"p"}, {"f"});
  AddNode(m, "MatMul", {"f", "fc"}, {"y"});
  AddOutput(m, "y");
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    SCOPED_TRACE(passes::PrecisionName(p));
    auto c = CompileForCuda(m, p);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    size_t convs = 0;
    EXPECT_EQ(Transposes(*c), 1u);
    for (const LibraryKernelSeen& k : c->library) {
      if (k.op != lo::kCudnnConv2d) continue;
      ++convs;
      EXPECT_NE(k.attrs.find("layout=nhwc"), std::string::npos) << k.attrs;
      EXPECT_EQ(k.shapes[0], (std::vector<int64_t>{2, 4, 10, 10, 8})) << k.name;  // NDHWC
      EXPECT_EQ(k.shapes[1].back(), 8) << k.name;                                  // KTRSC
    }
    EXPECT_EQ(convs, 2u);
    // --layout nchw: no transposes.
    auto nchw = CompileForCuda(m, p, Layout::kChannelsFirst);
    ASSERT_TRUE(nchw.ok());
    EXPECT_EQ(Transposes(*nchw), 0u);
  }
}

}  // namespace
}  // namespace keel::driver
