// compiler/ops/channels_last.h — the channels-last form of an op: the layout
// keelc's channels-last pass (passes/channels_last.h) gives the nodes a
// vendor library runs faster that way (cuDNN's half convolutions on tensor
// cores read and write NHWC).
//
// A node in channels-last form carries attribute keel.channels_last = 1: its
// output 0 and the inputs its OpDef lists in `channels_last_operands` hold the
// channels-first tensor with axis 1 moved last (NCHW → NHWC; Conv's OIHW
// weight → OHWI). The op keeps one definition: its types, reference values and
// generated kernel all come from a channels-first twin of the node (same
// attributes, operands moved back to channels-first), with the twin's output
// moved to channels-last. So every op that lists operands is correct in this
// form on every back end; the pass uses it where a library call is faster.
//
// keel.channels_last = 2 (kOutputChannelsLast) moves output 0 alone: every
// operand keeps its channels-first layout. A convolution over an NCHW image
// (a network's stem over its 3-channel input) then writes the NHWC tensor a
// channels-last chain reads, instead of a transpose pass over its output.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_twin.h"
#include "keel/status.h"

namespace keel::ops {

struct OpDef;

// The attribute that marks the form.
inline constexpr const char* kChannelsLastAttr = "keel.channels_last";

inline constexpr int64_t kOutputChannelsLast = 2;

bool IsChannelsLast(const ir::Node& node);
// Whether the node is in the output-only form (mark kOutputChannelsLast).
bool IsOutputChannelsLast(const ir::Node& node);
// Whether operand i of a channels-last node holds channels-last data: listed in
// its OpDef's channels_last_operands, and the node not in the output-only form.
bool MovesOperand(const OpDef& def, const ir::Node& node, size_t i);

// Permutations for a rank-`rank` tensor (ONNX Transpose's perm: output axis i
// is input axis perm[i]): channels-first → channels-last [0,2,...,r-1,1] and
// back [0,r-1,1,...,r-2].
std::vector<int64_t> ToChannelsLastPerm(size_t rank);
std::vector<int64_t> ToChannelsFirstPerm(size_t rank);
std::vector<int64_t> PermuteShape(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm);
// `data` transposed by `perm` (any dtype; bytes moved, never rounded).
ir::TensorDataPtr PermuteTensor(const ir::TensorData& data, const std::vector<int64_t>& perm);

// The channels-first twin of a channels-last node: a new graph holding one
// node with the same op and attributes (less the mark) whose inputs are typed
// values (listed operands in channels-first shape; constants stay constants,
// moved back); op_twin.h.
Result<OpTwin> MakeChannelsFirstTwin(const OpDef& def, const ir::Node& node);

// CanonicalizeNode for a channels-last node: the twin's canonical attributes
// (the mark kept); the op must keep its operands (Conv and the pools do).
Status CanonicalizeChannelsLast(const OpDef& def, ir::Node& node);

// InferNodeTypes / EvaluateNode for a channels-last node (semantics.cc calls
// them): the twin's results, output 0 moved to channels-last.
Result<std::vector<ir::TensorType>> InferChannelsLast(const OpDef& def, const ir::Node& node);
Result<std::vector<ir::TensorDataPtr>> EvaluateChannelsLast(const OpDef& def, const ir::Node& node,
                                                            const std::vector<ir::TensorDataPtr>& inputs);

}  // namespace keel::ops
