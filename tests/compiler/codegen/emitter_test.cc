// The CPU emitter and linker: ABI symbols, target resolution, byte-identical
// output for identical input, distinct output for a distinct library id, errors
// as values for bad kernel names.
#include <dlfcn.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "compiler/codegen/llvm_cpu_emitter.h"
#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<KernelSpec> SomeKernels(GraphBuilder& b) {
  ir::Value* x = b.Input("x", {3, 50});
  ir::Value* w = b.Input("w", {50, 20});
  std::vector<KernelSpec> specs;
  ir::Node* mm = b.Op("MatMul", {x, w});
  ir::Node* relu = b.Op("Relu", {mm->output(0)});
  ir::Node* sm = b.Op("Softmax", {relu->output(0)});
  int64_t i = 0;
  for (ir::Node* n : {mm, relu, sm}) {
    auto s = LowerNodeToKernel(*n, i++);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (s.ok()) specs.push_back(*s);
  }
  return specs;
}

TEST(Emitter, ExportsAbiSymbolsAndKernels) {
  GraphBuilder b;
  std::vector<KernelSpec> specs = SomeKernels(b);
  auto lib = CompileAndLoad(specs, "model-1234");
  ASSERT_NE(lib, nullptr);
  auto* version = static_cast<const uint32_t*>(dlsym(lib->handle, "keel_kernel_abi_version"));
  auto* id = static_cast<const char*>(dlsym(lib->handle, "keel_kernel_library_id"));
  ASSERT_NE(version, nullptr);
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(*version, KEEL_KERNEL_ABI_VERSION);
  EXPECT_STREQ(id, "model-1234");
  for (const KernelSpec& s : specs) EXPECT_NE(lib->Kernel(s.name), nullptr) << s.name;
  // Internal helpers are not exported.
  EXPECT_EQ(dlsym(lib->handle, (specs[0].name + ".impl").c_str()), nullptr);
}

TEST(Emitter, DeterministicBytes) {
  GraphBuilder b;
  std::vector<KernelSpec> specs = SomeKernels(b);
  char tmpl[] = "/tmp/keel-cgdet-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  std::string p1 = dir + "/a.so", p2 = dir + "/b.so", p3 = dir + "/c.so";
  ASSERT_TRUE(EmitCpuKernelLibrary(specs, "same-id", p1, {}).ok());
  // Lower again from scratch: lowering is deterministic too.
  GraphBuilder b2;
  std::vector<KernelSpec> specs2 = SomeKernels(b2);
  ASSERT_TRUE(EmitCpuKernelLibrary(specs2, "same-id", p2, {}).ok());
  ASSERT_TRUE(EmitCpuKernelLibrary(specs, "other-id", p3, {}).ok());
  std::string a = ReadAll(p1), c = ReadAll(p2), d = ReadAll(p3);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, c);
  EXPECT_NE(a, d);
  for (const std::string& p : {p1, p2, p3}) std::remove(p.c_str());
  rmdir(dir.c_str());
}

TEST(Emitter, ResolvesTargetAndRecordsFeatures) {
  auto t = ResolveCpuTarget({});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->cpu == "x86-64-v4" || t->cpu == "x86-64-v3" || t->cpu == "x86-64") << t->cpu;
  if (t->cpu == "x86-64-v4") {
    EXPECT_NE(t->features.find("+avx512f"), std::string::npos) << t->features;
    EXPECT_NE(t->features.find("+avx512vl"), std::string::npos) << t->features;
  }
  if (t->cpu == "x86-64-v3" || t->cpu == "x86-64-v4") {
    EXPECT_NE(t->features.find("+avx2"), std::string::npos) << t->features;
    EXPECT_NE(t->features.find("+fma"), std::string::npos) << t->features;
  }
  CpuTargetOptions bad;
  bad.cpu = "not-a-cpu";
  EXPECT_EQ(ResolveCpuTarget(bad).status().code(), StatusCode::kUnsupported);
}

TEST(Emitter, RejectsDuplicateAndInvalidNames) {
  GraphBuilder b;
  std::vector<KernelSpec> specs = SomeKernels(b);
  std::vector<KernelSpec> dup = {specs[0], specs[0]};
  EXPECT_EQ(EmitCpuKernelLibrary(dup, "id", "/tmp/keel-never-written.so", {}).code(), StatusCode::kInvalidArgument);
  KernelSpec renamed = specs[0];
  renamed.name = "bad name";
  EXPECT_EQ(EmitCpuKernelLibrary({renamed}, "id", "/tmp/keel-never-written.so", {}).code(),
            StatusCode::kInvalidArgument);
}

// Linker failures are kIoError values naming the linker (llvm_cpu_emitter.h),
// and leave no library behind.
TEST(Emitter, LinkerFailuresAreIoErrorsNamingTheLinker) {
  GraphBuilder b;
  std::vector<KernelSpec> specs = SomeKernels(b);
  const std::string out = ::testing::TempDir() + "/keel-linker-failure-test.so";
  std::remove(out.c_str());
  CpuTargetOptions missing;
  missing.linker = "keel-no-such-linker";
  Status s = EmitCpuKernelLibrary(specs, "id", out, missing);
  EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
  EXPECT_NE(s.message().find("cannot run linker 'keel-no-such-linker'"), std::string::npos) << s.ToString();
  CpuTargetOptions failing;
  failing.linker = "false";  // starts, exits 1
  s = EmitCpuKernelLibrary(specs, "id", out, failing);
  EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
  EXPECT_NE(s.message().find("linker 'false' failed"), std::string::npos) << s.ToString();
  EXPECT_TRUE(ReadAll(out).empty()) << out << " was written";
}

