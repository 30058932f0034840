// End-to-end tests of the compiler driver: every model in shared/models is
// compiled (ONNX → model.keel + model.keel.so), loaded by the VM, run on its
// bundled input and compared with PyTorch's reference output. Also: compiler
// determinism, agreement of every memory plan, and driver-level bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "compiler/driver/compile.h"
#include "compiler/memory/planner.h"
#include "keel/vm.h"
#include "tests/compiler/driver/zoo_test_util.h"

namespace keel::driver {
namespace {

namespace fs = std::filesystem;
using namespace zoo_test;  // NOLINT: the zoo tests' shared helpers

// Compiles `model` with `plan`, runs it on its bundled input, returns the output.
std::vector<float> CompileAndRun(const std::string& model, const std::string& plan, const fs::path& dir) {
  CompileOptions options;
  options.model_path = (ModelsDir() / (model + ".onnx")).string();
  options.output_path = (dir / (model + ".keel")).string();
  options.memory_plan = plan;
  options.planner_time_limit_seconds = 2;
  auto summary = CompileModel(options);
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  if (!summary.ok()) return {};

  auto exe = Executable::LoadFile(options.output_path);
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
  if (!exe.ok()) return {};
  EXPECT_EQ((*exe)->plan_strategy().substr(0, plan.size()), plan);
  return RunOnBundledInput(model, options.output_path);
}

class ModelZoo : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!fs::exists(ModelsDir() / (GetParam() + ".onnx"))) {
      GTEST_SKIP() << "shared models not found at " << ModelsDir() << " (set KEEL_SHARED_DIR)";
    }
  }
};

TEST_P(ModelZoo, MatchesPyTorchReference) {
  TempDir dir;
  const std::vector<float> out = CompileAndRun(GetParam(), "greedy-size", dir.path());
  const std::vector<float> ref = ReadFloats(ModelsDir() / (GetParam() + ".output.bin"));
  ASSERT_EQ(out.size(), ref.size());
  const double err = RelativeL2(out, ref);
  EXPECT_LE(err, 1e-4) << GetParam() << ": relative L2 error " << err;
  std::printf("%s: relative L2 error vs PyTorch %.3g\n", GetParam().c_str(), err);
}

INSTANTIATE_TEST_SUITE_P(SharedModels, ModelZoo,
                         ::testing::Values("squeezenet1_1", "resnet18", "mobilenet_v2", "tiny_bert"));

TEST(Compiler, OutputIsByteIdenticalAcrossRuns) {
  const fs::path model = ModelsDir() / "tiny_bert.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << "shared models not found at " << ModelsDir();
  TempDir a, b;
  for (const TempDir* dir : {&a, &b}) {
    CompileOptions options;
    options.model_path = model.string();
    options.output_path = (dir->path() / "m.keel").string();
    auto summary = CompileModel(options);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  }
  EXPECT_EQ(ReadBytes(a.path() / "m.keel"), ReadBytes(b.path() / "m.keel"));
  EXPECT_EQ(ReadBytes(a.path() / "m.keel.so"), ReadBytes(b.path() / "m.keel.so"));
  EXPECT_GT(ReadBytes(a.path() / "m.keel").size(), 1000u);
}

TEST(Compiler, EveryMemoryPlanGivesTheSameOutput) {
  if (!fs::exists(ModelsDir() / "squeezenet1_1.onnx")) GTEST_SKIP() << "shared models not found";
  TempDir dir;
  const std::vector<float> reference = CompileAndRun("squeezenet1_1", "greedy-size", dir.path());
  ASSERT_FALSE(reference.empty());
  for (const char* plan : {"naive", "dynamic", "tvm", "greedy-breadth", "min-cost-flow"}) {
    TempDir other;
    EXPECT_EQ(CompileAndRun("squeezenet1_1", plan, other.path()), reference) << "plan " << plan;
  }
}

Status CompileError(CompileOptions options) {
  auto r = CompileModel(options);
  return r.ok() ? Status::Ok() : r.status();
}

TEST(Compiler, BadInputsAreClearErrors) {
  TempDir dir;
  CompileOptions options;
  options.output_path = (dir.path() / "m.keel").string();

  options.model_path = (dir.path() / "missing.onnx").string();
  Status st = CompileError(options);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("missing.onnx"), std::string::npos) << st.ToString();

  // A truncated model: the first half of a real one (or of a small hand-made file).
  const fs::path source = ModelsDir() / "squeezenet1_1.onnx";
  const fs::path truncated = dir.path() / "truncated.onnx";
  {
    std::vector<uint8_t> bytes = fs::exists(source) ? ReadBytes(source) : std::vector<uint8_t>(64, 0x0a);
    std::ofstream out(truncated, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size() / 2));
  }
  options.model_path = truncated.string();
  st = CompileError(options);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("truncated.onnx"), std::string::npos) << st.ToString();
  EXPECT_FALSE(fs::exists(options.output_path)) << "no executable may be written on error";

  if (fs::exists(source)) {
    options.model_path = source.string();
    options.target = "tpu";
    st = CompileError(options);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_NE(st.message().find("tpu"), std::string::npos) << st.ToString();

    options.target = "cpu";
    options.memory_plan = "no-such-plan";
    st = CompileError(options);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("no-such-plan"), std::string::npos) << st.ToString();
  }
}

}  // namespace
}  // namespace keel::driver
