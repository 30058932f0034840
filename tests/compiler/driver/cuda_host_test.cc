// Tests of keelc --emit=cuda-host (compiler/driver/cuda_host_emitter.h).
//
// Hand-written executables pin down what the generated program contains for each
// instruction and library kernel, and the errors; the model zoo (squeezenet1_1,
// greedy-size / naive / dynamic plans, and fp16) checks the program against its
// executable, read back with the reader, instruction by instruction (the library
// calls and half kernels: cuda_host_library_test.cc). Every program is compiled
// with nvcc when the toolkit is present (skipped with a message otherwise). Running
// it needs a GPU: scripts/cuda-host-check.sh does that on the GPU machine and
// compares its outputs and trace with keel-run's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/driver/cuda_host_emitter.h"
#include "compiler/passes/mixed_precision.h"
#include "serialization/executable_reader.h"
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
namespace fb = keel::fb;
using test_util::CompileWithNvcc;
using test_util::Count;
using test_util::EmbeddedText;
using test_util::FunctionBody;
using test_util::HaveNvcc;
using test_util::Image;
using test_util::TempDir;


// A small CUDA executable: host input -> device copy -> gemm (row bias) -> generated relu -> host output,
// with a hostile debug name (quotes, backslash, newline) to exercise literal escaping.
std::vector<uint8_t> TinyExecutable(bool dynamic, const std::string& gemm_drop_attr = {}) {
  using ser::DeviceKind;
  using ser::DType;
  ser::ExecutableWriter w;
  w.AddTarget(DeviceKind::kCuda, "sm_90");
  w.SetKernelLibraryId("tiny-lib-id");
  std::vector<float> weights(12), bias(4);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = 0.25f * static_cast<float>(i);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 1.0f + static_cast<float>(i);
  const uint32_t cw = w.AddConstant("W", DType::kF32, {3, 4}, DeviceKind::kCuda,
                                    {reinterpret_cast<const uint8_t*>(weights.data()), weights.size() * 4});
  const uint32_t cb = w.AddConstant("bias", DType::kF32, {4}, DeviceKind::kCuda,
                                    {reinterpret_cast<const uint8_t*>(bias.data()), bias.size() * 4});
  ser::KernelDesc gemm;
  gemm.name = "gemm_0";
  gemm.kind = ser::KernelKind::kLibrary;
  gemm.device = DeviceKind::kCuda;
  gemm.library_op = lo::kCublasGemm;
  gemm.args = {{DType::kF32, {2, 3}, ser::ArgAccess::kRead},
               {DType::kF32, {3, 4}, ser::ArgAccess::kRead},
               {DType::kF32, {4}, ser::ArgAccess::kRead},
               {DType::kF32, {2, 4}, ser::ArgAccess::kWrite}};
  for (auto a : {ser::AttrDesc::Ints("m", {2}), ser::AttrDesc::Ints("n", {4}), ser::AttrDesc::Ints("k", {3}),
                 ser::AttrDesc::Ints("has_bias", {1}), ser::AttrDesc::Floats("alpha", {0.5})}) {
    if (a.key != gemm_drop_attr) gemm.attrs.push_back(a);
  }
  const uint32_t kg = w.AddKernel(gemm);
  ser::KernelDesc relu;
  relu.name = "relu_1";
  relu.kind = ser::KernelKind::kCudaGenerated;
  relu.device = DeviceKind::kCuda;
  relu.args = {{DType::kF32, {2, 4}, ser::ArgAccess::kRead}, {DType::kF32, {2, 4}, ser::ArgAccess::kWrite}};
  relu.launch = ser::LaunchDesc{{3, 1, 1}, {128, 1, 1}, 0};
  const uint32_t kr = w.AddKernel(relu);

  ser::MemoryPlanDesc plan;
  plan.strategy = dynamic ? "dynamic" : "greedy-size";
  const int32_t dev_arena = dynamic ? -1 : 0, host_arena = dynamic ? -1 : 1;
  plan.storages = {{256, 256, DeviceKind::kCuda, dev_arena, 0},      // x on the device
                   {256, 256, DeviceKind::kCuda, dev_arena, 256},    // gemm out
                   {256, 256, DeviceKind::kCuda, dev_arena, 512},    // relu out
                   {64, 64, DeviceKind::kCpu, host_arena, 0}};       // host output
  if (dynamic) {
    for (auto& s : plan.storages) s.offset = 0;
  } else {
    plan.arenas = {{DeviceKind::kCuda, 768, 256}, {DeviceKind::kCpu, 64, 64}};
  }
  w.SetMemoryPlan(plan);
  auto& f = w.AddFunction("main", {{"x", {2, 3}, DType::kF32, DeviceKind::kCpu}},
                          {{"y", {2, 4}, DType::kF32, DeviceKind::kCpu}}, 12);
  f.AllocStorage(1, 0, "storage 0").AllocStorage(2, 1, "storage 1").AllocStorage(3, 2, "storage 2");
  f.AllocStorage(4, 3, "storage 3");
  f.AllocTensor(5, 1, 0, {2, 3}, DType::kF32, "x");
  f.Copy(5, 0, "upload x");
  f.LoadConst(6, cw, "W").LoadConst(7, cb, "bias");
  f.AllocTensor(8, 2, 0, {2, 4}, DType::kF32, "gemm");
  f.Invoke(kg, {5, 6, 7, 8}, "Gemm_0 \"q\" \\ \n*/ ?\?/");
  if (dynamic) f.FreeStorage(1, "free storage 0");
  f.AllocTensor(9, 3, 0, {2, 4}, DType::kF32, "relu");
  f.Invoke(kr, {8, 9}, "Relu_1");
  if (dynamic) f.FreeStorage(2, "free storage 1");
  f.AllocTensor(10, 4, 0, {2, 4}, DType::kF32, "y");
  f.Copy(10, 9, "download y");
  if (dynamic) f.FreeStorage(3, "free storage 2");
  f.Ret({10});
  auto bytes = w.Finish();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>();
}


