// compiler/ops/packed_weight.cc — see packed_weight.h.
#include "compiler/ops/packed_weight.h"

#include <memory>

#include "compiler/codegen/gemm_panels.h"
#include "compiler/ops/channels_last.h"
#include "compiler/ops/op_twin.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/semantics.h"
#include "compiler/ops/winograd.h"

namespace keel::ops {
namespace {

// The matrices of a Conv's (typed) weight, or batch 0 when it is no GEMM's A.
WeightMatrices MatricesOf(const ir::Node& conv) {
  const ir::Value* w = conv.input(1);
  if (!w || !w->has_type()) return {};
  const std::vector<int64_t>& ws = w->type().shape;
  if (WinogradTile(conv) != 0) {
    if (ws.size() != 3) return {};
    return {ws[0], ws[1], ws[2]};
  }
  auto group = conv.attrs().GetInt("group", 1);
  if (ws.size() < 3 || !group.ok() || *group <= 0 || ws[0] % *group != 0 || ws[1] <= 1) return {};
  int64_t k = 1;
  for (size_t d = 1; d < ws.size(); ++d) k *= ws[d];
  return {*group, ws[0] / *group, k};
}

Result<ir::TensorDataPtr> Reorder(const ir::TensorData& w, const WeightMatrices& mx, int64_t mr, bool pack) {
  const int64_t es = static_cast<int64_t>(ir::DTypeSize(w.type.dtype));
  if (mr < 1 || mx.batch < 1 || mx.m < 1 || mx.k < 0 || es <= 0 ||
      static_cast<int64_t>(w.bytes.size()) != mx.batch * mx.m * mx.k * es) {
    return InvalidArgument("packed weight: " + w.type.ToString() + " is not " + std::to_string(mx.batch) + " x [" +
                           std::to_string(mx.m) + ", " + std::to_string(mx.k) + "] with " + std::to_string(mr) +
                           " rows per panel");
  }
  auto out = std::make_shared<ir::TensorData>();
  out->type = w.type;
  out->bytes = pack ? codegen::PackRowPanels(w.bytes, es, mx.batch, mx.m, mx.k, mr)
                    : codegen::UnpackRowPanels(w.bytes, es, mx.batch, mx.m, mx.k, mr);
  return ir::TensorDataPtr(out);
}

}  // namespace

int64_t PackedWeightRows(const ir::Node& node) {
  if (node.op_type() != "Conv") return 0;  // only Conv has the form (models cannot set keel.* attributes)
  auto v = node.attrs().GetInt(kPackedRowsAttr, 0);
  return v.ok() ? *v : 0;
}

bool PackedWeightApplies(const ir::Node& conv, WeightMatrices* matrices) {
  if (conv.op_type() != "Conv" || PackedWeightRows(conv) != 0 || conv.inputs().size() < 2) return false;
  if (IsChannelsLast(conv) || conv.outputs().size() != 1) return false;
  const ir::Value* w = conv.input(1);
  if (!w || !w->is_constant() || !w->has_type()) return false;
  const WeightMatrices mx = MatricesOf(conv);
  if (mx.batch == 0) return false;
  if (matrices) *matrices = mx;
  return true;
}

Result<ir::TensorDataPtr> PackWeight(const ir::TensorData& w, const WeightMatrices& matrices, int64_t mr) {
  return Reorder(w, matrices, mr, true);
}

Result<ir::TensorDataPtr> UnpackWeight(const ir::TensorData& w, const WeightMatrices& matrices, int64_t mr) {
  return Reorder(w, matrices, mr, false);
}

Result<std::vector<ir::TensorDataPtr>> EvaluatePackedWeight(const ir::Node& node,
                                                            const std::vector<ir::TensorDataPtr>& inputs) {
  const int64_t mr = PackedWeightRows(node);
  const WeightMatrices mx = MatricesOf(node);
  if (mx.batch == 0) return NodeError(node, "keel.packed_rows on a convolution whose weight is no GEMM operand");
  if (inputs.size() < 2 || !inputs[1]) return NodeError(node, "missing value for the packed weight");
  KEEL_ASSIGN_OR_RETURN(OpTwin t, MakeOpTwin(node, kPackedRowsAttr, [](ir::Graph& g, size_t, const ir::Value& in) {
                          return Result<ir::Value*>(g.AddInput(in.name(), in.type()));
                        }));
  std::vector<ir::TensorDataPtr> args = inputs;
  KEEL_ASSIGN_OR_RETURN(args[1], UnpackWeight(*inputs[1], mx, mr));
  return EvaluateNode(*t.twin, args);
}

}  // namespace keel::ops
