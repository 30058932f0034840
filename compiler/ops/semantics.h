// compiler/ops/semantics.h — the registry-backed meaning of a node: its
// canonical form, its output types and its reference value. These are what the
// passes (shape inference, constant folding), the frontend and the tests call;
// each dispatches to the node's OpDef (op_def.h).
//
//   CanonicalizeNode(node)  once the node's inputs are typed: the op's
//                           canonicalize hook (lift constant operands, fill
//                           defaults, normalize axes). Idempotent.
//   InferNodeTypes(node)    output types of a canonical node with typed inputs;
//                           checks the hook returned one type per output and
//                           that every shape is sane (no negative dimension,
//                           at most 2^40 elements).
//   SetInferredTypes(node)  InferNodeTypes, the results set on the outputs.
//   EvaluateNode(node, in)  reference outputs: the op's `evaluate`, or the
//                           interpreter for elementwise/injective ops.
//   EvaluateGraph(g, in)    every node in order; the graph's outputs.
//
// Errors name the node (InvalidArgument for malformed models, Unsupported for
// what Keel does not implement, including unknown ops). Never aborts.
// Thread-safety: pure functions (CanonicalizeNode mutates only its node).
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace keel::ops {

Status CanonicalizeNode(ir::Node& node);
Result<std::vector<ir::TensorType>> InferNodeTypes(const ir::Node& node);
Status SetInferredTypes(ir::Node& node);
Result<std::vector<ir::TensorDataPtr>> EvaluateNode(const ir::Node& node, const std::vector<ir::TensorDataPtr>& inputs);
Result<std::vector<ir::TensorDataPtr>> EvaluateGraph(const ir::Graph& graph,
                                                     const std::vector<ir::TensorDataPtr>& inputs);

}  // namespace keel::ops
