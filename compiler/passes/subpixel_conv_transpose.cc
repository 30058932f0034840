// compiler/passes/subpixel_conv_transpose.cc — the subpixel pass (see
// subpixel_conv_transpose.h).
#include "compiler/passes/subpixel_conv_transpose.h"

#include <optional>
#include <string>
#include <vector>

#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"
#include "compiler/passes/pattern_match.h"

namespace keel::passes {
namespace {

// The window of a candidate: stride s, per spatial axis the kernel size k, the
// phase window J = ceil(k / s) and the begin pad.
struct Window {
  int64_t s = 0;
  int64_t k[2] = {0, 0}, J[2] = {0, 0}, pad[2] = {0, 0};
};

std::optional<Window> CandidateWindow(const ir::Node& n) {
  if (!ConstantWeightConv(n, ops::LibraryCall::kConvTranspose)) return std::nullopt;
  const ir::Value* b = n.inputs().size() > 2 ? n.input(2) : nullptr;
  if (b && (!b->is_constant() || b->constant()->type.dtype != ir::DType::kF32)) return std::nullopt;
  const std::vector<int64_t>& xs = n.input(0)->type().shape;
  const std::vector<int64_t>& ws = n.input(1)->constant()->type.shape;
  const std::vector<int64_t>& ys = n.output(0)->type().shape;
  if (xs.size() != 4) return std::nullopt;
  const auto strides = n.attrs().GetInts("strides", {1, 1});
  const auto dil = n.attrs().GetInts("dilations", {1, 1});
  const auto pads = n.attrs().GetInts("pads", {0, 0, 0, 0});
  if (!strides.ok() || strides->size() != 2 || (*strides)[0] != (*strides)[1] ||
      (*strides)[0] < 2 || !dil.ok() || *dil != std::vector<int64_t>{1, 1} || !pads.ok() || pads->size() != 4) {
    return std::nullopt;
  }
  Window win;
  win.s = (*strides)[0];
  for (int d = 0; d < 2; ++d) {
    win.k[d] = ws[2 + d];
    win.J[d] = (win.k[d] + win.s - 1) / win.s;
    win.pad[d] = (*pads)[d];
    const int64_t rows = xs[2 + d] + win.J[d] - 1;  // the forward convolution's output size
    if (win.pad[d] < 0 || win.pad[d] + ys[2 + d] > rows * win.s) return std::nullopt;
  }
  return win;
}

// W' [s * s * Co, Ci, J0, J1] of W [Ci, Co, k0, k1]: output channel (r0 * s + r1)
// * Co + o, tap (a, b) holds W[c, o, (J0 - 1 - a) * s + r0, (J1 - 1 - b) * s + r1],
// zero past the kernel.
ir::TensorDataPtr PhaseWeight(const ir::TensorData& w, const Window& win) {
  const std::vector<int64_t>& ws = w.type.shape;
  const int64_t ci_n = ws[0], co_n = ws[1], s = win.s, J0 = win.J[0], J1 = win.J[1];
  std::vector<float> out(static_cast<size_t>(s * s * co_n * ci_n * J0 * J1), 0.f);
  const float* in = w.data<float>();
  for (int64_t r0 = 0; r0 < s; ++r0)
    for (int64_t r1 = 0; r1 < s; ++r1)
      for (int64_t o = 0; o < co_n; ++o)
        for (int64_t c = 0; c < ci_n; ++c)
          for (int64_t a = 0; a < J0; ++a)
            for (int64_t b = 0; b < J1; ++b) {
              const int64_t t0 = (J0 - 1 - a) * s + r0, t1 = (J1 - 1 - b) * s + r1;
              if (t0 >= win.k[0] || t1 >= win.k[1]) continue;
              const int64_t oc = (r0 * s + r1) * co_n + o;
              out[static_cast<size_t>(((oc * ci_n + c) * J0 + a) * J1 + b)] =
                  in[((c * co_n + o) * win.k[0] + t0) * win.k[1] + t1];
            }
  return ops::MakeTensorF32({s * s * co_n, ci_n, J0, J1}, out);
}

ir::TensorDataPtr PhaseBias(const ir::TensorData& bias, int64_t phases) {
  const int64_t co_n = bias.type.shape[0];
  std::vector<float> out;
  for (int64_t r = 0; r < phases; ++r) out.insert(out.end(), bias.data<float>(), bias.data<float>() + co_n);
  return ops::MakeTensorF32({phases * co_n}, out);
}

}  // namespace

bool SubpixelApplies(const ir::Node& node) { return CandidateWindow(node).has_value(); }

Status SubpixelConvTransposePass::Run(ir::Graph& graph) {
  if (!take_) return Status::Ok();
  const std::vector<ir::Node*> nodes = graph.nodes();
  for (ir::Node* n : nodes) {
    const std::optional<Window> win = CandidateWindow(*n);
    if (!win || !take_(*n)) continue;
    const std::string base = n->name() + "/subpixel";
    ir::Value* w = n->input(1);
    std::vector<ir::Value*> operands{n->input(0), graph.AddConstant(w->name() + "/subpixel", PhaseWeight(*w->constant(), *win))};
    ir::Value* bias = n->inputs().size() > 2 ? n->input(2) : nullptr;
    if (bias) operands.push_back(graph.AddConstant(bias->name() + "/subpixel", PhaseBias(*bias->constant(), win->s * win->s)));
    ir::Node* conv = graph.InsertNodeBefore(n, "Conv", base + "/conv", operands, 1);
    conv->attrs().Set("kernel_shape", std::vector<int64_t>{win->J[0], win->J[1]});
    conv->attrs().Set("pads", std::vector<int64_t>{win->J[0] - 1, win->J[1] - 1, win->J[0] - 1, win->J[1] - 1});
    conv->attrs().Set("strides", std::vector<int64_t>{1, 1});
    conv->attrs().Set("dilations", std::vector<int64_t>{1, 1});
    conv->attrs().Set("group", int64_t{1});
    KEEL_RETURN_IF_ERROR(ops::SetInferredTypes(*conv));
    ir::Node* shuffle = graph.InsertNodeBefore(n, "DepthToSpace", base + "/shuffle", {conv->output(0)}, 1);
    shuffle->attrs().Set("blocksize", win->s);
    shuffle->attrs().Set("mode", std::string("DCR"));
    KEEL_RETURN_IF_ERROR(ops::SetInferredTypes(*shuffle));
    ir::Value* out = shuffle->output(0);
    const std::vector<int64_t>& ys = n->output(0)->type().shape;
    const std::vector<int64_t>& full = out->type().shape;
    if (win->pad[0] != 0 || win->pad[1] != 0 || full[2] != ys[2] || full[3] != ys[3]) {
      auto ints = [&](const std::string& what, const std::vector<int64_t>& v) {
        return graph.AddConstant(base + "/" + what, ops::MakeTensorI64({static_cast<int64_t>(v.size())}, v));
      };
      ir::Node* crop = graph.InsertNodeBefore(
          n, "Slice", base + "/crop",
          {out, ints("starts", {win->pad[0], win->pad[1]}), ints("ends", {win->pad[0] + ys[2], win->pad[1] + ys[3]}),
           ints("axes", {2, 3})},
          1);
      KEEL_RETURN_IF_ERROR(ops::CanonicalizeNode(*crop));  // starts/ends/axes become attributes
      KEEL_RETURN_IF_ERROR(ops::SetInferredTypes(*crop));
      out = crop->output(0);
    }
    KEEL_RETURN_IF_ERROR(ReplaceWithRewrite(graph, n, out, "subpixel"));
  }
  return Status::Ok();
}

}  // namespace keel::passes
