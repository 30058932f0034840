// compiler/ir/graph.cc — implementation of the graph IR (graph.h): dtype helpers,
// TensorType, Attributes, Node/Graph construction and mutation, topological
// sorting and structural verification.
//
// Invariants kept here: every Value's use list mirrors exactly the node inputs
// that reference it; `nodes_` is topologically ordered after every helper (the
// only helper that can break it is SetInput/ReplaceAllUsesWith with a value
// produced later — callers then run TopologicalSort, which Verify checks).
#include "compiler/ir/graph.h"

#include <algorithm>
#include <cstdio>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace keel::ir {

int64_t TensorType::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorType::ByteSize() const { return NumElements() * static_cast<int64_t>(DTypeSize(dtype)); }

std::string TensorType::ToString() const {
  std::string s = DTypeName(dtype);
  s += "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  s += "]";
  return s;
}

// ---- Attributes -------------------------------------------------------------

namespace {
template <typename T>
Result<T> GetTyped(const std::map<std::string, AttrValue>& values, const std::string& name,
                   const T& default_value, const char* type_name) {
  auto it = values.find(name);
  if (it == values.end()) return default_value;
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  return InvalidArgument("attribute '" + name + "' is not of type " + type_name);
}
}  // namespace

Result<int64_t> Attributes::GetInt(const std::string& name, int64_t default_value) const {
  return GetTyped<int64_t>(values_, name, default_value, "int");
}
Result<double> Attributes::GetFloat(const std::string& name, double default_value) const {
  // Integers are accepted where floats are expected: "alpha=1" means 1.0.
  auto it = values_.find(name);
  if (it != values_.end()) {
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  }
  return GetTyped<double>(values_, name, default_value, "float");
}
Result<std::string> Attributes::GetString(const std::string& name, const std::string& default_value) const {
  return GetTyped<std::string>(values_, name, default_value, "string");
}
Result<std::vector<int64_t>> Attributes::GetInts(const std::string& name,
                                                 const std::vector<int64_t>& default_value) const {
  return GetTyped<std::vector<int64_t>>(values_, name, default_value, "ints");
}
Result<TensorDataPtr> Attributes::GetTensor(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return NotFound("attribute '" + name + "' not present");
  if (const TensorDataPtr* v = std::get_if<TensorDataPtr>(&it->second)) {
    if (*v) return *v;
    return InvalidArgument("attribute '" + name + "' holds a null tensor");
  }
  return InvalidArgument("attribute '" + name + "' is not of type tensor");
}

bool Attributes::operator==(const Attributes& other) const {
  if (values_.size() != other.values_.size()) return false;
  auto a = values_.begin();
  auto b = other.values_.begin();
  for (; a != values_.end(); ++a, ++b) {
    if (a->first != b->first || a->second.index() != b->second.index()) return false;
    if (const TensorDataPtr* ta = std::get_if<TensorDataPtr>(&a->second)) {
      const TensorDataPtr& tb = std::get<TensorDataPtr>(b->second);
      if (ta->get() == tb.get()) continue;
      if (!*ta || !tb) return false;
      // Tensors compare by content: two equal constants make equal attributes (CSE).
      if (!((*ta)->type == tb->type) || (*ta)->bytes != tb->bytes) return false;
    } else if (!(a->second == b->second)) {
      return false;
    }
  }
  return true;
}

// ---- Node --------------------------------------------------------------------

namespace {
void RemoveUse(Value* value, Node* node, int index, std::vector<Value::Use>& uses) {
  (void)value;
  for (auto it = uses.begin(); it != uses.end(); ++it) {
    if (it->node == node && it->input_index == index) {
      uses.erase(it);
      return;
    }
  }
}
}  // namespace

void Node::SetInput(size_t index, Value* value) {
  if (index >= inputs_.size()) inputs_.resize(index + 1, nullptr);
  Value* old = inputs_[index];
  if (old == value) return;
  if (old) RemoveUse(old, this, static_cast<int>(index), old->uses_);
  inputs_[index] = value;
  if (value) value->uses_.push_back({this, static_cast<int>(index)});
}

void Node::SetInputs(std::vector<Value*> inputs) {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i]) RemoveUse(inputs_[i], this, static_cast<int>(i), inputs_[i]->uses_);
  }
  inputs_ = std::move(inputs);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i]) inputs_[i]->uses_.push_back({this, static_cast<int>(i)});
  }
}