TEST(CudaHostEmitter, TinyProgramMirrorsEveryInstruction) {
  const Image img(TinyExecutable(false));
  auto view = ser::ReadExecutable(img.span());
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  CudaHostOptions opt;
  opt.keel_path = "tiny.keel";
  opt.library_path = "tiny.keel.so";
  auto src = EmitCudaHostSource(img.span(), opt);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  const std::string& s = *src;
  const std::string run = FunctionBody(s, "static void Run()");
  ASSERT_FALSE(run.empty());
  // One commented block per instruction, in order, each with its opcode.
  const auto* insts = view->main()->instructions();
  size_t pos = 0;
  for (uint32_t i = 0; i < insts->size(); ++i) {
    const std::string tag = "// #" + std::to_string(i) + " ";
    const size_t at = run.find(tag, pos);
    ASSERT_NE(at, std::string::npos) << "no block for instruction " << i;
    pos = at + tag.size();
  }
  EXPECT_EQ(Count(run, "\n  // #"), insts->size());
  // Static plan: arenas at load, slices in the run, no run-time cudaMalloc.
  EXPECT_EQ(Count(FunctionBody(s, "static void AllocateArenas()"), "DeviceMalloc("), 1u);
  EXPECT_EQ(Count(FunctionBody(s, "static void AllocateArenas()"), "HostMalloc("), 1u);
  EXPECT_EQ(Count(run, "DeviceMalloc("), 0u);
  EXPECT_EQ(Count(run, "g_arena["), 4u);
  // The generated kernel with the kernel table's launch configuration, the gemm with its epilogue.
  EXPECT_NE(run.find("LaunchGenerated(k1, 3, 1, 1, 128, 1, 1, 0, params);"), std::string::npos);
  // Its trace name gains " programmatic" exactly when the VM's would (decided at run time).
  EXPECT_NE(run.find("std::string(\" launch cuLaunchKernel grid=(3,1,1) block=(128,1,1)\") + GeneratedLaunchSuffix()"),
            std::string::npos);
  EXPECT_EQ(Count(run, "GemmRun(k0, "), 1u);
  // The gemm's problem: a row bias (cuBLASLt's bias epilogue, chosen by the shared calls).
  EXPECT_NE(s.find("p.has_bias = g.has_bias = true;"), std::string::npos);
  EXPECT_NE(s.find("p.full_bias = g.full_bias = false;"), std::string::npos);
  EXPECT_NE(s.find("p.activation = cl::GemmActivation::kNone;"), std::string::npos);
  EXPECT_NE(s.find("g.alpha = 0x1p-1f;"), std::string::npos);  // alpha 0.5, exact
  EXPECT_EQ(Count(run, "cudaMemcpyHostToDevice"), 1u);
  EXPECT_EQ(Count(run, "cudaMemcpyDeviceToHost"), 1u);
  // Weights read at the reader's offsets: CPU constants in place, the device's as one block
  // filled by one copy that starts at the first and ends at the last (the writer groups them).
  uint64_t dev_begin = UINT64_MAX, dev_end = 0;
  for (uint32_t c = 0; c < view->root->constants()->size(); ++c) {
    const auto* k = view->root->constants()->Get(c);
    if (k->device() == fb::DeviceKind::cpu) {
      EXPECT_NE(s.find("data + " + std::to_string(k->offset()) + "ull"), std::string::npos);
    } else {
      dev_begin = std::min<uint64_t>(dev_begin, k->offset());
      dev_end = std::max<uint64_t>(dev_end, k->offset() + k->size());
    }
  }
  ASSERT_LT(dev_begin, dev_end) << "the tiny program has device weights";
  const std::string upload = FunctionBody(s, "static void UploadConstants(");
  EXPECT_EQ(Count(upload, "DeviceMalloc("), 1u);
  EXPECT_EQ(Count(upload, "cudaMemcpyAsync(g_const_block + 0ull, data + " + std::to_string(dev_begin) + "ull, " +
                              std::to_string(dev_end - dev_begin) + "ull"),
            1u)
      << upload;
  EXPECT_NE(s.find("keel.data + " + std::to_string(view->root->data_segment_offset()) + "ull"), std::string::npos);
  EXPECT_NE(s.find("\"tiny-lib-id\""), std::string::npos);
  // The hostile debug name is escaped in literals and defused in comments.
  EXPECT_NE(s.find(R"(Gemm_0 \"q\" \\ \012*/ \?\?/)"), std::string::npos);
  // Deterministic.
  auto again = EmitCudaHostSource(img.span(), opt);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, s);
}

