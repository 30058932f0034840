// End-to-end tests of the compiler driver: every model in shared/models is
// compiled (ONNX → model.keel + model.keel.so), loaded by the VM, run on its
// bundled input and compared with PyTorch's reference output. Also: compiler
// determinism, agreement of every memory plan, and driver-level bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "compiler/driver/compile.h"
#include "compiler/memory/planner.h"
#include "keel/vm.h"

namespace keel::driver {
namespace {

namespace fs = std::filesystem;

fs::path ModelsDir() { return fs::path(KEEL_SHARED_DIR) / "models"; }

std::vector<char> ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<float> ReadFloats(const fs::path& path) {
  std::vector<char> bytes = ReadBytes(path);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

double RelativeL2(const std::vector<float>& out, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (double(out[i]) - ref[i]) * (double(out[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("keel_e2e_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

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
  auto vm = VirtualMachine::Create(*exe);
  EXPECT_TRUE(vm.ok()) << vm.status().ToString();
  if (!vm.ok()) return {};
  const std::vector<float> input = ReadFloats(ModelsDir() / (model + ".input.bin"));
  const TensorInfo& info = (*exe)->input(0);
  Status st = (*vm)->SetInput(0, input.data(), input.size() * sizeof(float), info.shape, info.dtype);
  EXPECT_TRUE(st.ok()) << st.ToString();
  st = (*vm)->Run();
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<float> out((*exe)->output(0).byte_size / sizeof(float));
  st = (*vm)->CopyOutputToHost(0, out.data(), out.size() * sizeof(float));
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
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
    std::vector<char> bytes = fs::exists(source) ? ReadBytes(source) : std::vector<char>(64, '\x0a');
    std::ofstream out(truncated, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
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