void Node::set_body(std::unique_ptr<Graph> body) { body_ = std::move(body); }

Graph* Node::subgraph(const std::string& attr) const {
  auto it = subgraphs_.find(attr);
  return it == subgraphs_.end() ? nullptr : it->second.get();
}

void Node::set_subgraph(const std::string& attr, std::unique_ptr<Graph> graph) {
  if (graph) subgraphs_[attr] = std::move(graph);
  else subgraphs_.erase(attr);
}

// ---- Graph -------------------------------------------------------------------

Graph::Graph() = default;
Graph::~Graph() = default;

Value* Graph::NewValue(std::string name) {
  auto v = std::make_unique<Value>();
  v->id_ = next_value_id_++;
  v->name_ = std::move(name);
  Value* raw = v.get();
  value_pos_[raw] = values_.insert(values_.end(), std::move(v));
  return raw;
}

void Graph::EraseValue(const Value* value) {
  auto it = value_pos_.find(value);
  if (it == value_pos_.end()) return;
  values_.erase(it->second);
  value_pos_.erase(it);
}

Value* Graph::AddValue(std::string name) { return NewValue(std::move(name)); }

Value* Graph::AddInput(std::string name, TensorType type) {
  Value* v = AddValue(std::move(name));
  v->set_type(std::move(type));
  inputs_.push_back(v);
  return v;
}

Value* Graph::AddConstant(std::string name, TensorDataPtr data) {
  Value* v = AddValue(std::move(name));
  if (data) v->set_type(data->type);
  v->constant_ = std::move(data);
  return v;
}

Node* Graph::CreateNode(std::string op_type, std::string name, std::vector<Value*> inputs,
                        size_t num_outputs, std::vector<std::string> output_names, NodeList::iterator position) {
  auto n = std::make_unique<Node>();
  n->id_ = next_node_id_++;
  n->op_type_ = std::move(op_type);
  n->name_ = std::move(name);
  n->graph_ = this;
  Node* raw = n.get();
  raw->SetInputs(std::move(inputs));
  for (size_t i = 0; i < num_outputs; ++i) {
    std::string out_name = i < output_names.size() ? output_names[i] : raw->name_ + ":" + std::to_string(i);
    Value* v = NewValue(std::move(out_name));
    v->producer_ = raw;
    v->producer_output_ = static_cast<int>(i);
    raw->outputs_.push_back(v);
  }
  node_pos_[raw] = nodes_.insert(position, std::move(n));
  return raw;
}

Node* Graph::AddNode(std::string op_type, std::string name, std::vector<Value*> inputs,
                     size_t num_outputs, std::vector<std::string> output_names) {
  return CreateNode(std::move(op_type), std::move(name), std::move(inputs), num_outputs,
                    std::move(output_names), nodes_.end());
}

Node* Graph::InsertNodeBefore(Node* before, std::string op_type, std::string name,
                              std::vector<Value*> inputs, size_t num_outputs) {
  auto it = node_pos_.find(before);
  auto pos = it == node_pos_.end() ? nodes_.end() : it->second;
  return CreateNode(std::move(op_type), std::move(name), std::move(inputs), num_outputs, {}, pos);
}

void Graph::ReplaceAllUsesWith(Value* from, Value* to) {
  if (from == to) return;
  // Copy: SetInput edits from->uses_ while we walk.
  std::vector<Value::Use> uses = from->uses_;
  for (const Value::Use& u : uses) u.node->SetInput(static_cast<size_t>(u.input_index), to);
  for (Value*& out : outputs_) {
    if (out == from) out = to;
  }
}

Status Graph::ReplaceNodeWith(Node* node, Value* by) {
  if (node == nullptr || node->outputs_.size() != 1) return InvalidArgument("ReplaceNodeWith: not a single-output node");
  Value* out = node->outputs_[0];
  const std::string name = out->name_;
  const bool was_output = IsGraphOutput(out);
  ReplaceAllUsesWith(out, by);
  KEEL_RETURN_IF_ERROR(RemoveNode(node));
  if (was_output) by->set_name(name);
  return Status::Ok();
}

