// compiler/ir/printer.h — a readable text dump of a Graph (keelc --dump-ir).
//
// Format, one line per node, deterministic:
//   graph resnet18(%input: f32[1,3,224,224]) -> (%output) {
//     %5: f32[1,64,112,112] = Conv(%input, %w0, %b0) {group=1, pads=[3,3,3,3], strides=[2,2]}  # /conv1/Conv
//     ...
//   }
// Constants are listed once, before the nodes, with type and byte size (never their data).
#pragma once

#include <string>

#include "compiler/ir/graph.h"

namespace keel::ir {

std::string PrintGraph(const Graph& graph);

}  // namespace keel::ir
