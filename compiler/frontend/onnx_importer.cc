// compiler/frontend/onnx_importer.cc — ONNX ModelProto → ir::Graph (see onnx_importer.h).
//
// One pass over the ONNX graph in its (required) topological order, with a
// name → Value map. Tensor decoding (raw/typed/external) lives in TensorFromProto.
#include "compiler/frontend/onnx_importer.h"

#include "common/regular_file.h"
#include "compiler/frontend/external_data.h"

#include <onnx/onnx_pb.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <unordered_map>

#include "compiler/ops/op_util.h"
#include "compiler/ops/registry.h"

namespace keel::frontend {
namespace {

using ir::DType;
using ir::TensorData;
using ir::TensorDataPtr;
using ir::TensorType;

using ops::DTypeFromOnnx;

// Shared state of one import.
class Importer {
 public:
  Importer(std::string model_dir, std::string model_name, const ImportOptions& options)
      : model_dir_(std::move(model_dir)), model_name_(std::move(model_name)), options_(options) {}

  Result<std::unique_ptr<ir::Graph>> Run(const onnx::ModelProto& model);

 private:
  Status Fail(Status s) const { return s.WithContext("model '" + model_name_ + "'"); }
  Result<TensorDataPtr> TensorFromProto(const onnx::TensorProto& t, const std::string& what);
  Result<std::vector<uint8_t>> ReadExternal(const onnx::TensorProto& t, const std::string& what, size_t expected);
  Result<ir::AttrValue> ConvertAttribute(const onnx::AttributeProto& a, const std::string& where);
  Status ImportNode(const onnx::NodeProto& n, size_t index);
  Result<std::unique_ptr<ir::Graph>> ImportSubgraph(const onnx::GraphProto& g, const std::string& where,
                                                    std::vector<ir::Value*>& captured);
  Status ImportSubgraphBody(const onnx::GraphProto& g, const std::string& where);
  ir::Value* Capture(const std::string& name);
  Status ImportConstant(const onnx::NodeProto& n, const ir::Attributes& attrs, const std::string& where);
  Status ImportInput(const onnx::ValueInfoProto& vi);
  Status CheckInitializerAgainstInput(const onnx::ValueInfoProto& vi, const TensorData& init);
  Result<ir::Value*> Lookup(const std::string& name, const std::string& where, int consumer = -1);
  std::string LaterDefinition(const std::string& name, int consumer) const;
  std::string NodeLabel(int index) const;

  std::string model_dir_;
  std::string model_name_;
  const ImportOptions& options_;
  int64_t opset_ = 0;
  std::unique_ptr<ir::Graph> graph_;
  std::unordered_map<std::string, ir::Value*> values_;
  // Value name → what defined it (a second definition is an error).
  std::unordered_map<std::string, std::string> defined_;
  // For messages only: the graph being imported and, per output name, the first
  // node that writes it (to tell "defined later: cycle" from "not defined").
  const onnx::GraphProto* onnx_graph_ = nullptr;
  std::unordered_map<std::string, int> producer_;

