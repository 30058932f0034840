// tests/compiler/driver/cuda_host_test_util.h — helpers shared by the
// keelc --emit=cuda-host tests (cuda_host_test.cc, cuda_host_library_test.cc):
// text counting, temporary folders, 8-byte aligned executable images and nvcc
// on a generated program (KEEL_NVCC and the library folders come from CMake).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <span>
#include <string>
#include <vector>

namespace keel::driver::test_util {

namespace fs = std::filesystem;

inline size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

// A VM source file as the program holds it (cuda_host_emitter_embed.cmake): the
// lines that include another shared file, which the program holds already, replaced.
inline std::string EmbeddedText(const std::string& source) {
  return std::regex_replace(source, std::regex("#include \"vm/cuda/(library_calls[a-z_]*\\.h|[a-z_]+\\.cuh)\""),
                            "// (held elsewhere in the program)");
}

// The text of function `name` in the generated program (from its signature to the next "\n}\n").
inline std::string FunctionBody(const std::string& text, const std::string& signature) {
  const size_t begin = text.find(signature);
  if (begin == std::string::npos) return {};
  const size_t end = text.find("\n}\n", begin);
  return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("keel_cuda_host_" + std::to_string(::getpid()) + "_" +
                                         std::to_string(counter_++));
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

// nvcc on the generated source; "" on success, else the reason (the compiler's output).
inline std::string CompileWithNvcc(const fs::path& source, const fs::path& binary) {
  const fs::path log = binary.string() + ".log";
  // The runtime kernels' flags of the VM build (vm/cuda/CMakeLists.txt): sm_90 code + compute_80 PTX.
  std::string cmd = std::string(KEEL_NVCC) +
                    " -std=c++17 -O1 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=compute_80 '" +
                    source.string() + "' -o '" + binary.string() +
                    "' -L'" + KEEL_CUDNN_LIBDIR + "' -L'" + KEEL_CUDA_STUBS + "' -lcublasLt -lcudnn -lcuda -ldl > '" +
                    log.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  if (rc == 0 && fs::exists(binary)) return {};
  std::ifstream in(log);
  return "nvcc failed (" + std::to_string(rc) + "): " + cmd + "\n" +
         std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline bool HaveNvcc() { return std::string(KEEL_NVCC).size() > 0 && fs::exists(KEEL_NVCC); }

// An 8-byte aligned copy, as ReadExecutable needs.
struct Image {
  explicit Image(const std::vector<uint8_t>& b) : words((b.size() + 7) / 8), size(b.size()) {
    if (!b.empty()) std::memcpy(words.data(), b.data(), b.size());
  }
  std::span<const uint8_t> span() const { return {reinterpret_cast<const uint8_t*>(words.data()), size}; }
  std::vector<uint64_t> words;
  size_t size;
};

}  // namespace keel::driver::test_util
