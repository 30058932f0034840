// compiler/ir/type_inference.h — per-op canonicalization and output-type rules.
//
// These are the single source of truth for the *shape semantics* of every op the
// IR supports (the list and the normalized attribute forms are documented in
// compiler/frontend/op_schemas.h). The shape-inference pass, the reference
// evaluator (reference_eval.h) and codegen all rely on them.
//
// Two steps:
//   CanonicalizeNode(node): once the node's input types are known, rewrites it to
//     the normalized form: constant "shape-like" inputs are lifted into
//     attributes (Reshape shape, Slice starts/ends/axes/steps, Unsqueeze/Squeeze/
//     ReduceMean axes, Clip min/max), rank-dependent defaults are filled
//     (strides, pads, dilations, kernel_shape, perm, axes) and axes are made
//     non-negative. Idempotent.
//   InferNodeTypes(node, input_types): the output types of a normalized node.
//     Pure; errors (InvalidArgument / Unsupported) name the node and the
//     mismatch ("Add 'n1': shapes [2,3] and [4] do not broadcast").
//
// Thread-safety: pure functions over the arguments (CanonicalizeNode mutates its
// node only). Errors are values; nothing aborts on bad input.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace keel::ir {

// Canonicalizes `node` in place; requires the types of its (non-null) inputs.
Status CanonicalizeNode(Node& node);

// Output types of a canonical node given its input types (nullptr inputs in the
// node map to entries that are ignored). One entry per node output.
Result<std::vector<TensorType>> InferNodeTypes(const Node& node, const std::vector<TensorType>& input_types);

// Numpy-style broadcast of two shapes; InvalidArgument when incompatible.
Result<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// "Conv 'name'" — the way every error message names a node.
std::string NodeDescription(const Node& node);

// True for ops evaluated elementwise with broadcasting (Add, Sub, Mul, Div, Pow)
// and for elementwise unary ops (Relu, Sigmoid, Tanh, Erf, Sqrt, Clip, Cast,
// Identity, Neg, Exp, ...). Used by fusion.
bool IsElementwiseBinary(const std::string& op_type);
bool IsElementwiseUnary(const std::string& op_type);

}  // namespace keel::ir
