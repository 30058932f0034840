// compiler/passes/constant_folding.cc — constant folding (see constant_folding.h).
#include "compiler/passes/constant_folding.h"

#include <algorithm>

#include "compiler/ops/registry.h"
#include "compiler/ops/semantics.h"

namespace keel::passes {

Result<bool> TryFoldNode(ir::Graph& graph, ir::Node* node, int64_t max_bytes) {
  if (node->body() || node->inputs().empty()) return false;
  const ops::OpDef* def = ops::FindOp(*node);
  if (!def) return false;
  const bool value_independent = def->value_independent;
  int64_t dead_input_bytes = 0;
  for (ir::Value* in : node->inputs()) {
    if (in == nullptr) continue;
    if (value_independent) {
      if (!in->has_type()) return false;
      continue;
    }
    if (!in->is_constant()) return false;
    bool only_here = true;
    for (const auto& u : in->uses()) only_here = only_here && u.node == node;
    if (only_here) dead_input_bytes += in->constant()->type.ByteSize();
  }
  // The Identity that copies a folded constant into a graph output stays.
  if (def->identity_like && graph.IsGraphOutput(node->output(0))) return false;
  int64_t out_bytes = 0;
  bool typed = true;
  for (ir::Value* out : node->outputs()) {
    if (!out->has_type()) typed = false;
    else out_bytes += out->type().ByteSize();
  }
  if (typed && out_bytes > max_bytes && out_bytes > dead_input_bytes) return false;
  std::vector<ir::TensorDataPtr> args;
  for (ir::Value* in : node->inputs()) args.push_back(in ? in->constant() : nullptr);
  auto outs = ops::EvaluateNode(*node, args);
  if (!outs.ok()) {
    // Ops the evaluator cannot run (e.g. f16 data) simply stay; real errors
    // (bad index, shape mismatch) are reported.
    if (outs.status().code() == StatusCode::kUnsupported) return false;
    return outs.status();
  }
  if (!typed) {
    out_bytes = 0;
    for (const auto& t : *outs) out_bytes += t->type.ByteSize();
    if (out_bytes > max_bytes && out_bytes > dead_input_bytes) return false;
  }
  for (size_t i = 0; i < node->outputs().size(); ++i) ReplaceWithConstant(graph, node, node->output(i), (*outs)[i]);
  KEEL_RETURN_IF_ERROR(graph.RemoveNode(node));
  return true;
}

void ReplaceWithConstant(ir::Graph& graph, ir::Node* producer, ir::Value* value, ir::TensorDataPtr data) {
  const std::string name = value->name();
  ir::Value* c = graph.AddConstant(name, data);
  if (!graph.IsGraphOutput(value)) {
    graph.ReplaceAllUsesWith(value, c);
    return;
  }
  c->set_name(name + "/constant");
  ir::Node* copy = graph.InsertNodeBefore(producer, "Identity", producer->name() + "/output", {c}, 1);
  copy->output(0)->set_type(data->type);
  graph.ReplaceAllUsesWith(value, copy->output(0));
  value->set_name(name + "/folded");
  copy->output(0)->set_name(name);
}

Status ConstantFoldingPass::Run(ir::Graph& graph) {
  for (ir::Node* n : graph.nodes()) {
    KEEL_ASSIGN_OR_RETURN(bool folded, TryFoldNode(graph, n, max_bytes_));
    (void)folded;
  }
  graph.RemoveDeadValues();
  return Status::Ok();
}

}  // namespace keel::passes
