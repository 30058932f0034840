// compiler/passes/winograd.cc — the Winograd pass (see winograd.h).
#include "compiler/passes/winograd.h"

#include <map>
#include <utility>

#include "compiler/ops/semantics.h"
#include "compiler/ops/winograd.h"

namespace keel::passes {

Status WinogradPass::Run(ir::Graph& graph) {
  if (!tile_) return Status::Ok();
  std::map<std::pair<int64_t, int64_t>, ir::Value*> transformed;  // (weight value id, m) -> U
  for (ir::Node* n : graph.nodes()) {
    if (!ops::WinogradApplies(*n)) continue;
    const int64_t m = tile_(*n);
    if (m == 0) continue;
    ir::Value* w = n->input(1);
    auto key = std::make_pair(static_cast<int64_t>(w->id()), m);
    auto it = transformed.find(key);
    if (it == transformed.end()) {
      KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr u, ops::WinogradWeight(*w->constant(), m));
      it = transformed.emplace(key, graph.AddConstant(w->name() + "/winograd" + std::to_string(m), u)).first;
    }
    const ir::TensorType old_type = n->output(0)->type();
    n->SetInput(1, it->second);
    n->attrs().Set(ops::kWinogradAttr, m);
    KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, ops::InferNodeTypes(*n));
    if (!(types[0] == old_type)) {
      return Internal(ir::NodeDescription(*n) + ": Winograd form has type " + types[0].ToString() + ", expected " +
                      old_type.ToString());
    }
  }
  return Status::Ok();
}

}  // namespace keel::passes
