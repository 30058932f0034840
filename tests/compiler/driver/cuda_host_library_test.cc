// Tests of keelc --emit=cuda-host's library kernels (compiler/driver/cuda_host_emitter.h):
// the VM's library calls (vm/cuda/library_calls*.h) pasted verbatim and not restated,
// half (f16/bf16) cuBLASLt / cuDNN kernels planned with their element type and the
// VM's half tuning keys, and the types the program refuses. Programs are compiled
// with nvcc when the toolkit is present; running them needs a GPU
// (scripts/cuda-host-check.sh).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "compiler/driver/cuda_host_emitter.h"
#include "serialization/executable_writer.h"
#include "serialization/library_ops.h"
#include "tests/compiler/driver/cuda_host_test_util.h"
#ifdef KEEL_TEST_WITH_VM_CUDA
#include "vm/cuda/autotune.h"
#endif

namespace keel::driver {
namespace {

namespace fs = std::filesystem;
namespace lo = ser::library_ops;
using test_util::CompileWithNvcc;
using test_util::Count;
using test_util::EmbeddedText;
using test_util::FunctionBody;
using test_util::HaveNvcc;
using test_util::Image;
using test_util::TempDir;

// An f16 or bf16 executable: conv (+bias, relu) -> max pool, and a gemm with a row
// bias, every tensor in `t` (as keelc --precision fp16|bf16 makes them).
std::vector<uint8_t> HalfExecutable(ser::DType t) {
  using ser::DeviceKind;
  ser::ExecutableWriter w;
  w.AddTarget(DeviceKind::kCuda, "sm_90");
  const std::vector<uint8_t> zeros(8 * 4 * 3 * 3 * 2, 0);
  auto bytes = [&](size_t elems) { return std::span<const uint8_t>(zeros.data(), elems * 2); };
  const uint32_t cw = w.AddConstant("W", t, {8, 4, 3, 3}, DeviceKind::kCuda, bytes(8 * 4 * 3 * 3));
  const uint32_t cb = w.AddConstant("b", t, {8}, DeviceKind::kCuda, bytes(8));
  const uint32_t cg = w.AddConstant("G", t, {16, 4}, DeviceKind::kCuda, bytes(16 * 4));
  const uint32_t cgb = w.AddConstant("gb", t, {4}, DeviceKind::kCuda, bytes(4));
  auto library = [&](const char* name, const char* op, std::vector<ser::KernelArgDesc> args,
                     std::vector<ser::AttrDesc> attrs) {
    ser::KernelDesc k;
    k.name = name;
    k.kind = ser::KernelKind::kLibrary;
    k.device = DeviceKind::kCuda;
    k.library_op = op;
    k.args = std::move(args);
    k.attrs = std::move(attrs);
    return w.AddKernel(k);
  };
  using ser::ArgAccess;
  const uint32_t kc = library("conv_0", lo::kCudnnConv2d,
                              {{t, {1, 4, 8, 8}, ArgAccess::kRead}, {t, {8, 4, 3, 3}, ArgAccess::kRead},
                               {t, {8}, ArgAccess::kRead}, {t, {1, 8, 8, 8}, ArgAccess::kWrite}},
                              {ser::AttrDesc::Ints("pads", {1, 1, 1, 1}), ser::AttrDesc::Ints("has_bias", {1}),
                               ser::AttrDesc::Str("activation", "relu")});
  const uint32_t kp = library("pool_1", lo::kCudnnPool2d,
                              {{t, {1, 8, 8, 8}, ArgAccess::kRead}, {t, {1, 8, 4, 4}, ArgAccess::kWrite}},
                              {ser::AttrDesc::Str("mode", "max"), ser::AttrDesc::Ints("kernel", {2, 2}),
                               ser::AttrDesc::Ints("strides", {2, 2})});
  const uint32_t kg = library("gemm_2", lo::kCublasGemm,
                              {{t, {8, 16}, ArgAccess::kRead}, {t, {16, 4}, ArgAccess::kRead},
                               {t, {4}, ArgAccess::kRead}, {t, {8, 4}, ArgAccess::kWrite}},
                              {ser::AttrDesc::Ints("m", {8}), ser::AttrDesc::Ints("n", {4}),
                               ser::AttrDesc::Ints("k", {16}), ser::AttrDesc::Ints("has_bias", {1}),
                               ser::AttrDesc::Str("epilogue", "relu")});
  ser::MemoryPlanDesc plan;
  plan.strategy = "greedy-size";
  plan.storages = {{1024, 256, DeviceKind::kCuda, 0, 0},
                   {256, 256, DeviceKind::kCuda, 0, 1024},
                   {256, 256, DeviceKind::kCuda, 0, 1280}};
  plan.arenas = {{DeviceKind::kCuda, 1536, 256}};
  w.SetMemoryPlan(plan);
  auto& f = w.AddFunction("main", {{"x", {1, 4, 8, 8}, t, DeviceKind::kCuda}, {"a", {8, 16}, t, DeviceKind::kCuda}},
                          {{"pooled", {1, 8, 4, 4}, t, DeviceKind::kCuda}, {"y", {8, 4}, t, DeviceKind::kCuda}}, 12);
  f.LoadConst(2, cw).LoadConst(3, cb).LoadConst(4, cg).LoadConst(5, cgb);
  f.AllocStorage(6, 0).AllocStorage(7, 1).AllocStorage(8, 2);
  f.AllocTensor(9, 6, 0, {1, 8, 8, 8}, t).Invoke(kc, {0, 2, 3, 9}, "conv");
  f.AllocTensor(10, 7, 0, {1, 8, 4, 4}, t).Invoke(kp, {9, 10}, "pool");
  f.AllocTensor(11, 8, 0, {8, 4}, t).Invoke(kg, {1, 4, 5, 11}, "gemm");
  f.Ret({10, 11});
  auto out = w.Finish();
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : std::vector<uint8_t>();
}

// The VM's library calls are pasted verbatim (less the lines that include one
// another), and the program states none of their calls itself: each cuBLASLt /
// cuDNN set-up or launch call appears as often as in the shared files.
TEST(CudaHostEmitter, EmbedsTheVmLibraryCallsVerbatim) {
  const fs::path dir = fs::path(KEEL_SOURCE_DIR) / "vm" / "cuda";
  ASSERT_TRUE(fs::exists(dir / "library_calls.h")) << "source tree not found at " << dir;
  const Image img(HalfExecutable(ser::DType::kF16));  // a gemm, a conv and a pool
  auto src = EmitCudaHostSource(img.span(), CudaHostOptions{});
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  std::string shared;
  for (const char* name : {"library_calls.h", "library_calls_cublaslt.h", "library_calls_engine_choice.h", "library_calls_tuning.h",
                           "library_calls_cudnn.h", "library_calls_cudnn_engine.h", "library_calls_attention.h",
                           "library_calls_cudnn_attention.h", "library_calls_conv.h", "mma_primitives.cuh",
                           "attention_kernel.cuh", "conv_kernel.cuh"}) {
    std::ifstream in(dir / name, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text = EmbeddedText(text);
    ASSERT_GT(text.size(), 1000u) << name;
    EXPECT_EQ(Count(*src, text), 1u) << name << " is not embedded verbatim";
    shared += text;
  }
  // A call is `name(` (direct) or `name,` (through the shared files' checking macros).
  auto uses = [](const std::string& text, const std::string& name) {
    return Count(text, name + "(") + Count(text, name + ",");
  };
  for (const char* call : {"cublasLtMatmulDescCreate", "cublasLtMatmulDescSetAttribute", "cublasLtMatrixLayoutCreate",
                           "cublasLtMatmulAlgoGetHeuristic", "cublasLtMatmul", "cudnnSetTensorNdDescriptor",
                           "cudnnSetFilterNdDescriptor", "cudnnSetConvolutionNdDescriptor",
                           "cudnnSetConvolutionMathType", "cudnnGetConvolutionForwardAlgorithm_v7",
                           "cudnnConvolutionBiasActivationForward", "cudnnConvolutionForward",
                           "cudnnSetTensor4dDescriptor", "cudnnSetPooling2dDescriptor", "cudnnPoolingForward",
                           // the backend-API engines (library_calls_cudnn_engine.h)
                           "cudnnBackendCreateDescriptor", "cudnnBackendSetAttribute", "cudnnBackendGetAttribute",
                           "cudnnBackendFinalize", "cudnnBackendExecute", "cudnnBackendDestroyDescriptor"}) {
    EXPECT_GT(uses(shared, call), 0u) << call;
    EXPECT_EQ(uses(*src, call), uses(shared, call)) << call << " is restated outside the shared calls";
  }
  EXPECT_EQ(Count(*src, "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION"),
            Count(shared, "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION"));
}

#ifdef KEEL_TEST_WITH_VM_CUDA
// Half library kernels: the shared calls get the element type, the tuning keys are
// the VM's half keys, and the program compiles (keel_bias_act_f16/bf16 included).
TEST(CudaHostEmitter, HalfLibraryKernels) {
  TempDir dir;
  for (const ser::DType t : {ser::DType::kF16, ser::DType::kBF16}) {
    const std::string name = ser::DTypeName(t);
    SCOPED_TRACE(name);
    const Image img(HalfExecutable(t));
    auto src = EmitCudaHostSource(img.span(), CudaHostOptions{});
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    const std::string resolve = FunctionBody(*src, "static void ResolveKernels()");
    const std::string type = t == ser::DType::kF16 ? "cl::ElementType::kF16" : "cl::ElementType::kBF16";
    EXPECT_EQ(Count(resolve, "p.type = " + type + ";"), 2u);  // the gemm's and the conv's
    EXPECT_NE(resolve.find("cl::CreatePoolDescriptors(x, y, CUDNN_POOLING_MAX, window, pads, strides, " + type),
              std::string::npos);
    std::string conv_key =
        vm_internal::ConvProblemKey({1, 4, 8, 8}, {8, 4, 3, 3}, {1, 8, 8, 8}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 1, true,
                                    false, 1, false, t);
    conv_key.resize(conv_key.size() - std::string("|tf320").size());
    EXPECT_NE(resolve.find("ConvPlanKernel(c, \"conv_0\", \"" + conv_key + "\");"), std::string::npos) << conv_key;
    std::string gemm_key =
        vm_internal::GemmProblemKey(8, 4, 16, 1, 0, 0, 128, 64, "row", true, false, "relu", 1.0, 1.0, false, t);
    gemm_key.resize(gemm_key.size() - std::string("|tf320").size());
    EXPECT_NE(resolve.find("GemmPlanKernel(g, p, \"gemm_2\", \"" + gemm_key + "\");"), std::string::npos) << gemm_key;
    if (!HaveNvcc()) continue;
    const fs::path cu = dir.path() / ("half_" + name + ".cu");
    std::ofstream(cu) << *src;
    const std::string err = CompileWithNvcc(cu, dir.path() / ("half_" + name));
    EXPECT_TRUE(err.empty()) << err;
  }
}
#endif

// One convolution library kernel `op` with a constant weight and bias (zeros),
// every tensor of type `t`, X an input and Y the output; `attrs` as given.
Result<std::vector<uint8_t>> OneConvExecutable(const char* name, const char* op, ser::DType t,
                                               const std::vector<int64_t>& x, const std::vector<int64_t>& wt,
                                               const std::vector<int64_t>& y, std::vector<ser::AttrDesc> attrs) {
  using ser::DeviceKind;
  ser::ExecutableWriter w;
  w.AddTarget(DeviceKind::kCuda, "sm_90");
  auto elements = [](const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return static_cast<uint64_t>(n);
  };
  const std::vector<uint8_t> zeros(elements(wt) * ser::DTypeSize(t), 0);
  const uint32_t cw = w.AddConstant("W", t, wt, DeviceKind::kCuda, zeros);
  const uint32_t cb = w.AddConstant("b", t, {wt[0]}, DeviceKind::kCuda,
                                    std::span<const uint8_t>(zeros.data(), static_cast<size_t>(wt[0]) * ser::DTypeSize(t)));
  ser::KernelDesc k;
  k.name = name;
  k.kind = ser::KernelKind::kLibrary;
  k.device = DeviceKind::kCuda;
  k.library_op = op;
  k.args = {{t, x, ser::ArgAccess::kRead},
            {t, wt, ser::ArgAccess::kRead},
            {t, {wt[0]}, ser::ArgAccess::kRead},
            {t, y, ser::ArgAccess::kWrite}};
  k.attrs = std::move(attrs);
  const uint32_t kc = w.AddKernel(k);
  const uint64_t y_bytes = (elements(y) * ser::DTypeSize(t) + 255) / 256 * 256;
  ser::MemoryPlanDesc plan;
  plan.strategy = "greedy-size";
  plan.storages = {{y_bytes, 256, DeviceKind::kCuda, 0, 0}};
  plan.arenas = {{DeviceKind::kCuda, y_bytes, 256}};
  w.SetMemoryPlan(plan);
  auto& f = w.AddFunction("main", {{"x", x, t, DeviceKind::kCuda}}, {{"y", y, t, DeviceKind::kCuda}}, 5);
  f.LoadConst(1, cw).LoadConst(2, cb).AllocStorage(3, 0).AllocTensor(4, 3, 0, y, t);
  f.Invoke(kc, {0, 1, 2, 4}, "conv").Ret({4});
  return w.Finish();
}

// A grouped f16 convolution stored channels-last (a ResNeXt block's 3x3 at
// --precision fp16): the VM holds its cuDNN engine competition by default
// (cuda_lib::EnginesConsidered), so the program plans it through the shared
// engine calls: the policy from KEEL_CUDNN_ENGINES, the configuration a tuning
// entry names (EnginePlanOf), execution and the legacy fallback per launch. The
// program compiles.
TEST(CudaHostEmitter, GroupedHalfConvTakesTheEnginePath) {
  auto bytes = OneConvExecutable("conv_grouped", lo::kCudnnConv2d, ser::DType::kF16, {1, 8, 8, 16},
                                 {16, 3, 3, 2},  // KRSC, 8 groups of 2 channels
                                 {1, 8, 8, 16},
                                 {ser::AttrDesc::Ints("pads", {1, 1, 1, 1}), ser::AttrDesc::Ints("group", {8}),
                                  ser::AttrDesc::Ints("has_bias", {1}), ser::AttrDesc::Str("activation", "relu"),
                                  ser::AttrDesc::Str("layout", "nhwc")});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const Image img(*bytes);
  auto src = EmitCudaHostSource(img.span(), CudaHostOptions{});
  ASSERT_TRUE(src.ok()) << src.status().ToString();

  const std::string resolve = FunctionBody(*src, "static void ResolveKernels()");
  EXPECT_NE(resolve.find("c.p.group = 8;"), std::string::npos) << resolve;
  EXPECT_NE(resolve.find("c.p.nhwc = true;"), std::string::npos) << resolve;
  EXPECT_NE(resolve.find("c.p.type = cl::ElementType::kF16;"), std::string::npos) << resolve;
#ifdef KEEL_TEST_WITH_VM_CUDA
  // The VM's tuning key: the entry whose engine verdict the program follows.
  std::string key = vm_internal::ConvProblemKey({1, 8, 8, 16}, {16, 3, 3, 2}, {1, 8, 8, 16}, {1, 1, 1, 1}, {1, 1},
                                                {1, 1}, 8, true, false, 1, false, DataType::kF16, true);
  key.resize(key.size() - std::string("|tf320").size());
  EXPECT_NE(resolve.find("ConvPlanKernel(c, \"conv_grouped\", \"" + key + "\");"), std::string::npos) << key;
#endif
  // Planning: the shared policy decides, the tuning entry's configuration is built
  // (or, KEEL_CUDNN_ENGINES=force, the shared candidates' first), its workspace reserved.
  const std::string plan_conv = FunctionBody(*src, "static void ConvPlanKernel(");
  EXPECT_NE(plan_conv.find("if (cl::EnginesConsidered(g_engine_policy, c.p)) ConvPlanEngine(c, name, key, t);"),
            std::string::npos)
      << plan_conv;
  EXPECT_NE(plan_conv.find("c.engine.workspace"), std::string::npos) << plan_conv;
  const std::string plan_engine = FunctionBody(*src, "static void ConvPlanEngine(");
  for (const char* call : {"cl::EngineFromTuning(", "cl::BuildEngineGraph(", "cl::EngineCandidates(",
                           "cl::EnginePlanOf(", "cl::EngineCallName("}) {
    EXPECT_NE(plan_engine.find(call), std::string::npos) << call;
  }
  // Launch: the engine where the VM runs it, else the legacy call.
  const std::string run = FunctionBody(*src, "static const std::string& ConvRun(");
  EXPECT_NE(run.find("if (c.engine.plan != nullptr && cl::EngineUsable(x, w, res, y)) {"), std::string::npos) << run;
  EXPECT_NE(run.find("cl::EngineExecute(g_cudnn, c.engine.plan, &c.pack, x, w, y, g_workspace)"), std::string::npos);
  EXPECT_NE(run.find("cl::ConvThenEpilogue("), std::string::npos);
  // The policy is read before the kernels are planned; the engine's descriptors are released.
  const std::string main_fn = FunctionBody(*src, "int main(");
  ASSERT_NE(main_fn.find("InitEngines();"), std::string::npos) << main_fn;
  EXPECT_LT(main_fn.find("InitEngines();"), main_fn.find("ResolveKernels();"));
  EXPECT_NE(FunctionBody(*src, "static void Cleanup()").find("DestroyConvKernel(k0);"), std::string::npos);
  if (!HaveNvcc()) GTEST_SKIP() << "nvcc not found: the program was not compiled";
  TempDir dir;
  const fs::path cu = dir.path() / "grouped_f16.cu";
  std::ofstream(cu) << *src;
  const std::string err = CompileWithNvcc(cu, dir.path() / "grouped_f16");
  EXPECT_TRUE(err.empty()) << err;
}

// Keel's own convolution kernel (keel.conv2d: cudnn.conv2d's arguments and
// attributes, channels-last, bf16): the program fills the kernel's argument block
// from the channels-first view the VM checks, plans it with the shared launch
// contract (library_calls_conv.h) and launches the VM's kernel, pasted verbatim;
// it compiles.
TEST(CudaHostEmitter, KeelConvRunsTheVmsKernel) {
  auto bytes = OneConvExecutable("conv_keel", lo::kKeelConv2d, ser::DType::kBF16, {2, 12, 20, 16},
                                 {32, 3, 3, 16},  // KRSC
                                 {2, 12, 20, 32},
                                 {ser::AttrDesc::Ints("pads", {1, 1, 1, 1}), ser::AttrDesc::Ints("has_bias", {1}),
                                  ser::AttrDesc::Str("activation", "clip"), ser::AttrDesc::Floats("clip_min", {0.0}),
                                  ser::AttrDesc::Floats("clip_max", {6.0}), ser::AttrDesc::Str("layout", "nhwc")});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const Image img(*bytes);
  auto src = EmitCudaHostSource(img.span(), CudaHostOptions{});
  ASSERT_TRUE(src.ok()) << src.status().ToString();

  const std::string resolve = FunctionBody(*src, "static void ResolveKernels()");
  for (const char* field : {"c.args.n = 2;", "c.args.c = 16;", "c.args.h = 12;", "c.args.w_in = 20;", "c.args.k = 32;",
                            "c.args.oh = 12;", "c.args.ow = 20;", "c.args.r = 3;", "c.args.s = 3;", "c.args.ph = 1;",
                            "c.args.pw = 1;", "c.args.act = 2;", "c.args.clip_max = 0x1.8p+2;"}) {
    EXPECT_NE(resolve.find(field), std::string::npos) << field << " in " << resolve;
  }
  EXPECT_NE(resolve.find("KeelConvPlanKernel(c, cl::ElementType::kBF16, \"conv_keel\");"), std::string::npos) << resolve;
  EXPECT_EQ(resolve.find("ConvPlanKernel(c, \"conv_keel\""), std::string::npos);  // no cuDNN set-up
  const std::string plan_keel = FunctionBody(*src, "static void KeelConvPlanKernel(");
  for (const char* call : {"cl::ConvKernelPlan(&c.args)", "cl::ConvKernelRefusal(", "cl::ConvKernelName(",
                           "cl::ConvKernelCallName("}) {
    EXPECT_NE(plan_keel.find(call), std::string::npos) << call;
  }
  EXPECT_NE(FunctionBody(*src, "static void Run(").find("KeelConvRun(k0, "), std::string::npos);
  if (!HaveNvcc()) GTEST_SKIP() << "nvcc not found: the program was not compiled";
  TempDir dir;
  const fs::path cu = dir.path() / "keel_conv_bf16.cu";
  std::ofstream(cu) << *src;
  const std::string err = CompileWithNvcc(cu, dir.path() / "keel_conv_bf16");
  EXPECT_TRUE(err.empty()) << err;
}

// Library kernels outside the shared element types, or mixing types, are refused
// by name, as the VM refuses them at load.
TEST(CudaHostEmitter, RefusesOtherLibraryTypes) {
  auto with_arg_type = [](size_t arg, ser::DType t) {
    // One f16 pool whose argument `arg` is of type `t`.
    using ser::DeviceKind;
    ser::ExecutableWriter w;
    w.AddTarget(DeviceKind::kCuda, "sm_90");
    ser::KernelDesc k;
    k.name = "pool_0";
    k.kind = ser::KernelKind::kLibrary;
    k.device = DeviceKind::kCuda;
    k.library_op = lo::kCudnnPool2d;
    k.args = {{ser::DType::kF16, {1, 8, 8, 8}, ser::ArgAccess::kRead},
              {ser::DType::kF16, {1, 8, 4, 4}, ser::ArgAccess::kWrite}};
    k.args[arg].dtype = t;
    k.attrs = {ser::AttrDesc::Str("mode", "max"), ser::AttrDesc::Ints("kernel", {2, 2}),
               ser::AttrDesc::Ints("strides", {2, 2})};
    const uint32_t kp = w.AddKernel(k);
    ser::MemoryPlanDesc plan;
    plan.strategy = "greedy-size";
    plan.storages = {{1024, 256, DeviceKind::kCuda, 0, 0}};
    plan.arenas = {{DeviceKind::kCuda, 1024, 256}};
    w.SetMemoryPlan(plan);
    auto& f = w.AddFunction("main", {{"x", {1, 8, 8, 8}, k.args[0].dtype, DeviceKind::kCuda}},
                            {{"y", {1, 8, 4, 4}, k.args[1].dtype, DeviceKind::kCuda}}, 3);
    f.AllocStorage(1, 0).AllocTensor(2, 1, 0, {1, 8, 4, 4}, k.args[1].dtype).Invoke(kp, {0, 2}).Ret({2});
    auto out = w.Finish();
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? *out : std::vector<uint8_t>();
  };
  const Image f64_img(with_arg_type(0, ser::DType::kF64));
  auto f64 = EmitCudaHostSource(f64_img.span(), CudaHostOptions{});
  ASSERT_FALSE(f64.ok());
  EXPECT_EQ(f64.status().code(), StatusCode::kUnsupported) << f64.status().ToString();
  EXPECT_NE(f64.status().message().find("pool_0 (cudnn.pool2d) takes f64"), std::string::npos)
      << f64.status().ToString();
  const Image mixed_img(with_arg_type(1, ser::DType::kBF16));
  auto mixed = EmitCudaHostSource(mixed_img.span(), CudaHostOptions{});
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().code(), StatusCode::kUnsupported) << mixed.status().ToString();
  EXPECT_NE(mixed.status().message().find("mixes f16 and bf16"), std::string::npos) << mixed.status().ToString();
}

}  // namespace
}  // namespace keel::driver