  // Subgraph attributes (If's branches, Loop's and Scan's body) are imported
  // into graphs of their own: the enclosing scopes wait here (innermost last)
  // while the members above describe the subgraph. A name a subgraph reads from
  // an enclosing scope becomes a trailing input of every graph in between
  // (captured_: the values of the enclosing scope those inputs stand for).
  struct Scope {
    std::unique_ptr<ir::Graph> graph;
    std::unordered_map<std::string, ir::Value*> values;
    std::unordered_map<std::string, std::string> defined;
    const onnx::GraphProto* onnx_graph = nullptr;
    std::unordered_map<std::string, int> producer;
    std::vector<ir::Value*> captured;
  };
  std::vector<Scope> outer_;
  std::vector<ir::Value*> captured_;
  static constexpr size_t kMaxSubgraphDepth = 32;
};

Result<std::vector<uint8_t>> Importer::ReadExternal(const onnx::TensorProto& t, const std::string& what,
                                                     size_t expected) {
  ExternalDataRef ref;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") ref.location = kv.value();
    try {
      if (kv.key() == "offset") ref.offset = std::stoll(kv.value());
      if (kv.key() == "length") ref.length = std::stoll(kv.value());
    } catch (...) {  // std::stoll throws on malformed numbers; keep errors as values
      return InvalidArgument(what + ": malformed external_data " + kv.key() + "='" + kv.value() + "'");
    }
  }
  return ReadExternalData(model_dir_, ref, what, expected);
}

Result<TensorDataPtr> Importer::TensorFromProto(const onnx::TensorProto& t, const std::string& what) {
  auto dtype = DTypeFromOnnx(t.data_type());
  if (!dtype.ok()) return Unsupported(what + ": " + dtype.status().message());
  auto out = std::make_shared<TensorData>();
  out->type.dtype = *dtype;
  // Element counts are checked against a bound before anything is allocated, so a
  // corrupt header cannot ask for an absurd (or overflowing) buffer.
  constexpr int64_t kMaxElements = int64_t{1} << 40;
  int64_t count = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) return InvalidArgument(what + ": negative dimension");
    if (d != 0 && count > kMaxElements / d) return InvalidArgument(what + ": too many elements (corrupt dims?)");
    count *= d;
    out->type.shape.push_back(d);
  }
  const int64_t n = out->type.NumElements();
  const size_t expected = static_cast<size_t>(out->type.ByteSize());
  auto count_error = [&](int64_t got) {
    return InvalidArgument(what + ": holds " + std::to_string(got) + " elements, its shape " +
                           out->type.ToString() + " needs " + std::to_string(n));
  };
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    KEEL_ASSIGN_OR_RETURN(out->bytes, ReadExternal(t, what, expected));
  } else if (t.has_raw_data()) {
    if (t.raw_data().size() != expected) {
      return InvalidArgument(what + ": raw_data has " + std::to_string(t.raw_data().size()) + " bytes, " +
                             out->type.ToString() + " needs " + std::to_string(expected));
    }
    out->bytes.assign(t.raw_data().begin(), t.raw_data().end());
  } else {
    // The typed fields (onnx.proto): float_data, double_data, int64_data,
    // uint64_data (u32, u64) and int32_data (every narrower type, f16/bf16 as bits).
    // The count is checked before the buffer is sized from the dims (a tensor
    // declaring 2^40 elements with no data must not allocate terabytes: found by
    // fuzz/onnx_importer_fuzzer).
    int64_t have = 0;
    switch (*dtype) {
      case DType::kF32: have = t.float_data_size(); break;
      case DType::kF64: have = t.double_data_size(); break;
      case DType::kI64: have = t.int64_data_size(); break;
      case DType::kU32:
      case DType::kU64: have = t.uint64_data_size(); break;
      default: have = t.int32_data_size();
    }
    if (have != n) return count_error(have);
    out->bytes.resize(expected);
    uint8_t* dst = out->bytes.data();
    const size_t es = ir::DTypeSize(*dtype);
    switch (*dtype) {
      case DType::kF32:
        if (t.float_data_size() != n) return count_error(t.float_data_size());
        if (n) std::memcpy(dst, t.float_data().data(), expected);
        break;
      case DType::kF64:
        if (t.double_data_size() != n) return count_error(t.double_data_size());
        if (n) std::memcpy(dst, t.double_data().data(), expected);
        break;
      case DType::kI64:
        if (t.int64_data_size() != n) return count_error(t.int64_data_size());
        if (n) std::memcpy(dst, t.int64_data().data(), expected);
        break;
      case DType::kU32:
      case DType::kU64:
        if (t.uint64_data_size() != n) return count_error(t.uint64_data_size());
        for (int64_t i = 0; i < n; ++i) {
          const uint64_t v = t.uint64_data(static_cast<int>(i));
          std::memcpy(dst + static_cast<size_t>(i) * es, &v, es);  // little-endian truncation
        }
        break;
      default:
        if (t.int32_data_size() != n) return count_error(t.int32_data_size());
        for (int64_t i = 0; i < n; ++i) {
          const int32_t v = t.int32_data(static_cast<int>(i));
          std::memcpy(dst + static_cast<size_t>(i) * es, &v, es);  // little-endian truncation
        }
    }
  }
  return TensorDataPtr(std::move(out));
}

