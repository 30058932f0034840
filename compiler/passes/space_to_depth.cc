// compiler/passes/space_to_depth.cc — the space-to-depth pass (see space_to_depth.h).
#include "compiler/passes/space_to_depth.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"
#include "compiler/passes/pattern_match.h"

namespace keel::passes {
namespace {

std::vector<int64_t> IntsOr(const ir::Node& n, const std::string& name, std::vector<int64_t> fallback) {
  Result<std::vector<int64_t>> v = n.attrs().GetInts(name, fallback);
  return v.ok() ? *v : std::vector<int64_t>{-1};
}

// The rearranged weight [O, channels, KH', KW'] of the f32 weight `w` [O, C, KH, KW].
ir::TensorDataPtr SpaceToDepthWeight(const ir::TensorData& w, int64_t s, int64_t channels) {
  const std::vector<int64_t>& ws = w.type.shape;
  const int64_t o_n = ws[0], c_n = ws[1], kh = ws[2], kw = ws[3];
  const int64_t kh2 = (kh + s - 1) / s, kw2 = (kw + s - 1) / s;
  std::vector<float> out(static_cast<size_t>(o_n * channels * kh2 * kw2), 0.f);
  const float* in = w.data<float>();
  for (int64_t o = 0; o < o_n; ++o)
    for (int64_t c = 0; c < c_n; ++c)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x) {
          const int64_t ch = ((y % s) * s + x % s) * c_n + c;
          out[static_cast<size_t>(((o * channels + ch) * kh2 + y / s) * kw2 + x / s)] =
              in[((o * c_n + c) * kh + y) * kw + x];
        }
  return ops::MakeTensorF32({o_n, channels, kh2, kw2}, out);
}

}  // namespace

bool SpaceToDepthApplies(const ir::Node& conv) {
  if (!ConstantWeightConv(conv) || conv.input(0)->type().shape.size() != 4) return false;
  const std::vector<int64_t> strides = IntsOr(conv, "strides", {1, 1});
  const std::vector<int64_t> dilations = IntsOr(conv, "dilations", {1, 1});
  const std::vector<int64_t> pads = IntsOr(conv, "pads", {0, 0, 0, 0});
  return strides.size() == 2 && strides[0] == strides[1] && strides[0] >= 2 && dilations == std::vector<int64_t>{1, 1} &&
         pads.size() == 4;
}

Status SpaceToDepthPass::Run(ir::Graph& graph) {
  if (!channels_) return Status::Ok();
  // A weight shared by several convolutions is rearranged once per (stride, channels).
  std::map<std::tuple<int64_t, int64_t, int64_t>, ir::Value*> rearranged;
  for (ir::Node* n : graph.nodes()) {
    if (!SpaceToDepthApplies(*n)) continue;
    const int64_t channels = channels_(*n);
    if (channels == 0) continue;
    const int64_t s = IntsOr(*n, "strides", {1, 1})[0];
    const std::vector<int64_t> pads = IntsOr(*n, "pads", {0, 0, 0, 0});
    const std::vector<int64_t>& xs = n->input(0)->type().shape;
    const std::vector<int64_t>& ws = n->input(1)->constant()->type.shape;
    const std::vector<int64_t>& ys = n->output(0)->type().shape;
    if (channels < s * s * xs[1]) {
      return Internal(ir::NodeDescription(*n) + ": space-to-depth with " + std::to_string(channels) +
                      " channels, fewer than the " + std::to_string(s * s * xs[1]) + " it makes");
    }
    // The padded input covers whole s x s blocks: exactly the blocks the
    // stride-1 convolution reads for the same output size.
    const int64_t kh2 = (ws[2] + s - 1) / s, kw2 = (ws[3] + s - 1) / s;
    const int64_t bottom = s * (ys[2] + kh2 - 1) - xs[2] - pads[0];
    const int64_t right = s * (ys[3] + kw2 - 1) - xs[3] - pads[1];
    if (bottom < 0 || right < 0) continue;  // would crop the input: left as it is
    const std::string base = n->name() + "/space_to_depth";
    std::vector<ir::Node*> added;
    ir::Value* x = n->input(0);
    if (pads[0] != 0 || pads[1] != 0 || bottom != 0 || right != 0) {
      ir::Node* pad = graph.InsertNodeBefore(n, "Pad", base + "/pad", {x}, 1);
      pad->attrs().Set("pads", std::vector<int64_t>{0, 0, pads[0], pads[1], 0, 0, bottom, right});
      added.push_back(pad);
      x = pad->output(0);
    }
    ir::Node* s2d = graph.InsertNodeBefore(n, "SpaceToDepth", base, {x}, 1);
    s2d->attrs().Set("blocksize", s);
    added.push_back(s2d);
    ir::Node* last = s2d;
    if (channels > s * s * xs[1]) {
      last = graph.InsertNodeBefore(n, "Pad", base + "/channels", {s2d->output(0)}, 1);
      last->attrs().Set("pads", std::vector<int64_t>{0, 0, 0, 0, 0, channels - s * s * xs[1], 0, 0});
      added.push_back(last);
    }
    for (ir::Node* m : added) KEEL_RETURN_IF_ERROR(ops::SetInferredTypes(*m));
    const ir::TensorType old_type = n->output(0)->type();
    n->SetInput(0, last->output(0));
    ir::Value* w = n->input(1);
    auto [it, inserted] = rearranged.try_emplace({static_cast<int64_t>(w->id()), s, channels}, nullptr);
    if (inserted) {
      it->second = graph.AddConstant(w->name() + "/space_to_depth", SpaceToDepthWeight(*w->constant(), s, channels));
    }
    n->SetInput(1, it->second);
    n->attrs().Set("strides", std::vector<int64_t>{1, 1});
    n->attrs().Set("pads", std::vector<int64_t>{0, 0, 0, 0});
    n->attrs().Set("kernel_shape", std::vector<int64_t>{kh2, kw2});
    KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, ops::InferNodeTypes(*n));
    if (!(types[0] == old_type)) {
      return Internal(ir::NodeDescription(*n) + ": space-to-depth form has type " + types[0].ToString() +
                      ", expected " + old_type.ToString());
    }
  }
  return Status::Ok();
}

}  // namespace keel::passes
