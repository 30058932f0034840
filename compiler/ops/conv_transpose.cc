// compiler/ops/conv_transpose.cc — ConvTranspose over any number of spatial
// dims (N, C, spatial...; weights C, M/group, kernel...) with groups,
// strides, dilations, pads, output_padding, output_shape and auto_pad.
//
// Canonical form: explicit kernel_shape, strides, dilations, output_padding and
// pads ([begin..., end...]; auto_pad NOTSET, no output_shape). output_shape and
// SAME_* auto_pad become pads the ONNX way: total = natural size - wanted size,
// split evenly with the odd one at the end (SAME_UPPER) or the beginning
// (otherwise). A negative total (an output larger than the natural one) gives
// negative pads, which simply extend the output with bias-only positions.
//
// The lowering is compiler/codegen/lower_conv.cc (an implicit GEMM over the
// input scattered into a zero image); the reference evaluator below scatters
// every input element's contribution directly (the definition).
#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/window.h"

namespace keel::ops {
namespace {

int64_t FloorDiv2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

Status CheckValues(const ir::Node& node, const std::string& attr, const std::vector<int64_t>& v, size_t n, int64_t lo) {
  if (v.size() != n) return NodeError(node, attr + " " + ShapeString(v) + " does not have " + std::to_string(n) + " entries");
  for (int64_t x : v) {
    if (x < lo || x >= kMaxWindowValue || x <= -kMaxWindowValue) {
      return NodeError(node, attr + " " + ShapeString(v) + " has a value out of range");
    }
  }
  return Status::Ok();
}

Status CanonicalizeConvTranspose(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
  const ir::TensorType& x = InputType(node, 0);
  const ir::TensorType& w = InputType(node, 1);
  if (w.shape.size() < 3) return NodeError(node, "weight must have rank >= 3, got " + w.ToString());
  if (x.shape.size() != w.shape.size()) {
    return NodeError(node, "input " + x.ToString() + " and weight " + w.ToString() + " ranks differ");
  }
  ir::Attributes& a = node.attrs();
  const size_t sp = x.shape.size() - 2;
  const std::vector<int64_t> in(x.shape.begin() + 2, x.shape.end());
  const std::vector<int64_t> wk(w.shape.begin() + 2, w.shape.end());
  KEEL_ASSIGN_OR_RETURN(auto kernel, a.GetInts("kernel_shape", wk));
  if (kernel != wk) return NodeError(node, "kernel_shape " + ShapeString(kernel) + " does not match weight " + w.ToString());
  KEEL_ASSIGN_OR_RETURN(auto strides, a.GetInts("strides", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(auto dil, a.GetInts("dilations", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(auto op, a.GetInts("output_padding", std::vector<int64_t>(sp, 0)));
  KEEL_RETURN_IF_ERROR(CheckValues(node, "kernel_shape", kernel, sp, 1));
  KEEL_RETURN_IF_ERROR(CheckValues(node, "strides", strides, sp, 1));
  KEEL_RETURN_IF_ERROR(CheckValues(node, "dilations", dil, sp, 1));
  KEEL_RETURN_IF_ERROR(CheckValues(node, "output_padding", op, sp, 0));
  KEEL_RETURN_IF_ERROR(CheckValues(node, "input spatial size", in, sp, 0));
  KEEL_ASSIGN_OR_RETURN(std::string auto_pad, a.GetString("auto_pad", "NOTSET"));
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return NodeError(node, "auto_pad='" + auto_pad + "' (expected NOTSET, VALID, SAME_UPPER or SAME_LOWER)");
  }
  std::vector<int64_t> natural(sp);
  for (size_t i = 0; i < sp; ++i) natural[i] = strides[i] * (in[i] - 1) + op[i] + (kernel[i] - 1) * dil[i] + 1;
  std::vector<int64_t> pads;
  std::vector<int64_t> wanted;
  if (a.Has("output_shape")) {
    KEEL_ASSIGN_OR_RETURN(wanted, a.GetInts("output_shape", {}));
    // Either the spatial dims or the full output shape.
    if (wanted.size() == sp + 2) wanted.erase(wanted.begin(), wanted.begin() + 2);
    KEEL_RETURN_IF_ERROR(CheckValues(node, "output_shape", wanted, sp, 1));
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < sp; ++i) wanted.push_back(in[i] * strides[i]);
  }
  if (!wanted.empty()) {
    pads.assign(2 * sp, 0);
    for (size_t i = 0; i < sp; ++i) {
      const int64_t total = natural[i] - wanted[i];
      const int64_t half = FloorDiv2(total);
      pads[i] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[i + sp] = total - pads[i];
    }
  } else if (auto_pad == "VALID") {
    pads.assign(2 * sp, 0);
  } else {
    KEEL_ASSIGN_OR_RETURN(pads, a.GetInts("pads", std::vector<int64_t>(2 * sp, 0)));
    // Negative pads only come from an earlier canonicalization (output_shape
    // larger than the natural output); accepting them keeps this idempotent.
    KEEL_RETURN_IF_ERROR(CheckValues(node, "pads", pads, 2 * sp, -kMaxWindowValue + 1));
  }
  KEEL_ASSIGN_OR_RETURN(int64_t group, a.GetInt("group", 1));
  a.Set("kernel_shape", kernel);
  a.Set("strides", strides);
  a.Set("dilations", dil);
  a.Set("output_padding", op);
  a.Set("pads", pads);
  a.Set("group", group);
  a.Set("auto_pad", std::string("NOTSET"));
  a.Erase("output_shape");
  return Status::Ok();
}

// Output spatial sizes of a canonical node.
Result<std::vector<int64_t>> TransposedOutput(const ir::Node& node, const std::vector<int64_t>& in) {
  const size_t sp = in.size();
  const ir::Attributes& a = node.attrs();
  KEEL_ASSIGN_OR_RETURN(auto kernel, a.GetInts("kernel_shape", {}));
  KEEL_ASSIGN_OR_RETURN(auto strides, a.GetInts("strides", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(auto dil, a.GetInts("dilations", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(auto op, a.GetInts("output_padding", std::vector<int64_t>(sp, 0)));
  KEEL_ASSIGN_OR_RETURN(auto pads, a.GetInts("pads", std::vector<int64_t>(2 * sp, 0)));
  if (kernel.size() != sp || strides.size() != sp || dil.size() != sp || op.size() != sp || pads.size() != 2 * sp) {
    return NodeError(node, "kernel_shape/strides/pads/dilations/output_padding do not match " + std::to_string(sp) +
                               " spatial dims");
  }
  std::vector<int64_t> out(sp);
  for (size_t i = 0; i < sp; ++i) {
    // Every value is below 2^31 in magnitude (canonicalization): no overflow.
    out[i] = strides[i] * (in[i] - 1) + op[i] + (kernel[i] - 1) * dil[i] + 1 - pads[i] - pads[i + sp];
    if (out[i] <= 0) return NodeError(node, "output spatial dim " + std::to_string(i) + " would be " + std::to_string(out[i]));
  }
  return out;
}

Result<std::vector<ir::TensorType>> InferConvTranspose(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
  const ir::TensorType& x = InputType(node, 0);
  const ir::TensorType& w = InputType(node, 1);
  KEEL_ASSIGN_OR_RETURN(int64_t group, node.attrs().GetInt("group", 1));
  if (x.shape.size() < 3 || w.shape.size() != x.shape.size()) return NodeError(node, "input and weight ranks differ");
  if (group <= 0 || x.shape[1] != w.shape[0] || w.shape[0] % group != 0) {
    return NodeError(node, "input channels " + std::to_string(x.shape[1]) + " do not match weight " + w.ToString() +
                               " with group " + std::to_string(group));
  }
  if (x.dtype != w.dtype) return NodeError(node, "input and weight dtypes differ");
  if (!IsFloatType(x.dtype)) return NodeUnsupported(node, std::string("ConvTranspose on ") + ir::DTypeName(x.dtype));
  const int64_t m = w.shape[1] * group;
  if (HasInput(node, 2) && InputType(node, 2).NumElements() != m) {
    return NodeError(node, "bias " + InputType(node, 2).ToString() + " does not match " + std::to_string(m) +
                               " output channels");
  }
  KEEL_ASSIGN_OR_RETURN(auto sp, TransposedOutput(node, {x.shape.begin() + 2, x.shape.end()}));
  std::vector<int64_t> out{x.shape[0], m};
  out.insert(out.end(), sp.begin(), sp.end());
  KEEL_RETURN_IF_ERROR(CheckedElements(node, out).status());
  return One({x.dtype, out});
}

// y[n, g*Mg + m, i*s - pb + k*d] += x[n, g*Cg + c, i] * w[g*Cg + c, m, k].
Result<std::vector<ir::TensorDataPtr>> EvaluateConvTranspose(const ir::Node& node,
                                                             const std::vector<ir::TensorDataPtr>& in,
                                                             const std::vector<ir::TensorType>& out_types) {
  const ir::TensorType& yt = out_types[0];
  const std::vector<double> x = TensorToDoubles(*in[0]);
  const std::vector<double> wt = TensorToDoubles(*in[1]);
  const std::vector<double> bias = in.size() > 2 && in[2] ? TensorToDoubles(*in[2]) : std::vector<double>{};
  const std::vector<int64_t>& xs = in[0]->type.shape;
  const std::vector<int64_t>& ws = in[1]->type.shape;
  const size_t sp = xs.size() - 2;
  const ir::Attributes& a = node.attrs();
  KEEL_ASSIGN_OR_RETURN(auto strides, a.GetInts("strides", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(auto dil, a.GetInts("dilations", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(auto pads, a.GetInts("pads", std::vector<int64_t>(2 * sp, 0)));
  KEEL_ASSIGN_OR_RETURN(int64_t group, a.GetInt("group", 1));
  const std::vector<int64_t> isp(xs.begin() + 2, xs.end()), ksp(ws.begin() + 2, ws.end());
  const std::vector<int64_t> osp(yt.shape.begin() + 2, yt.shape.end());
  const int64_t C = xs[1], Cg = C / group, Mg = ws[1], M = Mg * group;
  const int64_t ivol = NumElementsOf(isp), kvol = NumElementsOf(ksp), ovol = NumElementsOf(osp);
  std::vector<double> y(static_cast<size_t>(yt.NumElements()), 0.0);
  for (int64_t n = 0; n < xs[0]; ++n) {
    for (int64_t oc = 0; oc < M; ++oc) {
      const double b = bias.empty() ? 0.0 : bias[static_cast<size_t>(oc)];
      for (int64_t o = 0; o < ovol; ++o) y[static_cast<size_t>((n * M + oc) * ovol + o)] = b;
    }
    for (int64_t c = 0; c < C; ++c) {
      const int64_t g = c / Cg;
      std::vector<int64_t> i(sp, 0);
      for (int64_t ii = 0; ii < ivol; ++ii, NextIndex(i, isp)) {
        const double xv = x[static_cast<size_t>((n * C + c) * ivol + ii)];
        for (int64_t m = 0; m < Mg; ++m) {
          const int64_t oc = g * Mg + m;
          const double* wk = &wt[static_cast<size_t>((c * Mg + m) * kvol)];
          std::vector<int64_t> kp(sp, 0);
          for (int64_t ki = 0; ki < kvol; ++ki, NextIndex(kp, ksp)) {
            int64_t flat = 0;
            bool inside = true;
            for (size_t d = 0; d < sp && inside; ++d) {
              const int64_t od = i[d] * strides[d] - pads[d] + kp[d] * dil[d];
              inside = od >= 0 && od < osp[d];
              flat = flat * osp[d] + od;
            }
            if (inside) y[static_cast<size_t>((n * M + oc) * ovol + flat)] += xv * wk[ki];
          }
        }
      }
    }
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(yt, y));
  return std::vector<ir::TensorDataPtr>{out};
}

}  // namespace

void RegisterConvTransposeOps(Registry& r) {
  OpDef def;
  def.name = "ConvTranspose";
  def.versions = {1, 11, 22};
  def.fusion = FusionClass::kAnchor;
  def.half = HalfPolicy::kHalf;  // f32 accumulation inside the kernel
  def.library = LibraryCall::kConvTranspose;
  def.channels_last_operands = {0, 1};  // X NHWC, W [C, kh, kw, M/group] (channels_last.h)
  def.canonicalize = CanonicalizeConvTranspose;
  def.infer = InferConvTranspose;
  def.evaluate = EvaluateConvTranspose;
  def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
    return codegen::LowerConvTranspose(ctx, node, stores[0]);
  };
  r.Add(std::move(def));
}

}  // namespace keel::ops