Status Graph::RemoveNode(Node* node) {
  if (node == nullptr || node->graph_ != this) return InvalidArgument("RemoveNode: node is not in this graph");
  for (Value* out : node->outputs_) {
    if (!out->uses_.empty()) {
      return FailedPrecondition("RemoveNode: output '" + out->name_ + "' of node '" + node->name_ + "' (" +
                                node->op_type_ + ") still has uses");
    }
    if (IsGraphOutput(out)) {
      return FailedPrecondition("RemoveNode: output '" + out->name_ + "' of node '" + node->name_ +
                                "' is a graph output");
    }
  }
  node->SetInputs({});
  for (Value* out : node->outputs_) EraseValue(out);
  auto it = node_pos_.find(node);
  if (it != node_pos_.end()) {
    nodes_.erase(it->second);
    node_pos_.erase(it);
  }
  return Status::Ok();
}

void Graph::TrimUnusedOutputs(Node* node) {
  std::vector<Value*>& outs = node->outputs_;
  while (outs.size() > 1 && outs.back()->uses_.empty() && !IsGraphOutput(outs.back())) {
    Value* dead = outs.back();
    outs.pop_back();
    EraseValue(dead);
  }
}

void Graph::RemoveDeadValues() {
  std::unordered_set<const Value*> keep(inputs_.begin(), inputs_.end());
  keep.insert(outputs_.begin(), outputs_.end());
  for (auto it = values_.begin(); it != values_.end();) {
    const Value* v = it->get();
    if (v->producer_ == nullptr && v->uses_.empty() && keep.count(v) == 0) {
      value_pos_.erase(v);
      it = values_.erase(it);
    } else {
      ++it;
    }
  }
}

Status Graph::TopologicalSort() {
  // Kahn's algorithm with a min-heap on the current position: among ready nodes
  // the earliest one goes first, so an already valid order is kept unchanged.
  std::vector<std::unique_ptr<Node>> list;
  list.reserve(nodes_.size());
  for (auto& np : nodes_) list.push_back(std::move(np));
  nodes_.clear();
  node_pos_.clear();
  // Puts the nodes back (in `order` when given, else as they were).
  auto restore = [&](const std::vector<size_t>* order) {
    for (size_t k = 0; k < list.size(); ++k) {
      std::unique_ptr<Node>& np = list[order ? (*order)[k] : k];
      Node* raw = np.get();
      node_pos_[raw] = nodes_.insert(nodes_.end(), std::move(np));
    }
  };
  const size_t n = list.size();
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < n; ++i) position[list[i].get()] = i;
  std::vector<size_t> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (Value* in : list[i]->inputs_) {
      if (in && in->producer_ && position.count(in->producer_)) ++pending[i];
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (Value* out : list[i]->outputs_) {
      for (const Value::Use& u : out->uses_) {
        auto it = position.find(u.node);
        if (it != position.end() && --pending[it->second] == 0) ready.push(it->second);
      }
    }
  }
  if (order.size() != n) {
    for (size_t i = 0; i < n; ++i) {
      if (pending[i] != 0) {
        const std::string msg = "graph '" + name_ + "' has a cycle through node '" + list[i]->name_ + "' (" +
                                list[i]->op_type_ + ")";
        restore(nullptr);
        return InvalidArgument(msg);
      }
    }
    restore(nullptr);
    return Internal("TopologicalSort lost nodes");
  }
  restore(&order);
  return Status::Ok();
}

std::string NodeDescription(const Node& node) { return node.op_type() + " '" + node.name() + "'"; }

namespace {
std::string NodeLabel(const Node* n) {
  return "node '" + n->name() + "' (" + n->op_type() + ")";
}
}  // namespace

