// compiler/passes/fusion.cc — operator fusion (rules in fusion.h).
#include "compiler/passes/fusion.h"

#include <unordered_map>
#include <unordered_set>

#include "compiler/ops/registry.h"

namespace keel::passes {

OpClass ClassifyOp(const ir::Node& node) {
  const ops::OpDef* def = ops::FindOp(node);
  if (!def || node.outputs().size() != 1) return OpClass::kOpaque;
  switch (def->fusion) {
    case ops::FusionClass::kElementwise: return OpClass::kElementwise;
    case ops::FusionClass::kInjective: return OpClass::kInjective;
    case ops::FusionClass::kAnchor: return OpClass::kAnchor;
    default: return OpClass::kOpaque;
  }
}

namespace {

// Builds the fused node for `chain` (in order) and removes the originals.
Status FuseChain(ir::Graph& g, const std::vector<ir::Node*>& chain, const ir::Node* lead, const std::string& pattern) {
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
  fused->attrs().Set("keel.anchor", lead->op_type());
  fused->attrs().Set("keel.ops", ops);
  fused->output(0)->set_type(last->type());
  std::string out_name = last->name();
  g.ReplaceAllUsesWith(last, fused->output(0));
  fused->output(0)->set_name(out_name);
  fused->set_body(std::move(body));
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) KEEL_RETURN_IF_ERROR(g.RemoveNode(*it));
  return Status::Ok();
}

// An anchor whose kernel is generated (no vendor-library candidate): it may
// take prologues and change the element type in its epilogue.
bool GeneratedAnchor(const ir::Node& n) {
  const ops::OpDef* def = ops::FindOp(n);
  return def && def->fusion == ops::FusionClass::kAnchor && def->library == ops::LibraryCall::kNone;
}

// `cast` converts the result of `gemm`, a half GEMM/MatMul without a bias
// operand, to f32: the library writes f32 (cuBLASLt's D in f32 from half A and
// B; it takes a bias only in D's type, so a half bias operand rules it out).
bool WidensToF32(const ir::Node& gemm, const ir::Node& cast) {
  const ops::OpDef* def = ops::FindOp(gemm);
  if (!def || (def->library != ops::LibraryCall::kGemm && def->library != ops::LibraryCall::kMatMul)) return false;
  if (gemm.inputs().size() > 2 && gemm.input(2)) return false;
  return ops::WidensHalfToF32(cast);
}

// The generated anchor or injective node `n` is a prologue of (rule 0 in
// fusion.h: a one-input elementwise node that changes the element type and
// whose only use is that node), or null.
ir::Node* PrologueOf(const ir::Graph& graph, const ir::Node& n) {
  if (n.body() || ClassifyOp(n) != OpClass::kElementwise) return nullptr;
  size_t operands = 0;
  const ir::Value* in = nullptr;
  for (const ir::Value* v : n.inputs()) {
    if (!v) continue;
    ++operands;
    in = v;
  }
  ir::Value* out = n.output(0);
  if (operands != 1 || out->uses().size() != 1 || graph.IsGraphOutput(out)) return nullptr;
  if (!in->has_type() || !out->has_type() || in->type().dtype == out->type().dtype) return nullptr;
  ir::Node* user = out->uses()[0].node;
  return !user->body() && (GeneratedAnchor(*user) || ClassifyOp(*user) == OpClass::kInjective) ? user : nullptr;
}

// The row normalization the elementwise node `n` is a sum prologue of (rule 0b
// in fusion.h: operands all computed tensors of its output's shape, its only
// use the normalization's data input, directly or through that input's rule-0
// prologue), or null.
ir::Node* SumPrologueOf(const ir::Graph& graph, const ir::Node& n) {
  if (n.body() || ClassifyOp(n) != OpClass::kElementwise) return nullptr;
  ir::Value* out = n.output(0);
  if (out->uses().size() != 1 || graph.IsGraphOutput(out) || !out->has_type()) return nullptr;
  size_t operands = 0;
  for (const ir::Value* v : n.inputs()) {
    if (!v) continue;
    if (v->is_constant() || !v->has_type() || v->type().shape != out->type().shape) return nullptr;
    ++operands;
  }
  if (operands < 2 || out->uses()[0].input_index != 0) return nullptr;
  ir::Node* user = out->uses()[0].node;
  if (ir::Node* anchor = PrologueOf(graph, *user)) {
    if (user->output(0)->uses()[0].input_index != 0) return nullptr;
    user = anchor;
  }
  const ops::OpDef* def = user->body() ? nullptr : ops::FindOp(*user);
  return def && def->reads_row_once ? user : nullptr;  // the normalized data, not a scale or bias
}

// The prologues of each generated anchor and injective node, in graph order.
std::unordered_map<const ir::Node*, std::vector<ir::Node*>> FindPrologues(ir::Graph& graph, bool sum_prologues) {
  std::unordered_map<const ir::Node*, std::vector<ir::Node*>> prologues;
  for (ir::Node* n : graph.nodes()) {
    ir::Node* anchor = PrologueOf(graph, *n);
    if (!anchor && sum_prologues) anchor = SumPrologueOf(graph, *n);
    if (anchor) prologues[anchor].push_back(n);
  }
  return prologues;
}

// A keel.Reshape view between a producer and its elementwise user hides the
// user from the producer's epilogue chain (a GEMM's residual add behind the
// reshapes of a batch-first transformer). Moves one such user above the view
// (rule -1 in fusion.h) when every other operand is a same-shape tensor (read
// through a view of the producer's shape) or a single element, and is not a
// prologue (rule 0: a Cast in front of a LayerNorm stays next to it; rule 0b
// with `sum_prologues`: a residual add in front of one). Returns whether it did.
Result<bool> HoistAboveView(ir::Graph& g, ir::Node* view, std::unordered_set<const ir::Node*>& operand_views,
                            bool sum_prologues) {
  // The views this made of other operands stay: hoisting above them would turn back.
  if (view->op_type() != "keel.Reshape" || operand_views.count(view)) return false;
  // A view of a single-use view is one view of the first's input.
  while (ir::Node* inner = view->input(0) ? view->input(0)->producer() : nullptr) {
    ir::Value* mid = view->input(0);
    if (inner->op_type() != "keel.Reshape" || operand_views.count(inner) || mid->uses().size() != 1 ||
        g.IsGraphOutput(mid)) {
      break;
    }
    view->SetInput(0, inner->input(0));
    KEEL_RETURN_IF_ERROR(g.RemoveNode(inner));
  }
  ir::Value* x = view->input(0);
  ir::Value* v = view->output(0);
  ir::Node* producer = x ? x->producer() : nullptr;
  if (!producer || producer->body() || x->uses().size() != 1 || g.IsGraphOutput(x) || v->uses().size() != 1 ||
      g.IsGraphOutput(v) || !x->has_type() || !v->has_type()) {
    return false;
  }
  const OpClass producer_class = ClassifyOp(*producer);
  if (producer_class != OpClass::kAnchor && producer_class != OpClass::kElementwise) return false;
  ir::Node* user = v->uses()[0].node;
  ir::Value* out = user->output(0);
  if (user->body() || ClassifyOp(*user) != OpClass::kElementwise || PrologueOf(g, *user) ||
      (sum_prologues && SumPrologueOf(g, *user)) || g.IsGraphOutput(out) ||
      !out->has_type() || out->type().shape != v->type().shape) {
    return false;
  }
  const std::vector<int64_t>& x_shape = x->type().shape;
  for (ir::Value* in : user->inputs()) {
    if (!in || in == v) continue;
    if (!in->has_type()) return false;
    const bool same_shape = in->type().shape == v->type().shape;
    const bool single = in->type().NumElements() == 1 && in->type().shape.size() <= x_shape.size();
    if (!same_shape && !single) return false;
  }
  for (size_t i = 0; i < user->inputs().size(); ++i) {
    ir::Value* in = user->input(i);
    if (in == v) {
      user->SetInput(i, x);
    } else if (in && in->type().shape == v->type().shape) {
      ir::Node* review = g.InsertNodeBefore(user, "keel.Reshape", view->name(), {in}, 1);
      review->attrs().Set("shape", x_shape);
      review->output(0)->set_type({in->type().dtype, x_shape});
      user->SetInput(i, review->output(0));
      operand_views.insert(review);
    }
  }
  // The user now computes in the producer's shape; a view gives its old shape back.
  ir::Node* back = g.InsertNodeBefore(user, "keel.Reshape", view->name(), {x}, 1);
  back->attrs().Set("shape", v->type().shape);
  back->output(0)->set_type(out->type());
  const std::string name = out->name();
  g.ReplaceAllUsesWith(out, back->output(0));
  back->SetInput(0, out);
  out->set_type({out->type().dtype, x_shape});
  out->set_name(name + "/rows");
  back->output(0)->set_name(name);
  KEEL_RETURN_IF_ERROR(g.RemoveNode(view));
  return true;
}

Status HoistEpiloguesAboveViews(ir::Graph& g, bool sum_prologues) {
  std::unordered_set<const ir::Node*> operand_views;
  bool changed = true;
  while (changed) {
    changed = false;
    for (ir::Node* n : g.nodes()) {
      KEEL_ASSIGN_OR_RETURN(changed, HoistAboveView(g, n, operand_views, sum_prologues));
      if (changed) break;  // nodes were removed: take a fresh list
    }
  }
  return g.TopologicalSort();
}

}  // namespace

