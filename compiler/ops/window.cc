// compiler/ops/window.cc — see window.h.
#include "compiler/ops/window.h"

#include "compiler/ops/op_util.h"

namespace keel::ops {

namespace {

Status CheckRange(const ir::Node& node, const std::string& attr, const std::vector<int64_t>& v, int64_t lo) {
  for (int64_t x : v) {
    if (x < lo || x >= kMaxWindowValue) {
      return NodeError(node, attr + " " + ShapeString(v) + " has a value out of range [" + std::to_string(lo) + ", 2^31)");
    }
  }
  return Status::Ok();
}

}  // namespace

Status CanonicalizeWindow(ir::Node& node, const std::vector<int64_t>& in_spatial, const std::vector<int64_t>& kernel,
                          bool has_dilations) {
  ir::Attributes& a = node.attrs();
  const size_t sp = in_spatial.size();
  if (kernel.size() != sp) {
    return NodeError(node, "kernel_shape " + ShapeString(kernel) + " does not have " + std::to_string(sp) + " spatial dims");
  }
  KEEL_RETURN_IF_ERROR(CheckRange(node, "kernel_shape", kernel, 1));
  KEEL_RETURN_IF_ERROR(CheckRange(node, "input spatial size", in_spatial, 0));
  a.Set("kernel_shape", kernel);
  KEEL_ASSIGN_OR_RETURN(auto strides, a.GetInts("strides", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(auto dil, a.GetInts("dilations", std::vector<int64_t>(sp, 1)));
  if (!has_dilations) dil.assign(sp, 1);
  if (strides.size() != sp) return NodeError(node, "strides " + ShapeString(strides) + " do not have " + std::to_string(sp) + " entries");
  if (dil.size() != sp) return NodeError(node, "dilations " + ShapeString(dil) + " do not have " + std::to_string(sp) + " entries");
  KEEL_RETURN_IF_ERROR(CheckRange(node, "strides", strides, 1));
  KEEL_RETURN_IF_ERROR(CheckRange(node, "dilations", dil, 1));
  KEEL_ASSIGN_OR_RETURN(std::string auto_pad, a.GetString("auto_pad", "NOTSET"));
  std::vector<int64_t> pads;
  if (auto_pad == "NOTSET") {
    KEEL_ASSIGN_OR_RETURN(pads, a.GetInts("pads", std::vector<int64_t>(2 * sp, 0)));
    if (pads.size() != 2 * sp) return NodeError(node, "pads " + ShapeString(pads) + " do not have " + std::to_string(2 * sp) + " entries");
    KEEL_RETURN_IF_ERROR(CheckRange(node, "pads", pads, 0));
  } else if (auto_pad == "VALID") {
    pads.assign(2 * sp, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // Output = ceil(in / stride); the padding needed for it is split evenly,
    // the odd one at the end (SAME_UPPER) or at the beginning (SAME_LOWER).
    pads.assign(2 * sp, 0);
    for (size_t i = 0; i < sp; ++i) {
      const int64_t out = (in_spatial[i] + strides[i] - 1) / strides[i];
      const int64_t needed = (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in_spatial[i];
      const int64_t total = needed > 0 ? needed : 0;
      const int64_t small = total / 2, big = total - small;
      pads[i] = auto_pad == "SAME_UPPER" ? small : big;
      pads[i + sp] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else {
    return NodeError(node, "auto_pad='" + auto_pad + "' (expected NOTSET, VALID, SAME_UPPER or SAME_LOWER)");
  }
  a.Set("strides", strides);
  a.Set("pads", pads);
  if (has_dilations) a.Set("dilations", dil);
  a.Set("auto_pad", std::string("NOTSET"));
  return Status::Ok();
}

Result<std::vector<int64_t>> WindowOutput(const ir::Node& node, const std::vector<int64_t>& in_spatial, bool ceil_mode) {
  const ir::Attributes& a = node.attrs();
  const size_t sp = in_spatial.size();
  KEEL_ASSIGN_OR_RETURN(auto kernel, a.GetInts("kernel_shape", {}));
  KEEL_ASSIGN_OR_RETURN(auto strides, a.GetInts("strides", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(auto pads, a.GetInts("pads", std::vector<int64_t>(2 * sp, 0)));
  KEEL_ASSIGN_OR_RETURN(auto dil, a.GetInts("dilations", std::vector<int64_t>(sp, 1)));
  if (kernel.size() != sp || strides.size() != sp || pads.size() != 2 * sp || dil.size() != sp) {
    return NodeError(node, "kernel_shape/strides/pads/dilations do not match " + std::to_string(sp) + " spatial dims");
  }
  std::vector<int64_t> out(sp);
  for (size_t i = 0; i < sp; ++i) {
    // All values < 2^31 (CanonicalizeWindow): these products stay far from overflow.
    const int64_t padded = in_spatial[i] + pads[i] + pads[i + sp];
    const int64_t eff = (kernel[i] - 1) * dil[i] + 1;
    if (padded < eff) {
      return NodeError(node, "the window (" + std::to_string(eff) + ") is larger than the padded input (" +
                                 std::to_string(padded) + ") in spatial dim " + std::to_string(i));
    }
    const int64_t num = padded - eff;
    int64_t o = ceil_mode ? (num + strides[i] - 1) / strides[i] + 1 : num / strides[i] + 1;
    // A window must start inside the input or its begin padding.
    if (ceil_mode && (o - 1) * strides[i] >= in_spatial[i] + pads[i]) --o;
    out[i] = o;
  }
  return out;
}

Result<WindowND> MakeWindow(const ir::Node& node, const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                            const std::vector<int64_t>& kernel_in) {
  if (x.size() < 3 || y.size() != x.size()) return NodeError(node, "window input/output ranks must match and be >= 3");
  const size_t sp = x.size() - 2;
  const ir::Attributes& a = node.attrs();
  KEEL_ASSIGN_OR_RETURN(auto kernel, a.GetInts("kernel_shape", kernel_in));
  KEEL_ASSIGN_OR_RETURN(auto strides, a.GetInts("strides", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(auto pads, a.GetInts("pads", std::vector<int64_t>(2 * sp, 0)));
  KEEL_ASSIGN_OR_RETURN(auto dil, a.GetInts("dilations", std::vector<int64_t>(sp, 1)));
  if (kernel.size() != sp || strides.size() != sp || pads.size() != 2 * sp || dil.size() != sp) {
    return NodeError(node, "kernel_shape/strides/pads/dilations do not match " + std::to_string(sp) + " spatial dims");
  }
  WindowND w;
  w.n = x[0];
  w.c = x[1];
  w.in.assign(x.begin() + 2, x.end());
  w.out.assign(y.begin() + 2, y.end());
  w.k = kernel;
  w.s = strides;
  w.d = dil;
  w.pb.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(sp));
  w.pe.assign(pads.begin() + static_cast<std::ptrdiff_t>(sp), pads.end());
  return w;
}

}  // namespace keel::ops
