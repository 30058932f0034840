// compiler/ops/deform_conv.cc — DeformConv (2-D): a convolution whose every
// tap reads the input at its regular position plus a learned fractional
// offset (input 2, [N, offset_group*KH*KW*2, OH, OW], (dy, dx) per tap),
// sampled bilinearly with zeros outside the image, and scaled by an optional
// mask (input 4, [N, offset_group*KH*KW, OH, OW]); groups, strides, pads,
// dilations and an optional bias (input 3).
//
// Only 2-D is defined by the ONNX reference; other ranks are refused. The
// lowering is a direct kernel (compiler/codegen/lower_conv.cc); the reference
// evaluator below is the definition, tap by tap.
#include <cmath>

#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/window.h"

namespace keel::ops {
namespace {

Status CanonicalizeDeformConv(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 3, 5));
  const ir::TensorType& x = InputType(node, 0);
  const ir::TensorType& w = InputType(node, 1);
  if (x.shape.size() != 4 || w.shape.size() != 4) {
    return NodeUnsupported(node, "only 2-D deformable convolution (rank-4 input and weight) is supported");
  }
  const std::vector<int64_t> wk(w.shape.begin() + 2, w.shape.end());
  KEEL_ASSIGN_OR_RETURN(auto kernel, node.attrs().GetInts("kernel_shape", wk));
  if (kernel != wk) return NodeError(node, "kernel_shape " + ShapeString(kernel) + " does not match weight " + w.ToString());
  KEEL_RETURN_IF_ERROR(CanonicalizeWindow(node, {x.shape.begin() + 2, x.shape.end()}, kernel, true));
  KEEL_ASSIGN_OR_RETURN(int64_t group, node.attrs().GetInt("group", 1));
  KEEL_ASSIGN_OR_RETURN(int64_t og, node.attrs().GetInt("offset_group", 1));
  node.attrs().Set("group", group);
  node.attrs().Set("offset_group", og);
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferDeformConv(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 3, 5));
  const ir::TensorType& x = InputType(node, 0);
  const ir::TensorType& w = InputType(node, 1);
  const ir::TensorType& off = InputType(node, 2);
  KEEL_ASSIGN_OR_RETURN(int64_t group, node.attrs().GetInt("group", 1));
  KEEL_ASSIGN_OR_RETURN(int64_t og, node.attrs().GetInt("offset_group", 1));
  if (group <= 0 || x.shape[1] != w.shape[1] * group || w.shape[0] % group != 0) {
    return NodeError(node, "input channels " + std::to_string(x.shape[1]) + " do not match weight " + w.ToString() +
                               " with group " + std::to_string(group));
  }
  if (og <= 0 || x.shape[1] % og != 0) return NodeError(node, "offset_group " + std::to_string(og) + " does not divide the channels");
  if (x.dtype != w.dtype || off.dtype != x.dtype) return NodeError(node, "input, weight and offset dtypes differ");
  if (!IsFloatType(x.dtype)) return NodeUnsupported(node, std::string("DeformConv on ") + ir::DTypeName(x.dtype));
  KEEL_ASSIGN_OR_RETURN(auto sp, WindowOutput(node, {x.shape.begin() + 2, x.shape.end()}, false));
  const int64_t taps = w.shape[2] * w.shape[3];
  const std::vector<int64_t> want_off{x.shape[0], og * taps * 2, sp[0], sp[1]};
  if (off.shape != want_off) return NodeError(node, "offset " + off.ToString() + " must have shape " + ShapeString(want_off));
  if (HasInput(node, 3) && InputType(node, 3).NumElements() != w.shape[0]) {
    return NodeError(node, "bias " + InputType(node, 3).ToString() + " does not match the output channels");
  }
  if (HasInput(node, 4)) {
    const std::vector<int64_t> want_mask{x.shape[0], og * taps, sp[0], sp[1]};
    if (InputType(node, 4).shape != want_mask || InputType(node, 4).dtype != x.dtype) {
      return NodeError(node, "mask " + InputType(node, 4).ToString() + " must have shape " + ShapeString(want_mask));
    }
  }
  return One({x.dtype, {x.shape[0], w.shape[0], sp[0], sp[1]}});
}

