// compiler/passes/constant_folding.cc — constant folding (see constant_folding.h).
#include "compiler/passes/constant_folding.h"

#include <algorithm>

#include "compiler/ir/reference_eval.h"
#include "compiler/ir/type_inference.h"

namespace keel::passes {

Result<bool> TryFoldShape(ir::Graph& graph, ir::Node* node) {
  if (node->op_type() != "Shape" || !node->input(0) || !node->input(0)->has_type()) return false;
  if (graph.IsGraphOutput(node->output(0))) return false;
  const auto& shape = node->input(0)->type().shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  KEEL_ASSIGN_OR_RETURN(int64_t start, node->attrs().GetInt("start", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t end, node->attrs().GetInt("end", rank));
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> dims(shape.begin() + start, shape.begin() + end);
  ir::Value* c = graph.AddConstant(node->output(0)->name(), ir::MakeTensorI64({end - start}, dims));
  graph.ReplaceAllUsesWith(node->output(0), c);
  KEEL_RETURN_IF_ERROR(graph.RemoveNode(node));
  return true;
}

Result<bool> TryFoldNode(ir::Graph& graph, ir::Node* node, int64_t max_bytes) {
  if (node->body() || node->inputs().empty()) return false;
  int64_t dead_input_bytes = 0;
  for (ir::Value* in : node->inputs()) {
    if (in == nullptr) continue;
    if (!in->is_constant()) return false;
    bool only_here = true;
    for (const auto& u : in->uses()) only_here = only_here && u.node == node;
    if (only_here) dead_input_bytes += in->constant()->type.ByteSize();
  }
  for (ir::Value* out : node->outputs()) {
    if (graph.IsGraphOutput(out)) return false;
  }
  int64_t out_bytes = 0;
  bool typed = true;
  for (ir::Value* out : node->outputs()) {
    if (!out->has_type()) typed = false;
    else out_bytes += out->type().ByteSize();
  }
  if (typed && out_bytes > max_bytes && out_bytes > dead_input_bytes) return false;
  std::vector<ir::TensorDataPtr> args;
  for (ir::Value* in : node->inputs()) args.push_back(in ? in->constant() : nullptr);
  auto outs = ir::EvaluateNode(*node, args);
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
  for (size_t i = 0; i < node->outputs().size(); ++i) {
    ir::Value* c = graph.AddConstant(node->output(i)->name(), (*outs)[i]);
    graph.ReplaceAllUsesWith(node->output(i), c);
  }
  KEEL_RETURN_IF_ERROR(graph.RemoveNode(node));
  return true;
}

Status ConstantFoldingPass::Run(ir::Graph& graph) {
  for (ir::Node* n : graph.nodes()) {
    KEEL_ASSIGN_OR_RETURN(bool folded, TryFoldShape(graph, n));
    if (folded) continue;
    KEEL_ASSIGN_OR_RETURN(folded, TryFoldNode(graph, n, max_bytes_));
    (void)folded;
  }
  graph.RemoveDeadValues();
  return Status::Ok();
}

}  // namespace keel::passes
