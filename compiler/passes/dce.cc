// compiler/passes/dce.cc — dead-code elimination (see dce.h).
#include "compiler/passes/dce.h"

namespace keel::passes {

Status EliminateDeadCode(ir::Graph& graph) {
  // Walking backwards removes whole dead chains in one sweep: a consumer goes
  // before its producers are examined.
  std::vector<ir::Node*> nodes = graph.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    ir::Node* n = *it;
    bool live = false;
    for (ir::Value* out : n->outputs()) {
      if (!out->uses().empty() || graph.IsGraphOutput(out)) live = true;
    }
    if (!live) {
      KEEL_RETURN_IF_ERROR(graph.RemoveNode(n));
    } else if (n->body()) {
      KEEL_RETURN_IF_ERROR(EliminateDeadCode(*n->body()));
    }
  }
  graph.RemoveDeadValues();
  return Status::Ok();
}

Status DcePass::Run(ir::Graph& graph) { return EliminateDeadCode(graph); }

}  // namespace keel::passes
