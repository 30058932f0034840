// compiler/passes/attention_fusion.cc — the attention pass (see attention_fusion.h).
#include "compiler/passes/attention_fusion.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/semantics.h"
#include "compiler/ops/strided_view.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/pattern_match.h"

namespace keel::passes {
namespace {

using ir::Node;
using ir::Value;
using ops::StridedView;

// The node producing `v` when `v` is used only there (by one input) and is not
// a graph output: a value the fused node may swallow.
Node* SoleProducer(const ir::Graph& g, const Value* v) {
  if (!v || !v->producer() || g.IsGraphOutput(v) || v->producer()->outputs().size() != 1) return nullptr;
  return v->producer();
}

ops::PatternRole Pattern(const Node* n) {
  const ops::OpDef* d = DefOf(n);
  return d ? d->pattern_role : ops::PatternRole::kNone;
}
bool IsMatMul(const Node* n) {
  const ops::OpDef* d = DefOf(n);
  return d && d->library == ops::LibraryCall::kMatMul && n->inputs().size() == 2 && n->outputs().size() == 1;
}

// An operand followed back through strided views (and, when `scales`, scalar
// factors): the tensor it reads, the view of it, the factor.
struct Traced {
  Value* base = nullptr;
  StridedView view;
  double scale = 1.0;
};

Traced Trace(Value* v, bool scales) {
  // The chain from v back, then the longest suffix (from the deepest tensor
  // forward) whose views compose.
  std::vector<Node*> chain;
  std::vector<double> factor;
  Value* cur = v;
  while (Node* p = cur->producer()) {
    const ops::OpDef* def = DefOf(p);
    if (!def || p->outputs().size() != 1 || !p->input(0) || !p->input(0)->has_type()) break;
    if (def->strided_view && p->input(0)->type().dtype == cur->type().dtype) {
      chain.push_back(p);
      factor.push_back(1.0);
      cur = p->input(0);
      continue;
    }
    if (std::optional<std::pair<Value*, double>> s = scales ? ScalarScale(p) : std::nullopt) {
      chain.push_back(p);
      factor.push_back(s->second);
      cur = s->first;
      continue;
    }
    break;
  }
  for (size_t start = chain.size(); start > 0; --start) {  // chain[start-1] reads the deepest tensor
    Value* base = start == chain.size() ? cur : chain[start]->output(0);
    std::optional<StridedView> view = ops::DenseView(base->type().shape);
    double scale = 1.0;
    for (size_t i = start; i-- > 0 && view;) {
      scale *= factor[i];
      const ops::OpDef* def = DefOf(chain[i]);
      if (def->strided_view) view = def->strided_view(*chain[i], *view);
    }
    if (view) return {base, *view, scale};
  }
  return {v, ops::DenseView(v->type().shape), 1.0};
}

// Row and column strides of a view's last two dims (each one factor).
std::optional<std::pair<int64_t, int64_t>> RowCol(const StridedView& v) {
  std::pair<int64_t, int64_t> rc;
  for (size_t k = 0; k < 2; ++k) {
    int64_t stride = 0, n = 0;
    for (const ops::ViewFactor& f : v.dims[v.dims.size() - 2 + k]) {
      if (f.extent == 1) continue;
      stride = f.stride;
      ++n;
    }
    if (n > 1) return std::nullopt;
    (k == 0 ? rc.first : rc.second) = stride;
  }
  return rc;
}

std::vector<int64_t> Inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inverse;
}

// The matched chain around one Softmax.
struct Match {
  Node* scores = nullptr;  // MatMul(Q', K')
  Node* context = nullptr; // MatMul(P, V')
  Value* mask = nullptr;
  double scale = 1.0;
  Value* out = nullptr;    // O, or O' when a transpose is absorbed
  std::vector<int64_t> out_perm;  // O' = Transpose(O, out_perm); empty: none
};

std::optional<Match> MatchAround(const ir::Graph& g, Node* softmax) {
  Match m;
  Value* s = softmax->input(0);
  if (!s || !s->has_type() || s->type().shape.size() < 2) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(s->type().shape.size());
  auto axis = softmax->attrs().GetInt("axis", -1);
  if (!axis.ok() || (*axis != rank - 1 && *axis != -1)) return std::nullopt;
  // Upwards to the scores' MatMul: conversions anywhere, then (nearest the
  // Softmax first) at most one mask Add and at most one scalar scale, the
  // scale before the mask. False when `x` does not lead there that way.
  std::function<bool(Value*, bool, bool)> walk = [&](Value* x, bool may_add, bool may_scale) -> bool {
    Node* p = SoleProducer(g, x);
    if (!p || !SoleUse(g, x)) return false;
    if (Pattern(p) == ops::PatternRole::kConvert && p->input(0) && p->input(0)->has_type() &&
        IsFloatType(p->input(0)->type().dtype)) {
      return walk(p->input(0), may_add, may_scale);
    }
    if (IsMatMul(p)) {
      m.scores = p;
      return true;
    }
    if (std::optional<std::pair<Value*, double>> sc = may_scale ? ScalarScale(p) : std::nullopt) {
      if (!walk(sc->first, false, false)) return false;
      m.scale = sc->second;
      return true;
    }
    if (may_add && EpilogueRoleOf(p) == ops::EpilogueRole::kAdd && p->inputs().size() == 2) {
      for (size_t side = 0; side < 2; ++side) {
        Value* a = p->input(side);
        if (a && a->has_type() && a->type().shape == x->type().shape && walk(a, false, true)) {
          m.mask = p->input(1 - side);
          return true;
        }
      }
    }
    return false;
  };
  if (!walk(s, true, true)) return std::nullopt;
  // Downwards: [Cast] -> MatMul(P, V) -> [Transpose].
  Value* prob = softmax->output(0);
  if (!SoleUse(g, prob)) return std::nullopt;
  Node* u = prob->uses()[0].node;
  if (Pattern(u) == ops::PatternRole::kConvert && u->outputs().size() == 1) {
    prob = u->output(0);
    if (!SoleUse(g, prob)) return std::nullopt;
    u = prob->uses()[0].node;
  }
  if (!IsMatMul(u) || prob->uses()[0].input_index != 0) return std::nullopt;
  m.context = u;
  m.out = u->output(0);
  if (SoleUse(g, m.out)) {
    Node* t = m.out->uses()[0].node;
    if (DefOf(t) && DefOf(t)->permutes_axes && t->outputs().size() == 1) {
      auto perm = t->attrs().GetInts("perm", {});
      if (perm.ok()) {
        m.out_perm = *perm;
        m.out = t->output(0);
      }
    }
  }
  return m;
}

// The keel.Attention problem of a match, or nullopt when its operands are
// not views the op takes.
// `out_view`: where element [idx] of m.out lives in the tensor the node writes
// (the dense layout of m.out when the output stays in place).
std::optional<ops::FusedAttention> Problem(const Match& m, const StridedView& out_view, Traced* q, Traced* k,
                                           Traced* v, Traced* mask) {
  const std::vector<int64_t>& o_shape = m.context->output(0)->type().shape;
  const std::vector<int64_t>& s_shape = m.scores->output(0)->type().shape;
  if (o_shape.size() < 2 || s_shape.size() != o_shape.size()) return std::nullopt;
  const size_t nb = o_shape.size() - 2;
  ops::FusedAttention a;
  a.sq = s_shape[nb];
  a.sk = s_shape[nb + 1];
  a.dv = o_shape[nb + 1];
  a.d = m.scores->input(0)->type().shape.back();
  std::vector<int64_t> batch(o_shape.begin(), o_shape.begin() + static_cast<std::ptrdiff_t>(nb));
  auto with = [&](std::vector<int64_t> tail) {
    std::vector<int64_t> s = batch;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  *q = Trace(m.scores->input(0), true);
  *k = Trace(m.scores->input(1), true);
  *v = Trace(m.context->input(1), false);
  std::optional<StridedView> qv = ops::BroadcastView(q->view, with({a.sq, a.d}));
  std::optional<StridedView> kv = ops::BroadcastView(k->view, with({a.d, a.sk}));
  std::optional<StridedView> vv = ops::BroadcastView(v->view, with({a.sk, a.dv}));
  std::optional<StridedView> mv;
  if (m.mask) {
    *mask = Trace(m.mask, false);
    mv = ops::BroadcastView(mask->view, with({a.sq, a.sk}));
    if (!mv) return std::nullopt;
  }
  // Y: O's index in the written tensor, through the absorbed transpose.
  std::optional<StridedView> yv = out_view;
  if (!m.out_perm.empty()) yv = ops::PermuteView(*yv, Inverse(m.out_perm));
  if (!qv || !kv || !vv || !yv) return std::nullopt;
  std::vector<StridedView*> views = {&*qv, &*kv, &*vv, &*yv};
  if (mv) views.push_back(&*mv);
  // K's rows are its last dim (keys), its columns the one before.
  for (auto* x : views) {
    if (!RowCol(*x)) return std::nullopt;
  }
  // Batch digits: per batch dim, the common refinement of every view's factors.
  std::vector<std::vector<int64_t>> strides(views.size());
  for (size_t d = 0; d < nb; ++d) {
    std::vector<std::vector<int64_t>> fz;
    for (auto* x : views) {
      std::vector<int64_t> e;
      for (const ops::ViewFactor& f : x->dims[d])
        if (f.extent != 1) e.push_back(f.extent);
      if (e.empty()) e.push_back(1);
      fz.push_back(e);
    }
    std::optional<std::vector<int64_t>> ext = ops::CommonRefinement(fz);
    if (!ext) return std::nullopt;
    if (ext->size() == 1 && (*ext)[0] == 1) continue;
    for (size_t i = 0; i < views.size(); ++i) {
      std::optional<std::vector<ops::ViewFactor>> r = ops::RefineFactors(views[i]->dims[d], *ext);
      if (!r) return std::nullopt;
      for (const ops::ViewFactor& f : *r) strides[i].push_back(f.stride);
    }
    a.batch.insert(a.batch.end(), ext->begin(), ext->end());
  }
  auto operand = [&](size_t i, bool swap) {
    ops::AttentionOperand x;
    x.offset = views[i]->offset;
    x.batch_strides = strides[i];
    auto [r, c] = *RowCol(*views[i]);
    x.row = swap ? c : r;
    x.col = swap ? r : c;
    return x;
  };
  a.q = operand(0, false);
  a.k = operand(1, true);
  a.v = operand(2, false);
  a.y = operand(3, false);
  if (mv) {
    a.has_mask = true;
    a.mask = operand(4, false);
  }
  a.scale = m.scale * q->scale * k->scale;
  a.out_shape = m.out->type().shape;  // the caller sets another when the output moves
  return a;
}

// Whether `v` varies along the last axis of a `rank`-D result at most.
bool RowVector(const Value* v, size_t rank) {
  if (!v || !v->has_type()) return true;
  const std::vector<int64_t>& s = v->type().shape;
  bool row_vector = s.size() <= rank;
  for (size_t i = 0; i + 1 < s.size(); ++i) row_vector = row_vector && s[i] == 1;
  return row_vector;
}

// The tensor `x` of a row-wise op `u`: each row (last axis) of u's output comes
// from the same row of x alone (MatMul by a 2-D right operand; Gemm with an
// untransposed A and a row-vector C; an elementwise op whose other operands
// vary along the last axis at most). Null otherwise.
Value* RowWiseInput(Node* u) {
  if (!u || u->outputs().size() != 1 || !u->output(0)->has_type()) return nullptr;
  const ir::TensorType& out = u->output(0)->type();
  if (IsMatMul(u)) {
    Value* w = u->input(1);
    return u->input(0) && w && w->has_type() && w->type().shape.size() == 2 ? u->input(0) : nullptr;
  }
  const ops::OpDef* def = DefOf(u);
  if (def && def->library == ops::LibraryCall::kGemm) {
    auto trans_a = u->attrs().GetInt("transA", 0);
    const bool row_c = u->inputs().size() < 3 || RowVector(u->input(2), out.shape.size());
    return trans_a.ok() && *trans_a == 0 && row_c ? u->input(0) : nullptr;
  }
  if (!def || def->fusion != ops::FusionClass::kElementwise) return nullptr;
  Value* x = nullptr;
  for (Value* in : u->inputs()) {
    if (!in || !in->has_type()) continue;
    if (in->type().shape == out.shape && !x) {
      x = in;
      continue;
    }
    if (!RowVector(in, out.shape.size())) return nullptr;
  }
  return x;
}

// Clones the row-wise ops `rowwise` (in order, each reading the previous) onto
// `rows`, before `before`; returns the last clone's output.
Result<Value*> CloneRowWise(ir::Graph& g, const std::vector<Node*>& rowwise, Value* rows, Node* before) {
  Value* cur = rows;
  for (Node* old : rowwise) {
    std::vector<Value*> inputs = old->inputs();
    for (Value*& in : inputs)
      if (in == RowWiseInput(old)) in = cur;
    Node* clone = g.InsertNodeBefore(before, old->op_type(), old->name(), inputs, 1);
    clone->attrs() = old->attrs();
    KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, ops::InferNodeTypes(*clone));
    clone->output(0)->set_type(types[0]);
    clone->output(0)->set_name(old->output(0)->name() + "/rows");
    cur = clone->output(0);
  }
  return cur;
}

// `node` (just inserted, one output) takes over `old`'s uses and name; its
// inferred type must be old's (else kInternal naming `what`).
Result<Value*> TakeOver(ir::Graph& g, Node* node, Value* old, const std::string& what) {
  KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, ops::InferNodeTypes(*node));
  if (!(types[0] == old->type())) {
    return Internal(ir::NodeDescription(*node) + ": " + what + " has type " + types[0].ToString() + ", expected " +
                    old->type().ToString());
  }
  Value* out = node->output(0);
  out->set_type(types[0]);
  const std::string name = old->name();
  old->set_name(name + "/unmoved");
  out->set_name(name);
  g.ReplaceAllUsesWith(old, out);
  return out;
}