Result<ir::AttrValue> Importer::ConvertAttribute(const onnx::AttributeProto& a, const std::string& where) {
  switch (a.type()) {
    case onnx::AttributeProto::FLOAT: return ir::AttrValue(static_cast<double>(a.f()));
    case onnx::AttributeProto::INT: return ir::AttrValue(static_cast<int64_t>(a.i()));
    case onnx::AttributeProto::STRING: return ir::AttrValue(a.s());
    case onnx::AttributeProto::FLOATS:
      return ir::AttrValue(std::vector<double>(a.floats().begin(), a.floats().end()));
    case onnx::AttributeProto::INTS: return ir::AttrValue(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case onnx::AttributeProto::STRINGS:
      return ir::AttrValue(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case onnx::AttributeProto::TENSOR: {
      KEEL_ASSIGN_OR_RETURN(TensorDataPtr t, TensorFromProto(a.t(), where + " attribute '" + a.name() + "'"));
      return ir::AttrValue(t);
    }
    default:
      return Unsupported(where + ": attribute '" + a.name() + "' has an unsupported type (" +
                         onnx::AttributeProto::AttributeType_Name(a.type()) + ")");
  }
}

std::string Importer::NodeLabel(int index) const {
  const onnx::NodeProto& n = onnx_graph_->node(index);
  return "'" + (n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name()) + "'";
}

// `name` is written by a node after `consumer`. Either the nodes are out of order
// (ONNX requires topological order) or there is a cycle through `consumer`: a
// breadth-first search from the producer back through its inputs' producers
// finds the shortest such cycle, which the message names.
std::string Importer::LaterDefinition(const std::string& name, int consumer) const {
  const int producer = producer_.at(name);
  std::unordered_map<int, int> next;  // node -> the node it feeds on the way to `producer`
  std::vector<int> queue = {producer};
  next[producer] = -1;
  bool found = producer == consumer;
  for (size_t q = 0; q < queue.size() && !found; ++q) {
    for (const std::string& in : onnx_graph_->node(queue[q]).input()) {
      auto p = producer_.find(in);
      if (p == producer_.end() || next.count(p->second)) continue;
      next[p->second] = queue[q];
      if (p->second == consumer) {
        found = true;
        break;
      }
      queue.push_back(p->second);
    }
  }
  std::string text = "input '" + name + "' is defined later, by node " + NodeLabel(producer);
  if (!found) return text + " (ONNX nodes must be in topological order)";
  // consumer feeds next[consumer], ..., which feeds the producer, which feeds consumer.
  text += ": cycle " + NodeLabel(consumer);
  int shown = 0;
  for (int k = next[consumer]; k >= 0; k = next[k]) {
    if (++shown > 8) {
      text += " -> ...";
      break;
    }
    text += " -> " + NodeLabel(k);
  }
  return text + " -> " + NodeLabel(consumer);
}

Result<ir::Value*> Importer::Lookup(const std::string& name, const std::string& where, int consumer) {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  if (consumer >= 0 && producer_.count(name)) return InvalidArgument(where + ": " + LaterDefinition(name, consumer));
  if (ir::Value* outer = Capture(name)) return outer;
  return InvalidArgument(where + ": input '" + name +
                         "' is not defined by any graph input, initializer or earlier node");
}

// `name` read by the subgraph being imported and defined by an enclosing scope:
// a new trailing input of each subgraph from that scope inward, nullptr when no
// scope defines it.
ir::Value* Importer::Capture(const std::string& name) {
  size_t k = outer_.size();
  while (k > 0 && !outer_[k - 1].values.count(name)) --k;
  if (k == 0) return nullptr;
  ir::Value* v = outer_[k - 1].values.at(name);
  for (size_t j = k; j <= outer_.size(); ++j) {
    const bool current = j == outer_.size();
    ir::Graph& g = current ? *graph_ : *outer_[j].graph;
    ir::Value* in = g.AddInput(name, TensorType{});  // typed when the subgraph is inlined
    (current ? captured_ : outer_[j].captured).push_back(v);
    (current ? values_ : outer_[j].values)[name] = in;
    v = in;
  }
  return v;
}

Result<std::unique_ptr<ir::Graph>> Importer::ImportSubgraph(const onnx::GraphProto& g, const std::string& where,
                                                            std::vector<ir::Value*>& captured) {
  if (outer_.size() >= kMaxSubgraphDepth) return Unsupported(where + ": subgraphs nested too deeply");
  Scope saved;
  saved.graph = std::move(graph_);
  saved.values.swap(values_);
  saved.defined.swap(defined_);
  saved.onnx_graph = onnx_graph_;
  saved.producer.swap(producer_);
  saved.captured.swap(captured_);
  outer_.push_back(std::move(saved));
  graph_ = std::make_unique<ir::Graph>();
  graph_->set_name(g.name().empty() ? "subgraph" : g.name());
  Status s = ImportSubgraphBody(g, where);
  std::unique_ptr<ir::Graph> sub = std::move(graph_);
  captured.swap(captured_);
  Scope& back = outer_.back();
  graph_ = std::move(back.graph);
  values_.swap(back.values);
  defined_.swap(back.defined);
  onnx_graph_ = back.onnx_graph;
  producer_.swap(back.producer);
  captured_.swap(back.captured);
  outer_.pop_back();
  if (!s.ok()) return s;
  return sub;
}

// A subgraph's formal inputs come first (their types are the operands' at
// inlining time, so declared types are not needed), then its nodes; captures are
// appended as they are met.
Status Importer::ImportSubgraphBody(const onnx::GraphProto& g, const std::string& where) {
  const std::string sub = where + " subgraph '" + graph_->name() + "'";
  if (g.sparse_initializer_size() > 0) return Unsupported(sub + ": sparse initializers are not supported");
  for (const auto& init : g.initializer()) {
    if (init.name().empty() || defined_.count(init.name())) {
      return InvalidArgument(sub + ": initializer '" + init.name() + "' is unnamed or defined twice");
    }
    KEEL_ASSIGN_OR_RETURN(TensorDataPtr data, TensorFromProto(init, sub + " initializer '" + init.name() + "'"));
    values_[init.name()] = graph_->AddConstant(init.name(), data);
    defined_[init.name()] = "an initializer";
  }
  for (const auto& in : g.input()) {
    if (defined_.count(in.name())) return InvalidArgument(sub + ": input '" + in.name() + "' is defined twice");
    values_[in.name()] = graph_->AddInput(in.name(), TensorType{});
    defined_[in.name()] = "a subgraph input";
  }
  onnx_graph_ = &g;
  for (int i = 0; i < g.node_size(); ++i) {
    for (const std::string& out : g.node(i).output()) {
      if (!out.empty()) producer_.emplace(out, i);
    }
  }
  for (int i = 0; i < g.node_size(); ++i) KEEL_RETURN_IF_ERROR(ImportNode(g.node(i), static_cast<size_t>(i)));
  for (const auto& out : g.output()) {
    KEEL_ASSIGN_OR_RETURN(ir::Value* v, Lookup(out.name(), sub + " output '" + out.name() + "'"));
    graph_->AddOutput(v);
  }
  return Status::Ok();
}

Status Importer::CheckInitializerAgainstInput(const onnx::ValueInfoProto& vi, const TensorData& init) {
  const std::string what = "graph input '" + vi.name() + "'";
  if (!vi.type().has_tensor_type()) return Status::Ok();
  const auto& tt = vi.type().tensor_type();
  if (tt.elem_type() != 0) {
    auto dtype = DTypeFromOnnx(tt.elem_type());
    if (dtype.ok() && *dtype != init.type.dtype) {
      return InvalidArgument(what + " is declared " + ir::DTypeName(*dtype) + " but its initializer is " +
                             init.type.ToString());
    }
  }
  if (!tt.has_shape()) return Status::Ok();
  bool agrees = tt.shape().dim_size() == static_cast<int>(init.type.shape.size());
  for (int i = 0; agrees && i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (d.has_dim_value() && d.dim_value() != init.type.shape[static_cast<size_t>(i)]) agrees = false;
  }
  if (!agrees) {
    std::string declared = "[";
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& d = tt.shape().dim(i);
      declared += (i ? "," : "") + (d.has_dim_value() ? std::to_string(d.dim_value()) : d.dim_param().empty() ? "?" : d.dim_param());
    }
    return InvalidArgument(what + " is declared with shape " + declared + "] but its initializer is " + init.type.ToString());
  }
  return Status::Ok();
}

Status Importer::ImportInput(const onnx::ValueInfoProto& vi) {
  const std::string what = "graph input '" + vi.name() + "'";
  if (!vi.type().has_tensor_type()) return Unsupported(what + " is not a tensor");
  const auto& tt = vi.type().tensor_type();
  auto dtype = DTypeFromOnnx(tt.elem_type());
  if (!dtype.ok()) return Unsupported(what + ": " + dtype.status().message());
  TensorType type{*dtype, {}};
  auto ov = options_.input_shapes.find(vi.name());
  if (ov != options_.input_shapes.end()) {
    if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(ov->second.size())) {
      return InvalidArgument(what + " has rank " + std::to_string(tt.shape().dim_size()) +
                             ", the shape override has rank " + std::to_string(ov->second.size()));
    }
    type.shape = ov->second;
  } else {
    if (!tt.has_shape()) return InvalidArgument(what + " has no shape; pass an input shape override");
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& d = tt.shape().dim(i);
      if (d.has_dim_value()) {
        if (d.dim_value() < 0) {
          return InvalidArgument(what + ": dimension " + std::to_string(i) + " is " + std::to_string(d.dim_value()) +
                                 " (dimensions must be >= 0)");
        }
        type.shape.push_back(d.dim_value());
        continue;
      }
      auto dp = d.has_dim_param() ? options_.dim_params.find(d.dim_param()) : options_.dim_params.end();
      if (dp != options_.dim_params.end()) {
        type.shape.push_back(dp->second);
      } else if (options_.default_dynamic_dim >= 1) {
        type.shape.push_back(options_.default_dynamic_dim);
      } else {
        return InvalidArgument(what + ": dimension " + std::to_string(i) +
                               (d.has_dim_param() ? " ('" + d.dim_param() + "')" : std::string()) +
                               " is dynamic; Keel compiles static shapes: pass an input shape override");
      }
    }
  }
  for (int64_t d : type.shape) {
    if (d < 0) return InvalidArgument(what + ": negative dimension in shape override");
  }
  // The element count (and byte size) must be sane before anything is planned from it.
  int64_t elements = 1;
  for (int64_t d : type.shape) {
    if (d != 0 && elements > ops::kMaxElements / d) {
      return InvalidArgument(what + ": shape " + type.ToString() + " has more than 2^40 elements");
    }
    elements *= d;
  }
  auto frozen = options_.frozen_inputs.find(vi.name());
  if (frozen != options_.frozen_inputs.end()) {
    if (frozen->second.size() != static_cast<size_t>(type.ByteSize())) {
      return InvalidArgument(what + ": the frozen value has " + std::to_string(frozen->second.size()) +
                             " bytes, its type " + type.ToString() + " needs " + std::to_string(type.ByteSize()));
    }
    auto data = std::make_shared<TensorData>();
    data->type = type;
    data->bytes = frozen->second;
    values_[vi.name()] = graph_->AddConstant(vi.name(), std::move(data));
    return Status::Ok();
  }
  values_[vi.name()] = graph_->AddInput(vi.name(), type);
  return Status::Ok();
}

