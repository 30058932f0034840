// compiler/ir/graph.h — Keel's graph IR: a dataflow graph of Nodes over Values.
//
// A Graph owns its Nodes and Values. Values are SSA: each has at most one
// producer (a Node output), or is a graph input, or holds constant data
// (an initializer). Every Value has a TensorType once shape inference has run
// (dtype + static shape; Keel compiles static shapes only).
//
// Fused groups (made by the fusion pass) are Nodes with op_type "keel.Fused"
// whose `body` is a nested Graph: the body's inputs correspond 1:1 to the
// node's inputs and the body's outputs to the node's outputs.
//
// Ordering: `nodes()` is kept in a valid topological order by every mutation
// helper (callers append in order, or call TopologicalSort()). All iteration
// orders are deterministic (insertion order, never pointer order).
//
// Ownership: Values and Nodes live as long as their Graph (removal unlinks and
// destroys them). Raw pointers are non-owning handles.
// Thread-safety: none; a Graph is used by one thread at a time.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "keel/data_type.h"
#include "keel/status.h"

namespace keel::ir {

// Element types: the one list of keel/data_type.h (the executable and the APIs use the same type).
using DType = keel::DataType;
inline size_t DTypeSize(DType dtype) { return keel::DataTypeSize(dtype); }
inline const char* DTypeName(DType dtype) { return keel::DataTypeName(dtype); }  // "f32", "i64", ...

struct TensorType {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // static; rank 0 = scalar

  int64_t NumElements() const;  // product of dims (1 for rank 0)
  int64_t ByteSize() const;     // NumElements() * DTypeSize(dtype)
  std::string ToString() const;  // "f32[1,3,224,224]"
  bool operator==(const TensorType& other) const = default;
};

// Immutable tensor bytes (initializers, folded constants, tensor attributes).
// Shared so that passes can reuse data without copying weights.
struct TensorData {
  TensorType type;
  std::vector<uint8_t> bytes;  // little-endian, row-major, size == type.ByteSize()

  template <typename T>
  const T* data() const { return reinterpret_cast<const T*>(bytes.data()); }
};
using TensorDataPtr = std::shared_ptr<const TensorData>;

class Node;

class Value {
 public:
  int64_t id() const { return id_; }  // unique within the graph, stable
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  bool has_type() const { return has_type_; }
  const TensorType& type() const { return type_; }
  void set_type(TensorType type) { type_ = std::move(type); has_type_ = true; }

  // Producer node, or nullptr for graph inputs and constants.
  Node* producer() const { return producer_; }
  int producer_output_index() const { return producer_output_; }

  // Non-null for constants (initializers and folded values).
  const TensorDataPtr& constant() const { return constant_; }
  bool is_constant() const { return constant_ != nullptr; }

  // Uses: (node, input index) pairs, in the order they were added.
  struct Use { Node* node; int input_index; };
  const std::vector<Use>& uses() const { return uses_; }

 private:
  friend class Graph;
  friend class Node;
  int64_t id_ = -1;
  std::string name_;
  TensorType type_;
  bool has_type_ = false;
  Node* producer_ = nullptr;
  int producer_output_ = -1;
  TensorDataPtr constant_;
  std::vector<Use> uses_;
};

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>, TensorDataPtr>;

// Node attributes, sorted by name (deterministic printing and hashing).
class Attributes {
 public:
  bool Has(const std::string& name) const { return values_.count(name) != 0; }
  void Set(const std::string& name, AttrValue value) { values_[name] = std::move(value); }
  void Erase(const std::string& name) { values_.erase(name); }
  const std::map<std::string, AttrValue>& all() const { return values_; }

  // Typed getters: the default when absent; an InvalidArgument error naming the
  // attribute when present with another type.
  Result<int64_t> GetInt(const std::string& name, int64_t default_value) const;
  Result<double> GetFloat(const std::string& name, double default_value) const;
  Result<std::string> GetString(const std::string& name, const std::string& default_value) const;
  Result<std::vector<int64_t>> GetInts(const std::string& name, const std::vector<int64_t>& default_value) const;
  Result<TensorDataPtr> GetTensor(const std::string& name) const;  // NotFound when absent

  bool operator==(const Attributes& other) const;

 private:
  std::map<std::string, AttrValue> values_;
};

class Graph;

class Node {
 public:
  int64_t id() const { return id_; }
  const std::string& op_type() const { return op_type_; }  // ONNX op type or "keel.*"
  const std::string& name() const { return name_; }         // source node name (for errors, debug info)
  void set_name(std::string name) { name_ = std::move(name); }