// The transpose in front of a projection: `base` = R_k(...R_1(Transpose(x))...)
// with row-wise ops R and a transpose that keeps the last axis, every value in
// between used once. The ops are rebuilt on x and the transpose moved after
// them (a transpose of the rows commutes with a row-wise op), so that the
// attention reads it as a view: the transpose kernel goes. Returns the moved
// transpose's output (now in base's place), or null when `base` is not so.
Result<Value*> SinkTransposeInto(ir::Graph& g, Value* base) {
  std::vector<Node*> ops;  // R_k first
  Node* transpose = nullptr;
  for (Value* v = base; !transpose;) {
    Node* p = v->producer();
    if (!p || p->outputs().size() != 1) return nullptr;
    const ops::OpDef* def = DefOf(p);
    if (def && def->permutes_axes && !ops.empty()) {
      auto perm = p->attrs().GetInts("perm", {});
      if (!perm.ok() || perm->empty() || perm->back() != static_cast<int64_t>(perm->size()) - 1) return nullptr;
      transpose = p;
      break;
    }
    Value* x = RowWiseInput(p);
    if (!x || !SoleUse(g, x)) return nullptr;
    ops.push_back(p);
    v = x;
  }
  std::reverse(ops.begin(), ops.end());  // R_1 first
  KEEL_ASSIGN_OR_RETURN(Value* rows, CloneRowWise(g, ops, transpose->input(0), ops.back()));
  Node* moved = g.InsertNodeBefore(ops.back(), transpose->op_type(), transpose->name(), {rows}, 1);
  moved->attrs() = transpose->attrs();
  return TakeOver(g, moved, base, "moved transpose");
}

