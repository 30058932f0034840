// compiler/ops/op_twin.cc — the twin of a node in an internal form (see the header).
#include "compiler/ops/op_twin.h"

namespace keel::ops {

Result<OpTwin> MakeOpTwin(const ir::Node& node, const std::string& form_attr, const TwinOperandFn& operand) {
  OpTwin t;
  t.graph = std::make_unique<ir::Graph>();
  std::vector<ir::Value*> inputs;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const ir::Value* in = node.input(i);
    if (!in) {
      inputs.push_back(nullptr);
      continue;
    }
    if (!in->has_type()) return Internal(ir::NodeDescription(node) + ": input " + std::to_string(i) + " has no type");
    KEEL_ASSIGN_OR_RETURN(ir::Value * v, operand(*t.graph, i, *in));
    inputs.push_back(v);
  }
  t.twin = t.graph->AddNode(node.op_type(), node.name(), inputs, node.outputs().size());
  t.twin->attrs() = node.attrs();
  t.twin->attrs().Erase(form_attr);
  return t;
}

}  // namespace keel::ops
