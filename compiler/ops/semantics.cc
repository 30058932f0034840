// compiler/ops/semantics.cc — see semantics.h.
#include "compiler/ops/semantics.h"

#include <unordered_map>

#include "compiler/ops/channels_last.h"
#include "compiler/ops/expansion.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/packed_weight.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/winograd.h"

namespace keel::ops {

namespace {

Result<const OpDef*> DefOf(const ir::Node& node) {
  const OpDef* def = FindOp(node);
  if (!def) return NodeUnsupported(node, "unknown op '" + node.op_type() + "'");
  return def;
}

}  // namespace

Status CanonicalizeNode(ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const OpDef* def, DefOf(node));
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const ir::Value* in = node.input(i);
    if (in && !in->has_type()) return NodeError(node, "input " + std::to_string(i) + " ('" + in->name() + "') has no type");
  }
  // Every canonical form reads input 0, required by each such op; a model that
  // omits it ("" or no inputs) is an error here, before the op's code runs
  // (found by fuzz/onnx_importer_fuzzer: Flatten with no input).
  if (def->canonicalize && !node.input(0)) return NodeError(node, "input 0 is missing");
  if (IsChannelsLast(node)) return CanonicalizeChannelsLast(*def, node);
  if (WinogradTile(node) != 0) return CanonicalizeWinograd(*def, node);
  if (def->canonicalize) return def->canonicalize(node);
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferNodeTypes(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const OpDef* def, DefOf(node));
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const ir::Value* in = node.input(i);
    if (in && !in->has_type()) return NodeError(node, "input " + std::to_string(i) + " ('" + in->name() + "') has no type");
  }
  if (!def->infer) return Internal(NodeDescription(node) + ": op " + def->name + " has no type rule");
  std::vector<ir::TensorType> types;
  if (IsChannelsLast(node)) {
    KEEL_ASSIGN_OR_RETURN(types, InferChannelsLast(*def, node));
  } else if (WinogradTile(node) != 0) {
    KEEL_ASSIGN_OR_RETURN(types, InferWinograd(*def, node));
  } else if (PackedColumns(node) != 0) {
    KEEL_ASSIGN_OR_RETURN(types, InferPackedColumns(node));
  } else {
    KEEL_ASSIGN_OR_RETURN(types, def->infer(node));
  }
  if (types.size() != node.outputs().size()) {
    return Internal(NodeDescription(node) + ": type rule gave " + std::to_string(types.size()) + " types for " +
                    std::to_string(node.outputs().size()) + " outputs");
  }
  for (const ir::TensorType& t : types) KEEL_RETURN_IF_ERROR(CheckShape(node, t.shape, "output shape"));
  return types;
}

Status SetInferredTypes(ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, InferNodeTypes(node));
  for (size_t i = 0; i < types.size(); ++i) node.output(i)->set_type(types[i]);
  return Status::Ok();
}

Result<std::vector<ir::TensorDataPtr>> EvaluateNode(const ir::Node& node, const std::vector<ir::TensorDataPtr>& inputs) {
  if (node.body()) return EvaluateGraph(*node.body(), inputs);  // a fused group: its nodes in order
  KEEL_ASSIGN_OR_RETURN(const OpDef* def, DefOf(node));
  if (inputs.size() != node.inputs().size()) {
    return Internal(NodeDescription(node) + ": evaluator got " + std::to_string(inputs.size()) + " inputs, node has " +
                    std::to_string(node.inputs().size()));
  }
  if (PackedWeightRows(node) != 0) return EvaluatePackedWeight(node, inputs);
  if (PackedColumns(node) != 0) return EvaluatePackedColumns(node, inputs);
  if (IsChannelsLast(node)) return EvaluateChannelsLast(*def, node, inputs);
  if (WinogradTile(node) != 0) return EvaluateWinograd(*def, node, inputs);
  // Evaluate a typed, canonical copy whose operands are the given values as
  // constants: the node itself may be untyped (hand-built graphs, bodies) and
  // its operands need not be constants in its own graph.
  ir::Graph scratch;
  std::vector<ir::Value*> operands;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!node.input(i)) {
      operands.push_back(nullptr);
      continue;
    }
    if (inputs[i]) {
      operands.push_back(scratch.AddConstant(node.input(i)->name(), inputs[i]));
    } else if (def->value_independent && node.input(i)->has_type()) {
      // Shape, Size: the type is all they read.
      operands.push_back(scratch.AddInput(node.input(i)->name(), node.input(i)->type()));
    } else {
      return NodeError(node, "missing value for input " + std::to_string(i));
    }
  }
  ir::Node* copy = scratch.AddNode(node.op_type(), node.name(), operands, node.outputs().size());
  copy->attrs() = node.attrs();
  KEEL_RETURN_IF_ERROR(CanonicalizeNode(*copy));
  KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> out_types, InferNodeTypes(*copy));
  for (size_t i = 0; i < out_types.size(); ++i) copy->output(i)->set_type(out_types[i]);
  std::vector<ir::TensorDataPtr> args;
  for (const ir::Value* v : copy->inputs()) args.push_back(v ? v->constant() : nullptr);
  if (def->evaluate) return def->evaluate(*copy, args, out_types);
  if (def->expand) {  // a composite op: the value of its expansion
    for (ir::Value* out : copy->outputs()) scratch.AddOutput(out);
    KEEL_RETURN_IF_ERROR(ExpandNode(scratch, copy));
    return EvaluateGraph(scratch, {});
  }
  if (def->fusion == FusionClass::kElementwise || def->injective) return InterpretOutputs(*def, *copy, args, out_types);
  return NodeUnsupported(node, "no reference evaluation for op " + def->name);
}

Result<std::vector<ir::TensorDataPtr>> EvaluateGraph(const ir::Graph& graph,
                                                     const std::vector<ir::TensorDataPtr>& inputs) {
  if (inputs.size() != graph.inputs().size()) {
    return InvalidArgument("graph '" + graph.name() + "' expects " + std::to_string(graph.inputs().size()) +
                           " inputs, got " + std::to_string(inputs.size()));
  }
  // Keyed by value id (stable, deterministic), not by pointer.
  std::unordered_map<int64_t, ir::TensorDataPtr> env;
  for (size_t i = 0; i < inputs.size(); ++i) env[graph.inputs()[i]->id()] = inputs[i];
  for (const ir::Value* v : graph.values()) {
    if (v->is_constant()) env[v->id()] = v->constant();
  }
  for (const ir::Node* n : graph.nodes()) {
    std::vector<ir::TensorDataPtr> args;
    for (const ir::Value* v : n->inputs()) {
      if (!v) {
        args.push_back(nullptr);
        continue;
      }
      auto it = env.find(v->id());
      if (it == env.end()) return InvalidArgument(NodeDescription(*n) + ": input '" + v->name() + "' has no value");
      args.push_back(it->second);
    }
    KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorDataPtr> outs, EvaluateNode(*n, args));
    for (size_t i = 0; i < outs.size() && i < n->outputs().size(); ++i) env[n->output(i)->id()] = outs[i];
  }
  std::vector<ir::TensorDataPtr> result;
  for (const ir::Value* v : graph.outputs()) {
    auto it = env.find(v->id());
    if (it == env.end()) return InvalidArgument("graph output '" + v->name() + "' was not computed");
    result.push_back(it->second);
  }
  return result;
}

}  // namespace keel::ops
