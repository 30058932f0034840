// End-to-end tests of in-place concats (compiler/lower/concat_in_place.h): models
// compiled for the CPU, run by the VM and compared with the reference evaluator
// (ops::EvaluateGraph on the imported graph). A wrong part offset, a producer
// writing past its part or a part's bytes reused too early all show up as large
// errors, so the tolerance only has to cover the kernels' rounding.
//   - squeezenet1_1: every Fire module's channel concat is in place;
//   - a small model with the awkward cases: a part read again after the concat
//     (by a fused Add), a flattened part returned as a graph output (a view at an
//     offset), a concat of an in-place concat (nested: copied), a concat of one
//     value twice (copied), and 9x9 images (GEMM and Winograd edge tiles next to
//     the neighbouring part).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/frontend/onnx_importer.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"
#include "keel/vm.h"
#include "tests/compiler/driver/zoo_test_util.h"
#include "tests/compiler/frontend/onnx_test_util.h"

namespace keel::driver {
namespace {

namespace fs = std::filesystem;
using namespace zoo_test;      // NOLINT: the zoo tests' shared helpers
using namespace testing_onnx;  // NOLINT: the ONNX builders

// Compiles `onnx` for the CPU, runs it on `inputs` (f32, one per graph input),
// and checks every output against the reference evaluator. Returns the summary.
CompileSummary CompileRunAndCompare(const std::string& onnx, const std::vector<std::vector<float>>& inputs,
                                    const fs::path& dir, double tolerance) {
  CompileOptions options;
  options.model_path = onnx;
  options.output_path = (dir / "m.keel").string();
  auto summary = CompileModel(options);
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  if (!summary.ok()) return {};

  auto graph = frontend::ImportOnnx(onnx, frontend::ImportOptions{});
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  if (!graph.ok()) return *summary;
  std::vector<ir::TensorDataPtr> ref_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ref_inputs.push_back(ops::MakeTensorF32((*graph)->inputs()[i]->type().shape, inputs[i]));
  }
  auto expected = ops::EvaluateGraph(**graph, ref_inputs);
  EXPECT_TRUE(expected.ok()) << expected.status().ToString();
  if (!expected.ok()) return *summary;

  auto exe = Executable::LoadFile(options.output_path);
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
  if (!exe.ok()) return *summary;
  auto vm = VirtualMachine::Create(*exe);
  EXPECT_TRUE(vm.ok()) << vm.status().ToString();
  if (!vm.ok()) return *summary;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& info = (*exe)->input(i);
    Status st = (*vm)->SetInput(i, inputs[i].data(), inputs[i].size() * sizeof(float), info.shape, info.dtype);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  Status st = (*vm)->Run();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(expected->size(), (*exe)->num_outputs());
  for (size_t o = 0; o < expected->size() && o < (*exe)->num_outputs(); ++o) {
    std::vector<float> out((*exe)->output(o).byte_size / sizeof(float));
    st = (*vm)->CopyOutputToHost(o, out.data(), out.size() * sizeof(float));
    EXPECT_TRUE(st.ok()) << st.ToString();
    const ir::TensorData& ref = *(*expected)[o];
    EXPECT_EQ(static_cast<size_t>(ref.type.NumElements()), out.size()) << "output " << o;
    if (static_cast<size_t>(ref.type.NumElements()) != out.size()) continue;
    const std::vector<float> ref_values(ref.data<float>(), ref.data<float>() + out.size());
    const double err = RelativeL2(out, ref_values);
    EXPECT_LE(err, tolerance) << "output " << o << ": relative L2 error " << err;
  }
  return *summary;
}

// Deterministic values in [-1, 1).
std::vector<float> Pattern(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = static_cast<float>(seed >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return v;
}

TEST(ConcatInPlaceE2E, SqueezenetFireConcatsMatchTheReferenceEvaluator) {
  const fs::path model = ModelsDir() / "squeezenet1_1.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << "shared models not found at " << ModelsDir();
  TempDir dir;
  const std::vector<float> input = ReadFloats(ModelsDir() / "squeezenet1_1.input.bin");
  const CompileSummary s = CompileRunAndCompare(model.string(), {input}, dir.path(), 1e-4);
  // Every concat (batch-1 channel concats of two expand convolutions) became a
  // view step, besides the Flatten.
  ASSERT_EQ(s.imported_ops.count("Concat"), 1u);
  EXPECT_EQ(s.num_views, static_cast<size_t>(s.imported_ops.at("Concat")) + 1);
}

TEST(ConcatInPlaceE2E, AwkwardPartsMatchTheReferenceEvaluator) {
  onnx::ModelProto m = NewModel(13);
  AddInput(m, "x", {1, 8, 9, 9});
  AddInitF32(m, "wa", {16, 8, 1, 1}, Pattern(16 * 8, 1));
  AddInitF32(m, "ba", {16}, Pattern(16, 2));
  AddInitF32(m, "wb", {16, 8, 3, 3}, Pattern(16 * 8 * 9, 3));
  AddInitF32(m, "bb", {16}, Pattern(16, 4));
  AddInitF32(m, "wd", {16, 32, 1, 1}, Pattern(16 * 32, 5));
  // a, b: 16 x 9 x 9 floats = 5184 bytes, a multiple of 64: both parts of c.
  AddNode(m, "Conv", {"x", "wa", "ba"}, {"a0"});
  AddNode(m, "Relu", {"a0"}, {"a"});
  AttrInts(AddNode(m, "Conv", {"x", "wb", "bb"}, {"b0"}), "pads", {1, 1, 1, 1});
  AddNode(m, "Relu", {"b0"}, {"b"});
  AttrInt(AddNode(m, "Concat", {"a", "b"}, {"c"}), "axis", 1);
  AddNode(m, "Conv", {"c", "wd"}, {"d"});
  AddNode(m, "Add", {"b", "d"}, {"e"});                             // b read after the concat
  AttrInt(AddNode(m, "Concat", {"c", "e"}, {"f"}), "axis", 1);      // nested: copied
  AttrInt(AddNode(m, "Concat", {"d", "d"}, {"g"}), "axis", 1);      // one value twice: copied
  AttrInt(AddNode(m, "Flatten", {"b"}, {"h"}), "axis", 1);          // a view of a part, returned
  for (const char* out : {"f", "g", "h"}) AddOutput(m, out);
  TempDir dir;
  const std::string path = WriteModel(m, dir.path().string(), "awkward.onnx");
  const CompileSummary s = CompileRunAndCompare(path, {Pattern(8 * 81, 6)}, dir.path(), 1e-5);
  EXPECT_EQ(s.num_views, 2u);  // c and the Flatten
}

}  // namespace
}  // namespace keel::driver