TEST(CudaHostEmitter, DynamicPlanAllocatesAndFreesWhereTheBytecodeSays) {
  const Image img(TinyExecutable(true));
  auto src = EmitCudaHostSource(img.span(), CudaHostOptions{});
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  const std::string run = FunctionBody(*src, "static void Run()");
  EXPECT_EQ(Count(run, "DeviceMalloc("), 3u);
  EXPECT_EQ(Count(run, "HostMalloc("), 1u);
  EXPECT_EQ(Count(run, "DeviceFree("), 3u);
  EXPECT_EQ(Count(FunctionBody(*src, "static void AllocateArenas()"), "Malloc("), 0u);
  // The free comes right after the gemm that last reads storage 0, before the relu.
  const size_t gemm = run.find("GemmRun(k0"), free0 = run.find("DeviceFree(R[1]"),
               relu = run.find("LaunchGenerated(k1");
  ASSERT_NE(free0, std::string::npos);
  EXPECT_LT(gemm, free0);
  EXPECT_LT(free0, relu);
  // The host output's storage outlives the run: released at cleanup.
  EXPECT_NE(run.find("g_live_dynamic.emplace_back(R[4], false)"), std::string::npos);
}

TEST(CudaHostEmitter, Errors) {
  // Not an executable.
  std::vector<uint8_t> junk(256, 0x5a);
  const Image junk_img(junk);
  EXPECT_FALSE(EmitCudaHostSource(junk_img.span(), CudaHostOptions{}).ok());
  EXPECT_FALSE(EmitCudaHostSource({}, CudaHostOptions{}).ok());
  // A gemm without its required "m".
  const Image bad(TinyExecutable(false, "m"));
  auto r = EmitCudaHostSource(bad.span(), CudaHostOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidExecutable) << r.status().ToString();
  EXPECT_NE(r.status().message().find("\"m\""), std::string::npos) << r.status().ToString();
  // A CPU kernel cannot be mirrored by a CUDA host program.
  ser::ExecutableWriter w;
  ser::KernelDesc k;
  k.name = "cpu_relu";
  k.args = {{ser::DType::kF32, {4}, ser::ArgAccess::kRead}, {ser::DType::kF32, {4}, ser::ArgAccess::kWrite}};
  w.AddKernel(k);
  w.SetKernelLibraryId("x");
  ser::MemoryPlanDesc plan;
  plan.strategy = "naive";
  plan.storages = {{16, 64, ser::DeviceKind::kCpu, 0, 0}};
  plan.arenas = {{ser::DeviceKind::kCpu, 16, 64}};
  w.SetMemoryPlan(plan);
  auto& f = w.AddFunction("main", {{"x", {4}, ser::DType::kF32, ser::DeviceKind::kCpu}},
                          {{"y", {4}, ser::DType::kF32, ser::DeviceKind::kCpu}}, 3);
  f.AllocStorage(1, 0).AllocTensor(2, 1, 0, {4}, ser::DType::kF32).Invoke(0, {0, 2}).Ret({2});
  auto bytes = w.Finish();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const Image cpu(*bytes);
  auto c = EmitCudaHostSource(cpu.span(), CudaHostOptions{});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnsupported);
  // File errors name the path.
  CudaHostOptions missing;
  missing.keel_path = "/nonexistent/model.keel";
  Status st = WriteCudaHostProgram(missing, "/nonexistent/host.cu");
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("/nonexistent/model.keel"), std::string::npos);
}

