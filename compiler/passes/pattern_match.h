// compiler/passes/pattern_match.h — small predicates the pattern-rewriting
// passes (attention-fusion, gelu-fusion, space-to-depth, im2col, subpixel) share: an op's registered
// roles, a constant scalar operand, a value with one use, a multiplication by a
// constant scalar, the end of a checked rewrite.
//
// Thread-safety: pure functions over a graph the caller does not mutate
// concurrently.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_def.h"
#include "keel/status.h"

namespace keel::passes {

// The node's registered op (null for an unknown op or a null node).
const ops::OpDef* DefOf(const ir::Node* n);
// The node's epilogue role (kNone where it has none or is unknown).
ops::EpilogueRole EpilogueRoleOf(const ir::Node* n);

// A constant single-element float operand's (finite) value.
std::optional<double> ConstScalar(const ir::Value* v);

// `v` has one use (one input of one node) and is not a graph output: a pattern
// may swallow it.
bool SoleUse(const ir::Graph& g, const ir::Value* v);

// A convolution that a weight-rearranging rewrite (space-to-depth, im2col,
// subpixel) may take: the registry's library op `call` (Conv's, or
// ConvTranspose's), one output, typed, group 1, a channels-first f32 input and a
// constant f32 weight of the input's rank. Window attributes are canonical after
// shape inference (ops/window.h: explicit pads, auto_pad NOTSET).
bool ConstantWeightConv(const ir::Node& conv, ops::LibraryCall call = ops::LibraryCall::kConv);

// The end of a rewrite of `n` into new nodes computing `out`: Internal naming the
// node and the `form` when out's type is not n's output type; else n's readers
// read `out` (which takes n's output's name where that is a graph output) and n is removed.
Status ReplaceWithRewrite(ir::Graph& graph, ir::Node* n, ir::Value* out, const std::string& form);

// `n` = x * c, c * x or x / c with c a nonzero constant scalar and x of the
// result's type: x and the factor (1 / c for the division).
std::optional<std::pair<ir::Value*, double>> ScalarScale(const ir::Node* n);

}  // namespace keel::passes