// The transpose behind the attention's output projection (batch-first PyTorch
// exports: heads merged, projected over [S*B, E] rows, regrouped to [S, B, E]
// and transposed back to [B, S, E] before the residual add):
//   out -> reshapes -> R_1 .. R_k -> reshapes keeping the last axis -> Transpose
// with row-wise ops R (at least one) and a transpose keeping the last axis,
// every value in between used once. The attention can write its rows in the
// transposed order instead, so the projection's output is already in place:
// the transpose kernel goes, and the residual add becomes the GEMM's epilogue.
struct OutputTranspose {
  Value* rows_in = nullptr;    // R_1's row operand
  std::vector<Node*> rowwise;  // R_1 first
  Node* transpose = nullptr;
};

std::optional<OutputTranspose> FindOutputTranspose(const ir::Graph& g, Value* out) {
  auto next = [&](Value* v) -> Node* { return SoleUse(g, v) ? v->uses()[0].node : nullptr; };
  auto reshape = [](const Node* n) { return DefOf(n) && DefOf(n)->reshape_like && n->outputs().size() == 1; };
  OutputTranspose t;
  Value* v = out;
  Node* u = next(v);
  for (; u && reshape(u); u = next(v)) v = u->output(0);
  t.rows_in = v;
  for (; u && v->has_type() && RowWiseInput(u) == v; u = next(v)) {
    const std::vector<int64_t>& in = v->type().shape;
    const std::vector<int64_t>& o = u->output(0)->type().shape;
    if (in.size() != o.size() || !std::equal(in.begin(), in.end() - 1, o.begin())) return std::nullopt;
    t.rowwise.push_back(u);
    v = u->output(0);
  }
  if (t.rowwise.empty()) return std::nullopt;
  for (; u && reshape(u) && u->output(0)->has_type() && u->output(0)->type().shape.back() == v->type().shape.back();
       u = next(v)) {
    v = u->output(0);
  }
  if (!u || !DefOf(u) || !DefOf(u)->permutes_axes || u->outputs().size() != 1 || !u->output(0)->has_type()) {
    return std::nullopt;
  }
  auto perm = u->attrs().GetInts("perm", {});
  if (!perm.ok() || perm->empty() || perm->back() != static_cast<int64_t>(perm->size()) - 1) return std::nullopt;
  t.transpose = u;
  return t;
}