Status FusionPass::Run(ir::Graph& graph) {
  if (fuse_anchors_) KEEL_RETURN_IF_ERROR(HoistEpiloguesAboveViews(graph, sum_prologues_));
  struct Group {
    std::vector<ir::Node*> chain;
    const ir::Node* lead;  // the anchor, injective or first elementwise node
    std::string pattern;
  };
  std::unordered_set<const ir::Node*> grouped;
  std::vector<Group> groups;
  std::unordered_map<const ir::Node*, std::vector<ir::Node*>> prologues;
  if (fuse_anchors_) prologues = FindPrologues(graph, sum_prologues_);
  std::unordered_set<const ir::Node*> in_prologue;
  for (const auto& [anchor, nodes] : prologues) in_prologue.insert(nodes.begin(), nodes.end());
  for (ir::Node* n : graph.nodes()) {
    if (grouped.count(n) || in_prologue.count(n) || n->body()) continue;
    OpClass cls = ClassifyOp(*n);
    if (cls == OpClass::kOpaque) continue;
    std::vector<ir::Node*> chain;
    if (auto it = prologues.find(n); it != prologues.end()) chain = it->second;
    chain.push_back(n);
    grouped.insert(chain.begin(), chain.end());
    bool extend = cls != OpClass::kAnchor || fuse_anchors_;
    while (extend && chain.size() < kMaxGroupNodes) {
      ir::Value* out = chain.back()->output(0);
      if (out->uses().size() != 1 || graph.IsGraphOutput(out)) break;
      ir::Node* user = out->uses()[0].node;
      if (grouped.count(user) || in_prologue.count(user) || ClassifyOp(*user) != OpClass::kElementwise) break;
      // An anchor's epilogue is applied where the anchor stores each element: it
      // must keep the anchor's output shape (a broadcast that grows it, e.g. an
      // SE block's [N,C,1,1] gate times [N,C,H,W], starts a new group instead).
      if (cls == OpClass::kAnchor && user->output(0)->type().shape != n->output(0)->type().shape) break;
      // It also keeps the element type: a Cast away from it (a half conv's result
      // widened for a LayerNorm or an f32 model output) starts a new group, so the
      // anchor stays a cuBLASLt/cuDNN candidate (they write their own type in
      // place) and the cast is a cheap elementwise kernel of its own. A generated
      // anchor converts at its store like any kernel, and a half GEMM without a
      // bias operand writes f32 itself (cuBLASLt's D in f32 from half A and B).
      const ir::DType from = chain.back()->output(0)->type().dtype, to = user->output(0)->type().dtype;
      if (cls == OpClass::kAnchor && !GeneratedAnchor(*n) && to != from && !(chain.size() == 1 && WidensToF32(*n, *user)))
        break;
      chain.push_back(user);
      grouped.insert(user);
    }
    std::string pattern = cls == OpClass::kAnchor      ? (chain.size() > 1 ? "anchor+epilogue" : "anchor")
                          : cls == OpClass::kInjective ? "injective"
                                                       : "elementwise";
    groups.push_back({std::move(chain), n, pattern});
  }
  for (const Group& gr : groups) KEEL_RETURN_IF_ERROR(FuseChain(graph, gr.chain, gr.lead, gr.pattern));
  // The fused node sits where the chain ended; external inputs of later chain
  // members may be defined after the chain's start, which is fine there, but
  // re-sort to be safe (stable: valid orders are kept).
  return graph.TopologicalSort();
}

}  // namespace keel::passes