Status Importer::ImportNode(const onnx::NodeProto& n, size_t index) {
  const std::string name = n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
  const std::string where = "node '" + name + "' (" + n.op_type() + ")";
  if (!n.domain().empty() && n.domain() != "ai.onnx") {
    return Unsupported(where + ": op domain '" + n.domain() + "' is not supported (Keel implements " +
                       ops::SupportedOpsetsText() + ")");
  }
  const ops::OpDef* def = ops::Registry::Get().Find(n.op_type());
  if (def == nullptr || !def->domain.empty()) return Unsupported(where + ": unsupported op '" + n.op_type() + "'");
  auto version = ops::ResolveVersion(*def, opset_);
  if (!version.ok()) return Unsupported(where + ": " + version.status().message());

  ir::Attributes attrs;
  struct Sub {
    std::string attr;
    std::unique_ptr<ir::Graph> graph;
    std::vector<ir::Value*> captured;
  };
  std::vector<Sub> subgraphs;
  for (const auto& a : n.attribute()) {
    if (!a.ref_attr_name().empty()) return Unsupported(where + ": attribute references are not supported");
    // keel.* attributes mark Keel's internal forms (a channels-last Conv, a
    // clamped Slice...): a model may not set them.
    if (a.name().rfind("keel.", 0) == 0) {
      return InvalidArgument(where + ": attribute '" + a.name() + "' is reserved for Keel's internal forms");
    }
    if (a.type() == onnx::AttributeProto::GRAPH) {
      Sub sub{a.name(), nullptr, {}};
      KEEL_ASSIGN_OR_RETURN(sub.graph, ImportSubgraph(a.g(), where, sub.captured));
      subgraphs.push_back(std::move(sub));
      continue;
    }
    KEEL_ASSIGN_OR_RETURN(ir::AttrValue v, ConvertAttribute(a, where));
    attrs.Set(a.name(), std::move(v));
  }
  if (def->imported_as_constant) return ImportConstant(n, attrs, where);

  std::vector<ir::Value*> inputs;
  for (const std::string& in : n.input()) {
    if (in.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    KEEL_ASSIGN_OR_RETURN(ir::Value* v, Lookup(in, where, static_cast<int>(index)));
    inputs.push_back(v);
  }
  while (!inputs.empty() && inputs.back() == nullptr) inputs.pop_back();
  // Optional leading outputs may be omitted (RNN's Y with only Y_h used).
  bool any_output = false;
  for (const std::string& out : n.output()) any_output = any_output || !out.empty();
  if (!any_output) return InvalidArgument(where + ": has no output");

  // A pure copy (identity-like with a kernel of its own: Identity) aliases its input.
  if (def->identity_like && def->fusion != ops::FusionClass::kNone && !options_.keep_identity && !inputs.empty() && inputs[0] &&
      !n.output(0).empty()) {
    values_[n.output(0)] = inputs[0];  // aliased; graph outputs are fixed up in Run()
    return Status::Ok();
  }
  // Every declared output gets a value (positions matter); omitted ones ("") are unnamed.
  std::vector<std::string> out_names;
  for (int i = 0; i < n.output_size(); ++i) {
    out_names.push_back(n.output(i).empty() ? name + ":unused" + std::to_string(i) : n.output(i));
  }
  // Captured outer values follow the formal inputs (once each); every subgraph
  // lists the node inputs its trailing inputs stand for.
  if (!subgraphs.empty()) attrs.Set("formal_inputs", static_cast<int64_t>(inputs.size()));
  const size_t formal = inputs.size();
  for (Sub& sub : subgraphs) {
    std::vector<int64_t> index;
    for (ir::Value* v : sub.captured) {
      auto it = std::find(inputs.begin() + static_cast<std::ptrdiff_t>(formal), inputs.end(), v);
      if (it == inputs.end()) it = inputs.insert(inputs.end(), v);
      index.push_back(it - inputs.begin());
    }
    attrs.Set(sub.attr + ".captures", std::move(index));
  }
  ir::Node* node = graph_->AddNode(n.op_type(), name, inputs, out_names.size(), out_names);
  for (const auto& [k, v] : attrs.all()) node->attrs().Set(k, v);
  for (Sub& sub : subgraphs) node->set_subgraph(sub.attr, std::move(sub.graph));
  if (def->normalize) {
    Status s = def->normalize(*node, *version);
    if (!s.ok()) return s.WithContext(where);
  }
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    if (defined_.count(n.output(i))) {
      return InvalidArgument(where + ": output '" + n.output(i) + "' is already defined (by " + defined_[n.output(i)] + ")");
    }
    defined_[n.output(i)] = where;
    values_[n.output(i)] = node->output(static_cast<size_t>(i));
  }
  return Status::Ok();
}

