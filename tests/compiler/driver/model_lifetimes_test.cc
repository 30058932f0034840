// tests/compiler/driver/model_lifetimes_test.cc — ComputeModelLifetimes gives
// exactly the lifetimes LowerProgram plans when keelc compiles the same model
// (rebuilt here step by step from the public pieces, without LLVM emission), the
// CUDA target's host I/O buffers and alignment, and its errors.
// Zoo models come from KEEL_SHARED_DIR/models; tests skip when it is absent.
#include "compiler/driver/model_lifetimes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "compiler/lower/lower_program.h"
#include "serialization/executable_writer.h"

namespace keel::driver {
namespace {

std::string Zoo(const std::string& name) {
  return (std::filesystem::path(KEEL_SHARED_DIR) / "models" / (name + ".onnx")).string();
}

// The lifetimes LowerProgram hands to the planner for `path` on the CPU target.
std::vector<memory::TensorLifetime> LoweredLifetimes(const std::string& path) {
  auto graph = frontend::ImportOnnx(path, frontend::ImportOptions{});
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  if (!graph.ok()) return {};
  auto backend = CreateBackend("cpu", BackendOptions{});
  EXPECT_TRUE(backend.ok());
  if (!backend.ok()) return {};
  passes::PipelineOptions pipeline;  // as keelc's: the CPU target's rules
  SetTargetRules(**backend, Layout::kAuto, &pipeline);
  EXPECT_TRUE(passes::RunDefaultPipeline(**graph, pipeline).ok());
  lower::ProgramOptions program;  // cpu, alignment 64, greedy-size
  auto steps = SelectStepKernels(**graph, **backend, program.alignment, nullptr);
  EXPECT_TRUE(steps.ok()) << steps.status().ToString();
  if (!steps.ok()) return {};
  ser::ExecutableWriter writer;
  auto stats = lower::LowerProgram(**graph, *steps, program, writer);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (!stats.ok()) return {};
  return stats->lifetimes;
}

class ZooLifetimes : public ::testing::TestWithParam<const char*> {};

TEST_P(ZooLifetimes, CpuMatchesWhatLoweringPlans) {
  const std::string path = Zoo(GetParam());
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found (KEEL_SHARED_DIR)";
  LifetimeOptions options;
  options.model_path = path;
  auto got = ComputeModelLifetimes(options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const auto expected = LoweredLifetimes(path);
  ASSERT_FALSE(expected.empty());
  ASSERT_EQ(got->tensors.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const memory::TensorLifetime& a = got->tensors[i];
    const memory::TensorLifetime& b = expected[i];
    SCOPED_TRACE(b.name);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.size, b.size);
    EXPECT_EQ(a.alignment, b.alignment);
    EXPECT_EQ(a.first_use, b.first_use);
    EXPECT_EQ(a.last_use, b.last_use);
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.may_alias_with, b.may_alias_with);
    EXPECT_EQ(a.alignment, 64u);
    EXPECT_LE(a.last_use, got->num_steps);  // outputs live until num_steps
  }
  EXPECT_EQ(got->step_names.size(), static_cast<size_t>(got->num_steps));
  EXPECT_TRUE(got->workspace_note.empty());
  EXPECT_EQ(got->workspace_backend, "cpu");
}

TEST_P(ZooLifetimes, CudaAddsHostIoAndAligns256) {
  const std::string path = Zoo(GetParam());
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found (KEEL_SHARED_DIR)";
  LifetimeOptions options;
  options.model_path = path;
  auto cpu = ComputeModelLifetimes(options);
  options.target = "cuda";
  auto cuda = ComputeModelLifetimes(options);
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  ASSERT_TRUE(cuda.ok()) << cuda.status().ToString();
  // Workspaces (":workspace" buffers) depend on the backend's kernels; the
  // other buffers do not.
  auto is_workspace = [](const memory::TensorLifetime& t) {
    return t.name.size() > 10 && t.name.compare(t.name.size() - 10, 10, ":workspace") == 0;
  };
  size_t host = 0, cuda_buffers = 0, cpu_buffers = 0;
  for (const memory::TensorLifetime& t : cuda->tensors) {
    EXPECT_EQ(t.alignment, 256u) << t.name;
    host += t.device == memory::Device::kCpu;
    cuda_buffers += !is_workspace(t);
  }
  for (const memory::TensorLifetime& t : cpu->tensors) cpu_buffers += !is_workspace(t);
  auto graph = frontend::ImportOnnx(path, frontend::ImportOptions{});
  ASSERT_TRUE(graph.ok());
  // One host buffer per graph output; one device buffer per param on top of the CPU set.
  EXPECT_EQ(host, (*graph)->outputs().size());
  EXPECT_EQ(cuda_buffers, cpu_buffers + (*graph)->inputs().size() + (*graph)->outputs().size());
  // The note is there exactly when the build has no CUDA backend.
  EXPECT_EQ(cuda->workspace_note.empty(), CreateBackend("cuda", BackendOptions{}).ok());
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooLifetimes, ::testing::Values("squeezenet1_1", "resnet18"));

TEST(ModelLifetimes, Errors) {
  LifetimeOptions options;
  options.model_path = "/nonexistent/model.onnx";
  auto missing = ComputeModelLifetimes(options);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/model.onnx"), std::string::npos);
  options.target = "tpu";
  auto bad_target = ComputeModelLifetimes(options);
  ASSERT_FALSE(bad_target.ok());
  EXPECT_EQ(bad_target.status().code(), StatusCode::kInvalidArgument);
}

TEST(ModelLifetimes, TargetOptions) {
  auto cpu = BufferOptionsForTarget("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->alignment, 64u);
  EXPECT_EQ(cpu->device, memory::Device::kCpu);
  EXPECT_FALSE(cpu->host_io);
  auto cuda = BufferOptionsForTarget("cuda");
  ASSERT_TRUE(cuda.ok());
  EXPECT_EQ(cuda->alignment, 256u);
  EXPECT_EQ(cuda->device, memory::Device::kCuda);
  EXPECT_TRUE(cuda->host_io);
  EXPECT_FALSE(BufferOptionsForTarget("CPU").ok());
}

}  // namespace
}  // namespace keel::driver
