// compiler/passes/control_flow.cc — If inlining, Loop and Scan unrolling (see
// control_flow.h).
#include "compiler/passes/control_flow.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "compiler/ops/expansion.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::passes {
namespace {

using ir::DType;
using ir::Value;
using ValueMap = std::unordered_map<const Value*, Value*>;

// A copy of `n`'s attributes and (deep-copied) subgraphs onto `copy`.
void CopyNodeContents(const ir::Node& n, ir::Node& copy) {
  for (const auto& [k, v] : n.attrs().all()) copy.attrs().Set(k, v);
  for (const auto& [k, g] : n.subgraphs()) copy.set_subgraph(k, CloneGraph(*g));
}

// `v` of the source graph in the destination: bound values through `map`;
// constants are shared (their data is immutable) and created on first use.
Result<Value*> Resolve(ir::Graph& dst, ValueMap& map, const Value* v, const std::string& prefix) {
  auto it = map.find(v);
  if (it != map.end()) return it->second;
  if (!v->is_constant()) return Internal("subgraph value '" + v->name() + "' is used before it is defined");
  Value* c = dst.AddConstant(prefix + v->name(), v->constant());
  map[v] = c;
  return c;
}

// The value of a one-element constant (bool included) as a number.
Result<double> ScalarValue(const ir::TensorData& t) {
  if (t.type.dtype == DType::kBool && !t.bytes.empty()) return t.bytes[0] != 0 ? 1.0 : 0.0;
  return ops::ReadScalar(t);
}

class Lowering {
 public:
  Lowering(ir::Graph& graph, ir::Node* node, const NodeStep& step)
      : graph_(graph), node_(node), step_(step), b_(graph, *node), prefix_(node->name() + "/") {}

  Status Run() {
    KEEL_ASSIGN_OR_RETURN(int64_t formal, node_->attrs().GetInt("formal_inputs", -1));
    if (formal < 0 || formal > static_cast<int64_t>(node_->inputs().size())) {
      return ops::NodeError(*node_, "the formal inputs are not marked (not imported from ONNX?)");
    }
    formal_ = static_cast<size_t>(formal);
    const ops::OpDef* def = ops::FindOp(*node_);
    const ops::ControlFlow kind = def ? def->control_flow : ops::ControlFlow::kNone;
    if (kind == ops::ControlFlow::kNone) return ops::NodeError(*node_, "a subgraph on an op that is not control flow");
    Result<std::vector<Value*>> outs = kind == ops::ControlFlow::kIf     ? If()
                                       : kind == ops::ControlFlow::kLoop ? Loop()
                                                                          : Scan();
    if (!outs.ok()) return outs.status();
    return Replace(*outs);
  }

 private:
  // Clones subgraph `attr` before the node with its formal inputs bound to
  // `args`, runs the per-node step on each clone and returns its outputs.
  Result<std::vector<Value*>> Inline(const std::string& attr, const std::vector<Value*>& args,
                                     const std::string& tag) {
    const ir::Graph* sub = node_->subgraph(attr);
    if (!sub) return ops::NodeError(*node_, "missing the graph attribute '" + attr + "'");
    KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> captures, node_->attrs().GetInts(attr + ".captures", {}));
    if (captures.size() > sub->inputs().size() || sub->inputs().size() - captures.size() != args.size()) {
      return ops::NodeError(*node_, "subgraph '" + attr + "' has " +
                                        std::to_string(sub->inputs().size() - std::min(captures.size(), sub->inputs().size())) +
                                        " inputs, the op binds " + std::to_string(args.size()));
    }
    ValueMap map;
    for (size_t i = 0; i < args.size(); ++i) map[sub->inputs()[i]] = args[i];
    for (size_t j = 0; j < captures.size(); ++j) {
      Value* outer = captures[j] >= 0 ? node_->input(static_cast<size_t>(captures[j])) : nullptr;
      if (!outer) return ops::NodeError(*node_, "subgraph '" + attr + "' captures a missing input");
      map[sub->inputs()[args.size() + j]] = outer;
    }
    const std::string prefix = prefix_ + tag + "/";
    std::vector<ir::Node*> clones;
    for (const ir::Node* n : sub->nodes()) {
      std::vector<Value*> ins;
      for (const Value* in : n->inputs()) {
        if (!in) {
          ins.push_back(nullptr);
          continue;
        }
        KEEL_ASSIGN_OR_RETURN(Value* v, Resolve(graph_, map, in, prefix));
        if (!v) return ops::NodeError(*node_, "subgraph '" + attr + "' reads an unbound input ('" + in->name() + "')");
        ins.push_back(v);
      }
      ir::Node* c = graph_.InsertNodeBefore(node_, n->op_type(), prefix + n->name(), ins, n->outputs().size());
      CopyNodeContents(*n, *c);
      for (size_t i = 0; i < n->outputs().size(); ++i) {
        c->output(i)->set_name(prefix + n->output(i)->name());
        map[n->output(i)] = c->output(i);
      }
      clones.push_back(c);
    }
    std::vector<Value*> outs;
    for (const Value* o : sub->outputs()) {
      KEEL_ASSIGN_OR_RETURN(Value* v, Resolve(graph_, map, o, prefix));
      if (!v) return ops::NodeError(*node_, "subgraph '" + attr + "' outputs an unbound input ('" + o->name() + "')");
      outs.push_back(v);
    }
    // The step may fold or expand a clone, which redirects the uses of its
    // outputs: holding the outputs as (temporary) inputs of the node keeps track.
    std::vector<Value*> held = node_->inputs();
    const size_t base = held.size();
    held.insert(held.end(), outs.begin(), outs.end());
    node_->SetInputs(held);
    for (ir::Node* c : clones) {
      Status s = step_(graph_, c);
      if (!s.ok()) return s.WithContext("in subgraph '" + attr + "' of " + ir::NodeDescription(*node_));
    }
    std::vector<Value*> now = node_->inputs();
    std::copy(now.begin() + static_cast<std::ptrdiff_t>(base), now.end(), outs.begin());
    now.resize(base);
    node_->SetInputs(now);
    return outs;
  }