TEST(CudaHostEmitter, TinyProgramCompilesWithNvcc) {
  if (!HaveNvcc()) GTEST_SKIP() << "nvcc not found (" << KEEL_NVCC << "): the generated program is not compiled";
  TempDir dir;
  for (bool dynamic : {false, true}) {
    const Image img(TinyExecutable(dynamic));
    auto src = EmitCudaHostSource(img.span(), CudaHostOptions{});
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    const fs::path cu = dir.path() / (dynamic ? "tiny_dynamic.cu" : "tiny.cu");
    std::ofstream(cu) << *src;
    const std::string err = CompileWithNvcc(cu, dir.path() / (dynamic ? "tiny_dynamic" : "tiny"));
    EXPECT_TRUE(err.empty()) << err;
  }
}

// The VM's runtime kernels are pasted verbatim: the program compiles the VM's own
// epilogue source (vm/cuda/runtime_kernels.cu in the source tree).
TEST(CudaHostEmitter, EmbedsTheVmRuntimeKernelsVerbatim) {
  const fs::path cu = fs::path(KEEL_SOURCE_DIR) / "vm" / "cuda" / "runtime_kernels.cu";
  ASSERT_TRUE(fs::exists(cu)) << "source tree not found at " << cu;
  std::ifstream in(cu, std::ios::binary);
  const std::string text = EmbeddedText(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  ASSERT_NE(text.find("keel_bias_act_f32x4"), std::string::npos);
  const Image img(TinyExecutable(false));
  auto src = EmitCudaHostSource(img.span(), CudaHostOptions{});
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_EQ(Count(*src, text), 1u);
  // Launched as the VM does: cuLaunchKernelEx for programmatic dependents, else cuLaunchKernel.
  EXPECT_NE(src->find("static CUresult LaunchRuntimeKernel("), std::string::npos);
  EXPECT_NE(src->find("CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION"), std::string::npos);
  EXPECT_NE(src->find("\"KEEL_CUDA_PDL\""), std::string::npos);
  EXPECT_NE(src->find("\"keel_cuda_grid_dependency\""), std::string::npos);
  EXPECT_NE(src->find("--tuning-file"), std::string::npos);
}

// A one-conv executable: X (input), W (constant), Y (output); `ys` from the caller.
std::vector<uint8_t> OneConvExecutable(const std::vector<int64_t>& xs, const std::vector<int64_t>& ws,
                                       const std::vector<int64_t>& ys, std::vector<ser::AttrDesc> attrs) {
  using ser::DeviceKind;
  using ser::DType;
  ser::ExecutableWriter w;
  w.AddTarget(DeviceKind::kCuda, "sm_90");
  int64_t w_elems = 1, y_elems = 1;
  for (int64_t d : ws) w_elems *= d;
  for (int64_t d : ys) y_elems *= d;
  std::vector<float> weights(static_cast<size_t>(w_elems), 0.5f);
  const uint32_t cw = w.AddConstant("W", DType::kF32, ws, DeviceKind::kCuda,
                                    {reinterpret_cast<const uint8_t*>(weights.data()), weights.size() * 4});
  ser::KernelDesc conv;
  conv.name = "conv_0";
  conv.kind = ser::KernelKind::kLibrary;
  conv.device = DeviceKind::kCuda;
  conv.library_op = lo::kCudnnConv2d;
  conv.args = {{DType::kF32, xs, ser::ArgAccess::kRead},
               {DType::kF32, ws, ser::ArgAccess::kRead},
               {DType::kF32, ys, ser::ArgAccess::kWrite}};
  conv.attrs = std::move(attrs);
  const uint32_t kc = w.AddKernel(conv);
  const uint64_t bytes = (static_cast<uint64_t>(y_elems) * 4 + 255) / 256 * 256;
  ser::MemoryPlanDesc plan;
  plan.strategy = "greedy-size";
  plan.storages = {{bytes, 256, DeviceKind::kCuda, 0, 0}};
  plan.arenas = {{DeviceKind::kCuda, bytes, 256}};
  w.SetMemoryPlan(plan);
  auto& f = w.AddFunction("main", {{"x", xs, DType::kF32, DeviceKind::kCuda}}, {{"y", ys, DType::kF32, DeviceKind::kCuda}},
                          4);
  f.LoadConst(1, cw).AllocStorage(2, 0).AllocTensor(3, 2, 0, ys, DType::kF32);
  f.Invoke(kc, {0, 1, 3}, "conv").Ret({3});
  auto out = w.Finish();
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : std::vector<uint8_t>();
}

#ifdef KEEL_TEST_WITH_VM_CUDA
// The program looks its problems up in the tuning file under the VM's keys
// (vm/cuda/autotune.h), plus the TF32 suffix it adds at run time.
TEST(CudaHostEmitter, TuningKeysAreTheVmKeys) {
  const Image img(TinyExecutable(false));
  auto src = EmitCudaHostSource(img.span(), CudaHostOptions{});
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  std::string key = vm_internal::GemmProblemKey(2, 4, 3, 1, 0, 0, 6, 12, "row", true, false, "", 0.5, 1.0, false);
  const std::string suffix = "|tf320";
  ASSERT_EQ(key.substr(key.size() - suffix.size()), suffix);
  key.resize(key.size() - suffix.size());
  EXPECT_NE(src->find("GemmPlanKernel(g, p, \"gemm_0\", \"" + key + "\");"), std::string::npos) << key;
  EXPECT_NE(src->find("g_allow_tf32 ? \"|tf321\" : \"|tf320\""), std::string::npos);
}

// A conv with bias, residual and clip: its key, and the conv state ConvRun needs.
TEST(CudaHostEmitter, ConvKeyAndEpilogueState) {
  using ser::DeviceKind;
  using ser::DType;
  ser::ExecutableWriter w;
  w.AddTarget(DeviceKind::kCuda, "sm_90");
  std::vector<float> weights(8 * 4 * 3 * 3, 0.5f), bias(8, 0.25f);
  const uint32_t cw = w.AddConstant("W", DType::kF32, {8, 4, 3, 3}, DeviceKind::kCuda,
                                    {reinterpret_cast<const uint8_t*>(weights.data()), weights.size() * 4});
  const uint32_t cb = w.AddConstant("b", DType::kF32, {8}, DeviceKind::kCuda,
                                    {reinterpret_cast<const uint8_t*>(bias.data()), bias.size() * 4});
  ser::KernelDesc conv;
  conv.name = "conv_0";
  conv.kind = ser::KernelKind::kLibrary;
  conv.device = DeviceKind::kCuda;
  conv.library_op = lo::kCudnnConv2d;
  conv.args = {{DType::kF32, {1, 4, 9, 9}, ser::ArgAccess::kRead},
               {DType::kF32, {8, 4, 3, 3}, ser::ArgAccess::kRead},
               {DType::kF32, {8}, ser::ArgAccess::kRead},
               {DType::kF32, {1, 8, 5, 5}, ser::ArgAccess::kRead},
               {DType::kF32, {1, 8, 5, 5}, ser::ArgAccess::kWrite}};
  conv.attrs = {ser::AttrDesc::Ints("pads", {1, 1, 1, 1}), ser::AttrDesc::Ints("strides", {2, 2}),
                ser::AttrDesc::Ints("has_bias", {1}), ser::AttrDesc::Ints("has_residual", {1}),
                ser::AttrDesc::Str("activation", "clip"), ser::AttrDesc::Floats("clip_min", {0.0}),
                ser::AttrDesc::Floats("clip_max", {0.75})};
  const uint32_t kc = w.AddKernel(conv);
  ser::MemoryPlanDesc plan;
  plan.strategy = "greedy-size";
  plan.storages = {{1024, 256, DeviceKind::kCuda, 0, 0}};
  plan.arenas = {{DeviceKind::kCuda, 1024, 256}};
  w.SetMemoryPlan(plan);
  auto& f = w.AddFunction("main", {{"x", {1, 4, 9, 9}, DType::kF32, DeviceKind::kCuda},
                                   {"r", {1, 8, 5, 5}, DType::kF32, DeviceKind::kCuda}},
                          {{"y", {1, 8, 5, 5}, DType::kF32, DeviceKind::kCuda}}, 8);
  f.LoadConst(2, cw).LoadConst(3, cb).AllocStorage(4, 0).AllocTensor(5, 4, 0, {1, 8, 5, 5}, DType::kF32);
  f.Invoke(kc, {0, 2, 3, 1, 5}, "conv").Ret({5});
  auto bytes = w.Finish();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const Image img(*bytes);
  auto src = EmitCudaHostSource(img.span(), CudaHostOptions{});
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  std::string key =
      vm_internal::ConvProblemKey({1, 4, 9, 9}, {8, 4, 3, 3}, {1, 8, 5, 5}, {1, 1, 1, 1}, {2, 2}, {1, 1}, 1, true, true, 2, false);
  key.resize(key.size() - std::string("|tf320").size());
  EXPECT_NE(src->find("ConvPlanKernel(c, \"conv_0\", \"" + key + "\");"), std::string::npos) << key;
  const std::string resolve = FunctionBody(*src, "static void ResolveKernels()");
  EXPECT_NE(resolve.find("c.p.activation = 2;"), std::string::npos);
  EXPECT_NE(resolve.find("c.p.clip_max = 0x1.8p-1;"), std::string::npos);  // 0.75, exact
  EXPECT_NE(resolve.find("c.p.y = {1, 8, 5, 5};"), std::string::npos);
  EXPECT_NE(resolve.find("c.p.has_residual = true;"), std::string::npos);
  EXPECT_NE(resolve.find("c.p.type = cl::ElementType::kF32;"), std::string::npos);
  EXPECT_NE(FunctionBody(*src, "static void Run()").find("ConvRun(k0, R[0], R[2], R[3], R[1], R[5]);"),
            std::string::npos);
  if (!HaveNvcc()) GTEST_SKIP() << "nvcc not found: the program is not compiled";
  TempDir dir;
  const fs::path cu = dir.path() / "conv.cu";
  std::ofstream(cu) << *src;
  const std::string err = CompileWithNvcc(cu, dir.path() / "conv");
  EXPECT_TRUE(err.empty()) << err;
}

// 1-D and 3-D convolutions: N-d descriptors (1-D lifted to a unit height, as the
// VM does), the VM's tuning keys over the kernel's own shapes, and the program
// compiles.
TEST(CudaHostEmitter, Conv1dAnd3dUseNdDescriptors) {
  struct Case {
    std::vector<int64_t> xs, ws, ys;
    std::vector<ser::AttrDesc> attrs;
    std::vector<std::string> lines;  // expected in ResolveKernels
    std::string key;
  };
  const std::vector<Case> cases = {
      {{1, 4, 10},
       {6, 2, 3},
       {1, 6, 5},
       {ser::AttrDesc::Ints("pads", {1, 1}), ser::AttrDesc::Ints("strides", {2}), ser::AttrDesc::Ints("group", {2})},
       {"c.p.x = {1, 4, 1, 10};", "c.p.y = {1, 6, 1, 5};", "c.p.w = {6, 2, 1, 3};", "c.p.pads = {0, 1};",
        "c.p.strides = {1, 2};", "c.p.dilations = {1, 1};", "c.p.group = 2;", "unit height"},
       vm_internal::ConvProblemKey({1, 4, 10}, {6, 2, 3}, {1, 6, 5}, {1, 1}, {2}, {1}, 2, false, false, 0, false)},
      {{1, 3, 8, 16, 16},
       {8, 3, 3, 7, 7},
       {1, 8, 8, 8, 8},
       {ser::AttrDesc::Ints("pads", {1, 3, 3, 1, 3, 3}), ser::AttrDesc::Ints("strides", {1, 2, 2}),
        ser::AttrDesc::Str("activation", "relu")},
       {"c.p.x = {1, 3, 8, 16, 16};", "c.p.w = {8, 3, 3, 7, 7};", "c.p.y = {1, 8, 8, 8, 8};",
        "c.p.pads = {1, 3, 3};", "c.p.strides = {1, 2, 2};", "c.p.dilations = {1, 1, 1};", "c.p.activation = 1;"},
       vm_internal::ConvProblemKey({1, 3, 8, 16, 16}, {8, 3, 3, 7, 7}, {1, 8, 8, 8, 8}, {1, 3, 3, 1, 3, 3}, {1, 2, 2},
                                   {1, 1, 1}, 1, false, false, 1, false)},
  };
  TempDir dir;
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    const Image img(OneConvExecutable(c.xs, c.ws, c.ys, c.attrs));
    auto src = EmitCudaHostSource(img.span(), CudaHostOptions{});
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    const std::string resolve = FunctionBody(*src, "static void ResolveKernels()");
    for (const std::string& line : c.lines) EXPECT_NE(resolve.find(line), std::string::npos) << line;
    std::string key = c.key;
    key.resize(key.size() - std::string("|tf320").size());
    EXPECT_NE(resolve.find("ConvPlanKernel(c, \"conv_0\", \"" + key + "\");"), std::string::npos) << key;
    if (!HaveNvcc()) continue;
    const fs::path cu = dir.path() / ("conv_nd" + std::to_string(n) + ".cu");
    std::ofstream(cu) << *src;
    const std::string err = CompileWithNvcc(cu, dir.path() / ("conv_nd" + std::to_string(n++)));
    EXPECT_TRUE(err.empty()) << err;
  }
}
#endif

