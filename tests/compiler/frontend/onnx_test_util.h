// tests/compiler/frontend/onnx_test_util.h — helpers that build small ONNX models
// with the protobuf API (no Python) and write them to a temp folder.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace keel::testing_onnx {

inline onnx::ModelProto NewModel(int64_t opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(opset);
  m.mutable_graph()->set_name("test");
  return m;
}

// dims: -1 means a symbolic dim named "N".
inline void AddValueInfo(onnx::ValueInfoProto* vi, const std::string& name, int32_t elem,
                         const std::vector<int64_t>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d < 0) {
      dim->set_dim_param("N");
    } else {
      dim->set_dim_value(d);
    }
  }
}

inline void AddInput(onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& dims,
                     int32_t elem = onnx::TensorProto::FLOAT) {
  AddValueInfo(m.mutable_graph()->add_input(), name, elem, dims);
}

inline void AddOutput(onnx::ModelProto& m, const std::string& name, int32_t elem = onnx::TensorProto::FLOAT) {
  auto* vi = m.mutable_graph()->add_output();
  vi->set_name(name);
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
}

inline onnx::TensorProto* AddInitF32(onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& dims,
                                     const std::vector<float>& values, bool raw = true) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  if (raw) {
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4));
  } else {
    for (float v : values) t->add_float_data(v);
  }
  return t;
}

inline onnx::TensorProto* AddInitI64(onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& dims,
                                     const std::vector<int64_t>& values) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
  return t;
}

inline onnx::NodeProto* AddNode(onnx::ModelProto& m, const std::string& op, const std::vector<std::string>& inputs,
                                const std::vector<std::string>& outputs, const std::string& name = "") {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? op + "_" + outputs.at(0) : name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

inline void AttrInts(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void AttrInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void AttrFloat(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void AttrString(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

inline std::string WriteModel(const onnx::ModelProto& m, const std::string& dir, const std::string& file) {
  std::string path = dir + "/" + file;
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
  return path;
}

}  // namespace keel::testing_onnx
