// compiler/passes/im2col.cc — the im2col pass (see im2col.h).
#include "compiler/passes/im2col.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ops/channels_last.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/semantics.h"

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

Status SetInferredType(ir::Node* n) {
  KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, ops::InferNodeTypes(*n));
  n->output(0)->set_type(types[0]);
  return Status::Ok();
}

}  // namespace

bool Im2ColApplies(const ir::Node& conv) {
  const ops::OpDef* def = ops::FindOp(conv);
  if (def == nullptr || def->library != ops::LibraryCall::kConv || conv.inputs().size() < 2 ||
      conv.outputs().size() != 1) {
    return false;
  }
  const ir::Value* x = conv.input(0);
  const ir::Value* w = conv.input(1);
  if (!x || !w || !x->has_type() || !w->is_constant() || !conv.output(0)->has_type()) return false;
  const ir::TensorType& xt = x->type();
  if (xt.dtype != ir::DType::kF32 || w->constant()->type.dtype != ir::DType::kF32) return false;
  if (xt.shape.size() < 3 || xt.shape.size() > 5 || w->constant()->type.shape.size() != xt.shape.size()) return false;
  if (conv.attrs().Has(ops::kChannelsLastAttr)) return false;
  const Result<std::string> auto_pad = conv.attrs().GetString("auto_pad", "NOTSET");
  const Result<int64_t> group = conv.attrs().GetInt("group", 1);
  const size_t d = xt.shape.size() - 2;
  const Result<std::vector<int64_t>> strides = conv.attrs().GetInts("strides", {});
  const Result<std::vector<int64_t>> dilations = conv.attrs().GetInts("dilations", {});
  const Result<std::vector<int64_t>> pads = conv.attrs().GetInts("pads", {});
  return auto_pad.ok() && *auto_pad == "NOTSET" && group.ok() && *group == 1 && strides.ok() &&
         strides->size() == d && dilations.ok() && dilations->size() == d && pads.ok() && pads->size() == 2 * d;
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
    const size_t d = ws.size() - 2;
    const std::string base = n->name() + "/im2col";
    ir::Node* cols = graph.InsertNodeBefore(n, "keel.Im2Col", base, {n->input(0)}, 1);
    cols->attrs().Set("kernel_shape", std::vector<int64_t>(ws.begin() + 2, ws.end()));
    for (const char* attr : {"strides", "dilations", "pads"}) {
      KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> v, n->attrs().GetInts(attr, {}));
      cols->attrs().Set(attr, v);
    }
    cols->attrs().Set("columns", columns);
    KEEL_RETURN_IF_ERROR(SetInferredType(cols));
    ir::Value* w = n->input(1);
    auto [it, inserted] = rearranged.try_emplace({static_cast<int64_t>(w->id()), columns}, nullptr);
    if (inserted) it->second = graph.AddConstant(w->name() + "/im2col", ColumnWeight(*w->constant(), columns));
    // [columns, N, O...] as the matrix [columns, N * prod(O)], the GEMM's A transposed.
    const std::vector<int64_t>& ys = n->output(0)->type().shape;  // [N, Co, O...]
    int64_t pixels = ys[0];
    for (size_t i = 2; i < ys.size(); ++i) pixels *= ys[i];
    ir::Node* flat = graph.InsertNodeBefore(n, "keel.Reshape", base + "/matrix", {cols->output(0)}, 1);
    flat->attrs().Set("shape", std::vector<int64_t>{columns, pixels});
    KEEL_RETURN_IF_ERROR(SetInferredType(flat));
    std::vector<ir::Value*> operands{flat->output(0), it->second};
    if (n->inputs().size() > 2 && n->input(2) != nullptr) operands.push_back(n->input(2));
    ir::Node* gemm = graph.InsertNodeBefore(n, "Gemm", base + "/gemm", operands, 1);
    gemm->attrs().Set("transA", int64_t{1});
    KEEL_RETURN_IF_ERROR(SetInferredType(gemm));
    std::vector<int64_t> nhwc{ys[0]};
    nhwc.insert(nhwc.end(), ys.begin() + 2, ys.end());
    nhwc.push_back(ys[1]);
    ir::Node* last = graph.InsertNodeBefore(n, "keel.Reshape", base + "/nhwc", {gemm->output(0)}, 1);
    last->attrs().Set("shape", nhwc);
    KEEL_RETURN_IF_ERROR(SetInferredType(last));
    std::vector<int64_t> perm{0, static_cast<int64_t>(d) + 1};
    for (size_t i = 1; i <= d; ++i) perm.push_back(static_cast<int64_t>(i));
    ir::Node* back = graph.InsertNodeBefore(n, "Transpose", base + "/to_nchw", {last->output(0)}, 1);
    back->attrs().Set("perm", perm);
    KEEL_RETURN_IF_ERROR(SetInferredType(back));
    if (!(back->output(0)->type() == n->output(0)->type())) {
      return Internal(ir::NodeDescription(*n) + ": im2col form has type " + back->output(0)->type().ToString() +
                      ", expected " + n->output(0)->type().ToString());
    }
    graph.ReplaceAllUsesWith(n->output(0), back->output(0));
    KEEL_RETURN_IF_ERROR(graph.RemoveNode(n));
  }
  return Status::Ok();
}

}  // namespace keel::passes
