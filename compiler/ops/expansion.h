// compiler/ops/expansion.h — composite ops: an op defined by a subgraph of other
// ops (the ONNX spec defines Attention, RotaryEmbedding, the losses... that way).
//
// An OpDef with an `expand` hook (op_def.h) builds that subgraph through an
// Expander. Shape inference calls ExpandNode on each such node once it is
// canonical and typed: the new nodes are inserted before it, canonicalized and
// typed as they are built (composite ops among them expand in turn), the
// node's outputs are redirected to the built values (a graph output keeps its
// name) and the node is removed. The reference evaluator evaluates a composite
// node the same way, on a scratch graph, so constant folding and the tests see
// exactly the ops the back ends compile.
//
// Ownership: an Expander borrows the graph and the node for the duration of the
// expand hook. Errors: the built ops' own messages, prefixed by the composite node.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "keel/status.h"

namespace keel::ops {

using AttrList = std::vector<std::pair<std::string, ir::AttrValue>>;

class Expander {
 public:
  Expander(ir::Graph& graph, ir::Node& node) : graph_(graph), node_(node) {}

  // A node `op_type(inputs; attrs)` with `num_outputs` outputs, inserted before
  // the composite node, canonicalized and typed; its outputs.
  Result<std::vector<ir::Value*>> Ops(const std::string& op_type, std::vector<ir::Value*> inputs, AttrList attrs,
                                      size_t num_outputs);
  // The single-output form.
  Result<ir::Value*> Op(const std::string& op_type, std::vector<ir::Value*> inputs, AttrList attrs = {});

  // Constants: a tensor; a scalar (rank 0) of `dtype`; an int64 vector.
  ir::Value* Const(ir::TensorDataPtr data);
  ir::Value* Scalar(double value, ir::DType dtype);
  ir::Value* Ints(const std::vector<int64_t>& values);

  const ir::Node& node() const { return node_; }

 private:
  ir::Graph& graph_;
  ir::Node& node_;
  int next_ = 0;
};

// Replaces the composite `node` of `graph` by its expansion (see above).
Status ExpandNode(ir::Graph& graph, ir::Node* node);

}  // namespace keel::ops
