// compiler/lower/concat_in_place.cc — see the header for the rules.
#include "compiler/lower/concat_in_place.h"

#include <unordered_map>
#include <unordered_set>

#include "compiler/lower/buffer_assignment.h"
#include "compiler/ops/op_def.h"
#include "compiler/ops/registry.h"

namespace keel::lower {
namespace {

// The Concat node a step runs when it runs nothing else: the node itself, or the
// one node of a keel.Fused body that concatenates the body's inputs in order
// (so its input i is the step's input i). nullptr otherwise.
bool Concatenates(const ir::Node& node) {
  const ops::OpDef* def = ops::FindOp(node);
  return def != nullptr && def->concatenates;
}

const ir::Node* SoleConcat(const ir::Node& node) {
  if (node.body() == nullptr) return Concatenates(node) ? &node : nullptr;
  const ir::Graph& body = *node.body();
  const std::vector<ir::Node*> inner = body.nodes();
  if (inner.size() != 1 || !Concatenates(*inner[0])) return nullptr;
  const ir::Node* concat = inner[0];
  if (concat->inputs() != body.inputs() || body.inputs().size() != node.inputs().size()) return nullptr;
  if (node.outputs().size() != 1 || body.outputs().size() != 1 || body.outputs()[0] != concat->output(0)) {
    return nullptr;
  }
  return concat;
}

// Byte offsets of the inputs within the output when the node-local rules hold
// (shape, dtype, alignment: see the header), else empty.
std::vector<uint64_t> PartOffsets(const ir::Node& node, const ir::Node& concat, uint32_t alignment) {
  const ir::Value* output = node.output(0);
  if (output == nullptr || !output->has_type() || node.inputs().empty()) return {};
  const ir::TensorType& out_type = output->type();
  const int64_t rank = static_cast<int64_t>(out_type.shape.size());
  Result<int64_t> axis_attr = concat.attrs().GetInt("axis", 0);
  if (!axis_attr.ok()) return {};
  const int64_t axis = *axis_attr < 0 ? *axis_attr + rank : *axis_attr;
  if (axis < 0 || axis >= rank) return {};
  for (int64_t d = 0; d < axis; ++d) {
    if (out_type.shape[static_cast<size_t>(d)] != 1) return {};
  }
  std::vector<uint64_t> offsets;
  uint64_t offset = 0;
  for (const ir::Value* input : node.inputs()) {
    if (input == nullptr || !input->has_type() || input->type().dtype != out_type.dtype) return {};
    if (offset % alignment != 0) return {};
    offsets.push_back(offset);
    const int64_t bytes = input->type().ByteSize();
    if (bytes < 0) return {};
    offset += static_cast<uint64_t>(bytes);
  }
  if (static_cast<int64_t>(offset) != out_type.ByteSize()) return {};
  return offsets;
}

}  // namespace

std::vector<std::vector<uint64_t>> InPlaceConcatOffsets(const ir::Graph& graph, uint32_t alignment) {
  const std::vector<ir::Node*> nodes = graph.nodes();
  std::vector<std::vector<uint64_t>> result(nodes.size());
  if (alignment == 0) return result;
  // How many concat slots each value fills, over every Concat step of the graph.
  std::unordered_map<const ir::Value*, int> concat_slots;
  std::vector<const ir::Node*> concat_of(nodes.size(), nullptr);
  for (size_t step = 0; step < nodes.size(); ++step) {
    concat_of[step] = SoleConcat(*nodes[step]);
    if (concat_of[step] == nullptr) continue;
    for (const ir::Value* input : nodes[step]->inputs()) ++concat_slots[input];
  }
  const std::unordered_set<const ir::Value*> graph_outputs(graph.outputs().begin(), graph.outputs().end());
  std::unordered_set<const ir::Node*> in_place;
  for (size_t step = 0; step < nodes.size(); ++step) {
    if (concat_of[step] == nullptr) continue;
    const ir::Node& node = *nodes[step];
    std::vector<uint64_t> offsets = PartOffsets(node, *concat_of[step], alignment);
    if (offsets.empty()) continue;
    bool parts_ok = true;
    for (const ir::Value* input : node.inputs()) {
      const ir::Node* producer = input->producer();
      if (producer == nullptr || input->is_constant() || graph_outputs.count(input) != 0 ||
          concat_slots.at(input) != 1 || IsViewOp(*producer) || in_place.count(producer) != 0) {
        parts_ok = false;
        break;
      }
    }
    if (!parts_ok) continue;
    in_place.insert(&node);
    result[step] = std::move(offsets);
  }
  return result;
}

}  // namespace keel::lower
