// tests/compiler/driver/precision_zoo_test.cc — keelc --precision fp16|bf16|tf32
// end to end on the shared model zoo (KEEL_SHARED_DIR; skipped when absent):
// each model compiled in half runs on the CPU within relative L2 1e-2 of
// PyTorch's f32 reference (classifiers: the same top-1 class), its executable
// is about half the f32 one (weights converted at compile time), the summary
// says what stays f32, recompiles are byte-identical, the CUDA target compiles
// the half graph (f16 weights on the GPU, PTX reading halves; no GPU needed),
// and tf32 is recorded in the executable for the VM.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "compiler/driver/compile.h"
#include "keel/vm.h"
#include "serialization/executable_reader.h"
#include "tests/compiler/driver/zoo_test_util.h"

namespace keel::driver {
namespace {

namespace fs = std::filesystem;
using passes::Precision;
using namespace zoo_test;  // NOLINT: the zoo tests' shared helpers

Result<CompileSummary> Compile(const std::string& model, Precision p, const fs::path& out,
                               const std::string& target = "cpu") {
  CompileOptions o;
  o.model_path = (ModelsDir() / (model + ".onnx")).string();
  o.output_path = out.string();
  o.target = target;
  o.planner_time_limit_seconds = 2;
  o.pipeline.mixed_precision.precision = p;
  return CompileModel(o);
}

struct Case {
  std::string model;
  bool classifier;
};

class HalfZoo : public ::testing::TestWithParam<std::tuple<Case, Precision>> {
 protected:
  void SetUp() override {
    if (!fs::exists(ModelsDir() / (std::get<0>(GetParam()).model + ".onnx"))) {
      GTEST_SKIP() << "shared models not found at " << ModelsDir() << " (set KEEL_SHARED_DIR)";
    }
  }
};

TEST_P(HalfZoo, MatchesTheF32ReferenceAtHalfTheSize) {
  const auto& [c, precision] = GetParam();
  TempDir dir;
  auto f32 = Compile(c.model, Precision::kFp32, dir.path() / "f32.keel");
  ASSERT_TRUE(f32.ok()) << f32.status().ToString();
  auto half = Compile(c.model, precision, dir.path() / "half.keel");
  ASSERT_TRUE(half.ok()) << half.status().ToString();

  // The summary: weights and activations in half, what stays f32 and why.
  EXPECT_GT(half->precision.half_constants, 0);
  EXPECT_GT(half->precision.half_activations, 0);
  const std::string text = FormatSummary(*half);
  EXPECT_NE(text.find(std::string("precision   ") + passes::PrecisionName(precision)), std::string::npos) << text;
  // Weights are most of each file: converted at compile time, the executable halves.
  EXPECT_LT(double(half->executable_bytes), 0.6 * double(f32->executable_bytes))
      << f32->executable_bytes << " -> " << half->executable_bytes;

  const std::vector<float> ref = ReadFloats(ModelsDir() / (c.model + ".output.bin"));
  const std::vector<float> out = RunOnBundledInput(c.model, dir.path() / "half.keel");
  ASSERT_EQ(out.size(), ref.size());
  const double err = RelativeL2(out, ref);
  EXPECT_LE(err, 1e-2) << c.model << " " << passes::PrecisionName(precision);
  if (c.classifier) {
    EXPECT_EQ(ArgMax(out), ArgMax(ref)) << c.model << ": top-1 class changed";
  }
  std::printf("%s %s: relative L2 vs PyTorch f32 %.3g; executable %llu -> %llu bytes\n%s", c.model.c_str(),
              passes::PrecisionName(precision), err, (unsigned long long)f32->executable_bytes,
              (unsigned long long)half->executable_bytes, text.c_str());
}

INSTANTIATE_TEST_SUITE_P(SharedModels, HalfZoo,
                         ::testing::Combine(::testing::Values(Case{"squeezenet1_1", true}, Case{"mobilenet_v2", true},
                                                              Case{"tiny_bert", false}),
                                            ::testing::Values(Precision::kFp16, Precision::kBf16)),
                         [](const auto& info) {
                           return std::get<0>(info.param).model + "_" +
                                  passes::PrecisionName(std::get<1>(info.param));
                         });

TEST(Precision, HalfRecompilesAreByteIdentical) {
  if (!fs::exists(ModelsDir() / "tiny_bert.onnx")) GTEST_SKIP() << "shared models not found";
  TempDir a, b;
  ASSERT_TRUE(Compile("tiny_bert", Precision::kFp16, a.path() / "m.keel").ok());
  ASSERT_TRUE(Compile("tiny_bert", Precision::kFp16, b.path() / "m.keel").ok());
  EXPECT_EQ(ReadBytes(a.path() / "m.keel"), ReadBytes(b.path() / "m.keel"));
  EXPECT_EQ(ReadBytes(a.path() / "m.keel.so"), ReadBytes(b.path() / "m.keel.so"));
}

TEST(Precision, CudaTargetTakesTheHalfGraph) {
  for (const char* model : {"squeezenet1_1", "mobilenet_v2", "tiny_bert"}) {
    if (!fs::exists(ModelsDir() / (std::string(model) + ".onnx"))) GTEST_SKIP() << "shared models not found";
    // bf16 on one model: the CUDA compile of a model takes ~35 s on the build machine.
    for (Precision p : {Precision::kFp16, Precision::kBf16}) {
      if (p == Precision::kBf16 && std::string(model) != "tiny_bert") continue;
      TempDir dir;
      auto s = Compile(model, p, dir.path() / "m.keel", "cuda");
      ASSERT_TRUE(s.ok()) << model << ": " << s.status().ToString();
      const std::vector<uint8_t> file = ReadBytes(dir.path() / "m.keel");
      auto view = ser::ReadExecutable(file);
      ASSERT_TRUE(view.ok()) << view.status().ToString();
      const fb::DType half = p == Precision::kFp16 ? fb::DType::f16 : fb::DType::bf16;
      int half_weights = 0;
      for (const fb::Constant* c : *view->root->constants()) {
        half_weights += c->dtype() == half && c->device() == fb::DeviceKind::cuda;
      }
      EXPECT_GT(half_weights, 0) << model << " " << passes::PrecisionName(p);
      if (p == Precision::kFp16) {
        // Generated kernels load halves and widen them (cvt.f32.f16).
        const fs::path so = dir.path() / "m.keel.so";
        void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
        ASSERT_NE(h, nullptr) << dlerror();
        const char* ptx = static_cast<const char*>(dlsym(h, "keel_cuda_ptx"));
        ASSERT_NE(ptx, nullptr);
        EXPECT_NE(std::string(ptx).find("cvt.f32.f16"), std::string::npos) << model;
        dlclose(h);
      }
    }
  }
}

TEST(Precision, Tf32IsRecordedForTheVm) {
  if (!fs::exists(ModelsDir() / "squeezenet1_1.onnx")) GTEST_SKIP() << "shared models not found";
  TempDir dir;
  for (Precision p : {Precision::kFp32, Precision::kTf32}) {
    const fs::path out = dir.path() / (std::string(passes::PrecisionName(p)) + ".keel");
    auto s = Compile("squeezenet1_1", p, out);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->precision.half_constants, 0);
    auto exe = Executable::LoadFile(out.string());
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    EXPECT_EQ((*exe)->allow_tf32(), p == Precision::kTf32);
  }
}

}  // namespace
}  // namespace keel::driver
