// tests/compiler/frontend/onnx_importer_test.cc — ONNX import of small models
// built with the protobuf API, bad inputs, and the model zoo (KEEL_SHARED_DIR).
#include "compiler/frontend/onnx_importer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"
#include "tests/compiler/frontend/onnx_test_util.h"

namespace keel::frontend {
namespace {

using namespace keel::testing_onnx;  // NOLINT

std::string TempDir(const std::string& name) {
  std::string d = ::testing::TempDir() + "/keel_frontend_" + name;
  std::filesystem::create_directories(d);
  return d;
}

std::map<std::string, int> Histogram(const ir::Graph& g) {
  std::map<std::string, int> h;
  for (const ir::Node* n : g.nodes()) h[n->op_type()]++;
  return h;
}

// Input -> Conv(W raw, B typed) -> Relu -> output.
onnx::ModelProto ConvReluModel() {
  auto m = NewModel(13);
  AddInput(m, "x", {1, 2, 4, 4});
  std::vector<float> w(3 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.01f;
  AddInitF32(m, "W", {3, 2, 3, 3}, w, /*raw=*/true);
  AddInitF32(m, "B", {3}, {1, 2, 3}, /*raw=*/false);
  auto* conv = AddNode(m, "Conv", {"x", "W", "B"}, {"c"}, "conv0");
  AttrInts(conv, "pads", {1, 1, 1, 1});
  AddNode(m, "Relu", {"c"}, {"y"}, "relu0");
  AddOutput(m, "y");
  return m;
}

TEST(OnnxImporterTest, ImportsConvRelu) {
  std::string path = WriteModel(ConvReluModel(), TempDir("convrelu"), "m.onnx");
  auto g = ImportOnnx(path, {});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ir::Graph& graph = **g;
  ASSERT_EQ(graph.inputs().size(), 1u);
  EXPECT_EQ(graph.inputs()[0]->type().ToString(), "f32[1,2,4,4]");
  auto nodes = graph.nodes();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0]->op_type(), "Conv");
  EXPECT_EQ(nodes[0]->name(), "conv0");
  EXPECT_EQ(*nodes[0]->attrs().GetInts("pads", {}), (std::vector<int64_t>{1, 1, 1, 1}));
  ASSERT_TRUE(nodes[0]->input(1)->is_constant());
  EXPECT_EQ(nodes[0]->input(1)->type().ToString(), "f32[3,2,3,3]");
  EXPECT_FLOAT_EQ(nodes[0]->input(1)->constant()->data<float>()[5], 0.05f);
  EXPECT_FLOAT_EQ(nodes[0]->input(2)->constant()->data<float>()[2], 3.0f);  // typed float_data
  ASSERT_EQ(graph.outputs().size(), 1u);
  EXPECT_EQ(graph.outputs()[0]->name(), "y");
  EXPECT_TRUE(graph.Verify(false).ok());
}

// Keel's internal attributes (keel.channels_last, ...) cannot come from a model.
TEST(OnnxImporterTest, ReservedAttributesAreRefused) {
  onnx::ModelProto m = ConvReluModel();
  for (auto& n : *m.mutable_graph()->mutable_node()) {
    if (n.op_type() == "Conv") AttrInt(&n, "keel.channels_last", 1);
  }
  auto g = ImportOnnx(WriteModel(m, TempDir("reserved"), "m.onnx"), {});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("'keel.channels_last' is reserved"), std::string::npos) << g.status().ToString();
}