  // The single value of a constant one-element input.
  Result<double> ConstantScalar(size_t index, const std::string& what) {
    const ir::TensorData* t = ops::ConstantInput(*node_, index);
    if (!t) return ops::NeedsConstant(*node_, index, what);
    if (t->type.NumElements() != 1) return ops::NodeError(*node_, what + " must have one element");
    return ScalarValue(*t);
  }

  Result<std::vector<Value*>> If() {
    if (formal_ != 1 || !node_->input(0)) return ops::NodeError(*node_, "expects one input (the condition)");
    Value* cond = node_->input(0);
    if (cond->type().NumElements() != 1) return ops::NodeError(*node_, "the condition must have one element");
    if (cond->is_constant()) {
      KEEL_ASSIGN_OR_RETURN(double c, ConstantScalar(0, "the If condition"));
      return c != 0 ? Inline("then_branch", {}, "then") : Inline("else_branch", {}, "else");
    }
    // A runtime condition: both branches are computed and their outputs selected.
    const Status refuse = ops::NeedsConstant(*node_, 0, "the If condition, unless both branches give outputs of the same types");
    Result<std::vector<Value*>> then_outs = Inline("then_branch", {}, "then");
    if (!then_outs.ok()) return refuse;
    Result<std::vector<Value*>> else_outs = Inline("else_branch", {}, "else");
    if (!else_outs.ok() || else_outs->size() != then_outs->size()) return refuse;
    for (size_t i = 0; i < then_outs->size(); ++i) {
      if (!((*then_outs)[i]->type() == (*else_outs)[i]->type())) return refuse;
    }
    Value* c = cond;
    if (!cond->type().shape.empty()) {
      KEEL_ASSIGN_OR_RETURN(c, b_.Op("Reshape", {cond, b_.Ints({})}));
    }
    std::vector<Value*> outs;
    for (size_t i = 0; i < then_outs->size(); ++i) {
      KEEL_ASSIGN_OR_RETURN(Value* v, b_.Op("Where", {c, (*then_outs)[i], (*else_outs)[i]}));
      outs.push_back(v);
    }
    return outs;
  }

  // Values stacked along a new axis `axis` (of the result), in order.
  Result<Value*> Stack(const std::vector<Value*>& values, int64_t axis) {
    std::vector<Value*> parts;
    for (Value* v : values) {
      KEEL_ASSIGN_OR_RETURN(Value* u, b_.Op("Unsqueeze", {v}, {{"axes", std::vector<int64_t>{axis}}}));
      parts.push_back(u);
    }
    if (parts.size() == 1) return parts[0];
    return b_.Op("Concat", parts, {{"axis", axis}});
  }

  Status CheckIterations(int64_t n, const std::string& what) {
    if (n > kMaxUnrolledIterations) {
      return ops::NodeUnsupported(*node_, what + " of " + std::to_string(n) + " exceeds the unrolling limit of " +
                                              std::to_string(kMaxUnrolledIterations) + " iterations");
    }
    return Status::Ok();
  }