// A conv the VM would refuse is refused here too, with the VM's words
// (common/conv_geometry.h): 3-D with a 2-D pads attribute, 3-D with asymmetric
// pads, 1-D with a wrong Y.
TEST(CudaHostEmitter, RefusesBadConvGeometry) {
  using ser::AttrDesc;
  const Image pads_2d_img(
      OneConvExecutable({1, 2, 4, 5, 5}, {2, 2, 3, 3, 3}, {1, 2, 2, 3, 3}, {AttrDesc::Ints("pads", {0, 0, 0, 0})}));
  auto pads_2d = EmitCudaHostSource(pads_2d_img.span(), CudaHostOptions{});
  ASSERT_FALSE(pads_2d.ok());
  EXPECT_EQ(pads_2d.status().code(), StatusCode::kInvalidExecutable) << pads_2d.status().ToString();
  EXPECT_NE(pads_2d.status().message().find("\"pads\""), std::string::npos) << pads_2d.status().ToString();
  const Image asym_img(
      OneConvExecutable({1, 2, 4, 5, 5}, {2, 2, 3, 3, 3}, {1, 2, 3, 3, 3}, {AttrDesc::Ints("pads", {0, 0, 0, 1, 0, 0})}));
  auto asym = EmitCudaHostSource(asym_img.span(), CudaHostOptions{});
  ASSERT_FALSE(asym.ok());
  EXPECT_EQ(asym.status().code(), StatusCode::kUnsupported) << asym.status().ToString();
  EXPECT_NE(asym.status().message().find("conv_0"), std::string::npos) << asym.status().ToString();
  const Image wrong_y_img(OneConvExecutable({1, 4, 10}, {6, 4, 3}, {1, 6, 9}, {}));
  auto wrong_y = EmitCudaHostSource(wrong_y_img.span(), CudaHostOptions{});
  ASSERT_FALSE(wrong_y.ok());
  EXPECT_EQ(wrong_y.status().code(), StatusCode::kInvalidExecutable) << wrong_y.status().ToString();
  EXPECT_NE(wrong_y.status().message().find("Y is [1,6,9]"), std::string::npos) << wrong_y.status().ToString();
}

