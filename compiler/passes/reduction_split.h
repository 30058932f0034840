// compiler/passes/reduction_split.h — runs a reduction with few results over
// many elements as two: partial results over the inner part of its axes,
// then the node itself over those.
//
// Why: a GPU runs a reduction one block per result (codegen/gpu_mapping.h,
// kBlockPerRow). ReduceMean over all of a [32, 12, 197, 64] tensor was one
// block of 256 threads over 4.8 million elements: 5.4 ms on an H100, where
// 512 blocks over 9,456 elements each and one over their 512 partial means
// take microseconds.
//
// The rewrite: the target's predicate names the partial results it wants for
// a node's result count and reduced length (0: keep the node). The partials'
// index is the outer reduced axes, the last of them possibly split in two by
// a keel.Reshape view (a divisor of its extent), chosen for the least work on
// the longest path (reduction_split.cc, ChooseCut), every part at least
// kMinPartLength elements. The partial reduction (OpDef::reduction_partial,
// keepdims 1) runs over the remaining, inner axes; a second keel.Reshape restores the
// node's input rank where the first split an axis; the node itself then
// reduces the partials over its own axes (the inner ones now of extent 1), so
// its output value, type and users stay. ReduceMean's parts are equal in size,
// so the mean of the means is the mean.
//
// Candidates: canonical Reduce* nodes (OpDef::reduction_partial set) with
// floating-point data and at least one reduced axis. Runs on the typed graph
// before mixed precision, so that the partials are stored as the reduction
// computes (f32 where the pass keeps it). Deterministic: the new nodes are
// named after the reduction.
//
// Errors: Internal when the rewritten node's type differs from the old one.
// Thread-safety: one graph at a time per pass object.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "compiler/passes/pass.h"

namespace keel::passes {

// The partial results to run a reduction of `rows` results over `length`
// elements each with (at least 2), or 0 to keep it as it is.
using ReductionSplitPredicate = std::function<int64_t(int64_t rows, int64_t length)>;

// Every part reduces at least this many elements (fewer: the split is not worth a kernel).
constexpr int64_t kMinPartLength = 64;

class ReductionSplitPass final : public Pass {
 public:
  explicit ReductionSplitPass(ReductionSplitPredicate parts = {}) : parts_(std::move(parts)) {}
  std::string name() const override { return "reduction-split"; }
  std::string description() const override {
    return "reductions with few results over many elements as partial results, then the node over those";
  }
  Status Run(ir::Graph& graph) override;

 private:
  ReductionSplitPredicate parts_;
};

}  // namespace keel::passes