  // Scan outputs of a loop that ran zero times have no element type to build.
  Status CheckNoScanOutputsRead(size_t first) {
    for (size_t i = first; i < node_->outputs().size(); ++i) {
      Value* out = node_->output(i);
      if (!out->uses().empty() || graph_.IsGraphOutput(out)) {
        return ops::NodeUnsupported(*node_, "zero iterations with scan outputs (empty tensors) is not supported");
      }
    }
    return Status::Ok();
  }

  Result<std::vector<Value*>> Loop() {
    int64_t trip = std::numeric_limits<int64_t>::max();
    if (node_->input(0) && formal_ > 0) {
      KEEL_ASSIGN_OR_RETURN(double m, ConstantScalar(0, "the Loop trip count"));
      trip = static_cast<int64_t>(m);
    }
    const bool has_cond = formal_ > 1 && node_->input(1) != nullptr;
    bool running = true;
    if (has_cond) {
      KEEL_ASSIGN_OR_RETURN(double c, ConstantScalar(1, "the Loop condition"));
      running = c != 0;
    }
    if (!has_cond && trip == std::numeric_limits<int64_t>::max()) {
      return ops::NodeUnsupported(*node_, "a Loop without trip count nor condition never ends");
    }
    // A for loop's length is known up front; a condition may stop earlier.
    if (!has_cond) KEEL_RETURN_IF_ERROR(CheckIterations(trip, "a trip count"));
    std::vector<Value*> carried;
    for (size_t i = 2; i < formal_; ++i) carried.push_back(node_->input(i));
    const size_t n_carried = carried.size();
    std::vector<std::vector<Value*>> scans;
    int64_t it = 0;
    for (; running && it < trip; ++it) {
      if (it >= kMaxUnrolledIterations) {
        KEEL_RETURN_IF_ERROR(CheckIterations(trip == std::numeric_limits<int64_t>::max() ? it + 1 : trip,
                                             "a trip count"));
        return ops::NodeUnsupported(*node_, "the loop runs past " + std::to_string(kMaxUnrolledIterations) +
                                                " iterations (the unrolling limit)");
      }
      std::vector<Value*> args = {b_.Scalar(static_cast<double>(it), DType::kI64), b_.Scalar(1, DType::kBool)};
      args.insert(args.end(), carried.begin(), carried.end());
      KEEL_ASSIGN_OR_RETURN(std::vector<Value*> outs, Inline("body", args, "iter" + std::to_string(it)));
      if (outs.size() < 1 + n_carried) return ops::NodeError(*node_, "the body has fewer outputs than carried values + 1");
      if (has_cond) {
        // Without a cond input the body's condition is ignored (a for loop).
        Value* c = outs[0];
        if (!c->is_constant() || c->constant()->type.NumElements() != 1) {
          return ops::NodeUnsupported(*node_, "the loop condition computed by the body is not a compile-time "
                                              "constant (data-dependent termination)");
        }
        KEEL_ASSIGN_OR_RETURN(double v, ScalarValue(*c->constant()));
        running = v != 0;
      }
      std::copy(outs.begin() + 1, outs.begin() + 1 + static_cast<std::ptrdiff_t>(n_carried), carried.begin());
      scans.resize(outs.size() - 1 - n_carried);
      for (size_t k = 0; k < scans.size(); ++k) scans[k].push_back(outs[1 + n_carried + k]);
    }
    std::vector<Value*> result = carried;
    if (it == 0) {
      KEEL_RETURN_IF_ERROR(CheckNoScanOutputsRead(n_carried));
      result.resize(node_->outputs().size(), nullptr);
      return result;
    }
    for (auto& s : scans) {
      for (Value* v : s) {
        if (!(v->type() == s[0]->type())) {
          return ops::NodeUnsupported(*node_, "a scan output changes type across iterations");
        }
      }
      KEEL_ASSIGN_OR_RETURN(Value* stacked, Stack(s, 0));
      result.push_back(stacked);
    }
    return result;
  }