Status Graph::Verify(bool require_types) const {
  std::unordered_set<const Value*> owned;
  for (const auto& v : values_) owned.insert(v.get());
  std::unordered_set<const Value*> defined;
  for (Value* in : inputs_) {
    if (!owned.count(in)) return InvalidArgument("graph '" + name_ + "': input is not owned by the graph");
    if (in->producer_) return InvalidArgument("graph input '" + in->name_ + "' has a producer");
    defined.insert(in);
  }
  for (const auto& v : values_) {
    if (v->constant_) {
      if (v->producer_) return InvalidArgument("constant '" + v->name_ + "' has a producer");
      if (static_cast<int64_t>(v->constant_->bytes.size()) != v->constant_->type.ByteSize()) {
        return InvalidArgument("constant '" + v->name_ + "' holds " + std::to_string(v->constant_->bytes.size()) +
                               " bytes, its type " + v->constant_->type.ToString() + " needs " +
                               std::to_string(v->constant_->type.ByteSize()));
      }
      defined.insert(v.get());
    }
    // Use lists must mirror node inputs.
    for (const Value::Use& u : v->uses_) {
      if (u.node == nullptr || u.node->graph_ != this || u.input_index < 0 ||
          static_cast<size_t>(u.input_index) >= u.node->inputs_.size() ||
          u.node->inputs_[static_cast<size_t>(u.input_index)] != v.get()) {
        return InvalidArgument("value '" + v->name_ + "' has a stale use entry");
      }
    }
  }
  std::unordered_set<const Node*> seen_nodes;
  for (const auto& np : nodes_) {
    const Node* n = np.get();
    if (n->graph_ != this) return InvalidArgument(NodeLabel(n) + " does not point back to its graph");
    for (size_t i = 0; i < n->inputs_.size(); ++i) {
      const Value* in = n->inputs_[i];
      if (!in) continue;
      if (!owned.count(in)) {
        return InvalidArgument(NodeLabel(n) + " input " + std::to_string(i) + " is not a value of this graph");
      }
      if (!defined.count(in)) {
        return InvalidArgument(NodeLabel(n) + " input " + std::to_string(i) + " ('" + in->name_ +
                               "') is used before it is defined (or never defined)");
      }
      size_t count = std::count_if(in->uses_.begin(), in->uses_.end(), [&](const Value::Use& u) {
        return u.node == n && u.input_index == static_cast<int>(i);
      });
      if (count != 1) {
        return InvalidArgument(NodeLabel(n) + " input " + std::to_string(i) + " missing from the use list of '" +
                               in->name_ + "'");
      }
      if (require_types && !in->has_type_) {
        return InvalidArgument(NodeLabel(n) + " input " + std::to_string(i) + " ('" + in->name_ + "') has no type");
      }
    }
    for (size_t i = 0; i < n->outputs_.size(); ++i) {
      const Value* out = n->outputs_[i];
      if (!owned.count(out)) return InvalidArgument(NodeLabel(n) + " output is not a value of this graph");
      if (out->producer_ != n || out->producer_output_ != static_cast<int>(i)) {
        return InvalidArgument(NodeLabel(n) + " output " + std::to_string(i) + " ('" + out->name_ +
                               "') does not name the node as its producer");
      }
      if (defined.count(out)) {
        return InvalidArgument(NodeLabel(n) + " output '" + out->name_ + "' is defined twice (not SSA)");
      }
      if (require_types && !out->has_type_) {
        return InvalidArgument(NodeLabel(n) + " output " + std::to_string(i) + " ('" + out->name_ + "') has no type");
      }
      defined.insert(out);
    }
    if (n->body_) {
      if (n->body_->inputs_.size() != n->inputs_.size() || n->body_->outputs_.size() != n->outputs_.size()) {
        return InvalidArgument(NodeLabel(n) + ": body has " + std::to_string(n->body_->inputs_.size()) + " inputs/" +
                               std::to_string(n->body_->outputs_.size()) + " outputs, node has " +
                               std::to_string(n->inputs_.size()) + "/" + std::to_string(n->outputs_.size()));
      }
      Status s = n->body_->Verify(require_types);
      if (!s.ok()) return s.WithContext("body of " + NodeLabel(n));
    }
  }
  // Values produced by nodes not in the list would be dangling producers.
  for (const auto& v : values_) {
    if (v->producer_ && !defined.count(v.get())) {
      return InvalidArgument("value '" + v->name_ + "' names a producer that is not in the graph");
    }
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Value* out = outputs_[i];
    if (!out || !defined.count(out)) {
      return InvalidArgument("graph '" + name_ + "' output " + std::to_string(i) + " is not defined");
    }
    if (require_types && !out->has_type_) {
      return InvalidArgument("graph output '" + out->name_ + "' has no type");
    }
  }
  return Status::Ok();
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

std::vector<Value*> Graph::values() const {
  std::vector<Value*> out;
  out.reserve(values_.size());
  for (const auto& v : values_) out.push_back(v.get());
  return out;
}

bool Graph::IsGraphOutput(const Value* value) const {
  return std::find(outputs_.begin(), outputs_.end(), value) != outputs_.end();
}

bool Graph::IsGraphInput(const Value* value) const {
  return std::find(inputs_.begin(), inputs_.end(), value) != inputs_.end();
}

}  // namespace keel::ir