// ---- the model zoo ----

fs::path ModelsDir() { return fs::path(KEEL_SHARED_DIR) / "models"; }

class CudaHostZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaHostZoo, Squeezenet) {
  const fs::path model = ModelsDir() / "squeezenet1_1.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << "shared models not found at " << ModelsDir() << " (KEEL_SHARED_DIR)";
  TempDir dir;
  CompileOptions options;
  options.model_path = model.string();
  options.output_path = (dir.path() / "squeezenet.keel").string();
  options.target = "cuda";
  options.memory_plan = GetParam();
  options.planner_time_limit_seconds = 2;
  auto summary = CompileModel(options);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  CudaHostOptions host;
  host.keel_path = options.output_path;
  host.library_path = options.output_path + ".so";
  const fs::path cu = dir.path() / "squeezenet_host.cu";
  Status st = WriteCudaHostProgram(host, cu.string());
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::ifstream in(cu);
  const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  // Against the executable, read back: one block per instruction, one call per invoke,
  // one allocation per arena / dynamic alloc_storage, one free per free_storage.
  std::ifstream kin(options.output_path, std::ios::binary);
  const std::vector<uint8_t> kbytes((std::istreambuf_iterator<char>(kin)), std::istreambuf_iterator<char>());
  const Image img(kbytes);
  auto view = ser::ReadExecutable(img.span());
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  const auto* kernels = view->root->kernels();
  const auto* plan = view->root->memory_plan();
  size_t generated = 0, gemm = 0, conv = 0, pool = 0, dyn_alloc = 0, frees = 0, slices = 0;
  const auto* insts = view->main()->instructions();
  for (const fb::Instruction* in : *insts) {
    if (const auto* op = in->op_as_Invoke()) {
      const fb::Kernel* k = kernels->Get(op->kernel());
      const std::string lib = k->library_op() ? k->library_op()->str() : "";
      if (k->kind() == fb::KernelKind::cuda_generated) ++generated;
      else if (lib == lo::kCublasGemm) ++gemm;
      else if (lib == lo::kCudnnConv2d) ++conv;
      else if (lib == lo::kCudnnPool2d) ++pool;
    } else if (const auto* a = in->op_as_AllocStorage()) {
      (plan->storages()->Get(a->plan_slot())->arena() < 0 ? dyn_alloc : slices) += 1;
    } else if (in->op_as_FreeStorage() != nullptr) {
      ++frees;
    }
  }
  const std::string run = FunctionBody(s, "static void Run()");
  EXPECT_EQ(Count(run, "\n  // #"), insts->size());
  EXPECT_EQ(Count(run, "LaunchGenerated(k"), generated);
  EXPECT_EQ(Count(run, "GemmRun(k"), gemm);
  EXPECT_EQ(Count(run, "ConvRun(k"), conv);
  // Every conv and gemm kernel is planned with its tuning-file key, once.
  size_t lib_kernels = 0;
  for (const fb::Kernel* k : *kernels) {
    const std::string lib = k->library_op() ? k->library_op()->str() : "";
    lib_kernels += lib == lo::kCublasGemm || lib == lo::kCudnnConv2d ? 1 : 0;
  }
  const std::string resolve = FunctionBody(s, "static void ResolveKernels()");
  EXPECT_EQ(Count(resolve, "ConvPlanKernel(c, ") + Count(resolve, "GemmPlanKernel(g, p, "), lib_kernels);
  EXPECT_EQ(Count(resolve, ", \"conv|["), Count(resolve, "ConvPlanKernel(c, "));
  EXPECT_EQ(Count(run, "cl::PoolForward(g_cudnn"), pool);
  EXPECT_GT(conv, 0u);
  EXPECT_EQ(Count(run, "Malloc("), dyn_alloc);
  EXPECT_EQ(Count(run, "g_arena["), slices);
  EXPECT_EQ(Count(run, "DeviceFree(") + Count(run, "std::free("), frees);
  const size_t arenas = plan->arenas() ? plan->arenas()->size() : 0;
  EXPECT_EQ(Count(FunctionBody(s, "static void AllocateArenas()"), "Malloc("), arenas);
  if (GetParam() == "dynamic") {
    EXPECT_EQ(arenas, 0u);
    EXPECT_GT(dyn_alloc, 0u);
    EXPECT_GT(frees, 0u);
  } else {
    EXPECT_EQ(dyn_alloc, 0u);
    EXPECT_GT(arenas, 0u);
  }
  // Each invoke's block names its graph node.
  for (const fb::Instruction* in : *insts) {
    if (in->op_as_Invoke() != nullptr && in->debug_name() != nullptr) {
      EXPECT_NE(run.find(" [" + in->debug_name()->str() + "]"), std::string::npos) << in->debug_name()->str();
    }
  }
  if (!HaveNvcc()) GTEST_SKIP() << "nvcc not found (" << KEEL_NVCC << "): the generated program is not compiled";
  const std::string err = CompileWithNvcc(cu, dir.path() / "squeezenet_host");
  EXPECT_TRUE(err.empty()) << err;
}