  // Scan over static sequences: `states` initial values, `xs` scan inputs. Returns
  // the final states then the scan outputs.
  Result<std::vector<Value*>> ScanCore(std::vector<Value*> states, const std::vector<Value*>& xs,
                                       const std::vector<int64_t>& in_axes, const std::vector<int64_t>& in_dirs,
                                       std::vector<int64_t> out_axes, const std::vector<int64_t>& out_dirs,
                                       const std::string& tag) {
    int64_t len = -1;
    std::vector<int64_t> axes;
    for (size_t j = 0; j < xs.size(); ++j) {
      const int64_t rank = static_cast<int64_t>(xs[j]->type().shape.size());
      KEEL_ASSIGN_OR_RETURN(int64_t a, ops::NormalizeAxis(*node_, j < in_axes.size() ? in_axes[j] : 0, rank,
                                                          "scan_input_axes"));
      const int64_t l = xs[j]->type().shape[static_cast<size_t>(a)];
      if (len >= 0 && l != len) return ops::NodeError(*node_, "scan inputs have different sequence lengths");
      len = l;
      axes.push_back(a);
    }
    if (len < 0) return ops::NodeError(*node_, "has no scan input");
    KEEL_RETURN_IF_ERROR(CheckIterations(len, "a sequence length"));
    std::vector<std::vector<Value*>> scans;
    for (int64_t t = 0; t < len; ++t) {
      std::vector<Value*> args = states;
      for (size_t j = 0; j < xs.size(); ++j) {
        const bool reverse = j < in_dirs.size() && in_dirs[j] != 0;
        Value* index = b_.Scalar(static_cast<double>(reverse ? len - 1 - t : t), DType::kI64);
        KEEL_ASSIGN_OR_RETURN(Value* slice, b_.Op("Gather", {xs[j], index}, {{"axis", axes[j]}}));
        args.push_back(slice);
      }
      KEEL_ASSIGN_OR_RETURN(std::vector<Value*> outs, Inline("body", args, tag + "step" + std::to_string(t)));
      if (outs.size() < states.size()) return ops::NodeError(*node_, "the body has fewer outputs than states");
      std::copy(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(states.size()), states.begin());
      scans.resize(outs.size() - states.size());
      for (size_t k = 0; k < scans.size(); ++k) scans[k].push_back(outs[states.size() + k]);
    }
    std::vector<Value*> result = states;
    if (len == 0) {
      result.resize(node_->outputs().size(), nullptr);
      return result;
    }
    for (size_t k = 0; k < scans.size(); ++k) {
      std::vector<Value*>& s = scans[k];
      for (Value* v : s) {
        if (!(v->type() == s[0]->type())) return ops::NodeUnsupported(*node_, "a scan output changes type across steps");
      }
      if (k < out_dirs.size() && out_dirs[k] != 0) std::reverse(s.begin(), s.end());
      const int64_t rank = static_cast<int64_t>(s[0]->type().shape.size()) + 1;
      KEEL_ASSIGN_OR_RETURN(int64_t a, ops::NormalizeAxis(*node_, k < out_axes.size() ? out_axes[k] : 0, rank,
                                                          "scan_output_axes"));
      KEEL_ASSIGN_OR_RETURN(Value* stacked, Stack(s, a));
      result.push_back(stacked);
    }
    return result;
  }

