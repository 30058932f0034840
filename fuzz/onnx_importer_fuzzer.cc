// fuzz/onnx_importer_fuzzer.cc — libFuzzer target: a serialized ONNX ModelProto
// through the importer and the whole graph pipeline (shape inference, constant
// folding, fusion, verify), as keelc and keel-plan run them. Any error is fine;
// a crash, a hang, a sanitizer report or an escaping exception is a bug.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "compiler/frontend/onnx_importer.h"
#include "compiler/passes/pass_manager.h"

namespace {

// External data resolves inside this folder, which holds nothing: a fuzzed
// location reads no file of the machine (and the importer must refuse escapes).
const std::string& ModelDir() {
  static const std::string dir = [] {
    std::string d = (std::filesystem::temp_directory_path() / "keel_fuzz_onnx_model").string();
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  keel::frontend::ImportOptions options;
  options.default_dynamic_dim = 2;  // dynamic dims get a small value, as with --batch 2
  try {
    auto graph = keel::frontend::ImportOnnxBytes(bytes, ModelDir(), "fuzz.onnx", options);
    if (!graph.ok()) return 0;
    keel::passes::PipelineOptions pipeline;
    (void)keel::passes::RunDefaultPipeline(**graph, pipeline);
  } catch (...) {
    // Errors are values in Keel: an exception here is what keelc's last-resort
    // handler would report as INTERNAL. Make it a fuzzer finding.
    std::abort();
  }
  return 0;
}
