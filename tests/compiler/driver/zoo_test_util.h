// tests/compiler/driver/zoo_test_util.h — what the tests over the shared model
// zoo (KEEL_SHARED_DIR/models: ONNX + bundled input + PyTorch's output) have in
// common: file reading, a scratch folder, the error measure, and running a
// compiled model on its bundled input with the VM.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "keel/vm.h"

namespace keel::zoo_test {

namespace fs = std::filesystem;

inline fs::path ModelsDir() { return fs::path(KEEL_SHARED_DIR) / "models"; }

inline std::vector<uint8_t> ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::vector<float> ReadFloats(const fs::path& path) {
  const std::vector<uint8_t> bytes = ReadBytes(path);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

inline double RelativeL2(const std::vector<float>& out, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = i < out.size() ? double(out[i]) - ref[i] : double(ref[i]);
    num += d * d;
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

inline size_t ArgMax(const std::vector<float>& v) { return size_t(std::max_element(v.begin(), v.end()) - v.begin()); }

// A fresh folder under the system's temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("keel_zoo_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

// Loads the executable `keel`, runs it on `model`'s bundled input (f32) on the
// CPU, returns its first output as f32; failures are reported as test failures
// (and give an empty vector).
inline std::vector<float> RunOnBundledInput(const std::string& model, const fs::path& keel) {
  auto exe = Executable::LoadFile(keel.string());
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
  if (!exe.ok()) return {};
  auto vm = VirtualMachine::Create(*exe);
  EXPECT_TRUE(vm.ok()) << vm.status().ToString();
  if (!vm.ok()) return {};
  const std::vector<float> input = ReadFloats(ModelsDir() / (model + ".input.bin"));
  const TensorInfo& info = (*exe)->input(0);
  EXPECT_EQ(info.dtype, DataType::kF32);
  Status st = (*vm)->SetInput(0, input.data(), input.size() * sizeof(float), info.shape, info.dtype);
  EXPECT_TRUE(st.ok()) << st.ToString();
  st = (*vm)->Run();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ((*exe)->output(0).dtype, DataType::kF32);
  std::vector<float> out((*exe)->output(0).byte_size / sizeof(float));
  st = (*vm)->CopyOutputToHost(0, out.data(), out.size() * sizeof(float));
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

}  // namespace keel::zoo_test