  Result<std::vector<Value*>> Scan() {
    const ir::Attributes& at = node_->attrs();
    KEEL_ASSIGN_OR_RETURN(int64_t m, at.GetInt("num_scan_inputs", -1));
    KEEL_ASSIGN_OR_RETURN(int64_t batched, at.GetInt("batched", 0));
    const size_t lead = batched ? 1 : 0;  // Scan-8's sequence_lens
    if (m < 1 || formal_ < lead + static_cast<size_t>(m)) {
      return ops::NodeError(*node_, "num_scan_inputs must be in [1, number of inputs]");
    }
    const size_t n_states = formal_ - lead - static_cast<size_t>(m);
    std::vector<Value*> states, xs;
    for (size_t i = lead; i < formal_; ++i) {
      if (!node_->input(i)) return ops::NodeError(*node_, "input " + std::to_string(i) + " is missing");
      (i < lead + n_states ? states : xs).push_back(node_->input(i));
    }
    if (!batched) {
      KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> in_axes, at.GetInts("scan_input_axes", {}));
      KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> in_dirs, at.GetInts("scan_input_directions", {}));
      KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> out_axes, at.GetInts("scan_output_axes", {}));
      KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> out_dirs, at.GetInts("scan_output_directions", {}));
      return ScanCore(states, xs, in_axes, in_dirs, out_axes, out_dirs, "");
    }
    // Scan-8: every input has a batch axis 0; each batch row is an independent scan.
    KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> dirs, at.GetInts("directions", {}));
    for (Value* v : xs) {
      if (v->type().shape.size() < 2) return ops::NodeError(*node_, "Scan-8 inputs need batch and sequence axes");
    }
    for (Value* v : states) {
      if (v->type().shape.empty()) return ops::NodeError(*node_, "Scan-8 states need a batch axis");
    }
    const int64_t batch = xs[0]->type().shape[0];
    const int64_t len = xs[0]->type().shape[1];
    if (node_->input(0)) {
      const ir::TensorData* lens = ops::ConstantInput(*node_, 0);
      if (!lens) return ops::NeedsConstant(*node_, 0, "Scan sequence_lens");
      KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> l, ops::ReadInts(*lens));
      for (int64_t v : l) {
        if (v != len) return ops::NodeUnsupported(*node_, "sequence_lens shorter than the sequence axis are not supported");
      }
    }
    KEEL_RETURN_IF_ERROR(CheckIterations(batch * len, "batch x sequence length"));
    std::vector<std::vector<Value*>> rows;  // per output, per batch row
    for (int64_t bi = 0; bi < batch; ++bi) {
      Value* index = b_.Scalar(static_cast<double>(bi), DType::kI64);
      std::vector<Value*> s, x;
      for (Value* v : states) {
        KEEL_ASSIGN_OR_RETURN(Value* r, b_.Op("Gather", {v, index}, {{"axis", int64_t{0}}}));
        s.push_back(r);
      }
      for (Value* v : xs) {
        KEEL_ASSIGN_OR_RETURN(Value* r, b_.Op("Gather", {v, index}, {{"axis", int64_t{0}}}));
        x.push_back(r);
      }
      KEEL_ASSIGN_OR_RETURN(std::vector<Value*> outs,
                            ScanCore(s, x, {}, dirs, {}, {}, "batch" + std::to_string(bi) + "/"));
      rows.resize(outs.size());
      for (size_t k = 0; k < outs.size(); ++k) rows[k].push_back(outs[k]);
    }
    std::vector<Value*> result;
    for (auto& r : rows) {
      if (std::find(r.begin(), r.end(), nullptr) != r.end()) {
        result.push_back(nullptr);
        continue;
      }
      KEEL_ASSIGN_OR_RETURN(Value* stacked, Stack(r, 0));
      result.push_back(stacked);
    }
    return result;
  }

  // Redirects the node's outputs to `repl` (a graph output keeps its name) and
  // removes the node.
  Status Replace(const std::vector<Value*>& repl) {
    for (size_t i = 0; i < node_->outputs().size(); ++i) {
      Value* out = node_->output(i);
      if (out->uses().empty() && !graph_.IsGraphOutput(out)) continue;
      Value* v = i < repl.size() ? repl[i] : nullptr;
      if (!v) return ops::NodeUnsupported(*node_, "output " + std::to_string(i) + " has no value");
      if (graph_.IsGraphOutput(out)) {
        const bool plain = v->producer() && !graph_.IsGraphOutput(v) && !graph_.IsGraphInput(v);
        if (!plain) {
          ir::Node* copy = graph_.InsertNodeBefore(node_, "Identity", node_->name() + "/output_" + std::to_string(i), {v}, 1);
          copy->output(0)->set_type(v->type());
          v = copy->output(0);
        }
        const std::string name = out->name();
        out->set_name(name + "/inlined");
        v->set_name(name);
      }
      graph_.ReplaceAllUsesWith(out, v);
    }
    return graph_.RemoveNode(node_);
  }

  ir::Graph& graph_;
  ir::Node* node_;
  const NodeStep& step_;
  ops::Expander b_;
  std::string prefix_;
  size_t formal_ = 0;
};

}  // namespace

bool IsControlFlow(const ir::Node& node) { return !node.subgraphs().empty(); }

Status LowerControlFlow(ir::Graph& graph, ir::Node* node, const NodeStep& step) {
  Lowering lowering(graph, node, step);
  return lowering.Run();
}

std::unique_ptr<ir::Graph> CloneGraph(const ir::Graph& src) {
  auto g = std::make_unique<ir::Graph>();
  g->set_name(src.name());
  ValueMap map;
  for (const Value* in : src.inputs()) map[in] = g->AddInput(in->name(), in->type());
  auto resolve = [&](const Value* v) -> Value* {
    auto r = Resolve(*g, map, v, "");
    return r.ok() ? *r : nullptr;
  };
  for (const ir::Node* n : src.nodes()) {
    std::vector<Value*> ins;
    for (const Value* in : n->inputs()) ins.push_back(in ? resolve(in) : nullptr);
    std::vector<std::string> names;
    for (const Value* o : n->outputs()) names.push_back(o->name());
    ir::Node* c = g->AddNode(n->op_type(), n->name(), ins, n->outputs().size(), names);
    CopyNodeContents(*n, *c);
    for (size_t i = 0; i < n->outputs().size(); ++i) map[n->output(i)] = c->output(i);
  }
  for (const Value* o : src.outputs()) g->AddOutput(resolve(o));
  return g;
}

}  // namespace keel::passes
