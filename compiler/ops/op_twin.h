// compiler/ops/op_twin.h — the twin of a node in an internal form.
//
// A form of an op (channels-last, Winograd) changes only where or how its
// operands' bytes are kept; its semantics come from a twin: a copy of the node
// in a graph of its own, without the form's attribute, whose operands are the
// plain-form values. Forms differ only in how each operand is turned back into
// its plain form, which the caller gives as `operand`.
//
// Thread-safety: pure functions. Errors: kInternal for an untyped input, or
// what `operand` returns.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "compiler/ir/graph.h"
#include "keel/status.h"

namespace keel::ops {

// `graph` owns `twin`, the node's copy.
struct OpTwin {
  std::unique_ptr<ir::Graph> graph;
  ir::Node* twin = nullptr;
};

// Adds to `g` the twin's operand for the node's typed input `i`.
using TwinOperandFn = std::function<Result<ir::Value*>(ir::Graph& g, size_t i, const ir::Value& in)>;

// The twin of `node`: same op, name, output count and attributes less `form_attr`;
// omitted inputs stay omitted, every other input comes from `operand`.
Result<OpTwin> MakeOpTwin(const ir::Node& node, const std::string& form_attr, const TwinOperandFn& operand);

}  // namespace keel::ops
