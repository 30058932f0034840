// compiler/passes/im2col.cc — the im2col pass (see im2col.h).
#include "compiler/passes/im2col.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ops/channels_last.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"
#include "compiler/passes/pattern_match.h"

namespace keel::passes {
namespace {

// W' [columns, O] of the f32 weight `w` [O, C, k...]: row tap * C + c, column o
// holds W[o, c, tap] (tap: the kernel offset's row-major index); rows past C * taps are 0.
ir::TensorDataPtr ColumnWeight(const ir::TensorData& w, int64_t columns) {
  const std::vector<int64_t>& ws = w.type.shape;
  const int64_t o_n = ws[0], c_n = ws[1];
  int64_t taps = 1;
  for (size_t i = 2; i < ws.size(); ++i) taps *= ws[i];
  std::vector<float> out(static_cast<size_t>(columns * o_n), 0.f);
  const float* in = w.data<float>();
  for (int64_t o = 0; o < o_n; ++o)
    for (int64_t c = 0; c < c_n; ++c)
      for (int64_t t = 0; t < taps; ++t)
        out[static_cast<size_t>((t * c_n + c) * o_n + o)] = in[(o * c_n + c) * taps + t];
  return ops::MakeTensorF32({columns, o_n}, out);
}

}  // namespace

bool Im2ColApplies(const ir::Node& conv) {
  if (!ConstantWeightConv(conv)) return false;
  const size_t rank = conv.input(0)->type().shape.size();
  return rank >= 3 && rank <= 5;
}

Status Im2ColPass::Run(ir::Graph& graph) {
  if (!columns_) return Status::Ok();
  std::map<std::pair<int64_t, int64_t>, ir::Value*> rearranged;  // (weight id, columns) -> W'
  const std::vector<ir::Node*> nodes = graph.nodes();
  for (ir::Node* n : nodes) {
    if (!Im2ColApplies(*n)) continue;
    const int64_t columns = columns_(*n);
    if (columns == 0) continue;
    const std::vector<int64_t>& ws = n->input(1)->constant()->type.shape;
    int64_t window = ws[1];
    for (size_t i = 2; i < ws.size(); ++i) window *= ws[i];
    if (columns < window) {
      return Internal(ir::NodeDescription(*n) + ": im2col with " + std::to_string(columns) +
                      " columns, fewer than the " + std::to_string(window) + " the window reads");
    }
    const std::string base = n->name() + "/im2col";
    ir::Node* cols = graph.InsertNodeBefore(n, "keel.Im2Col", base, {n->input(0)}, 1);
    cols->attrs().Set("kernel_shape", std::vector<int64_t>(ws.begin() + 2, ws.end()));
    for (const char* attr : {"strides", "dilations", "pads"}) {
      KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> v, n->attrs().GetInts(attr, {}));
      cols->attrs().Set(attr, v);
    }
    cols->attrs().Set("columns", columns);
    KEEL_RETURN_IF_ERROR(ops::SetInferredTypes(*cols));
    ir::Value* w = n->input(1);
    auto [it, inserted] = rearranged.try_emplace({static_cast<int64_t>(w->id()), columns}, nullptr);
    if (inserted) it->second = graph.AddConstant(w->name() + "/im2col", ColumnWeight(*w->constant(), columns));
    // [columns, N, O...] as the matrix [columns, N * prod(O)], the GEMM's A transposed.
    const std::vector<int64_t>& ys = n->output(0)->type().shape;  // [N, Co, O...]
    int64_t pixels = ys[0];
    for (size_t i = 2; i < ys.size(); ++i) pixels *= ys[i];
    ir::Node* flat = graph.InsertNodeBefore(n, "keel.Reshape", base + "/matrix", {cols->output(0)}, 1);
    flat->attrs().Set("shape", std::vector<int64_t>{columns, pixels});
    KEEL_RETURN_IF_ERROR(ops::SetInferredTypes(*flat));
    std::vector<ir::Value*> operands{flat->output(0), it->second};
    if (n->inputs().size() > 2 && n->input(2) != nullptr) operands.push_back(n->input(2));
    ir::Node* gemm = graph.InsertNodeBefore(n, "Gemm", base + "/gemm", operands, 1);
    gemm->attrs().Set("transA", int64_t{1});
    KEEL_RETURN_IF_ERROR(ops::SetInferredTypes(*gemm));
    std::vector<int64_t> nhwc{ys[0]};
    nhwc.insert(nhwc.end(), ys.begin() + 2, ys.end());
    nhwc.push_back(ys[1]);
    ir::Node* last = graph.InsertNodeBefore(n, "keel.Reshape", base + "/nhwc", {gemm->output(0)}, 1);
    last->attrs().Set("shape", nhwc);
    KEEL_RETURN_IF_ERROR(ops::SetInferredTypes(*last));
    ir::Node* back = graph.InsertNodeBefore(n, "Transpose", base + "/to_nchw", {last->output(0)}, 1);
    back->attrs().Set("perm", ops::ToChannelsFirstPerm(ws.size()));
    KEEL_RETURN_IF_ERROR(ops::SetInferredTypes(*back));
    KEEL_RETURN_IF_ERROR(ReplaceWithRewrite(graph, n, back->output(0), "im2col"));
  }
  return Status::Ok();
}

}  // namespace keel::passes