TEST(OnnxImporterTest, ConstantsInitializerInputsAndIdentity) {
  auto m = NewModel(13);
  AddInput(m, "x", {2, 3});
  AddInput(m, "bias", {3});  // also an initializer: a constant
  AddInitF32(m, "bias", {3}, {1, 2, 3});
  auto* c = AddNode(m, "Constant", {}, {"shape"}, "const_shape");
  AttrInts(c, "value_ints", {3, 2});
  auto* cf = AddNode(m, "Constant", {}, {"two"}, "const_two");
  AttrFloat(cf, "value_float", 2.0f);
  AddNode(m, "Add", {"x", "bias"}, {"a"});
  AddNode(m, "Identity", {"a"}, {"a_id"});
  AddNode(m, "Mul", {"a_id", "two"}, {"b"});
  AddNode(m, "Reshape", {"b", "shape"}, {"y"});
  AddOutput(m, "y");
  std::string path = WriteModel(m, TempDir("consts"), "m.onnx");
  auto g = ImportOnnx(path, {});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ((*g)->inputs().size(), 1u);  // bias became a constant
  auto h = Histogram(**g);
  EXPECT_EQ(h.count("Identity"), 0u);  // aliased away
  EXPECT_EQ(h.count("Constant"), 0u);  // constants are values, not nodes
  EXPECT_EQ(h["Add"], 1);
  ir::Node* reshape = (*g)->nodes().back();
  ASSERT_EQ(reshape->op_type(), "Reshape");
  ASSERT_TRUE(reshape->input(1)->is_constant());
  EXPECT_EQ(reshape->input(1)->constant()->data<int64_t>()[0], 3);
  ImportOptions keep;
  keep.keep_identity = true;
  auto g2 = ImportOnnx(path, keep);
  ASSERT_TRUE(g2.ok());
  EXPECT_EQ(Histogram(**g2)["Identity"], 1);
}

TEST(OnnxImporterTest, ExternalData) {
  auto m = ConvReluModel();
  std::string dir = TempDir("external");
  // Move W to an external file at an offset.
  auto* w = m.mutable_graph()->mutable_initializer(0);
  std::string raw = w->raw_data();
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add_kv = [&](const std::string& k, const std::string& v) {
    auto* kv = w->add_external_data();
    kv->set_key(k);
    kv->set_value(v);
  };
  add_kv("location", "weights.bin");
  add_kv("offset", "16");
  add_kv("length", std::to_string(raw.size()));
  {
    std::ofstream f(dir + "/weights.bin", std::ios::binary);
    f << std::string(16, '\0') << raw;
  }
  std::string path = WriteModel(m, dir, "m.onnx");
  auto g = ImportOnnx(path, {});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_FLOAT_EQ((*g)->nodes()[0]->input(1)->constant()->data<float>()[5], 0.05f);

  // A missing external file is a clear error.
  std::filesystem::remove(dir + "/weights.bin");
  auto bad = ImportOnnx(path, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("weights.bin"), std::string::npos) << bad.status().message();
}

TEST(OnnxImporterTest, DynamicDimsNeedOverrides) {
  auto m = NewModel(13);
  AddInput(m, "x", {-1, 3});
  AddNode(m, "Relu", {"x"}, {"y"});
  AddOutput(m, "y");
  std::string path = WriteModel(m, TempDir("dynamic"), "m.onnx");
  auto bad = ImportOnnx(path, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("dimension 0 ('N') is dynamic"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("'x'"), std::string::npos);

  ImportOptions by_name;
  by_name.dim_params["N"] = 4;
  auto g1 = ImportOnnx(path, by_name);
  ASSERT_TRUE(g1.ok()) << g1.status().ToString();
  EXPECT_EQ((*g1)->inputs()[0]->type().ToString(), "f32[4,3]");

  ImportOptions by_shape;
  by_shape.input_shapes["x"] = {2, 3};
  auto g2 = ImportOnnx(path, by_shape);
  ASSERT_TRUE(g2.ok());
  EXPECT_EQ((*g2)->inputs()[0]->type().ToString(), "f32[2,3]");

  ImportOptions batch;
  batch.default_dynamic_dim = 1;
  auto g3 = ImportOnnx(path, batch);
  ASSERT_TRUE(g3.ok());
  EXPECT_EQ((*g3)->inputs()[0]->type().ToString(), "f32[1,3]");
}

// Frozen inputs become constants (what keelc --freeze-input and the conformance
// runner use for inputs that must be compile-time constants).
TEST(OnnxImporterTest, FrozenInputsBecomeConstants) {
  auto m = NewModel(13);
  AddInput(m, "x", {2, 3});
  AddInput(m, "shape", {2}, onnx::TensorProto::INT64);
  AddNode(m, "Reshape", {"x", "shape"}, {"y"});
  AddOutput(m, "y");
  std::string path = WriteModel(m, TempDir("frozen"), "m.onnx");

  ImportOptions frozen;
  const int64_t shape[2] = {3, 2};
  frozen.frozen_inputs["shape"] = std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(shape),
                                                       reinterpret_cast<const uint8_t*>(shape) + sizeof(shape));
  auto g = ImportOnnx(path, frozen);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ((*g)->inputs().size(), 1u);
  EXPECT_EQ((*g)->inputs()[0]->name(), "x");
  const ir::Node* reshape = (*g)->nodes().front();
  ASSERT_NE(reshape->input(1)->constant(), nullptr);
  EXPECT_EQ(reshape->input(1)->constant()->data<int64_t>()[0], 3);

  ImportOptions wrong_size;
  wrong_size.frozen_inputs["shape"] = {1, 2, 3};
  auto bad = ImportOnnx(path, wrong_size);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("graph input 'shape': the frozen value has 3 bytes"), std::string::npos)
      << bad.status().message();

  ImportOptions unknown;
  unknown.frozen_inputs["nope"] = {};
  bad = ImportOnnx(path, unknown);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("frozen input 'nope' is not a graph input"), std::string::npos)
      << bad.status().message();
}

