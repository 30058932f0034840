// compiler/ops/channels_last.cc — see channels_last.h.
#include "compiler/ops/channels_last.h"

#include <cstring>

#include "compiler/ops/op_def.h"
#include "compiler/ops/semantics.h"

namespace keel::ops {

bool IsChannelsLast(const ir::Node& node) {
  auto v = node.attrs().GetInt(kChannelsLastAttr, 0);
  return v.ok() && *v != 0;
}

bool IsOutputChannelsLast(const ir::Node& node) {
  auto v = node.attrs().GetInt(kChannelsLastAttr, 0);
  return v.ok() && *v == kOutputChannelsLast;
}

std::vector<int64_t> ToChannelsLastPerm(size_t rank) {
  std::vector<int64_t> p{0};
  for (size_t i = 2; i < rank; ++i) p.push_back(static_cast<int64_t>(i));
  if (rank > 1) p.push_back(1);
  return p;
}

std::vector<int64_t> ToChannelsFirstPerm(size_t rank) {
  std::vector<int64_t> p{0};
  if (rank > 1) p.push_back(static_cast<int64_t>(rank) - 1);
  for (size_t i = 1; i + 1 < rank; ++i) p.push_back(static_cast<int64_t>(i));
  return p;
}

std::vector<int64_t> PermuteShape(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm) {
  std::vector<int64_t> out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = shape[static_cast<size_t>(perm[i])];
  return out;
}

ir::TensorDataPtr PermuteTensor(const ir::TensorData& data, const std::vector<int64_t>& perm) {
  auto out = std::make_shared<ir::TensorData>();
  out->type = {data.type.dtype, PermuteShape(data.type.shape, perm)};
  out->bytes.resize(data.bytes.size());
  const size_t rank = perm.size(), esize = ir::DTypeSize(data.type.dtype);
  const int64_t n = data.type.NumElements();
  if (n == 0) return out;
  // Input strides seen from the output's axes.
  std::vector<int64_t> in_stride(rank, 1), stride(rank);
  for (size_t i = rank; i-- > 1;) in_stride[i - 1] = in_stride[i] * data.type.shape[i];
  for (size_t i = 0; i < rank; ++i) stride[i] = in_stride[static_cast<size_t>(perm[i])];
  std::vector<int64_t> idx(rank, 0);
  int64_t src = 0;
  for (int64_t o = 0; o < n; ++o) {
    std::memcpy(&out->bytes[static_cast<size_t>(o) * esize], &data.bytes[static_cast<size_t>(src) * esize], esize);
    for (size_t d = rank; d-- > 0;) {  // next output index, row-major
      src += stride[d];
      if (++idx[d] < out->type.shape[d]) break;
      src -= stride[d] * idx[d];
      idx[d] = 0;
    }
  }
  return out;
}


bool MovesOperand(const OpDef& def, const ir::Node& node, size_t i) {
  if (!IsChannelsLast(node) || IsOutputChannelsLast(node)) return false;
  for (size_t l : def.channels_last_operands)
    if (l == i) return true;
  return false;
}

Result<OpTwin> MakeChannelsFirstTwin(const OpDef& def, const ir::Node& node) {
  if (def.channels_last_operands.empty()) {
    return Internal(ir::NodeDescription(node) + ": op " + def.name + " has no channels-last form");
  }
  return MakeOpTwin(node, kChannelsLastAttr, [&def, &node](ir::Graph& g, size_t i, const ir::Value& in) -> Result<ir::Value*> {
    const bool moved = MovesOperand(def, node, i);
    const std::vector<int64_t> back = ToChannelsFirstPerm(in.type().shape.size());
    if (in.is_constant()) return g.AddConstant(in.name(), moved ? PermuteTensor(*in.constant(), back) : in.constant());
    ir::TensorType type = in.type();
    if (moved) type.shape = PermuteShape(type.shape, back);
    return g.AddInput(in.name(), type);
  });
}

Status CanonicalizeChannelsLast(const OpDef& def, ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(OpTwin t, MakeChannelsFirstTwin(def, node));
  KEEL_RETURN_IF_ERROR(CanonicalizeNode(*t.twin));
  if (t.twin->inputs().size() != node.inputs().size()) {
    return Internal(ir::NodeDescription(node) + ": canonicalizing the channels-last form changed its operands");
  }
  const int64_t mark = IsOutputChannelsLast(node) ? kOutputChannelsLast : 1;
  node.attrs() = t.twin->attrs();
  node.attrs().Set(kChannelsLastAttr, mark);
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferChannelsLast(const OpDef& def, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(OpTwin t, MakeChannelsFirstTwin(def, node));
  KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, InferNodeTypes(*t.twin));
  types[0].shape = PermuteShape(types[0].shape, ToChannelsLastPerm(types[0].shape.size()));
  return types;
}

Result<std::vector<ir::TensorDataPtr>> EvaluateChannelsLast(const OpDef& def, const ir::Node& node,
                                                            const std::vector<ir::TensorDataPtr>& inputs) {
  KEEL_ASSIGN_OR_RETURN(OpTwin t, MakeChannelsFirstTwin(def, node));
  std::vector<ir::TensorDataPtr> args = inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] && MovesOperand(def, node, i)) args[i] = PermuteTensor(*args[i], ToChannelsFirstPerm(args[i]->type.shape.size()));
  }
  KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorDataPtr> outs, EvaluateNode(*t.twin, args));
  outs[0] = PermuteTensor(*outs[0], ToChannelsLastPerm(outs[0]->type.shape.size()));
  return outs;
}

}  // namespace keel::ops