// Where element [idx] of `out` lives when the attention writes the rows of
// t.rows_in in the transposed order, as a 2-D [rows, width] tensor.
std::optional<StridedView> TransposedRowsView(const OutputTranspose& t, const Value* out) {
  std::vector<int64_t> shape = t.transpose->output(0)->type().shape;
  const int64_t width = t.rows_in->type().shape.back();
  shape.back() = width;
  std::optional<StridedView> view = ops::DenseView(shape);
  view = ops::PermuteView(*view, Inverse(*t.transpose->attrs().GetInts("perm", {})));
  if (view) view = ops::ReshapeView(*view, t.rows_in->type().shape);
  if (view) view = ops::ReshapeView(*view, out->type().shape);
  return view;
}

// Rebuilds t's row-wise ops on `rows` (the attention's output, the rows in the
// transposed order) and replaces the transpose's output by their result.
Status RebuildAfterTranspose(ir::Graph& g, const OutputTranspose& t, Value* rows) {
  KEEL_ASSIGN_OR_RETURN(Value* cur, CloneRowWise(g, t.rowwise, rows, t.transpose));
  Node* view = g.InsertNodeBefore(t.transpose, "keel.Reshape", t.transpose->name(), {cur}, 1);
  view->attrs().Set("shape", t.transpose->output(0)->type().shape);
  return TakeOver(g, view, t.transpose->output(0), "the rows after the moved transpose").status();
}

}  // namespace