Result<std::vector<ir::TensorDataPtr>> EvaluateDeformConv(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                          const std::vector<ir::TensorType>& out_types) {
  const ir::TensorType& yt = out_types[0];
  const std::vector<double> x = TensorToDoubles(*in[0]);
  const std::vector<double> wt = TensorToDoubles(*in[1]);
  const std::vector<double> off = TensorToDoubles(*in[2]);
  const std::vector<double> bias = in.size() > 3 && in[3] ? TensorToDoubles(*in[3]) : std::vector<double>{};
  const std::vector<double> mask = in.size() > 4 && in[4] ? TensorToDoubles(*in[4]) : std::vector<double>{};
  KEEL_ASSIGN_OR_RETURN(WindowND w, MakeWindow(node, in[0]->type.shape, yt.shape));
  KEEL_ASSIGN_OR_RETURN(int64_t group, node.attrs().GetInt("group", 1));
  KEEL_ASSIGN_OR_RETURN(int64_t og, node.attrs().GetInt("offset_group", 1));
  const int64_t H = w.in[0], W = w.in[1], OH = w.out[0], OW = w.out[1], KH = w.k[0], KW = w.k[1];
  const int64_t M = yt.shape[1], Cg = in[1]->type.shape[1], Mg = M / group, Cog = w.c / og;
  auto sample = [&](const double* img, double h, double v) {
    const double h0 = std::floor(h), v0 = std::floor(v);
    double acc = 0;
    for (int dy = 0; dy < 2; ++dy) {
      for (int dx = 0; dx < 2; ++dx) {
        const double hy = h0 + dy, vx = v0 + dx;
        if (hy < 0 || hy > static_cast<double>(H - 1) || vx < 0 || vx > static_cast<double>(W - 1)) continue;
        const double wy = dy ? h - h0 : 1 - (h - h0), wx = dx ? v - v0 : 1 - (v - v0);
        acc += wy * wx * img[static_cast<int64_t>(hy) * W + static_cast<int64_t>(vx)];
      }
    }
    return acc;
  };
  std::vector<double> y(static_cast<size_t>(yt.NumElements()), 0.0);
  for (int64_t n = 0; n < w.n; ++n) {
    for (int64_t oc = 0; oc < M; ++oc) {
      const int64_t g = oc / Mg;
      for (int64_t i = 0; i < OH; ++i) {
        for (int64_t j = 0; j < OW; ++j) {
          double acc = bias.empty() ? 0.0 : bias[static_cast<size_t>(oc)];
          for (int64_t c = 0; c < Cg; ++c) {
            const int64_t ic = g * Cg + c, o = ic / Cog;
            const double* img = &x[static_cast<size_t>((n * w.c + ic) * H * W)];
            for (int64_t a = 0; a < KH; ++a) {
              for (int64_t b = 0; b < KW; ++b) {
                const int64_t tap = (o * KH + a) * KW + b;
                const double dy = off[static_cast<size_t>(((n * og * KH * KW * 2) + tap * 2) * OH * OW + i * OW + j)];
                const double dx = off[static_cast<size_t>(((n * og * KH * KW * 2) + tap * 2 + 1) * OH * OW + i * OW + j)];
                const double mk = mask.empty() ? 1.0 : mask[static_cast<size_t>((n * og * KH * KW + tap) * OH * OW + i * OW + j)];
                const double h = static_cast<double>(i * w.s[0] - w.pb[0] + a * w.d[0]) + dy;
                const double v = static_cast<double>(j * w.s[1] - w.pb[1] + b * w.d[1]) + dx;
                acc += wt[static_cast<size_t>(((oc * Cg + c) * KH + a) * KW + b)] * mk * sample(img, h, v);
              }
            }
          }
          y[static_cast<size_t>(((n * M + oc) * OH + i) * OW + j)] = acc;
        }
      }
    }
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(yt, y));
  return std::vector<ir::TensorDataPtr>{out};
}

}  // namespace

void RegisterDeformConvOps(Registry& r) {
  OpDef def;
  def.name = "DeformConv";
  def.versions = {19, 22};
  def.fusion = FusionClass::kAnchor;
  def.canonicalize = CanonicalizeDeformConv;
  def.infer = InferDeformConv;
  def.evaluate = EvaluateDeformConv;
  def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
    return codegen::LowerDeformConv(ctx, node, stores[0]);
  };
  r.Add(std::move(def));
}

}  // namespace keel::ops