Status Importer::ImportConstant(const onnx::NodeProto& n, const ir::Attributes& attrs, const std::string& where) {
  if (n.output_size() != 1) return InvalidArgument(where + ": expects one output");
  TensorDataPtr data;
  auto make = [](TensorType type, const void* bytes, size_t size) {
    auto t = std::make_shared<TensorData>();
    t->type = std::move(type);
    t->bytes.resize(size);
    if (size) std::memcpy(t->bytes.data(), bytes, size);
    return TensorDataPtr(std::move(t));
  };
  if (attrs.Has("value")) {
    KEEL_ASSIGN_OR_RETURN(data, attrs.GetTensor("value"));
  } else if (attrs.Has("value_float")) {
    KEEL_ASSIGN_OR_RETURN(double f, attrs.GetFloat("value_float", 0));
    const float v = static_cast<float>(f);
    data = make(TensorType{DType::kF32, {}}, &v, 4);
  } else if (attrs.Has("value_int")) {
    KEEL_ASSIGN_OR_RETURN(int64_t i, attrs.GetInt("value_int", 0));
    data = make(TensorType{DType::kI64, {}}, &i, 8);
  } else if (attrs.Has("value_ints")) {
    KEEL_ASSIGN_OR_RETURN(auto ints, attrs.GetInts("value_ints", {}));
    data = make(TensorType{DType::kI64, {static_cast<int64_t>(ints.size())}}, ints.data(), ints.size() * 8);
  } else if (attrs.Has("value_floats")) {
    const auto* ds = std::get_if<std::vector<double>>(&attrs.all().at("value_floats"));
    if (!ds) return InvalidArgument(where + ": value_floats is not a float list");
    std::vector<float> fs(ds->begin(), ds->end());
    data = make(TensorType{DType::kF32, {static_cast<int64_t>(fs.size())}}, fs.data(), fs.size() * 4);
  } else {
    return Unsupported(where + ": only value, value_float(s) and value_int(s) are supported");
  }
  if (defined_.count(n.output(0))) {
    return InvalidArgument(where + ": output '" + n.output(0) + "' is already defined (by " + defined_[n.output(0)] + ")");
  }
  defined_[n.output(0)] = where;
  values_[n.output(0)] = graph_->AddConstant(n.output(0), data);
  return Status::Ok();
}

