// compiler/passes/channels_last.cc — the channels-last pass (see channels_last.h).
#include "compiler/passes/channels_last.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_set>

#include "compiler/ops/channels_last.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/semantics.h"

namespace keel::passes {
namespace {

// Images: rank 4 (N, C, H, W) and 5 (N, C, D, H, W: video, volumes).
bool ImageRank(size_t rank) { return rank == 4 || rank == 5; }

bool IsIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// The perm of a transpose node (OpDef::permutes_axes); nullopt for anything else.
std::optional<std::vector<int64_t>> PermOf(const ir::Node* n) {
  if (n == nullptr || n->inputs().size() != 1 || !n->input(0)) return std::nullopt;
  const ops::OpDef* def = ops::FindOp(*n);
  if (def == nullptr || !def->permutes_axes) return std::nullopt;
  auto perm = n->attrs().GetInts("perm", {});
  if (!perm.ok()) return std::nullopt;
  return *perm;
}

// A transpose that keeps the order of every axis longer than 1 moves no byte.
bool MovesOnlyUnitAxes(const std::vector<int64_t>& perm, const std::vector<int64_t>& in_shape) {
  int64_t last = -1;
  for (int64_t a : perm) {
    if (in_shape[static_cast<size_t>(a)] == 1) continue;
    if (a < last) return false;
    last = a;
  }
  return true;
}

// How a node is rewritten: an elementwise op (every operand moved), an op's
// channels-last form (its listed operands moved), an op with an axis hook.
enum class Form { kElementwise, kChannelsLast, kAxes };

class Rewriter {
 public:
  Rewriter(ir::Graph& g, const ChannelsLastPredicate& prefers, bool before_enlarging)
      : g_(g), prefers_(prefers), before_enlarging_(before_enlarging) {}

  Status Run() {
    // 1. The nodes the target prefers in channels-last form.
    bool seeded = false;
    for (ir::Node* n : g_.nodes()) {
      const ops::OpDef* def = ops::FindOp(*n);
      if (def == nullptr || def->channels_last_operands.empty() || ops::IsChannelsLast(*n)) continue;
      if (!n->input(0) || !ImageRank(n->input(0)->type().shape.size()) || !prefers_(*n)) continue;
      KEEL_ASSIGN_OR_RETURN(bool done, Rewrite(n, *def, Form::kChannelsLast, /*insert=*/true));
      seeded = seeded || done;
    }
    if (!seeded) return Status::Ok();
    // 2. Sink the transposes back to NCHW until nothing moves (each sweep visits
    // the graph in order, so a chain is crossed in one sweep).
    for (bool changed = true; changed;) {
      changed = false;
      for (ir::Node* n : g_.nodes()) {
        if (removed_.count(n->id())) continue;
        const ops::OpDef* def = ops::FindOp(*n);
        if (def == nullptr) continue;
        bool done = false;
        if (def->permutes_axes) {
          KEEL_ASSIGN_OR_RETURN(done, Compose(n));
        } else if (def->fusion == ops::FusionClass::kElementwise) {
          KEEL_ASSIGN_OR_RETURN(done, Rewrite(n, *def, Form::kElementwise, false));
        } else if (!def->channels_last_operands.empty() && !ops::IsChannelsLast(*n) && prefers_(*n)) {
          KEEL_ASSIGN_OR_RETURN(done, Rewrite(n, *def, Form::kChannelsLast, false));
        } else if (def->permute_axes) {
          KEEL_ASSIGN_OR_RETURN(done, Rewrite(n, *def, Form::kAxes, false));
        } else if (def->reshape_like) {
          KEEL_ASSIGN_OR_RETURN(done, FlattenSpatial(n));
        }
        changed = changed || done;
      }
    }
    // 2b. A transpose back to NCHW behind an op that enlarges the image (an upsampling Resize)
    // goes back in front of it: the same bytes in a fraction of the elements.
    for (bool changed = before_enlarging_; changed;) {
      changed = false;
      for (ir::Node* n : std::vector<ir::Node*>(g_.nodes())) {
        if (removed_.count(n->id())) continue;
        KEEL_ASSIGN_OR_RETURN(bool done, HoistBeforeEnlarging(n));
        changed = changed || done;
      }
    }
    // 3. A transpose into channels-last behind an op the target prefers writing it (through
    // one-operand elementwise ops) goes into that op's output-only form.
    for (ir::Node* n : std::vector<ir::Node*>(g_.nodes())) {
      if (removed_.count(n->id())) continue;
      KEEL_RETURN_IF_ERROR(WriteChannelsLast(n).status());
    }
    // 4. Transposes nothing reads go; those that move no byte become views.
    std::vector<ir::Node*> order = g_.nodes();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      ir::Node* n = *it;
      if (!PermOf(n)) continue;
      if (n->output(0)->uses().empty() && !g_.IsGraphOutput(n->output(0))) {
        KEEL_RETURN_IF_ERROR(Remove(n));
      } else if (!n->input(0)->is_constant() && MovesOnlyUnitAxes(*PermOf(n), n->input(0)->type().shape)) {
        KEEL_RETURN_IF_ERROR(MakeView(n));
      }
    }
    return Status::Ok();
  }