  // Inputs may contain nullptr for omitted optional ONNX inputs.
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }
  void SetInput(size_t index, Value* value);  // keeps use lists consistent (grows the list if needed)
  // Replaces the whole input list (e.g. dropping inputs folded into attributes);
  // keeps use lists consistent.
  void SetInputs(std::vector<Value*> inputs);

  Attributes& attrs() { return attrs_; }
  const Attributes& attrs() const { return attrs_; }

  // Body of a "keel.Fused" node; nullptr otherwise.
  Graph* body() const { return body_.get(); }
  void set_body(std::unique_ptr<Graph> body);

  // Control-flow subgraphs (ONNX graph attributes: If's then_branch/else_branch,
  // Loop's and Scan's body), by attribute name. A subgraph's leading inputs are
  // the op's formal ones; the outer values it reads (captures) follow, bound to
  // the node inputs the int-list attribute "<attr>.captures" lists. Shape
  // inference inlines or unrolls them (compiler/passes/control_flow.h).
  Graph* subgraph(const std::string& attr) const;
  const std::map<std::string, std::unique_ptr<Graph>>& subgraphs() const { return subgraphs_; }
  void set_subgraph(const std::string& attr, std::unique_ptr<Graph> graph);

  Graph* graph() const { return graph_; }

 private:
  friend class Graph;
  int64_t id_ = -1;
  std::string op_type_;
  std::string name_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  Attributes attrs_;
  std::unique_ptr<Graph> body_;
  std::map<std::string, std::unique_ptr<Graph>> subgraphs_;
  Graph* graph_ = nullptr;
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // Creation. Names need not be unique; ids are.
  Value* AddInput(std::string name, TensorType type);  // appended to inputs()
  Value* AddConstant(std::string name, TensorDataPtr data);  // type taken from data
  Value* AddValue(std::string name);                   // untyped, no producer yet
  // Appends a node (at the end of the order) producing `num_outputs` new Values
  // named after `output_names` (or "<name>:<i>" when empty).
  Node* AddNode(std::string op_type, std::string name, std::vector<Value*> inputs,
                size_t num_outputs, std::vector<std::string> output_names = {});
  // Same, inserted just before `before` in the node order.
  Node* InsertNodeBefore(Node* before, std::string op_type, std::string name,
                         std::vector<Value*> inputs, size_t num_outputs);
  void AddOutput(Value* value) { outputs_.push_back(value); }
  void SetOutput(size_t index, Value* value) { outputs_.at(index) = value; }

  // Mutation.
  // Redirects every use of `from` (node inputs and graph outputs) to `to`.
  void ReplaceAllUsesWith(Value* from, Value* to);
  // Removes a node whose outputs have no uses and are not graph outputs.
  Status RemoveNode(Node* node);
  // Replaces the single-output `node` by `by`: its uses and graph-output slots go to `by`, which
  // takes the output's name where that was a graph output (callers feed and read a model's values
  // by name), and `node` is removed.
  Status ReplaceNodeWith(Node* node, Value* by);
  // Drops `node`'s trailing outputs that have no uses and are not graph outputs
  // (optional ONNX outputs a model declares but never reads).
  void TrimUnusedOutputs(Node* node);
  // Removes values with no producer, no uses, not inputs/outputs (after passes).
  void RemoveDeadValues();
  // Re-establishes a topological order (stable: keeps existing order where valid).
  Status TopologicalSort();

  // Structural checks: use lists consistent, SSA, order topological, every
  // value reachable has a type when `require_types`. Errors name the node.
  Status Verify(bool require_types) const;

  // Access (deterministic order).
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  std::vector<Node*> nodes() const;                  // topological order
  std::vector<Value*> values() const;                // creation order
  size_t num_nodes() const { return nodes_.size(); }
  bool IsGraphOutput(const Value* value) const;
  bool IsGraphInput(const Value* value) const;

 private:
  using NodeList = std::list<std::unique_ptr<Node>>;
  using ValueList = std::list<std::unique_ptr<Value>>;
  Node* CreateNode(std::string op_type, std::string name, std::vector<Value*> inputs, size_t num_outputs,
                   std::vector<std::string> output_names, NodeList::iterator position);
  Value* NewValue(std::string name);
  void EraseValue(const Value* value);

  // Lists with position maps: insertion before a node and removal are O(1), so
  // passes that rewrite every node stay linear in graph size.
  std::string name_;
  NodeList nodes_;  // in topological order
  std::unordered_map<const Node*, NodeList::iterator> node_pos_;
  ValueList values_;  // creation order
  std::unordered_map<const Value*, ValueList::iterator> value_pos_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  int64_t next_value_id_ = 0;
  int64_t next_node_id_ = 0;
};

// "Conv 'conv1'": how every message names a node.
std::string NodeDescription(const Node& node);

}  // namespace keel::ir
