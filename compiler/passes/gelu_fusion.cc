// compiler/passes/gelu_fusion.cc — the gelu-fusion pass (see gelu_fusion.h).
#include "compiler/passes/gelu_fusion.h"

#include <cmath>
#include <string>
#include <vector>

#include "compiler/passes/dce.h"
#include "compiler/passes/pattern_match.h"

namespace keel::passes {
namespace {

using ir::Node;
using ir::Value;

bool Near(double v, double want) { return std::abs(v - want) <= 1e-5 * std::abs(want); }

// The single node using `v` (which has no other use), or null.
Node* SoleUser(const ir::Graph& g, const Value* v) { return SoleUse(g, v) ? v->uses()[0].node : nullptr; }

// The other operand of the binary node `n` of role `role` next to `v`, or null.
Value* OtherOperand(const Node* n, ops::EpilogueRole role, const Value* v) {
  if (!n || EpilogueRoleOf(n) != role || n->inputs().size() != 2 || n->outputs().size() != 1) return nullptr;
  if (n->input(0) == v) return n->input(1);
  if (n->input(1) == v) return n->input(0);
  return nullptr;
}

// The value GELU(x) of the subgraph around the Erf node `erf`, or null.
Value* MatchErfGelu(const ir::Graph& g, const Node* erf, Value** x_out) {
  if (erf->inputs().size() != 1 || erf->outputs().size() != 1 || !erf->output(0)->has_type()) return nullptr;
  // x / sqrt 2 (or x * 1/sqrt 2), used only by Erf.
  Value* scaled = erf->input(0);
  if (!scaled || !SoleUse(g, scaled)) return nullptr;
  const auto s = ScalarScale(scaled->producer());
  if (!s || !Near(s->second, M_SQRT1_2)) return nullptr;
  Value* x = s->first;
  const ir::TensorType& type = x->type();
  // 1 + erf(...), used only by the product.
  Node* add = SoleUser(g, erf->output(0));
  const std::optional<double> one = ConstScalar(OtherOperand(add, ops::EpilogueRole::kAdd, erf->output(0)));
  if (!one || *one != 1.0 || !(add->output(0)->type() == type)) return nullptr;
  Value* a = add->output(0);
  // The product of x, 0.5 and a, in any association.
  Node* mul = SoleUser(g, a);
  Value* other = OtherOperand(mul, ops::EpilogueRole::kMul, a);
  if (!other || !(mul->output(0)->type() == type)) return nullptr;
  if (other == x) {  // (x * a) * 0.5
    Node* half = SoleUser(g, mul->output(0));
    const auto h = ScalarScale(half);
    if (!h || h->first != mul->output(0) || h->second != 0.5) return nullptr;
    *x_out = x;
    return half->output(0);
  }
  if (const auto h = SoleUse(g, other) ? ScalarScale(other->producer()) : std::nullopt) {  // (x * 0.5) * a
    if (h->first != x || h->second != 0.5) return nullptr;
    *x_out = x;
    return mul->output(0);
  }
  if (const auto h = ScalarScale(mul); h && h->first == a && h->second == 0.5) {  // x * (a * 0.5)
    Node* last = SoleUser(g, mul->output(0));
    if (OtherOperand(last, ops::EpilogueRole::kMul, mul->output(0)) != x || !(last->output(0)->type() == type)) {
      return nullptr;
    }
    *x_out = x;
    return last->output(0);
  }
  return nullptr;
}

}  // namespace

Status GeluFusionPass::Run(ir::Graph& graph) {
  bool changed = false;
  const std::vector<Node*> nodes = graph.nodes();  // a snapshot: the new nodes are not visited
  for (Node* n : nodes) {
    if (n->op_type() != "Erf" || n->graph() != &graph) continue;
    Value* x = nullptr;
    Value* y = MatchErfGelu(graph, n, &x);
    if (!y) continue;
    Node* gelu = graph.InsertNodeBefore(y->producer(), "Gelu", y->name() + "/gelu", {x}, 1);
    gelu->attrs().Set("approximate", std::string("none"));
    Value* out = gelu->output(0);
    out->set_type(y->type());
    const std::string name = y->name();
    y->set_name(name + "/unfused");
    out->set_name(name);
    graph.ReplaceAllUsesWith(y, out);
    changed = true;
  }
  return changed ? EliminateDeadCode(graph) : Status::Ok();
}

}  // namespace keel::passes