 private:
  enum class Kind { kTransposed, kConstant, kScalar, kOther };

  Kind KindOf(const ir::Value* v) const {
    if (v->is_constant()) return Kind::kConstant;
    const size_t rank = v->type().shape.size();
    if (ImageRank(rank) && PermOf(v->producer()) == ops::ToChannelsFirstPerm(rank)) return Kind::kTransposed;
    if (v->type().NumElements() == 1) return Kind::kScalar;
    return Kind::kOther;
  }

  Status Remove(ir::Node* n) {
    removed_.insert(n->id());
    return g_.RemoveNode(n);
  }

  // A constant broadcast to `rank` (leading ones) and moved to channels-last,
  // once per constant and rank.
  ir::Value* MovedConstant(ir::Value* c, size_t rank) {
    const std::pair<int64_t, size_t> key{c->id(), rank};
    auto it = moved_constants_.find(key);
    if (it != moved_constants_.end()) return it->second;
    ir::TensorData wide = *c->constant();
    wide.type.shape.insert(wide.type.shape.begin(), rank - wide.type.shape.size(), 1);
    ir::Value* moved = g_.AddConstant(c->name() + (rank == 5 ? "/ndhwc" : "/nhwc"),
                                      ops::PermuteTensor(wide, ops::ToChannelsLastPerm(rank)));
    moved_constants_.emplace(key, moved);
    return moved;
  }

  // Replaces n by n' on channels-last operands followed by a transpose back to
  // NCHW. Operands: transposes to NCHW are read before them; constants are
  // moved; one-element operands stay (elementwise and axis forms); anything
  // else is transposed to NHWC when `insert` (the seeds), else n stays.
  Result<bool> Rewrite(ir::Node* n, const ops::OpDef& def, Form form, bool insert) {
    if (n->outputs().size() != 1 || !n->output(0)->has_type()) return false;
    const size_t rank = n->output(0)->type().shape.size();
    if (!ImageRank(rank)) return form == Form::kAxes ? DropAxes(n, def) : false;
    const std::vector<int64_t> to_first = ops::ToChannelsFirstPerm(rank), to_last = ops::ToChannelsLastPerm(rank);
    const auto& listed = def.channels_last_operands;
    std::vector<bool> moved(n->inputs().size(), false);
    bool crosses = false;
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      const ir::Value* in = n->input(i);
      if (!in) continue;
      const bool movable = form != Form::kChannelsLast || std::find(listed.begin(), listed.end(), i) != listed.end();
      const Kind k = KindOf(in);
      if (!movable) {
        if (in->type().shape.size() > 1) return false;  // e.g. a bias: per channel either way
        continue;
      }
      if (form != Form::kChannelsLast && k == Kind::kScalar) continue;
      if (in->type().shape.size() > rank) return false;
      if ((k == Kind::kOther || k == Kind::kScalar) && (!insert || in->type().shape.size() != rank)) return false;
      if (k == Kind::kTransposed && in->type().shape.size() != rank) return false;
      moved[i] = true;
      crosses = crosses || k == Kind::kTransposed;
    }
    if (!insert && !crosses) return false;