TEST(Emitter, VectorizesTheGemmMicroKernel) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {64, 64});
  ir::Value* w = b.Input("w", {64, 64});
  ir::Node* mm = b.Op("MatMul", {x, w});
  // The micro-kernel's rows are kLanes statements: NR-wide vector arithmetic
  // whatever the target (LLVM splits it into registers), never scalar code.
  for (const auto& [features, nr] :
       {std::pair<std::string, int>{"+sse4.2", 8}, {"+avx,+avx2,+fma", 16}, {"+avx,+avx2,+fma,+avx512f", 32}}) {
    LowerOptions options = LowerOptionsForCpuFeatures(features);
    EXPECT_EQ(options.gemm_nr, nr);
    auto spec = LowerNodeToKernel(*mm, 0, options);
    ASSERT_TRUE(spec.ok());
    auto ir_text = EmitCpuKernelModuleIR({*spec}, "id", {}, true);
    ASSERT_TRUE(ir_text.ok()) << ir_text.status().ToString();
    const std::string vec = "fmul reassoc nsz contract <" + std::to_string(nr) + " x float>";
    EXPECT_NE(ir_text->find(vec), std::string::npos) << features;
  }
}

// A kLanes exp / log calls libmvec's variant of the target's vector width
// (20 lanes: parts of 8 with AVX2, 16 with AVX-512, the last padded), never
// one libm call per lane; without libmvec the intrinsic stays.
TEST(Emitter, LanesExpLogCallLibmvec) {
  auto k = std::make_shared<KernelFunc>("k0_lanes_exp");
  int in = k->AddArg("in", DType::kF32, {20}, ArgAccess::kRead);
  int out = k->AddArg("out", DType::kF32, {20}, ArgAccess::kWrite);
  Expr j = k->NewVar("j");
  Expr x = k->Load(in, {j});
  k->set_body(For(j, 0, 20, LoopKind::kLanes, k->Store(out, {j}, Unary(UnaryOp::kExp, x) + Unary(UnaryOp::kLog, x))));
  ASSERT_TRUE(k->Verify().ok()) << k->Verify().ToString();
  const KernelSpec spec = SpecOf(k, 1);
  CpuTargetOptions o;
  for (const auto& [cpu, prefix] : {std::pair<std::string, std::string>{"x86-64-v3", "_ZGVdN8v_"}, {"x86-64-v4", "_ZGVeN16v_"}}) {
    o.cpu = cpu;
    auto ir_text = EmitCpuKernelModuleIR({spec}, "id", o, true);
    ASSERT_TRUE(ir_text.ok()) << ir_text.status().ToString();
    EXPECT_NE(ir_text->find("@" + prefix + "expf("), std::string::npos) << cpu << "\n" << *ir_text;
    EXPECT_NE(ir_text->find("@" + prefix + "logf("), std::string::npos) << cpu;
    EXPECT_EQ(ir_text->find("@expf("), std::string::npos) << cpu;
    EXPECT_EQ(ir_text->find("@logf("), std::string::npos) << cpu;
  }
  o.vector_math_library = false;
  auto ir_text = EmitCpuKernelModuleIR({spec}, "id", o, false);
  ASSERT_TRUE(ir_text.ok()) << ir_text.status().ToString();
  EXPECT_EQ(ir_text->find("_ZGV"), std::string::npos);
}

TEST(Emitter, Avx512FunctionsUseZmmRegisters) {
  CpuTargetOptions o;
  o.cpu = "x86-64-v4";
  GraphBuilder b;
  auto spec = LowerNodeToKernel(*b.Op("Relu", {b.Input("x", {4, 64})}), 0);
  ASSERT_TRUE(spec.ok());
  auto ir_text = EmitCpuKernelModuleIR({*spec}, "id", o, false);
  ASSERT_TRUE(ir_text.ok()) << ir_text.status().ToString();
  EXPECT_NE(ir_text->find("\"prefer-vector-width\"=\"512\""), std::string::npos);
  o.cpu = "x86-64-v3";
  ir_text = EmitCpuKernelModuleIR({*spec}, "id", o, false);
  ASSERT_TRUE(ir_text.ok()) << ir_text.status().ToString();
  EXPECT_EQ(ir_text->find("prefer-vector-width"), std::string::npos);
}

// Every defined function starts on a 64-byte line (llvm_cpu_emitter.cc AlignFunctions), so a
// kernel's code placement does not depend on the size of the kernels before it.
TEST(Emitter, FunctionsAlignedTo64Bytes) {
  GraphBuilder b;
  auto spec = LowerNodeToKernel(*b.Op("Relu", {b.Input("x", {4, 64})}), 0);
  ASSERT_TRUE(spec.ok());
  for (bool optimized : {false, true}) {
    auto ir_text = EmitCpuKernelModuleIR({*spec}, "id", {}, optimized);
    ASSERT_TRUE(ir_text.ok()) << ir_text.status().ToString();
    int defines = 0;
    for (size_t at = ir_text->find("\ndefine "); at != std::string::npos; at = ir_text->find("\ndefine ", at + 1)) {
      const std::string line = ir_text->substr(at + 1, ir_text->find('\n', at + 1) - at - 1);
      EXPECT_NE(line.find(" align 64"), std::string::npos) << line;
      ++defines;
    }
    EXPECT_GT(defines, 0);
  }
}

}  // namespace
}  // namespace keel::codegen::testing
