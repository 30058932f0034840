// tests/compiler/codegen_cuda/cuda_compile_test.cc — keelc's CUDA target over
// the model zoo (shared/models through KEEL_SHARED_DIR; skipped when absent):
// every model compiles, the executable passes the reader's verification, the
// kernel table uses cuBLAS/cuDNN where the library contract allows and NVPTX
// kernels (with launch configs) found in the library's PTX otherwise, every
// intermediate lives on the device, and compiling twice gives identical files.
// Running on a GPU is the VM's test (tests/vm/cuda, device machine).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "compiler/driver/compile.h"
#include "serialization/executable_reader.h"
#include "serialization/library_ops.h"

namespace keel::driver {
namespace {

namespace fs = std::filesystem;

fs::path ModelsDir() { return fs::path(KEEL_SHARED_DIR) / "models"; }

std::vector<uint8_t> Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Dir {
  fs::path path;
  Dir() {
    static int counter = 0;
    path = fs::temp_directory_path() / ("keel_cuda_compile_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

Result<CompileSummary> CompileCuda(const std::string& model, const fs::path& out) {
  CompileOptions o;
  o.model_path = (ModelsDir() / (model + ".onnx")).string();
  o.output_path = out.string();
  o.target = "cuda";
  return CompileModel(o);
}

class CudaZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaZoo, CompilesAndVerifies) {
  const std::string model = GetParam();
  if (!fs::exists(ModelsDir() / (model + ".onnx"))) GTEST_SKIP() << "model zoo not found under " << ModelsDir();
  Dir dir;
  const fs::path out = dir.path / "model.keel";
  Result<CompileSummary> s = CompileCuda(model, out);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->target_info.arch, "sm_90");
  std::vector<uint8_t> file = Read(out);
  Result<ser::ExecutableView> view = ser::ReadExecutable(file);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  const fb::Executable& exe = *view->root;

  // Targets: the host (I/O buffers) and the GPU.
  bool has_cuda_target = false;
  for (const fb::Target* t : *exe.targets())
    if (t->device() == fb::DeviceKind::cuda) has_cuda_target = t->arch()->str() == "sm_90";
  EXPECT_TRUE(has_cuda_target);

  // The library exports the CUDA module; every generated kernel is in it.
  const fs::path so = out.string() + ".so";
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  const char* ptx = static_cast<const char*>(dlsym(h, "keel_cuda_ptx"));
  const char* id = static_cast<const char*>(dlsym(h, "keel_kernel_library_id"));
  ASSERT_TRUE(ptx && id);
  EXPECT_EQ(std::string(id), exe.kernel_library_id()->str());
  const std::string ptx_text = ptx;

  std::map<std::string, int> library_ops;
  int generated = 0;
  for (const fb::Kernel* k : *exe.kernels()) {
    EXPECT_EQ(k->device(), fb::DeviceKind::cuda) << k->name()->str();
    if (k->kind() == fb::KernelKind::library) {
      ++library_ops[k->library_op()->str()];
    } else {
      ASSERT_EQ(k->kind(), fb::KernelKind::cuda_generated) << k->name()->str();
      ++generated;
      ASSERT_NE(k->launch(), nullptr);
      EXPECT_GE(k->launch()->block()->Get(0), 32u);
      EXPECT_NE(ptx_text.find(".entry " + k->name()->str() + "("), std::string::npos) << k->name()->str();
    }
  }
  dlclose(h);
  EXPECT_GT(generated, 0);
  if (model == "resnet18" || model == "mobilenet_v2" || model == "squeezenet1_1") {
    EXPECT_GT(library_ops[ser::library_ops::kCudnnConv2d], 0) << model;
  }
  if (model == "resnet18") {
    EXPECT_GT(library_ops[ser::library_ops::kCudnnPool2d], 0);
    EXPECT_GT(library_ops[ser::library_ops::kCublasGemm], 0);
  }
  if (model == "squeezenet1_1") {
    // Its MaxPools use ceil_mode 1 with shapes where floor mode gives the same
    // output: they go to cuDNN rather than to generated kernels.
    EXPECT_EQ(library_ops[ser::library_ops::kCudnnPool2d], 3);
  }
  if (model == "tiny_bert") {
    EXPECT_GT(library_ops[ser::library_ops::kCublasGemm], 0);
  }
  // Intermediates and constants live on the GPU; only I/O is on the host.
  for (const fb::Constant* c : *exe.constants()) EXPECT_EQ(c->device(), fb::DeviceKind::cuda) << c->name()->str();
  for (const fb::PlannedStorage* st : *exe.memory_plan()->storages()) {
    if (st->device() == fb::DeviceKind::cuda) {
      EXPECT_EQ(st->alignment() % 256, 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CudaZoo,
                         ::testing::Values("resnet18", "mobilenet_v2", "squeezenet1_1", "tiny_bert"));

TEST(CudaCompile, IsDeterministic) {
  const std::string model = "squeezenet1_1";
  if (!fs::exists(ModelsDir() / (model + ".onnx"))) GTEST_SKIP() << "model zoo not found under " << ModelsDir();
  Dir d1, d2;
  ASSERT_TRUE(CompileCuda(model, d1.path / "m.keel").ok());
  ASSERT_TRUE(CompileCuda(model, d2.path / "m.keel").ok());
  EXPECT_TRUE(Read(d1.path / "m.keel") == Read(d2.path / "m.keel"));
  EXPECT_TRUE(Read(d1.path / "m.keel.so") == Read(d2.path / "m.keel.so"));
}

}  // namespace
}  // namespace keel::driver
