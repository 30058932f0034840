// compiler/passes/pad_folding.cc — see pad_folding.h.
#include "compiler/passes/pad_folding.h"

#include <algorithm>
#include <vector>

#include "compiler/ops/op_util.h"
#include "compiler/ops/registry.h"

namespace keel::passes {
namespace {

// The Pad's padding value is zero: no value operand, or a constant of zero bytes;
// opsets before 11 say it in the attribute `value`.
bool PadsWithZero(const ir::Node& pad) {
  auto value = pad.attrs().GetFloat("value", 0.0);
  if (!value.ok() || *value != 0.0) return false;
  if (pad.inputs().size() < 3 || !pad.input(2)) return true;
  const ir::TensorData* c = ops::ConstantInput(pad, 2);
  return c != nullptr && std::all_of(c->bytes.begin(), c->bytes.end(), [](uint8_t b) { return b == 0; });
}

// The spatial pads (begins, then ends) a canonical zero Pad adds, or empty when
// it is not one this pass folds.
std::vector<int64_t> SpatialPads(const ir::Graph& graph, const ir::Node& pad) {
  const ir::Value* in = pad.input(0);
  const ir::Value* out = pad.output(0);
  if (!in || !in->has_type() || pad.attrs().Has("axes") || (pad.inputs().size() > 1 && pad.input(1))) return {};
  if (out->uses().size() != 1 || out->uses()[0].input_index != 0 || graph.IsGraphOutput(out)) return {};
  auto mode = pad.attrs().GetString("mode", "constant");
  auto pads = pad.attrs().GetInts("pads", {});
  const size_t rank = in->type().shape.size();
  if (!mode.ok() || *mode != "constant" || !pads.ok() || rank < 3 || pads->size() != 2 * rank) return {};
  if (!PadsWithZero(pad)) return {};
  std::vector<int64_t> begins, ends;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t b = (*pads)[i], e = (*pads)[rank + i];
    if (b < 0 || e < 0 || (i < 2 && (b != 0 || e != 0))) return {};
    if (i >= 2) {
      begins.push_back(b);
      ends.push_back(e);
    }
  }
  begins.insert(begins.end(), ends.begin(), ends.end());
  return begins;
}

}  // namespace

Status PadFoldingPass::Run(ir::Graph& graph) {
  for (ir::Node* pad : graph.nodes()) {
    const ops::OpDef* pad_def = ops::FindOp(*pad);
    if (pad_def == nullptr || !pad_def->pads_input || pad->outputs().size() != 1) continue;
    const std::vector<int64_t> add = SpatialPads(graph, *pad);
    if (add.empty()) continue;
    ir::Node* consumer = pad->output(0)->uses()[0].node;
    const ops::OpDef* def = ops::FindOp(*consumer);
    if (def == nullptr || !def->pads_with_zeros) continue;
    auto auto_pad = consumer->attrs().GetString("auto_pad", "NOTSET");
    auto pads = consumer->attrs().GetInts("pads", std::vector<int64_t>(add.size(), 0));
    if (!auto_pad.ok() || *auto_pad != "NOTSET" || !pads.ok() || pads->size() != add.size()) continue;
    std::vector<int64_t> sum(add.size());
    for (size_t i = 0; i < add.size(); ++i) sum[i] = (*pads)[i] + add[i];
    const size_t k = add.size() / 2;
    bool symmetric = true;
    for (size_t i = 0; i < k; ++i) symmetric = symmetric && sum[i] == sum[k + i];
    if (!symmetric || !def->pads_with_zeros(*consumer)) continue;
    consumer->attrs().Set("pads", sum);
    consumer->SetInput(0, pad->input(0));
    KEEL_RETURN_IF_ERROR(graph.RemoveNode(pad));
  }
  return Status::Ok();
}

}  // namespace keel::passes