Status AttentionFusionPass::Run(ir::Graph& graph) {
  if (!accepts_) return Status::Ok();
  bool changed = false;
  for (Node* n : graph.nodes()) {
    const ops::OpDef* def = DefOf(n);
    if (!def || def->pattern_role != ops::PatternRole::kSoftmax || n->graph() != &graph) continue;
    std::optional<Match> m = MatchAround(graph, n);
    if (!m) continue;
    Traced q, k, v, mask;
    const StridedView in_place = ops::DenseView(m->out->type().shape);
    std::optional<ops::FusedAttention> a = Problem(*m, in_place, &q, &k, &v, &mask);
    const ir::DType t = m->out->type().dtype;
    if (!a || q.base->type().dtype != t || k.base->type().dtype != t || v.base->type().dtype != t) continue;
    const ir::DType mt = a->has_mask ? mask.base->type().dtype : t;
    if (!accepts_(*a, t, mt)) continue;
    // A transpose in front of the projection Q, K and V come from moves behind
    // it (into the views); the problem is then traced again.
    bool moved = false;
    std::vector<Value*> bases;
    for (Value* base : {q.base, k.base, v.base})
      if (std::find(bases.begin(), bases.end(), base) == bases.end()) bases.push_back(base);
    for (Value* base : bases) {
      KEEL_ASSIGN_OR_RETURN(Value* sunk, SinkTransposeInto(graph, base));
      moved = moved || sunk != nullptr;
    }
    if (moved) {
      a = Problem(*m, in_place, &q, &k, &v, &mask);
      if (!a) return Internal(ir::NodeDescription(*n) + ": attention no longer traced after moving a transpose");
    }
    // A transpose behind the output projection moves into Y's view.
    std::optional<OutputTranspose> behind = FindOutputTranspose(graph, m->out);
    if (behind) {
      std::optional<StridedView> rows_view = TransposedRowsView(*behind, m->out);
      std::optional<ops::FusedAttention> hoisted =
          rows_view ? Problem(*m, *rows_view, &q, &k, &v, &mask) : std::nullopt;
      if (hoisted && accepts_(*hoisted, t, mt)) {
        hoisted->out_shape = {m->out->type().NumElements() / behind->rows_in->type().shape.back(),
                              behind->rows_in->type().shape.back()};
        a = hoisted;
      } else {
        behind.reset();
      }
    }
    std::vector<Value*> inputs = {q.base, k.base, v.base};
    if (a->has_mask) inputs.push_back(mask.base);
    Node* fused = graph.InsertNodeBefore(m->out->producer(), ops::kFusedAttentionOp, m->scores->name() + "/attention",
                                         inputs, 1);
    ops::SetFusedAttentionAttrs(*fused, *a);
    KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, ops::InferNodeTypes(*fused));
    if (behind) {
      fused->output(0)->set_type(types[0]);
      fused->output(0)->set_name(m->out->name() + "/rows");
      KEEL_RETURN_IF_ERROR(RebuildAfterTranspose(graph, *behind, fused->output(0)));
      changed = true;
      continue;
    }
    if (!(types[0] == m->out->type())) {
      return Internal(ir::NodeDescription(*fused) + ": type " + types[0].ToString() + ", expected " +
                      m->out->type().ToString());
    }
    Value* y = fused->output(0);
    y->set_type(types[0]);
    const std::string name = m->out->name();
    m->out->set_name(name + "/unfused");
    y->set_name(name);
    graph.ReplaceAllUsesWith(m->out, y);
    changed = true;
  }
  return changed ? EliminateDeadCode(graph) : Status::Ok();
}

}  // namespace keel::passes