// ---- bad inputs: each error names the problem ---------------------------------

TEST(OnnxImporterTest, TruncatedFile) {
  auto m = ConvReluModel();
  std::string bytes = m.SerializeAsString();
  std::string dir = TempDir("truncated");
  std::string path = dir + "/m.onnx";
  {
    std::ofstream f(path, std::ios::binary);
    f << bytes.substr(0, bytes.size() / 2 + 3);
  }
  auto g = ImportOnnx(path, {});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find(path), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("truncated"), std::string::npos) << g.status().message();
}

TEST(OnnxImporterTest, MissingFile) {
  auto g = ImportOnnx("/nonexistent/model.onnx", {});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kNotFound);
}

TEST(OnnxImporterTest, UnknownOp) {
  auto m = NewModel(13);
  AddInput(m, "x", {2});
  AddNode(m, "FancyOp", {"x"}, {"y"}, "my_fancy_node");
  AddOutput(m, "y");
  std::string path = WriteModel(m, TempDir("unknown"), "m.onnx");
  auto g = ImportOnnx(path, {});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
  const std::string& msg = g.status().message();
  EXPECT_NE(msg.find("FancyOp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("my_fancy_node"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
}

TEST(OnnxImporterTest, UnsupportedOpsets) {
  for (int64_t opset : {6, 29}) {
    auto m = ConvReluModel();
    m.mutable_opset_import(0)->set_version(opset);
    std::string file = "m";
    file += std::to_string(opset);
    std::string path = WriteModel(m, TempDir("opset"), file + ".onnx");
    auto g = ImportOnnx(path, {});
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
    std::string needle = "opset ";
    needle += std::to_string(opset);
    EXPECT_NE(g.status().message().find(needle), std::string::npos)
        << g.status().message();
    EXPECT_NE(g.status().message().find("7-28"), std::string::npos) << g.status().message();
  }
}

// Every opset Keel implements imports a model of long-lived ops.
TEST(OnnxImporterTest, OpVersionsFollowTheOpset) {
  for (int64_t opset : {7, 11, 13, 17, 18, 23, 28}) {
    auto m = ConvReluModel();
    m.mutable_opset_import(0)->set_version(opset);
    std::string path = WriteModel(m, TempDir("versions"), "m" + std::to_string(opset) + ".onnx");
    auto g = ImportOnnx(path, {});
    EXPECT_TRUE(g.ok()) << opset << ": " << g.status().ToString();
  }
}

// Semantic checks of a node happen once its inputs are typed (canonicalization,
// type rules): import the model, then run them on its nodes.
Status CanonicalizeAndInfer(ir::Graph& g) {
  for (ir::Node* n : g.nodes()) {
    KEEL_RETURN_IF_ERROR(ops::CanonicalizeNode(*n));
    KEEL_ASSIGN_OR_RETURN(auto types, ops::InferNodeTypes(*n));
    for (size_t i = 0; i < types.size(); ++i) n->output(i)->set_type(types[i]);
  }
  return Status::Ok();
}

TEST(OnnxImporterTest, MissingInitializer) {
  auto m = ConvReluModel();
  m.mutable_graph()->mutable_initializer()->RemoveLast();  // drop B
  std::string path = WriteModel(m, TempDir("missing_init"), "m.onnx");
  auto g = ImportOnnx(path, {});
  ASSERT_FALSE(g.ok());
  const std::string& msg = g.status().message();
  EXPECT_NE(msg.find("'B'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("conv0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not defined"), std::string::npos) << msg;
}

TEST(OnnxImporterTest, InvalidAttributeValue) {
  auto m = ConvReluModel();
  AttrString(m.mutable_graph()->mutable_node(0), "auto_pad", "SAME_SIDEWAYS");
  std::string path = WriteModel(m, TempDir("autopad"), "m.onnx");
  auto g = ImportOnnx(path, {});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  Status s = CanonicalizeAndInfer(**g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("SAME_SIDEWAYS"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("conv0"), std::string::npos) << s.message();
}

TEST(OnnxImporterTest, UnsupportedDtype) {
  auto m = NewModel(13);
  AddInput(m, "x", {2}, onnx::TensorProto::STRING);
  AddNode(m, "Identity", {"x"}, {"y"});
  AddOutput(m, "y");
  std::string path = WriteModel(m, TempDir("dtype"), "m.onnx");
  auto g = ImportOnnx(path, {});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(g.status().message().find("STRING"), std::string::npos) << g.status().message();
}

TEST(OnnxImporterTest, WrongInitializerSize) {
  auto m = ConvReluModel();
  auto* b = m.mutable_graph()->mutable_initializer(1);
  b->add_float_data(4.0f);  // 4 values for shape [3]
  std::string path = WriteModel(m, TempDir("initsize"), "m.onnx");
  auto g = ImportOnnx(path, {});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("initializer 'B'"), std::string::npos) << g.status().message();
}

TEST(OnnxImporterTest, UsingUnsupportedSecondOutput) {
  // BatchNormalization-9's saved mean is a training output Keel does not compute.
  auto m = NewModel(13);
  AddInput(m, "x", {1, 2, 4, 4});
  for (const char* p : {"scale", "b", "mean", "var"}) AddInput(m, p, {2});
  AddNode(m, "BatchNormalization", {"x", "scale", "b", "mean", "var"}, {"y", "rm", "rv", "idx"}, "pool");
  AddOutput(m, "idx", onnx::TensorProto::FLOAT);
  std::string path = WriteModel(m, TempDir("indices"), "m.onnx");
  auto g = ImportOnnx(path, {});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  Status s = CanonicalizeAndInfer(**g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("pool"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'idx'"), std::string::npos) << s.message();
}

// ---- the model zoo -------------------------------------------------------------

struct ZooCase {
  const char* name;
  std::vector<const char*> ops;  // from shared/models/README.md
};
void PrintTo(const ZooCase& c, std::ostream* os) { *os << c.name; }  // readable test names

class ModelZooImportTest : public ::testing::TestWithParam<ZooCase> {};

TEST_P(ModelZooImportTest, ImportsWithExpectedOps) {
  std::string path = std::string(KEEL_SHARED_DIR) + "/models/" + GetParam().name + ".onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "model zoo not found at " << path;
  auto g = ImportOnnx(path, {});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto h = Histogram(**g);
  for (const char* op : GetParam().ops) EXPECT_GT(h[op], 0) << GetParam().name << " lacks " << op;
  EXPECT_EQ(h.count("Identity"), 0u);
  EXPECT_EQ(h.count("Constant"), 0u);
  EXPECT_TRUE((*g)->Verify(false).ok()) << (*g)->Verify(false).ToString();
  EXPECT_EQ((*g)->inputs().size(), 1u);
  EXPECT_EQ((*g)->outputs().size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, ModelZooImportTest,
    ::testing::Values(ZooCase{"mobilenet_v2", {"Conv", "Clip", "Add", "GlobalAveragePool", "Flatten", "Gemm"}},
                      ZooCase{"resnet18", {"Conv", "Relu", "MaxPool", "Add", "GlobalAveragePool", "Flatten", "Gemm"}},
                      ZooCase{"squeezenet1_1", {"Conv", "Relu", "MaxPool", "Concat", "GlobalAveragePool", "Flatten"}},
                      ZooCase{"tiny_bert", {"MatMul", "Add", "Mul", "Div", "Erf", "Softmax", "LayerNormalization",
                                            "Transpose", "Reshape"}}),
    [](const ::testing::TestParamInfo<ZooCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace keel::frontend

namespace keel::frontend {
namespace {

using namespace keel::testing_onnx;  // NOLINT

// Opset 11 forms: Squeeze axes as an attribute, Softmax with its legacy default
// axis (1), Clip min/max as inputs, Cast to a named dtype.
TEST(OnnxImporterTest, Opset11Forms) {
  auto m = NewModel(11);
  AddInput(m, "x", {2, 3, 1});
  auto* sq = AddNode(m, "Squeeze", {"x"}, {"s"}, "squeeze");
  AttrInts(sq, "axes", {2});
  AddNode(m, "Softmax", {"s"}, {"p"}, "softmax");
  AddInitF32(m, "lo", {}, {0.2f});
  AddInitF32(m, "hi", {}, {0.5f});
  AddNode(m, "Clip", {"p", "lo", "hi"}, {"c"}, "clip");
  auto* cast = AddNode(m, "Cast", {"c"}, {"y"}, "cast");
  AttrInt(cast, "to", onnx::TensorProto::DOUBLE);
  AddOutput(m, "y", onnx::TensorProto::DOUBLE);
  std::string path = WriteModel(m, ::testing::TempDir(), "keel_opset11.onnx");
  auto g = ImportOnnx(path, {});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ir::Node* softmax = (*g)->nodes()[1];
  ASSERT_EQ(softmax->op_type(), "Softmax");
  EXPECT_EQ(*softmax->attrs().GetInt("keel.legacy_flatten", 0), 1);
  ir::Node* c = (*g)->nodes()[3];
  ASSERT_EQ(c->op_type(), "Cast");
  EXPECT_EQ(*c->attrs().GetString("to", ""), "f64");
}

}  // namespace
}  // namespace keel::frontend

namespace keel::frontend {
namespace {

using namespace keel::testing_onnx;  // NOLINT
onnx::ModelProto NewModelForFuzz();

// Corrupted bytes anywhere in a model must give an error or a graph, never a crash.
onnx::ModelProto NewModelForFuzz() {
  auto m = NewModel(13);
  AddInput(m, "x", {1, 2, 4, 4});
  AddInitF32(m, "W", {3, 2, 3, 3}, std::vector<float>(54, 0.5f), true);
  AddInitF32(m, "B", {3}, {1, 2, 3}, false);
  AddInitI64(m, "shape", {2}, {1, -1});
  auto* conv = AddNode(m, "Conv", {"x", "W", "B"}, {"c"}, "conv0");
  AttrInts(conv, "pads", {1, 1, 1, 1});
  AddNode(m, "Reshape", {"c", "shape"}, {"y"}, "reshape");
  AddOutput(m, "y");
  return m;
}

TEST(OnnxImporterTest, CorruptBytesNeverCrash) {
  auto m = NewModelForFuzz();
  std::string bytes = m.SerializeAsString();
  uint32_t state = 12345;
  int errors = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string b = bytes;
    for (int k = 0; k < 3; ++k) {
      state = state * 1664525u + 1013904223u;
      b[state % b.size()] = static_cast<char>(state >> 24);
    }
    auto g = ImportOnnxBytes(b, ::testing::TempDir(), "fuzz.onnx", {});
    if (!g.ok()) ++errors;
  }
  EXPECT_GT(errors, 0);  // at least some corruptions are detected
}

}  // namespace
}  // namespace keel::frontend
