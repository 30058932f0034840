// tests/hostile/make_reproducers.cc — writes one ONNX model per reproducer class of
// issue 13 ("Hostile inputs") into a folder, plus MANIFEST: one line per model,
// "<file>\t<fragment the one-line error must contain>".
//
//   keel_make_hostile_models OUT_DIR
//
// run_reproducers.sh then runs keelc and keel-plan on each model and checks: exit
// 1, exactly one line on stderr, the fragment, no INTERNAL error, bounded time.
// Built with the protobuf API (no Python), so the test runs wherever keelc builds.
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/compiler/frontend/onnx_test_util.h"

namespace {

using namespace keel::testing_onnx;  // NOLINT
namespace fs = std::filesystem;

constexpr int32_t kF32 = onnx::TensorProto::FLOAT;
constexpr int32_t kI64 = onnx::TensorProto::INT64;

struct Writer {
  std::string dir;
  std::ofstream manifest;
  int count = 0;
  void Add(const std::string& name, const onnx::ModelProto& m, const std::string& fragment) {
    WriteModel(m, dir, name + ".onnx");
    manifest << name << ".onnx\t" << fragment << "\n";
    ++count;
  }
};

// x[shape] -> op -> y.
onnx::ModelProto Unary(const std::string& op, const std::vector<int64_t>& shape, onnx::NodeProto** node = nullptr) {
  auto m = NewModel(13);
  AddInput(m, "x", shape);
  auto* n = AddNode(m, op, {"x"}, {"y"}, "the_" + op);
  if (node) *node = n;
  AddOutput(m, "y");
  return m;
}

// Gather(data f32[1,3] or [dim0,3], constant indices) on axis 0.
onnx::ModelProto GatherConst(int64_t dim0, int64_t index) {
  auto m = NewModel(13);
  AddInput(m, "data", {dim0, 3});
  AddInitI64(m, "idx", {1}, {index});
  AddNode(m, "Gather", {"data", "idx"}, {"y"}, "the_gather");
  AddOutput(m, "y");
  return m;
}

onnx::ModelProto ExternalWeights(const std::string& location) {
  auto m = NewModel(13);
  AddInput(m, "x", {4});
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("W");
  w->set_data_type(kF32);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  AddNode(m, "Add", {"x", "W"}, {"y"});
  AddOutput(m, "y");
  return m;
}

void WriteAll(Writer& w) {
  // 1. Absurd window sizes: refused before anything is sized from them.
  {
    auto m = NewModel(13);
    AddInput(m, "x", {1, 1, int64_t{1} << 31, 1});
    AddInitF32(m, "W", {1, 1, 1, 1}, {1.0f});
    AddNode(m, "Conv", {"x", "W"}, {"y"}, "the_conv");
    AddOutput(m, "y");
    w.Add("conv_height_2p31", m, "the_conv");
  }
  {
    auto m = NewModel(13);
    AddInput(m, "x", {1, 1, 4, 4});
    AddInitF32(m, "W", {1, 1, 1, 1}, {1.0f});
    AttrInts(AddNode(m, "Conv", {"x", "W"}, {"y"}, "the_conv"), "pads", {int64_t{1} << 40, 0, 0, 0});
    AddOutput(m, "y");
    w.Add("conv_pads_2p40", m, "the_conv");
  }
  for (const std::string op : {"MaxPool", "AveragePool"}) {
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{}, std::vector<int64_t>{5}}) {
      onnx::NodeProto* n = nullptr;
      auto m = Unary(op, shape, &n);
      AttrInts(n, "kernel_shape", {2});
      w.Add(op + "_rank" + std::to_string(shape.size()), m, "the_" + op);
    }
  }
  // 6. Bad models that used to compile.
  {
    auto m = Unary("Relu", {int64_t{1} << 32, int64_t{1} << 32});
    w.Add("input_2p32_squared", m, "graph input 'x'");
  }
  w.Add("gather_index_8", GatherConst(1, 8), "the_gather");
  w.Add("gather_index_2p40", GatherConst(1, int64_t{1} << 40), "the_gather");
  w.Add("gather_index_min_int64", GatherConst(1, INT64_MIN), "the_gather");
  w.Add("gather_index_max_int64", GatherConst(4, INT64_MAX), "9223372036854775807");
  w.Add("gather_index_minus_9", GatherConst(4, -9), "-9");
  {
    auto m = NewModel(13);
    AddInput(m, "x", {4});
    AddNode(m, "Relu", {"x"}, {"y"}, "first");
    AddNode(m, "Neg", {"x"}, {"y"}, "second");
    AddOutput(m, "y");
    w.Add("two_nodes_one_output", m, "already defined");
  }
  {
    auto m = Unary("Relu", {4});
    AddInput(m, "x", {4});
    w.Add("duplicate_input", m, "declared twice");
  }
  {
    auto m = NewModel(13);
    AddInput(m, "x", {2});
    AddInput(m, "W", {3});
    AddInitF32(m, "W", {2}, {1, 2});
    AddNode(m, "Add", {"x", "W"}, {"y"});
    AddOutput(m, "y");
    w.Add("input_vs_initializer_shape", m, "graph input 'W' is declared with shape [3]");
  }
  // 7. Misleading messages.
  {
    auto m = NewModel(13);
    AddInput(m, "x", {4});
    AddNode(m, "Add", {"x", "b"}, {"a"}, "node_a");
    AddNode(m, "Relu", {"a"}, {"b"}, "node_b");
    AddOutput(m, "b");
    w.Add("two_node_cycle", m, "input 'b' is defined later, by node 'node_b': cycle 'node_a' -> 'node_b' -> 'node_a'");
  }
  {
    auto m = Unary("Relu", {3});
    m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)
        ->set_dim_value(-7);
    w.Add("dim_minus_7", m, "graph input 'x': dimension 0 is -7");
  }
  {
    auto m = NewModel(13);
    AddInput(m, "x", {4});
    AddNode(m, "Relu", {"a"}, {"y"}, "late_consumer");
    AddNode(m, "Neg", {"x"}, {"a"}, "early_producer");
    AddOutput(m, "y");
    w.Add("nodes_out_of_order", m, "input 'a' is defined later, by node 'early_producer' (ONNX nodes must be in");
  }
  {
    auto m = NewModel(13);
    AddInput(m, "x", {4});
    AddNode(m, "Relu", {"c"}, {"a"}, "n1");
    AddNode(m, "Relu", {"a"}, {"b"}, "n2");
    AddNode(m, "Add", {"b", "x"}, {"c"}, "n3");
    AddNode(m, "Relu", {"x"}, {"y"}, "n4");
    AddOutput(m, "y");
    w.Add("three_node_cycle", m, "cycle 'n1' -> 'n2' -> 'n3' -> 'n1'");
  }
  {
    auto m = NewModel(13);
    AddInput(m, "x", {2, 2});
    AddInitI64(m, "W", {2, 2}, {1, 2, 3, 4});  // the model was edited: W became int64
    AddNode(m, "MatMul", {"x", "W"}, {"y"}, "the_matmul");
    AddOutput(m, "y");
    w.Add("initializer_dtype_changed", m, "input dtypes differ: 'x' is f32[2,2], 'W' is i64[2,2]");
  }
  w.Add("input_dim_2p62", Unary("Relu", {int64_t{1} << 62}), "graph input 'x'");
  {
    auto m = NewModel(13);
    AddInput(m, "x", {4});
    AddNode(m, "Dropout", {"x"}, {"d"}, "the_dropout");
    AddNode(m, "Relu", {"d"}, {"y"});
    AddOutput(m, "y");
    w.Add("dropout_in_graph", m, "OK");  // Dropout is an identity at inference: compiles
  }
  // Found by fuzzing (fuzz/onnx_importer_fuzzer): an op whose canonical form reads
  // input 0, without input 0.
  {
    auto m = NewModel(13);
    AddInput(m, "x", {4});
    AddNode(m, "Flatten", {}, {"y"}, "no_input");
    AddOutput(m, "y");
    w.Add("flatten_without_input", m, "Flatten 'no_input': input 0 is missing");
  }
  // Found by fuzzing: an initializer declaring 2^39 elements with no data (the
  // importer sized a buffer from the dims before counting the values).
  {
    auto m = NewModel(13);
    AddInput(m, "x", {4});
    AddInitF32(m, "W", {int64_t{1} << 39}, {}, /*raw=*/false);
    AddNode(m, "Add", {"x", "W"}, {"y"});
    AddOutput(m, "y");
    w.Add("initializer_dims_without_data", m, "initializer 'W': holds 0 elements");
  }
  // 3-4. External data (the FIFO and the outside file are made by the script).
  w.Add("external_fifo", ExternalWeights("fifo.bin"), "is a FIFO");
  w.Add("external_etc_passwd", ExternalWeights("/etc/passwd"), "absolute path");
  w.Add("external_dotdot", ExternalWeights("../../../../../../../../etc/passwd"), "outside the model's folder");
  w.Add("external_symlink", ExternalWeights("link.bin"), "outside the model's folder");
  {
    auto m = NewModel(13);
    AddInput(m, "x", {4});
    auto* d = AddNode(m, "Dropout", {"x"}, {"d", "mask"}, "the_dropout");
    (void)d;
    AddNode(m, "Relu", {"d"}, {"y"});
    AddOutput(m, "y");
    AddOutput(m, "mask", onnx::TensorProto::BOOL);
    w.Add("dropout_mask_output", m, "OK");  // inference: the mask is a constant all-true tensor
  }
  // A truncated protobuf.
  {
    std::string bytes;
    Unary("Relu", {4}).SerializeToString(&bytes);
    std::ofstream(w.dir + "/truncated.onnx", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    w.manifest << "truncated.onnx\tcannot parse\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: keel_make_hostile_models OUT_DIR\n");
    return 2;
  }
  Writer w;
  w.dir = argv[1];
  fs::create_directories(w.dir);
  w.manifest.open(w.dir + "/MANIFEST");
  WriteAll(w);
  std::printf("wrote %d models to %s\n", w.count + 1, w.dir.c_str());
  return w.manifest ? 0 : 1;
}

