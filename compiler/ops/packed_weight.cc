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
  if (ws.size() < 3 || !group.ok() || *group <= 0 || ws[0] % *group != 0) return {};
  // A channels-last weight is OHWI: the same bytes as OIHW where the kernel or I is 1, the only
  // channels-last weights packed (the reference values unpack the channels-first twin's). The
  // output-only form keeps OIHW.
  const bool last = IsChannelsLast(conv) && !IsOutputChannelsLast(conv);
  const int64_t in_per_group = last ? ws.back() : ws[1];
  int64_t k = 1;
  for (size_t d = 1; d < ws.size(); ++d) k *= ws[d];
  if (in_per_group == 1) return *group == ws[0] ? WeightMatrices{1, ws[0], k} : WeightMatrices{};
  if (last && k != in_per_group) return {};
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
  if (conv.outputs().size() != 1) return false;
  const ir::Value* w = conv.input(1);
  if (!w || !w->is_constant() || !w->has_type()) return false;
  const WeightMatrices mx = MatricesOf(conv);
  if (mx.batch == 0) return false;
  // A channels-first depthwise convolution's kernels read its weight as it is: no candidate.
  if ((!IsChannelsLast(conv) || IsOutputChannelsLast(conv)) && WinogradTile(conv) == 0 && w->type().shape[1] == 1)
    return false;
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

// ---- B-panel form ----

int64_t PackedColumns(const ir::Node& node) {
  // Only MatMul and Gemm have the form (models cannot set keel.* attributes).
  if (node.op_type() != "MatMul" && node.op_type() != "Gemm") return 0;
  auto v = node.attrs().GetInt(kPackedColumnsAttr, 0);
  return v.ok() ? *v : 0;
}

bool PackedColumnsApplies(const ir::Node& node, BMatrix* matrix) {
  const bool gemm = node.op_type() == "Gemm";
  if ((!gemm && node.op_type() != "MatMul") || PackedColumns(node) != 0) return false;
  if (node.inputs().size() < 2 || node.outputs().size() != 1) return false;
  const ir::Value* a = node.input(0);
  const ir::Value* b = node.input(1);
  if (!a || !b || !a->has_type() || !b->is_constant() || !b->has_type()) return false;
  const ir::TensorType& at = a->type();
  const ir::TensorType& bt = b->type();
  const bool float_type = bt.dtype == ir::DType::kF32 || bt.dtype == ir::DType::kF16 || bt.dtype == ir::DType::kBF16;
  if (!float_type || at.dtype != bt.dtype || bt.shape.size() != 2 || at.shape.size() < 2) return false;
  BMatrix mx;
  if (gemm) {
    auto ta = node.attrs().GetInt("transA", 0);
    auto tb = node.attrs().GetInt("transB", 0);
    if (!ta.ok() || !tb.ok() || at.shape.size() != 2) return false;
    mx.transposed = *tb != 0;
    mx.m = *ta ? at.shape[1] : at.shape[0];
  } else {
    mx.m = 1;
    for (size_t d = 0; d + 1 < at.shape.size(); ++d) mx.m *= at.shape[d];
  }
  mx.k = mx.transposed ? bt.shape[1] : bt.shape[0];
  mx.n = mx.transposed ? bt.shape[0] : bt.shape[1];
  if (mx.k < 1 || mx.n < 1 || mx.m < 1) return false;
  if (matrix) *matrix = mx;
  return true;
}

Result<ir::TensorDataPtr> PackColumns(const ir::TensorData& b, const BMatrix& mx, int64_t nr) {
  const int64_t es = static_cast<int64_t>(ir::DTypeSize(b.type.dtype));
  if (nr < 1 || mx.k < 1 || mx.n < 1 || es <= 0 || static_cast<int64_t>(b.bytes.size()) != mx.k * mx.n * es) {
    return InvalidArgument("B panels: " + b.type.ToString() + " is not a [" + std::to_string(mx.k) + ", " +
                           std::to_string(mx.n) + "] matrix to pack in " + std::to_string(nr) + "-column panels");
  }
  auto out = std::make_shared<ir::TensorData>();
  out->type = {b.type.dtype, {(mx.n + nr - 1) / nr, mx.k, nr}};
  out->bytes = codegen::PackColumnPanels(b.bytes, es, mx.k, mx.n, nr, mx.transposed);
  return ir::TensorDataPtr(out);
}

Result<ir::TensorDataPtr> UnpackColumns(const ir::TensorData& panels, int64_t n) {
  const std::vector<int64_t>& s = panels.type.shape;
  const int64_t es = static_cast<int64_t>(ir::DTypeSize(panels.type.dtype));
  if (s.size() != 3 || n < 1 || s[2] < 1 || s[0] != (n + s[2] - 1) / s[2] || es <= 0 ||
      static_cast<int64_t>(panels.bytes.size()) != s[0] * s[1] * s[2] * es) {
    return InvalidArgument("B panels: " + panels.type.ToString() + " are not the column panels of a matrix with " +
                           std::to_string(n) + " columns");
  }
  auto out = std::make_shared<ir::TensorData>();
  out->type = {panels.type.dtype, {s[1], n}};
  out->bytes = codegen::UnpackColumnPanels(panels.bytes, es, s[1], n, s[2]);
  return ir::TensorDataPtr(out);
}

void SetPackedColumns(ir::Node& node, ir::Value* panels, const BMatrix& matrix) {
  node.SetInput(1, panels);
  node.attrs().Set(kPackedColumnsAttr, matrix.n);
  if (node.op_type() == "Gemm") node.attrs().Set("transB", int64_t{0});  // the panels are of the K x N operand
}

namespace {

// The twin of a node in B-panel form: B an input of the unpacked type [K, N].
Result<OpTwin> MakePackedColumnsTwin(const ir::Node& node) {
  const int64_t n = PackedColumns(node);
  return MakeOpTwin(node, kPackedColumnsAttr, [&node, n](ir::Graph& g, size_t i, const ir::Value& in) -> Result<ir::Value*> {
    if (i != 1) return g.AddInput(in.name(), in.type());
    const std::vector<int64_t>& s = in.type().shape;
    if (s.size() != 3 || s[2] < 1 || s[0] != (n + s[2] - 1) / s[2]) {
      return NodeError(node, "keel.packed_cols = " + std::to_string(n) + " with B " + in.type().ToString() +
                                 " (expected [ceil(N / NR), K, NR] panels)");
    }
    return g.AddInput(in.name(), ir::TensorType{in.type().dtype, {s[1], n}});
  });
}

}  // namespace

Result<std::vector<ir::TensorType>> InferPackedColumns(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(OpTwin t, MakePackedColumnsTwin(node));
  return InferNodeTypes(*t.twin);
}

Result<std::vector<ir::TensorDataPtr>> EvaluatePackedColumns(const ir::Node& node,
                                                             const std::vector<ir::TensorDataPtr>& inputs) {
  KEEL_ASSIGN_OR_RETURN(OpTwin t, MakePackedColumnsTwin(node));
  if (inputs.size() < 2 || !inputs[1]) return NodeError(node, "missing value for the packed B");
  std::vector<ir::TensorDataPtr> args = inputs;
  KEEL_ASSIGN_OR_RETURN(args[1], UnpackColumns(*inputs[1], PackedColumns(node)));
  return EvaluateNode(*t.twin, args);
}

}  // namespace keel::ops
