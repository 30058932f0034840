// compiler/passes/fusion.cc — operator fusion (rules in fusion.h).
#include "compiler/passes/fusion.h"

#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/type_inference.h"

namespace keel::passes {

OpClass ClassifyOp(const std::string& op) {
  if (ir::IsElementwiseBinary(op) || (ir::IsElementwiseUnary(op) && op != "Dropout")) return OpClass::kElementwise;
  if (op == "Transpose" || op == "Slice" || op == "Gather" || op == "Concat") return OpClass::kInjective;
  if (op == "Conv" || op == "Gemm" || op == "MatMul" || op == "MaxPool" || op == "AveragePool" ||
      op == "GlobalAveragePool" || op == "ReduceMean" || op == "Softmax" || op == "LayerNormalization") {
    return OpClass::kAnchor;
  }
  return OpClass::kOpaque;
}

namespace {

// Builds the fused node for `chain` (in order) and removes the originals.
Status FuseChain(ir::Graph& g, const std::vector<ir::Node*>& chain, const std::string& pattern) {
  auto body = std::make_unique<ir::Graph>();
  body->set_name(chain.front()->name());
  std::unordered_set<const ir::Node*> members(chain.begin(), chain.end());
  std::vector<ir::Value*> outer_inputs;
  std::unordered_map<const ir::Value*, ir::Value*> map;  // outer value → body value
  std::vector<std::string> ops;
  for (ir::Node* n : chain) {
    std::vector<ir::Value*> body_inputs;
    for (ir::Value* in : n->inputs()) {
      if (!in) {
        body_inputs.push_back(nullptr);
        continue;
      }
      auto it = map.find(in);
      if (it == map.end()) {
        // Outside value: becomes a body input (first use order).
        ir::Value* bin = body->AddInput(in->name(), in->type());
        outer_inputs.push_back(in);
        it = map.emplace(in, bin).first;
      }
      body_inputs.push_back(it->second);
    }
    std::vector<std::string> out_names;
    for (ir::Value* out : n->outputs()) out_names.push_back(out->name());
    ir::Node* clone = body->AddNode(n->op_type(), n->name(), body_inputs, n->outputs().size(), out_names);
    for (const auto& [k, v] : n->attrs().all()) clone->attrs().Set(k, v);
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      clone->output(i)->set_type(n->output(i)->type());
      map[n->output(i)] = clone->output(i);
    }
    ops.push_back(n->op_type());
  }
  ir::Value* last = chain.back()->output(0);
  body->AddOutput(map.at(last));

  std::string name = chain.front()->name();
  if (chain.size() > 1) {
    name += '+';
    name += std::to_string(chain.size());
  }
  ir::Node* fused = g.InsertNodeBefore(chain.back(), "keel.Fused", name, outer_inputs, 1);
  fused->attrs().Set("keel.pattern", pattern);
  fused->attrs().Set("keel.anchor", chain.front()->op_type());
  fused->attrs().Set("keel.ops", ops);
  fused->output(0)->set_type(last->type());
  std::string out_name = last->name();
  g.ReplaceAllUsesWith(last, fused->output(0));
  fused->output(0)->set_name(out_name);
  fused->set_body(std::move(body));
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) KEEL_RETURN_IF_ERROR(g.RemoveNode(*it));
  return Status::Ok();
}

}  // namespace

Status FusionPass::Run(ir::Graph& graph) {
  std::unordered_set<const ir::Node*> grouped;
  std::vector<std::pair<std::vector<ir::Node*>, std::string>> groups;
  for (ir::Node* n : graph.nodes()) {
    if (grouped.count(n) || n->body()) continue;
    OpClass cls = ClassifyOp(n->op_type());
    if (cls == OpClass::kOpaque) continue;
    if (n->outputs().size() != 1) continue;
    std::vector<ir::Node*> chain = {n};
    grouped.insert(n);
    bool extend = cls != OpClass::kAnchor || fuse_anchors_;
    while (extend) {
      ir::Value* out = chain.back()->output(0);
      if (out->uses().size() != 1 || graph.IsGraphOutput(out)) break;
      ir::Node* user = out->uses()[0].node;
      if (grouped.count(user) || ClassifyOp(user->op_type()) != OpClass::kElementwise ||
          user->outputs().size() != 1) {
        break;
      }
      chain.push_back(user);
      grouped.insert(user);
    }
    std::string pattern = cls == OpClass::kAnchor      ? (chain.size() > 1 ? "anchor+epilogue" : "anchor")
                          : cls == OpClass::kInjective ? "injective"
                                                       : "elementwise";
    groups.emplace_back(std::move(chain), pattern);
  }
  for (const auto& [chain, pattern] : groups) KEEL_RETURN_IF_ERROR(FuseChain(graph, chain, pattern));
  // The fused node sits where the chain ended; external inputs of later chain
  // members may be defined after the chain's start, which is fine there, but
  // re-sort to be safe (stable: valid orders are kept).
  return graph.TopologicalSort();
}

}  // namespace keel::passes