    ir::Value* out = n->output(0);
    const ir::TensorType old_type = out->type();
    ir::Node* m = g_.InsertNodeBefore(n, n->op_type(), n->name(), n->inputs(), 1);
    m->attrs() = n->attrs();
    if (form == Form::kChannelsLast) m->attrs().Set(ops::kChannelsLastAttr, int64_t{1});
    if (form == Form::kAxes) {
      KEEL_ASSIGN_OR_RETURN(bool ok, def.permute_axes(*m, to_first));
      if (!ok) {
        KEEL_RETURN_IF_ERROR(g_.RemoveNode(m));
        return false;
      }
    }
    std::vector<ir::Value*> inputs = n->inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!moved[i]) continue;
      ir::Value* in = inputs[i];
      switch (KindOf(in)) {
        case Kind::kTransposed: inputs[i] = in->producer()->input(0); break;
        case Kind::kConstant: inputs[i] = MovedConstant(in, rank); break;
        default: {
          ir::Node* t = g_.InsertNodeBefore(m, "Transpose", n->name() + "/to_nhwc", {in}, 1);
          t->attrs().Set("perm", to_last);
          t->output(0)->set_type({in->type().dtype, ops::PermuteShape(in->type().shape, to_last)});
          inputs[i] = t->output(0);
        }
      }
    }
    m->SetInputs(inputs);
    const ir::TensorType expected{old_type.dtype, ops::PermuteShape(old_type.shape, to_last)};
    KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, ops::InferNodeTypes(*m));
    if (!(types[0] == expected)) {
      return Internal(ir::NodeDescription(*n) + ": channels-last form has type " + types[0].ToString() + ", expected " +
                      expected.ToString());
    }
    m->output(0)->set_type(expected);
    m->output(0)->set_name(out->name() + "/nhwc");
    ir::Node* back = g_.InsertNodeBefore(n, "Transpose", n->name() + "/to_nchw", {m->output(0)}, 1);
    back->attrs().Set("perm", to_first);
    back->output(0)->set_type(old_type);
    const std::string name = out->name();
    g_.ReplaceAllUsesWith(out, back->output(0));
    back->output(0)->set_name(name);
    KEEL_RETURN_IF_ERROR(Remove(n));
    return true;
  }

  // `t` a transpose to NCHW whose input is the only reader of an op m in its axis form (moved
  // by the sinking) that writes at least twice the elements it reads, from a single operand: m
  // reads the transpose to NCHW of its input instead, in its own axes, and t goes. Sinking a
  // transpose through such an op (one that nothing channels-last reads after it) transposes the
  // enlarged image: LR-ASPP's last Resize, 21 x 28x28 -> 224x224, then took 0.45 ms for the
  // transpose back against 0.40 for the Resize (docs/MEASUREMENTS.md, cpu49).
  Result<bool> HoistBeforeEnlarging(ir::Node* t) {
    const std::optional<std::vector<int64_t>> perm = PermOf(t);
    const size_t rank = t->output(0)->type().shape.size();
    if (!perm || !ImageRank(rank) || *perm != ops::ToChannelsFirstPerm(rank)) return false;
    ir::Node* m = t->input(0)->producer();
    const ops::OpDef* def = m ? ops::FindOp(*m) : nullptr;
    if (def == nullptr || !def->permute_axes || def->permutes_axes || def->fusion == ops::FusionClass::kElementwise ||
        ops::IsChannelsLast(*m) || m->outputs().size() != 1 || m->output(0)->uses().size() != 1 ||
        g_.IsGraphOutput(m->output(0)) || !m->input(0)) {
      return false;
    }
    for (size_t i = 1; i < m->inputs().size(); ++i)
      if (m->input(i)) return false;
    ir::Value* x = m->input(0);
    if (x->type().shape.size() != rank || 2 * x->type().NumElements() > m->output(0)->type().NumElements()) return false;
    ir::Node* nm = g_.InsertNodeBefore(m, m->op_type(), m->name(), {x}, 1);
    nm->attrs() = m->attrs();
    KEEL_ASSIGN_OR_RETURN(bool ok, def->permute_axes(*nm, ops::ToChannelsLastPerm(rank)));
    if (!ok) {
      KEEL_RETURN_IF_ERROR(g_.RemoveNode(nm));
      return false;
    }
    // It reads the image in NCHW: the transpose that made x channels-last, or a new transpose back.
    ir::Value* first = nullptr;
    if (PermOf(x->producer()) == ops::ToChannelsLastPerm(rank)) {
      first = x->producer()->input(0);
    } else {
      ir::Node* back = g_.InsertNodeBefore(nm, "Transpose", m->name() + "/to_nchw", {x}, 1);
      back->attrs().Set("perm", ops::ToChannelsFirstPerm(rank));
      back->output(0)->set_type({x->type().dtype, ops::PermuteShape(x->type().shape, ops::ToChannelsFirstPerm(rank))});
      first = back->output(0);
    }
    nm->SetInputs({first});
    KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, ops::InferNodeTypes(*nm));
    if (!(types[0] == t->output(0)->type())) {
      return Internal(ir::NodeDescription(*m) + ": back in NCHW it has type " + types[0].ToString() + ", expected " +
                      t->output(0)->type().ToString());
    }
    nm->output(0)->set_type(types[0]);
    const std::string name = t->output(0)->name();
    g_.ReplaceAllUsesWith(t->output(0), nm->output(0));
    nm->output(0)->set_name(name);
    KEEL_RETURN_IF_ERROR(Remove(t));
    KEEL_RETURN_IF_ERROR(Remove(m));
    return true;
  }

  // An op with an axis hook that reads a transpose to NCHW and drops axes (a mean over H and W
  // without keepdims) reads the channels-last tensor instead where the hook keeps the remaining
  // axes in their order: its output is then the same tensor, with no transpose after it.
  Result<bool> DropAxes(ir::Node* n, const ops::OpDef& def) {
    ir::Value* in = n->input(0);
    if (!in || KindOf(in) != Kind::kTransposed) return false;
    for (size_t i = 1; i < n->inputs().size(); ++i)
      if (n->input(i)) return false;
    const size_t in_rank = in->type().shape.size();
    ir::Value* out = n->output(0);
    if (out->type().shape.size() >= in_rank) return false;
    ir::Node* m = g_.InsertNodeBefore(n, n->op_type(), n->name(), {in->producer()->input(0)}, 1);
    m->attrs() = n->attrs();
    KEEL_ASSIGN_OR_RETURN(bool ok, def.permute_axes(*m, ops::ToChannelsFirstPerm(in_rank)));
    if (!ok) {
      KEEL_RETURN_IF_ERROR(g_.RemoveNode(m));
      return false;
    }
    KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, ops::InferNodeTypes(*m));
    if (!(types[0] == out->type())) {
      return Internal(ir::NodeDescription(*n) + ": on channels-last input it has type " + types[0].ToString() +
                      ", expected " + out->type().ToString());
    }
    m->output(0)->set_type(out->type());
    const std::string name = out->name();
    g_.ReplaceAllUsesWith(out, m->output(0));
    m->output(0)->set_name(name);
    KEEL_RETURN_IF_ERROR(Remove(n));
    return true;
  }

  // A reshape of a transpose to NCHW that flattens the spatial axes ([N, C,
  // H, W] -> [N, C, H W], as a ViT's patch embedding does before its tokens
  // are transposed to [N, H W, C]) becomes the flattening of the channels-last
  // tensor (a view) and one transpose of rank 3, which a transpose after it
  // may cancel.
  Result<bool> FlattenSpatial(ir::Node* n) {
    ir::Value* in = n->input(0);
    if (!in || n->outputs().size() != 1 || KindOf(in) != Kind::kTransposed) return false;
    for (size_t i = 1; i < n->inputs().size(); ++i)
      if (n->input(i) && !n->input(i)->is_constant()) return false;
    const std::vector<int64_t>& shape = in->type().shape;
    const ir::TensorType out_type = n->output(0)->type();
    int64_t spatial = 1;
    for (size_t i = 2; i < shape.size(); ++i) spatial *= shape[i];
    if (out_type.shape != std::vector<int64_t>{shape[0], shape[1], spatial}) return false;
    ir::Value* last = in->producer()->input(0);
    ir::Node* flat = g_.InsertNodeBefore(n, "keel.Reshape", n->name() + "/nhwc", {last}, 1);
    flat->attrs().Set("shape", std::vector<int64_t>{shape[0], spatial, shape[1]});
    flat->output(0)->set_type({out_type.dtype, {shape[0], spatial, shape[1]}});
    ir::Node* back = g_.InsertNodeBefore(n, "Transpose", n->name() + "/to_nchw", {flat->output(0)}, 1);
    back->attrs().Set("perm", std::vector<int64_t>{0, 2, 1});
    back->output(0)->set_type(out_type);
    const std::string name = n->output(0)->name();
    g_.ReplaceAllUsesWith(n->output(0), back->output(0));
    back->output(0)->set_name(name);
    ir::Node* producer = in->producer();
    KEEL_RETURN_IF_ERROR(Remove(n));
    if (producer->output(0)->uses().empty() && !g_.IsGraphOutput(producer->output(0))) {
      KEEL_RETURN_IF_ERROR(Remove(producer));
    }
    return true;
  }

  // The one operand of elementwise node `e` with more than one element, or null.
  static ir::Value* OnlyTensorOperand(const ir::Node& e) {
    ir::Value* only = nullptr;
    for (ir::Value* in : e.inputs()) {
      if (!in || in->type().NumElements() == 1) continue;
      if (only) return nullptr;
      only = in;
    }
    return only;
  }

  // Transpose `t` to channels-last of p's output, read through a chain of elementwise ops
  // with one tensor operand each (a Relu, a Clip), every value of it read once: p in its
  // output-only form (ops/channels_last.h) when the target prefers it, the chain on its
  // channels-last output, no transpose. Whether it did.
  Result<bool> WriteChannelsLast(ir::Node* t) {
    const std::optional<std::vector<int64_t>> perm = PermOf(t);
    if (!perm || t->input(0)->is_constant() || g_.IsGraphOutput(t->output(0))) return false;
    const size_t rank = t->input(0)->type().shape.size();
    if (!ImageRank(rank) || *perm != ops::ToChannelsLastPerm(rank)) return false;
    std::vector<ir::Node*> chain;  // producer first
    const ir::Value* v = t->input(0);
    for (;;) {
      ir::Node* p = v->producer();
      if (p == nullptr || p->outputs().size() != 1 || v->uses().size() != 1 || g_.IsGraphOutput(v)) return false;
      const ops::OpDef* def = ops::FindOp(*p);
      if (def == nullptr) return false;
      chain.insert(chain.begin(), p);
      if (!def->channels_last_operands.empty()) {
        if (ops::IsChannelsLast(*p)) return false;
        break;
      }
      if (def->fusion != ops::FusionClass::kElementwise) return false;
      v = OnlyTensorOperand(*p);
      if (v == nullptr || v->type().shape.size() != rank) return false;
    }
    ir::Node* p = chain.front();
    const ir::TensorType old_type = p->output(0)->type();
    const ir::TensorType last_type{old_type.dtype, ops::PermuteShape(old_type.shape, *perm)};
    ir::Node* m = g_.InsertNodeBefore(p, p->op_type(), p->name(), p->inputs(), 1);
    m->attrs() = p->attrs();
    m->attrs().Set(ops::kChannelsLastAttr, ops::kOutputChannelsLast);
    KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, ops::InferNodeTypes(*m));
    if (!(types[0] == last_type)) {
      return Internal(ir::NodeDescription(*p) + ": output-only channels-last form has type " + types[0].ToString() +
                      ", expected " + last_type.ToString());
    }
    m->output(0)->set_type(last_type);
    m->output(0)->set_name(p->output(0)->name() + "/nhwc");
    if (!prefers_(*m)) {
      KEEL_RETURN_IF_ERROR(g_.RemoveNode(m));
      return false;
    }
    ir::Value* cur = m->output(0);
    for (size_t i = 1; i < chain.size(); ++i) {
      ir::Node* e = chain[i];
      std::vector<ir::Value*> inputs = e->inputs();
      for (ir::Value*& in : inputs)
        if (in == chain[i - 1]->output(0)) in = cur;
      ir::Node* e2 = g_.InsertNodeBefore(e, e->op_type(), e->name(), inputs, 1);
      e2->attrs() = e->attrs();
      const ir::TensorType et = e->output(0)->type();
      e2->output(0)->set_type({et.dtype, ops::PermuteShape(et.shape, *perm)});
      e2->output(0)->set_name(e->output(0)->name() + "/nhwc");
      cur = e2->output(0);
    }
    const std::string name = t->output(0)->name();
    g_.ReplaceAllUsesWith(t->output(0), cur);
    cur->set_name(name);
    KEEL_RETURN_IF_ERROR(Remove(t));
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) KEEL_RETURN_IF_ERROR(Remove(*it));
    return true;
  }

  // A transpose of a transpose is one transpose; an identity transpose goes.
  Result<bool> Compose(ir::Node* n) {
    std::vector<int64_t> perm = *PermOf(n);
    ir::Node* producer = n->input(0)->producer();
    const std::optional<std::vector<int64_t>> inner = PermOf(producer);
    bool changed = false;
    if (inner) {
      std::vector<int64_t> both(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) both[i] = (*inner)[static_cast<size_t>(perm[i])];
      n->SetInputs({producer->input(0)});
      n->attrs().Set("perm", both);
      perm = both;
      changed = true;
      if (producer->output(0)->uses().empty() && !g_.IsGraphOutput(producer->output(0))) {
        KEEL_RETURN_IF_ERROR(Remove(producer));
      }
    }
    if (IsIdentity(perm) && !g_.IsGraphOutput(n->output(0))) {
      g_.ReplaceAllUsesWith(n->output(0), n->input(0));
      KEEL_RETURN_IF_ERROR(Remove(n));
      changed = true;
    }
    return changed;
  }

  Status MakeView(ir::Node* n) {
    ir::Value* out = n->output(0);
    ir::Node* view = g_.InsertNodeBefore(n, "keel.Reshape", n->name(), {n->input(0)}, 1);
    view->attrs().Set("shape", out->type().shape);
    view->output(0)->set_type(out->type());
    const std::string name = out->name();
    g_.ReplaceAllUsesWith(out, view->output(0));
    view->output(0)->set_name(name);
    return Remove(n);
  }

  ir::Graph& g_;
  const ChannelsLastPredicate& prefers_;
  const bool before_enlarging_;
  std::unordered_set<int64_t> removed_;                          // node ids (the sweep's snapshot may hold them)
  std::map<std::pair<int64_t, size_t>, ir::Value*> moved_constants_;  // by value id and rank
};

}  // namespace

Status ChannelsLastPass::Run(ir::Graph& graph) {
  if (!prefers_) return Status::Ok();
  Rewriter r(graph, prefers_, before_enlarging_);
  KEEL_RETURN_IF_ERROR(r.Run());
  return graph.TopologicalSort();
}

}  // namespace keel::passes
