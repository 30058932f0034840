// compiler/passes/weight_packing.cc — the weight-packing pass (see weight_packing.h).
#include "compiler/passes/weight_packing.h"

#include <map>
#include <string>
#include <tuple>
#include <utility>

namespace keel::passes {

Status WeightPackingPass::Run(ir::Graph& graph) {
  KEEL_RETURN_IF_ERROR(PackConvolutions(graph));
  return PackProducts(graph);
}

Status WeightPackingPass::PackConvolutions(ir::Graph& graph) {
  if (!rows_) return Status::Ok();
  std::map<std::pair<int64_t, int64_t>, ir::Value*> packed;  // (weight value id, rows) -> packed constant
  for (ir::Node* n : graph.nodes()) {
    ops::WeightMatrices mx;
    if (!ops::PackedWeightApplies(*n, &mx)) continue;
    const int64_t mr = rows_(*n, mx);
    if (mr <= 0) continue;
    ir::Value* w = n->input(1);
    auto key = std::make_pair(static_cast<int64_t>(w->id()), mr);
    auto it = packed.find(key);
    if (it == packed.end()) {
      KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr p, ops::PackWeight(*w->constant(), mx, mr));
      it = packed.emplace(key, graph.AddConstant(w->name() + "/panels" + std::to_string(mr), p)).first;
    }
    n->SetInput(1, it->second);
    n->attrs().Set(ops::kPackedRowsAttr, mr);
  }
  return Status::Ok();
}

Status WeightPackingPass::PackProducts(ir::Graph& graph) {
  if (!columns_) return Status::Ok();
  // (B value id, transposed, columns per panel) -> panels
  std::map<std::tuple<int64_t, bool, int64_t>, ir::Value*> packed;
  for (ir::Node* n : graph.nodes()) {
    ops::BMatrix b;
    if (!ops::PackedColumnsApplies(*n, &b)) continue;
    const int64_t nr = columns_(*n, b);
    if (nr <= 0) continue;
    ir::Value* w = n->input(1);
    auto key = std::make_tuple(static_cast<int64_t>(w->id()), b.transposed, nr);
    auto it = packed.find(key);
    if (it == packed.end()) {
      KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr p, ops::PackColumns(*w->constant(), b, nr));
      const std::string name = w->name() + (b.transposed ? "/panels_t" : "/panels") + std::to_string(nr);
      it = packed.emplace(key, graph.AddConstant(name, p)).first;
    }
    ops::SetPackedColumns(*n, it->second, b);
  }
  return Status::Ok();
}

}  // namespace keel::passes