// squeezenet1_1 compiled with --precision fp16: its convolutions and pools are f16
// library kernels; the program plans each with its half type and compiles.
TEST(CudaHostZooHalf, SqueezenetFp16) {
  const fs::path model = ModelsDir() / "squeezenet1_1.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << "shared models not found at " << ModelsDir() << " (KEEL_SHARED_DIR)";
  TempDir dir;
  CompileOptions options;
  options.model_path = model.string();
  options.output_path = (dir.path() / "squeezenet_fp16.keel").string();
  options.target = "cuda";
  options.memory_plan = "greedy-size";
  options.planner_time_limit_seconds = 2;
  options.pipeline.mixed_precision.precision = passes::Precision::kFp16;
  auto summary = CompileModel(options);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  CudaHostOptions host;
  host.keel_path = options.output_path;
  host.library_path = options.output_path + ".so";
  const fs::path cu = dir.path() / "squeezenet_fp16_host.cu";
  Status st = WriteCudaHostProgram(host, cu.string());
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::ifstream in(cu);
  const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string resolve = FunctionBody(s, "static void ResolveKernels()");
  const size_t convs = Count(resolve, "    ConvPlanKernel(c, ");
  EXPECT_GT(convs, 0u);
  EXPECT_EQ(Count(resolve, "c.p.type = cl::ElementType::kF16;"), convs);
  EXPECT_EQ(Count(resolve, "c.p.type = cl::ElementType::kF32;"), 0u);
  EXPECT_EQ(Count(resolve, "|f16\");"), convs + Count(resolve, "GemmPlanKernel(g, p, "));
  if (!HaveNvcc()) GTEST_SKIP() << "nvcc not found (" << KEEL_NVCC << "): the generated program is not compiled";
  const std::string err = CompileWithNvcc(cu, dir.path() / "squeezenet_fp16_host");
  EXPECT_TRUE(err.empty()) << err;
}

INSTANTIATE_TEST_SUITE_P(Plans, CudaHostZoo, ::testing::Values("greedy-size", "naive", "dynamic"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace keel::driver