Result<std::unique_ptr<ir::Graph>> Importer::Run(const onnx::ModelProto& model) {
  bool found = false;
  for (const auto& os : model.opset_import()) {
    if (os.domain().empty() || os.domain() == "ai.onnx") {
      opset_ = os.version();
      found = true;
    }
  }
  if (!found) return Fail(Unsupported("no opset for the default ONNX domain"));
  if (opset_ < ops::kMinOpset || opset_ > ops::kMaxOpset) {
    return Fail(Unsupported("opset " + std::to_string(opset_) + " is not supported (Keel implements " +
                            ops::SupportedOpsetsText() + ")"));
  }
  if (!model.has_graph()) return Fail(InvalidArgument("the model has no graph (truncated or corrupt file?)"));
  const onnx::GraphProto& g = model.graph();
  graph_ = std::make_unique<ir::Graph>();
  graph_->set_name(g.name().empty() ? "main" : g.name());

  for (const auto& init : g.initializer()) {
    if (init.name().empty()) return Fail(InvalidArgument("an initializer has no name"));
    if (defined_.count(init.name())) return Fail(InvalidArgument("initializer '" + init.name() + "' is defined twice"));
    auto data = TensorFromProto(init, "initializer '" + init.name() + "'");
    if (!data.ok()) return Fail(data.status());
    values_[init.name()] = graph_->AddConstant(init.name(), *data);
    defined_[init.name()] = "an initializer";
  }
  if (g.sparse_initializer_size() > 0) return Fail(Unsupported("sparse initializers are not supported"));
  std::set<std::string> input_names;
  for (const auto& in : g.input()) {
    if (!input_names.insert(in.name()).second) {
      return Fail(InvalidArgument("graph input '" + in.name() + "' is declared twice"));
    }
    if (defined_.count(in.name())) {
      // An initializer with a default value: a constant, whose declared type must agree.
      Status s = CheckInitializerAgainstInput(in, *values_.at(in.name())->constant());
      if (!s.ok()) return Fail(s);
      continue;
    }
    Status s = ImportInput(in);
    if (!s.ok()) return Fail(s);
    defined_[in.name()] = "a graph input";
  }
  for (const auto& [name, bytes] : options_.frozen_inputs) {
    (void)bytes;
    if (!input_names.count(name)) {
      return Fail(InvalidArgument("frozen input '" + name + "' is not a graph input"));
    }
    if (values_.count(name) && values_.at(name)->constant() && defined_.at(name) == "an initializer") {
      return Fail(InvalidArgument("frozen input '" + name + "' already has an initializer"));
    }
  }
  onnx_graph_ = &g;
  for (int i = 0; i < g.node_size(); ++i) {
    for (const std::string& out : g.node(i).output()) {
      if (!out.empty()) producer_.emplace(out, i);
    }
  }
  for (int i = 0; i < g.node_size(); ++i) {
    Status s = ImportNode(g.node(i), static_cast<size_t>(i));
    if (!s.ok()) return Fail(s);
  }
  for (const auto& out : g.output()) {
    auto v = Lookup(out.name(), "graph output '" + out.name() + "'");
    if (!v.ok()) return Fail(v.status());
    ir::Value* value = *v;
    // An aliased Identity (or a direct input/constant) as output: keep the ONNX
    // output name visible, copying through an Identity node when the value is
    // an input, a constant or already another output.
    if (value->name() != out.name()) {
      if (value->producer() && !graph_->IsGraphOutput(value)) {
        value->set_name(out.name());
      } else {
        ir::Node* id = graph_->AddNode("Identity", out.name() + "/keel_identity", {value}, 1, {out.name()});
        value = id->output(0);
      }
    }
    graph_->AddOutput(value);
  }
  if (graph_->outputs().empty()) return Fail(InvalidArgument("the graph has no outputs"));
  // Optional outputs the model declares but never reads are dropped.
  for (ir::Node* node : graph_->nodes()) graph_->TrimUnusedOutputs(node);
  Status s = graph_->Verify(false);
  if (!s.ok()) return Fail(s);
  return std::move(graph_);
}

}  // namespace

