// compiler/passes/reduction_split.cc — see reduction_split.h.
#include "compiler/passes/reduction_split.h"

#include <string>
#include <vector>

#include "compiler/ops/op_util.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/semantics.h"

namespace keel::passes {
namespace {

// Where the partials' index ends: the reduced axes before `axis` (a position in
// the node's `axes`) whole, and `factor` of that axis' extent (the whole
// extent: the axis joins them whole). parts = the partial results per result.
struct Cut {
  size_t axis = 0;
  int64_t factor = 0, parts = 0;
};

// The cut with the least work on the longest path: the partial reduction runs
// its parts in waves of `want` (the parts the target asked for), each part
// `length / parts` elements long, then the node reduces `parts` elements:
// cost = ceil(parts / want) * length / parts + parts. Every part reduces at
// least kMinPartLength elements; parts = 0: no cut gives two parts. (The first
// cut at or above `want` can overshoot it by a prime extent: ViT's 197 tokens.)
Cut ChooseCut(const std::vector<int64_t>& extents, int64_t length, int64_t want) {
  Cut best;
  int64_t best_cost = 0;
  int64_t before = 1;  // parts of the axes before this one
  for (size_t j = 0; j < extents.size(); ++j) {
    const int64_t n = extents[j];
    for (int64_t d = 2; d <= n; ++d) {
      if (n % d != 0) continue;
      const int64_t parts = before * d;
      if (length / parts < kMinPartLength) return best;
      const int64_t cost = (parts + want - 1) / want * (length / parts) + parts;
      if (best.parts == 0 || cost < best_cost) {
        best = {j, d, parts};
        best_cost = cost;
      }
    }
    before *= n;
  }
  return best;
}

}  // namespace

Status ReductionSplitPass::Run(ir::Graph& graph) {
  if (!parts_) return Status::Ok();
  for (ir::Node* n : graph.nodes()) {
    const ops::OpDef* def = ops::FindOp(*n);
    if (def == nullptr || def->reduction_partial.empty() || n->inputs().size() != 1 || !n->input(0) ||
        !n->input(0)->has_type()) {
      continue;
    }
    const ir::TensorType x = n->input(0)->type();
    auto axes_or = n->attrs().GetInts("axes", {});
    if (!IsFloatType(x.dtype) || !axes_or.ok() || axes_or->empty()) continue;
    const std::vector<int64_t> axes = *axes_or;
    std::vector<int64_t> extents;
    int64_t length = 1, rows = 1;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      bool reduced = false;
      for (int64_t a : axes) reduced = reduced || a == static_cast<int64_t>(d);
      (reduced ? length : rows) *= x.shape[d];
      if (reduced) extents.push_back(x.shape[d]);
    }
    if (rows == 0 || length == 0) continue;
    const int64_t want = parts_(rows, length);
    if (want < 2) continue;
    const Cut cut = ChooseCut(extents, length, want);
    if (cut.parts < 2) continue;

    const std::string base = n->name() + "/partial";
    const ir::TensorType old_type = n->output(0)->type();
    const int64_t at = axes[cut.axis];
    const bool splits_axis = cut.factor != extents[cut.axis];
    ir::Value* in = n->input(0);
    std::vector<int64_t> inner;  // the partial reduction's axes, in `in`'s rank
    if (splits_axis) {
      std::vector<int64_t> shape = x.shape;
      shape[static_cast<size_t>(at)] = cut.factor;
      shape.insert(shape.begin() + at + 1, extents[cut.axis] / cut.factor);
      ir::Node* split = graph.InsertNodeBefore(n, "keel.Reshape", base + "/split", {in}, 1);
      split->attrs().Set("shape", shape);
      KEEL_RETURN_IF_ERROR(ops::SetInferredTypes(*split));
      in = split->output(0);
      inner.push_back(at + 1);
      for (size_t j = cut.axis + 1; j < axes.size(); ++j) inner.push_back(axes[j] + 1);
    } else {
      for (size_t j = cut.axis + 1; j < axes.size(); ++j) inner.push_back(axes[j]);
    }
    ir::Node* partial = graph.InsertNodeBefore(n, def->reduction_partial, base, {in}, 1);
    partial->attrs().Set("axes", inner);
    partial->attrs().Set("keepdims", int64_t{1});
    KEEL_RETURN_IF_ERROR(ops::SetInferredTypes(*partial));
    ir::Value* partials = partial->output(0);
    if (splits_axis) {
      // Back to the node's rank: the split axis holds the factor, the inner axes 1.
      std::vector<int64_t> shape = x.shape;
      shape[static_cast<size_t>(at)] = cut.factor;
      for (size_t j = cut.axis + 1; j < axes.size(); ++j) shape[static_cast<size_t>(axes[j])] = 1;
      ir::Node* join = graph.InsertNodeBefore(n, "keel.Reshape", base + "/join", {partials}, 1);
      join->attrs().Set("shape", shape);
      KEEL_RETURN_IF_ERROR(ops::SetInferredTypes(*join));
      partials = join->output(0);
    }
    n->SetInput(0, partials);
    KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, ops::InferNodeTypes(*n));
    if (!(types[0] == old_type)) {
      return Internal(ir::NodeDescription(*n) + ": split reduction has type " + types[0].ToString() + ", expected " +
                      old_type.ToString());
    }
  }
  return Status::Ok();
}

}  // namespace keel::passes
