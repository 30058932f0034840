// compiler/passes/verify.cc — final checks (see verify.h).
#include "compiler/passes/verify.h"

#include "compiler/ops/registry.h"

namespace keel::passes {

Status VerifyPass::Run(ir::Graph& graph) {
  KEEL_RETURN_IF_ERROR(graph.Verify(/*require_types=*/true));
  for (const ir::Node* n : graph.nodes()) {
    const ops::OpDef* def = ops::FindOp(*n);
    if (!def) return Internal(ir::NodeDescription(*n) + ": unknown op after the pipeline");
    if (def->fusion == ops::FusionClass::kNone && n->op_type() != "keel.Fused") {
      return Internal(ir::NodeDescription(*n) + " survived the pipeline" +
                      (def->removed_by.empty() ? std::string() : " (" + def->removed_by + " should have removed it)"));
    }
    if (n->op_type() == "keel.Fused") {
      if (!n->body()) return Internal(ir::NodeDescription(*n) + " has no body");
      for (size_t i = 0; i < n->inputs().size(); ++i) {
        if (!(n->input(i)->type() == n->body()->inputs()[i]->type())) {
          return Internal(ir::NodeDescription(*n) + ": input " + std::to_string(i) + " type " +
                          n->input(i)->type().ToString() + " != body input type " +
                          n->body()->inputs()[i]->type().ToString());
        }
      }
      for (size_t i = 0; i < n->outputs().size(); ++i) {
        if (!(n->output(i)->type() == n->body()->outputs()[i]->type())) {
          return Internal(ir::NodeDescription(*n) + ": output " + std::to_string(i) + " type differs from body");
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace keel::passes
