// compiler/ops/expansion.cc — see expansion.h.
#include "compiler/ops/expansion.h"

#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/semantics.h"

namespace keel::ops {

Result<std::vector<ir::Value*>> Expander::Ops(const std::string& op_type, std::vector<ir::Value*> inputs,
                                              AttrList attrs, size_t num_outputs) {
  const std::string name = node_.name() + "/" + op_type + "_" + std::to_string(next_++);
  ir::Node* n = graph_.InsertNodeBefore(&node_, op_type, name, std::move(inputs), num_outputs);
  for (auto& [key, value] : attrs) n->attrs().Set(key, std::move(value));
  Status s = CanonicalizeNode(*n);
  Result<std::vector<ir::TensorType>> types = s.ok() ? InferNodeTypes(*n) : Result<std::vector<ir::TensorType>>(s);
  if (!types.ok()) return types.status().WithContext("expanding " + NodeDescription(node_));
  for (size_t i = 0; i < types->size(); ++i) n->output(i)->set_type((*types)[i]);
  std::vector<ir::Value*> outs = n->outputs();
  const OpDef* def = FindOp(*n);
  if (def && def->expand) {
    // A nested composite: its outputs have no readers yet (ExpandNode would
    // skip them), so its expansion's values are returned in their place.
    Expander nested(graph_, *n);
    KEEL_ASSIGN_OR_RETURN(std::vector<ir::Value*> repl, def->expand(nested, *n));
    if (repl.size() != outs.size()) return Internal(NodeDescription(*n) + ": expansion gave the wrong number of values");
    for (size_t i = 0; i < repl.size(); ++i) {
      if (repl[i] && (!repl[i]->has_type() || !(repl[i]->type() == outs[i]->type()))) {
        return Internal(NodeDescription(*n) + ": expansion of output " + std::to_string(i) + " has another type");
      }
    }
    KEEL_RETURN_IF_ERROR(graph_.RemoveNode(n));
    return repl;
  }
  return outs;
}

Result<ir::Value*> Expander::Op(const std::string& op_type, std::vector<ir::Value*> inputs, AttrList attrs) {
  KEEL_ASSIGN_OR_RETURN(std::vector<ir::Value*> outs, Ops(op_type, std::move(inputs), std::move(attrs), 1));
  return outs[0];
}

ir::Value* Expander::Const(ir::TensorDataPtr data) {
  return graph_.AddConstant(node_.name() + "/const_" + std::to_string(next_++), std::move(data));
}

ir::Value* Expander::Scalar(double value, ir::DType dtype) {
  std::shared_ptr<ir::TensorData> t = NewTensor({dtype, {}});
  StoreDouble(*t, 0, value);
  return Const(t);
}

ir::Value* Expander::Ints(const std::vector<int64_t>& values) {
  return Const(MakeTensorI64({static_cast<int64_t>(values.size())}, values));
}

Status ExpandNode(ir::Graph& graph, ir::Node* node) {
  const OpDef* def = FindOp(*node);
  if (!def || !def->expand) return Internal(NodeDescription(*node) + ": not a composite op");
  Expander b(graph, *node);
  KEEL_ASSIGN_OR_RETURN(std::vector<ir::Value*> repl, def->expand(b, *node));
  if (repl.size() != node->outputs().size()) {
    return Internal(NodeDescription(*node) + ": expansion gave " + std::to_string(repl.size()) + " values for " +
                    std::to_string(node->outputs().size()) + " outputs");
  }
  for (size_t i = 0; i < repl.size(); ++i) {
    ir::Value* out = node->output(i);
    const bool read = !out->uses().empty() || graph.IsGraphOutput(out);
    if (!read) continue;
    if (!repl[i] || !repl[i]->has_type() || !(repl[i]->type() == out->type())) {
      return Internal(NodeDescription(*node) + ": expansion of output " + std::to_string(i) + " has another type");
    }
    ir::Value* v = repl[i];
    if (graph.IsGraphOutput(out)) {
      // The interface keeps the output's name; a value that is not a fresh node
      // result (a constant, an input, another output) is copied.
      const bool plain = v->producer() && !graph.IsGraphOutput(v) && !graph.IsGraphInput(v);
      if (!plain) {
        ir::Node* copy = graph.InsertNodeBefore(node, "Identity", node->name() + "/output_" + std::to_string(i), {v}, 1);
        copy->output(0)->set_type(v->type());
        v = copy->output(0);
      }
      const std::string name = out->name();
      out->set_name(name + "/expanded");
      v->set_name(name);
    }
    graph.ReplaceAllUsesWith(out, v);
  }
  return graph.RemoveNode(node);
}

}  // namespace keel::ops
