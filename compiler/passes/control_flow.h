// compiler/passes/control_flow.h — static control flow: If, Loop and Scan made
// into plain dataflow during shape inference.
//
// Keel compiles static graphs, but many graphs use control flow in a static way:
// an If on a condition that folds to a constant (a rank or size test), a Loop
// with a constant trip count (the expanded Range), a Scan over a static
// sequence. Shape inference calls LowerControlFlow on such a node once its
// inputs are typed (and folded where small):
//   If    constant condition: the taken branch is inlined; otherwise both
//         branches are inlined and their outputs selected with Where, when
//         their types agree (else refused with ops::NeedsConstant).
//   Loop  constant trip count and/or condition, and a body condition that
//         folds every iteration: unrolled; scan outputs are stacked on a new
//         axis 0. Data-dependent termination is refused.
//   Scan  (9+ and the batched Scan-8) unrolled over the static sequence length;
//         slices are taken and scan outputs stacked along the given axes, in
//         the given directions.
// Inlining clones the subgraph's nodes before the control-flow node, binding
// its formal inputs to the operands and its captures to the node's inputs
// (see ir::Node::subgraph), and runs `step` (shape inference's per-node step)
// on each clone in order, so nested control flow and condition folding follow.
// Unrolling stops with a one-line refusal above kMaxUnrolledIterations.
#pragma once

#include <functional>

#include "compiler/ir/graph.h"
#include "keel/status.h"

namespace keel::passes {

inline constexpr int64_t kMaxUnrolledIterations = 4096;

// Shape inference's per-node step: canonicalize, type, fold or expand `node`.
using NodeStep = std::function<Status(ir::Graph& graph, ir::Node* node)>;

// True for nodes that hold control-flow subgraphs.
bool IsControlFlow(const ir::Node& node);

// Replaces `node` (inputs typed) by the static dataflow it stands for, or
// returns the refusal naming it.
Status LowerControlFlow(ir::Graph& graph, ir::Node* node, const NodeStep& step);

// A deep copy of `graph` (subgraphs included), for cloning nested control flow.
std::unique_ptr<ir::Graph> CloneGraph(const ir::Graph& graph);

}  // namespace keel::passes