Result<std::unique_ptr<ir::Graph>> ImportOnnxBytes(const std::string& bytes, const std::string& model_dir,
                                                   const std::string& model_name, const ImportOptions& options) {
  onnx::ModelProto model;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(std::min<size_t>(bytes.size(), INT_MAX)));
  google::protobuf::io::CodedInputStream coded(&raw);
  // Protobuf's default 64 MB cap is too small for real weights; allow up to 2 GB
  // (bigger models keep their weights in external data files).
  coded.SetTotalBytesLimit(INT_MAX);
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return Unsupported("model '" + model_name + "': files over 2 GB must use external data");
  }
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    return InvalidArgument("model '" + model_name + "': cannot parse the ONNX protobuf (truncated or corrupt file)");
  }
  Importer importer(model_dir, model_name, options);
  return importer.Run(model);
}

Result<std::unique_ptr<ir::Graph>> ImportOnnx(const std::string& path, const ImportOptions& options) {
  // A regular file only, opened without blocking (a FIFO or a directory is a clear error).
  KEEL_ASSIGN_OR_RETURN(common::RegularFile file, common::RegularFile::Open(path, "ONNX model"));
  if (file.size() > static_cast<uint64_t>(INT_MAX)) {
    return Unsupported("model '" + path + "': files over 2 GB must use external data");
  }
  std::string bytes(static_cast<size_t>(file.size()), '\0');
  KEEL_RETURN_IF_ERROR(file.ReadAt(0, bytes.data(), bytes.size(), "ONNX model '" + path + "'"));
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  return ImportOnnxBytes(bytes, dir, path, options);
}

}  // namespace keel::frontend
