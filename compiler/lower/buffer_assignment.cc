// compiler/lower/buffer_assignment.cc — see the header for the model.
#include "compiler/lower/buffer_assignment.h"

#include <algorithm>
#include <string>
#include <utility>

#include "compiler/lower/concat_in_place.h"
#include "compiler/ops/op_def.h"
#include "compiler/ops/registry.h"

namespace keel::lower {

bool IsViewOp(const ir::Node& node) {
  const ops::OpDef* def = ops::FindOp(node);
  return def != nullptr && def->fusion == ops::FusionClass::kView;
}

namespace {

uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

bool IsElementwiseGroup(const ir::Node& node) {
  if (node.op_type() != "keel.Fused" || node.outputs().size() != 1 || node.output(0) == nullptr) return false;
  Result<std::string> pattern = node.attrs().GetString("keel.pattern", "");
  return pattern.ok() && *pattern == "elementwise";
}

// Sets may_alias_with on the outputs of in-place capable steps (conditions and
// safety argument in the header). Runs after every lifetime is final.
void SetInPlaceAliases(const ir::Graph& graph, const std::vector<ir::Node*>& nodes,
                       const BufferAssignmentOptions& options, BufferAssignment& out) {
  std::vector<char> is_output_buffer(out.buffers.size(), 0);
  for (const ir::Value* v : graph.outputs()) {
    auto it = out.values.find(v);
    if (it != out.values.end() && it->second.buffer >= 0) is_output_buffer[it->second.buffer] = 1;
  }
  for (size_t step = 0; step < nodes.size(); ++step) {
    const ir::Node& node = *nodes[step];
    if (!options.in_place_steps.empty() &&
        (step >= options.in_place_steps.size() || options.in_place_steps[step] == 0)) {
      continue;
    }
    if (!IsElementwiseGroup(node)) continue;
    const ir::Value* output = node.output(0);
    const auto out_it = out.values.find(output);
    if (out_it == out.values.end() || out_it->second.kind != ValueKind::kBuffer) continue;
    const int32_t out_buffer = out_it->second.buffer;
    if (!output->has_type()) continue;
    const int32_t s = static_cast<int32_t>(step);
    for (const ir::Value* input : node.inputs()) {
      if (input == nullptr || !input->has_type()) continue;
      const auto in_it = out.values.find(input);
      if (in_it == out.values.end()) continue;
      const ValueInfo& info = in_it->second;
      if (info.kind != ValueKind::kBuffer && info.kind != ValueKind::kView) continue;
      if (info.offset != 0) continue;  // a concat part: not at the buffer's start
      const int32_t b = info.buffer;
      if (b < 0 || b == out_buffer || is_output_buffer[b]) continue;
      const memory::TensorLifetime& lifetime = out.buffers[b];
      if (lifetime.last_use != s || lifetime.device != out.buffers[out_buffer].device) continue;
      if (input->type().shape != output->type().shape ||
          input->type().ByteSize() != output->type().ByteSize()) {
        continue;
      }
      // Every input reading B must be this very value (same shape, same indices).
      bool only_reader = true;
      for (const ir::Value* other : node.inputs()) {
        if (other == nullptr || other == input) continue;
        const auto o = out.values.find(other);
        if (o != out.values.end() && o->second.buffer == b &&
            (o->second.kind == ValueKind::kBuffer || o->second.kind == ValueKind::kView)) {
          only_reader = false;
        }
      }
      if (!only_reader) continue;
      out.buffers[out_buffer].may_alias_with = b;
      break;
    }
  }
}

}  // namespace

Result<BufferAssignment> AssignBuffers(const ir::Graph& graph, const BufferAssignmentOptions& options) {
  BufferAssignment out;
  const std::vector<ir::Node*> nodes = graph.nodes();
  out.num_steps = static_cast<int32_t>(nodes.size());
  out.workspace_of_step.assign(nodes.size(), -1);
  const std::vector<std::vector<uint64_t>> concat_offsets = InPlaceConcatOffsets(graph, options.alignment);
  // In-place concats: each part's (step, byte offset), and the root buffer of
  // each concat step, made when its first part is produced.
  std::unordered_map<const ir::Value*, std::pair<int32_t, uint64_t>> concat_part;
  for (size_t step = 0; step < nodes.size(); ++step) {
    for (size_t i = 0; i < concat_offsets[step].size(); ++i) {
      concat_part[nodes[step]->input(i)] = {static_cast<int32_t>(step), concat_offsets[step][i]};
    }
  }
  std::vector<int32_t> concat_buffer(nodes.size(), -1);
  for (const std::vector<uint64_t>& offsets : concat_offsets) out.in_place_concat.push_back(offsets.empty() ? 0 : 1);

  auto new_buffer = [&](const ir::Value* root, int32_t step,
                        memory::Device device) -> Result<int32_t> {
    if (!root->has_type()) return Internal("value '" + root->name() + "' has no type after shape inference");
    const int64_t bytes = root->type().ByteSize();
    if (bytes < 0) return Internal("value '" + root->name() + "' has a negative byte size");
    memory::TensorLifetime lifetime;
    // A zero-byte tensor still gets a distinct, aligned address.
    lifetime.size = AlignUp(std::max<uint64_t>(static_cast<uint64_t>(bytes), 1), options.alignment);
    lifetime.alignment = options.alignment;
    lifetime.first_use = step;
    lifetime.last_use = step;
    lifetime.device = device;
    lifetime.name = root->name();
    out.buffers.push_back(lifetime);
    out.buffer_roots.push_back(root);
    return static_cast<int32_t>(out.buffers.size() - 1);
  };

  for (ir::Value* input : graph.inputs()) {
    ValueInfo info{ValueKind::kParam, -1, -1, false};
    if (options.host_io) { KEEL_ASSIGN_OR_RETURN(info.buffer, new_buffer(input, 0, options.device)); }
    out.values[input] = info;
  }

  for (size_t step = 0; step < nodes.size(); ++step) {
    const ir::Node& node = *nodes[step];
    const int32_t s = static_cast<int32_t>(step);
    // Reads extend the lifetime of the buffers behind every input.
    for (const ir::Value* input : node.inputs()) {
      if (input == nullptr) continue;
      if (input->is_constant() && !out.values.count(input)) {
        out.values[input] = {ValueKind::kConstant, -1, -1, false};
        continue;
      }
      auto it = out.values.find(input);
      if (it == out.values.end()) {
        return InvalidArgument("node '" + node.name() + "' (" + node.op_type() + ") reads value '" +
                               input->name() + "' before it is produced");
      }
      if (it->second.buffer >= 0) {
        auto& lifetime = out.buffers[it->second.buffer];
        lifetime.last_use = std::max(lifetime.last_use, s);
      }
    }
    if (step < options.workspace_bytes.size() && options.workspace_bytes[step] > 0) {
      memory::TensorLifetime lifetime;
      lifetime.size = AlignUp(options.workspace_bytes[step], options.alignment);
      lifetime.alignment = options.alignment;
      lifetime.first_use = lifetime.last_use = s;
      lifetime.device = options.device;
      lifetime.name = node.name() + ":workspace";
      out.buffers.push_back(lifetime);
      out.buffer_roots.push_back(nullptr);
      out.workspace_of_step[step] = static_cast<int32_t>(out.buffers.size() - 1);
    }
    for (const ir::Value* output : node.outputs()) {
      if (output == nullptr) continue;
      ValueInfo info;
      info.step = s;
      const ir::Value* source = node.inputs().empty() ? nullptr : node.inputs()[0];
      const auto source_info = source ? out.values.find(source) : out.values.end();
      const auto part = concat_part.find(output);
      if (!concat_offsets[step].empty()) {
        // The concat's output is the root its parts were written into.
        info.kind = ValueKind::kBuffer;
        info.buffer = concat_buffer[step];
        if (info.buffer < 0) return Internal("in-place concat '" + node.name() + "' has no buffer");
      } else if (part != concat_part.end()) {
        const auto [concat_step, offset] = part->second;
        int32_t& root = concat_buffer[concat_step];
        if (root < 0) {
          KEEL_ASSIGN_OR_RETURN(root, new_buffer(nodes[concat_step]->output(0), s, options.device));
        }
        info.kind = ValueKind::kView;
        info.buffer = root;
        info.offset = offset;
      } else if (IsViewOp(node) && source_info != out.values.end() && source_info->second.buffer >= 0) {
        info.kind = ValueKind::kView;
        info.buffer = source_info->second.buffer;
        info.offset = source_info->second.offset;
      } else {
        info.kind = ValueKind::kBuffer;
        info.materialize_copy = IsViewOp(node);
        KEEL_ASSIGN_OR_RETURN(info.buffer, new_buffer(output, s, options.device));
      }
      out.values[output] = info;
    }
  }

  for (const ir::Value* output : graph.outputs()) {
    auto it = out.values.find(output);
    if (it == out.values.end() && output->is_constant()) {
      it = out.values.emplace(output, ValueInfo{ValueKind::kConstant, -1, -1, false}).first;
    }
    if (it == out.values.end()) {
      return InvalidArgument("graph output '" + output->name() + "' is never produced");
    }
    if (it->second.buffer >= 0) {
      out.buffers[it->second.buffer].last_use = out.num_steps;
      out.output_copy_buffer.push_back(-1);
    } else {
      // A param or constant returned as is: copied into a buffer of its own.
      KEEL_ASSIGN_OR_RETURN(int32_t buffer, new_buffer(output, out.num_steps, options.device));
      out.output_copy_buffer.push_back(buffer);
    }
    int32_t host = -1;
    if (options.host_io) { KEEL_ASSIGN_OR_RETURN(host, new_buffer(output, out.num_steps, memory::Device::kCpu)); }
    out.host_output_buffer.push_back(host);
  }
  if (options.in_place) SetInPlaceAliases(graph, nodes, options, out);
  return out;
}

}  // namespace keel::lower
