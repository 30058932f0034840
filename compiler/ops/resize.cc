// compiler/ops/resize.cc — Resize (opsets 10-19) and its predecessor Upsample
// (7, 9; deprecated by ONNX at opset 10).
//
// Canonical form (after normalize + canonicalize): one input X and the fully
// resolved geometry in attributes — keel.sizes (the output shape), keel.scales
// (the per-axis scale the coordinate transform divides by: the given scale,
// or sizes/in, or the keep_aspect_ratio_policy scale) and, for
// tf_crop_and_resize, keel.roi (starts then ends, one pair per axis). Scales,
// sizes and roi are shape-deciding, so they must be compile-time constants
// (ops::NeedsConstant otherwise); axes and keep_aspect_ratio_policy are folded
// into the full-rank vectors.
//
// Lowering (injective). Interpolation is separable: along each resized axis an
// output coordinate y maps to a source coordinate x (the coordinate transform)
// and to n taps base+s0 .. base+s0+n-1 (clamped to the axis: ONNX's edge
// padding) with weights w_j(r), where base = ceil(x)-1 and r = x - base is in
// (0, 1] (the ONNX reference prefers the pixel left of x). An output element is
// the sum over the tap product of prod(w) * X[taps]: 2^k reads for linear, 4^k
// for cubic, more for antialiased downscaling (wider kernels). Nearest is a
// pure index map (any dtype). The coordinate x is computed in f64 (ties of
// nearest rounding and the identity of integer coordinates then match the
// ONNX reference, which works in double); the weights are f32 math on r, all
// inside the index function. tf_crop_and_resize outputs whose coordinate falls
// outside the input take extrapolation_value. On the CPU a Resize alone in its
// group runs separably instead (ResizeInRows, OpDef::alone_kernel): the same
// taps and weights, computed once per column and once per row.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using codegen::TensorFn;
using ir::DType;

// Every output reads at most this many input elements (antialiased downscaling
// by large factors widens the kernel; beyond this the expression is absurd).
constexpr int64_t kMaxTaps = 4096;

const char* const kCoordModes[] = {"half_pixel",   "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                   "asymmetric",   "tf_crop_and_resize",   "tf_half_pixel_for_nn"};
const char* const kNearestModes[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

template <size_t N>
bool OneOf(const std::string& s, const char* const (&set)[N]) {
  for (const char* c : set) {
    if (s == c) return true;
  }
  return false;
}

// A float-list attribute (ONNX FLOATS import as doubles; an empty list may come as ints).
Result<std::vector<double>> GetDoubles(const ir::Node& node, const std::string& name) {
  const auto& all = node.attrs().all();
  auto it = all.find(name);
  if (it == all.end()) return std::vector<double>{};
  if (const auto* d = std::get_if<std::vector<double>>(&it->second)) return *d;
  if (const auto* i = std::get_if<std::vector<int64_t>>(&it->second)) return std::vector<double>(i->begin(), i->end());
  return NodeError(node, "attribute " + name + " is not a float list");
}

// Resize-10 and Upsample behave like Resize-11 with asymmetric coordinates and
// floor rounding; their scales (input 1, or Upsample-7's attribute) move to
// Resize-11's scales position (input 2).
Status NormalizeLegacy(ir::Node& node, bool scales_is_input) {
  KEEL_ASSIGN_OR_RETURN(const std::string given, node.attrs().GetString("mode", "nearest"));
  const std::string mode = given == "bilinear" ? std::string("linear") : given;  // an old spelling some exporters wrote
  if (mode != "nearest" && mode != "linear") {
    return NodeError(node, "mode '" + mode + "' is not one of nearest, linear");
  }
  node.attrs().Set("mode", mode);
  node.attrs().Set("coordinate_transformation_mode", std::string("asymmetric"));
  node.attrs().Set("nearest_mode", std::string("floor"));
  if (scales_is_input) {
    ir::Value* scales = node.input(1);
    node.SetInputs({node.input(0), nullptr, scales});
    TrimTrailingNulls(node);
  } else if (!node.attrs().Has("scales")) {
    return NodeError(node, "the scales attribute is required");
  }
  return Status::Ok();
}

Status NormalizeResize(ir::Node& node, int version) {
  if (version == 10) return NormalizeLegacy(node, true);
  if (version < 18) {
    // Attributes of later versions mean nothing here.
    for (const char* a : {"antialias", "axes", "keep_aspect_ratio_policy"}) node.attrs().Erase(a);
  }
  return Status::Ok();
}

Status NormalizeUpsample(ir::Node& node, int version) {
  if (version >= 10) {
    return NodeUnsupported(node, "deprecated since opset 10 (the ONNX spec replaces Upsample with Resize); "
                                 "export the model with Resize, or with an opset below 10");
  }
  return NormalizeLegacy(node, version >= 9);
}

// The float values of constant input `index` (nullptr data: absent).
Result<std::vector<double>> ConstantDoubles(const ir::Node& node, size_t index, const std::string& what) {
  if (!HasInput(node, index)) return std::vector<double>{};
  const ir::TensorData* c = ConstantInput(node, index);
  if (!c) return NeedsConstant(node, index, what);
  if (!IsFloatType(c->type.dtype)) {
    return NodeError(node, "input " + std::to_string(index) + " must be a float tensor, got " + c->type.ToString());
  }
  return TensorToDoubles(*c);
}

// Resolves scales/sizes/roi/axes/keep_aspect_ratio_policy into keel.sizes,
// keel.scales and keel.roi over every axis; drops the inputs they came from.
Status CanonicalizeResize(ir::Node& node) {
  ir::Attributes& a = node.attrs();
  if (!HasInput(node, 0)) return NodeError(node, "input 0 (X) is missing");
  KEEL_ASSIGN_OR_RETURN(std::string mode, a.GetString("mode", "nearest"));
  if (mode != "nearest" && mode != "linear" && mode != "cubic") {
    return NodeError(node, "mode '" + mode + "' is not one of nearest, linear, cubic");
  }
  KEEL_ASSIGN_OR_RETURN(std::string ctm, a.GetString("coordinate_transformation_mode", "half_pixel"));
  if (!OneOf(ctm, kCoordModes)) return NodeError(node, "coordinate_transformation_mode '" + ctm + "' is unknown");
  KEEL_ASSIGN_OR_RETURN(std::string nearest, a.GetString("nearest_mode", "round_prefer_floor"));
  if (!OneOf(nearest, kNearestModes)) return NodeError(node, "nearest_mode '" + nearest + "' is unknown");
  if (a.Has("keel.sizes")) return CheckArity(node, 1, 1);  // already resolved

  const ir::TensorType& x = InputType(node, 0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const bool crop = ctm == "tf_crop_and_resize";

  // roi matters only to tf_crop_and_resize; scales and sizes decide the shape.
  std::vector<double> roi;
  if (crop) {
    KEEL_ASSIGN_OR_RETURN(roi, ConstantDoubles(node, 1, "the roi of tf_crop_and_resize decides the sampling"));
  }
  KEEL_ASSIGN_OR_RETURN(std::vector<double> scales, ConstantDoubles(node, 2, "scales decide the output shape"));
  if (!HasInput(node, 2)) {
    KEEL_ASSIGN_OR_RETURN(scales, GetDoubles(node, "scales"));  // Upsample-7's attribute
  }
  std::vector<int64_t> sizes;
  if (HasInput(node, 3)) {
    const ir::TensorData* c = ConstantInput(node, 3);
    if (!c) return NeedsConstant(node, 3, "sizes decide the output shape");
    auto ints = ReadInts(*c);
    if (!ints.ok()) return NodeError(node, "sizes: " + ints.status().message());
    sizes = *ints;
  }
  if (HasInput(node, 4) || node.inputs().size() > 4) return NodeError(node, "expects at most 4 inputs");
  if (!scales.empty() && !sizes.empty()) return NodeError(node, "only one of scales and sizes may be given");
  if (scales.empty() && sizes.empty()) return NodeError(node, "one of scales and sizes is required");

  std::vector<int64_t> def_axes(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) def_axes[static_cast<size_t>(i)] = i;
  KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, a.GetInts("axes", def_axes));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& ax : axes) {
    KEEL_ASSIGN_OR_RETURN(ax, NormalizeAxis(node, ax, rank, "axis"));
    if (seen[static_cast<size_t>(ax)]) return NodeError(node, "axis " + std::to_string(ax) + " is repeated");
    seen[static_cast<size_t>(ax)] = true;
  }
  const size_t na = axes.size();
  const size_t given = scales.empty() ? sizes.size() : scales.size();
  if (given != na) {
    return NodeError(node, std::string(scales.empty() ? "sizes" : "scales") + " has " + std::to_string(given) +
                               " values for " + std::to_string(na) + " resized axes");
  }
  if (crop && roi.size() != 2 * na) {
    return NodeError(node, "tf_crop_and_resize needs a roi of " + std::to_string(2 * na) + " values, got " +
                               std::to_string(roi.size()));
  }

  std::vector<double> full_scales(static_cast<size_t>(rank), 1.0);
  std::vector<int64_t> out = x.shape;
  std::vector<double> full_roi;
  if (crop) {
    full_roi.assign(static_cast<size_t>(2 * rank), 0.0);
    for (int64_t d = 0; d < rank; ++d) full_roi[static_cast<size_t>(rank + d)] = 1.0;
    for (size_t i = 0; i < na; ++i) {
      full_roi[static_cast<size_t>(axes[i])] = roi[i];
      full_roi[static_cast<size_t>(rank + axes[i])] = roi[na + i];
    }
  }
  if (!scales.empty()) {
    for (size_t i = 0; i < na; ++i) {
      const double s = scales[i];
      if (!(s > 0) || !std::isfinite(s)) return NodeError(node, "scale " + std::to_string(s) + " is not positive");
      const size_t d = static_cast<size_t>(axes[i]);
      const double len = s * static_cast<double>(x.shape[d]);
      if (len >= static_cast<double>(kMaxElements)) return NodeError(node, "output dimension is absurdly large");
      full_scales[d] = s;
      out[d] = static_cast<int64_t>(std::floor(len));
    }
  } else {
    KEEL_ASSIGN_OR_RETURN(std::string policy, a.GetString("keep_aspect_ratio_policy", "stretch"));
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller") {
      return NodeError(node, "keep_aspect_ratio_policy '" + policy + "' is not one of stretch, not_larger, not_smaller");
    }
    double keep = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
    for (size_t i = 0; i < na; ++i) {
      const size_t d = static_cast<size_t>(axes[i]);
      if (sizes[i] < 0) return NodeError(node, "size " + std::to_string(sizes[i]) + " is negative");
      if (x.shape[d] == 0 && sizes[i] != 0) {
        return NodeError(node, "axis " + std::to_string(d) + " is empty: nothing to resize it from");
      }
      const double s = x.shape[d] == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(x.shape[d]);
      full_scales[d] = s;
      out[d] = sizes[i];
      keep = policy == "not_larger" ? std::min(keep, s) : std::max(keep, s);
    }
    if (policy != "stretch") {
      for (size_t i = 0; i < na; ++i) {
        const size_t d = static_cast<size_t>(axes[i]);
        full_scales[d] = keep;
        out[d] = static_cast<int64_t>(keep * static_cast<double>(x.shape[d]) + 0.5);  // round half up
      }
    }
  }
  KEEL_RETURN_IF_ERROR(CheckShape(node, out, "the output shape"));
  for (int64_t d = 0; d < rank; ++d) {
    if (x.shape[static_cast<size_t>(d)] == 0 && out[static_cast<size_t>(d)] != 0) {
      return NodeError(node, "axis " + std::to_string(d) + " is empty: nothing to resize it from");
    }
  }
  a.Set("mode", mode);
  a.Set("coordinate_transformation_mode", ctm);
  a.Set("nearest_mode", nearest);
  a.Set("keel.sizes", out);
  a.Set("keel.scales", full_scales);
  if (crop) a.Set("keel.roi", full_roi);
  for (const char* n : {"scales", "sizes", "roi", "axes", "keep_aspect_ratio_policy"}) a.Erase(n);
  node.SetInputs({node.input(0)});
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferResize(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  KEEL_ASSIGN_OR_RETURN(auto out, node.attrs().GetInts("keel.sizes", {}));
  if (out.size() != x.shape.size()) return Internal(NodeDescription(node) + ": not canonicalized");
  KEEL_ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("mode", "nearest"));
  if (mode != "nearest" && !IsFloatType(x.dtype) && !IsIntegerType(x.dtype)) {
    return NodeUnsupported(node, std::string(mode) + " interpolation of " + ir::DTypeName(x.dtype) + " data");
  }
  KEEL_RETURN_IF_ERROR(CheckedElements(node, out).status());
  return One({x.dtype, out});
}

// ---- lowering -------------------------------------------------------------------------

Expr F64(double v) { return codegen::FloatConst(v, DType::kF64); }
Expr F32(double v) { return codegen::FloatConst(v, DType::kF32); }

// How one axis is sampled (everything decided at compile time).
struct AxisPlan {
  bool identity = true;
  int64_t in = 0, out = 0;
  double scale = 1, out_f = 0;  // out_f: scale * in, unrounded (ONNX's output_width)
  double roi0 = 0, roi1 = 1;
  int64_t taps = 1, first = 0;  // n taps at base+first .. base+first+n-1
  double aa_scale = 1;          // antialias: min(scale, 1); 1 = plain kernel
};

struct ResizeParams {
  std::string mode, ctm, nearest;
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false, crop = false;
  std::vector<AxisPlan> axes;
};

Result<ResizeParams> MakeParams(const ir::Node& node, const std::vector<int64_t>& in_shape,
                                const std::vector<int64_t>& out_shape) {
  const ir::Attributes& a = node.attrs();
  ResizeParams p;
  KEEL_ASSIGN_OR_RETURN(p.mode, a.GetString("mode", "nearest"));
  KEEL_ASSIGN_OR_RETURN(p.ctm, a.GetString("coordinate_transformation_mode", "half_pixel"));
  KEEL_ASSIGN_OR_RETURN(p.nearest, a.GetString("nearest_mode", "round_prefer_floor"));
  KEEL_ASSIGN_OR_RETURN(p.cubic_a, a.GetFloat("cubic_coeff_a", -0.75));
  KEEL_ASSIGN_OR_RETURN(p.extrapolation, a.GetFloat("extrapolation_value", 0.0));
  KEEL_ASSIGN_OR_RETURN(int64_t excl, a.GetInt("exclude_outside", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t antialias, a.GetInt("antialias", 0));
  p.exclude_outside = excl != 0;
  p.crop = p.ctm == "tf_crop_and_resize";
  KEEL_ASSIGN_OR_RETURN(std::vector<double> scales, GetDoubles(node, "keel.scales"));
  KEEL_ASSIGN_OR_RETURN(std::vector<double> roi, GetDoubles(node, "keel.roi"));
  const size_t rank = in_shape.size();
  if (scales.size() != rank || out_shape.size() != rank || (p.crop && roi.size() != 2 * rank)) {
    return Internal(NodeDescription(node) + ": not canonicalized");
  }
  int64_t total_taps = 1;
  for (size_t d = 0; d < rank; ++d) {
    AxisPlan ax;
    ax.in = in_shape[d];
    ax.out = out_shape[d];
    ax.scale = scales[d];
    ax.out_f = ax.scale * static_cast<double>(ax.in);
    if (p.crop) {
      ax.roi0 = roi[d];
      ax.roi1 = roi[rank + d];
    }
    // Like the ONNX reference, an axis that keeps its length at scale 1 (and
    // the whole roi) is copied, whatever the coordinate transform says.
    const auto close = [](double u, double v) { return std::fabs(u - v) <= 1e-9 * std::max(std::fabs(u), std::fabs(v)); };
    ax.identity = ax.out == ax.in && close(ax.scale, 1.0) && (!p.crop || (std::fabs(ax.roi0) <= 1e-9 && close(ax.roi1, 1.0)));
    if (!ax.identity) {
      if (p.mode == "linear") {
        ax.taps = 2;
      } else if (p.mode == "cubic") {
        ax.taps = 4;
        ax.first = -1;
      } else {
        ax.taps = 2;  // nearest picks one of base, base+1
      }
      if (antialias && p.mode != "nearest" && ax.scale < 1) {
        ax.aa_scale = ax.scale;
        const double support = p.mode == "linear" ? 1.0 : 2.0;
        ax.first = static_cast<int64_t>(std::floor(-support / ax.scale)) + 1;
        ax.taps = 2 - 2 * ax.first;
      }
      if (ax.taps > kMaxTaps || total_taps * ax.taps > kMaxTaps) {
        return NodeUnsupported(node, "the interpolation kernel reads more than " + std::to_string(kMaxTaps) +
                                         " input elements per output (antialiased downscaling by too large a factor)");
      }
      if (p.mode != "nearest") total_taps *= ax.taps;
    }
    p.axes.push_back(ax);
  }
  return p;
}

// The source coordinate of output index `y` along `ax` (f64), per the coordinate transform.
Expr SourceCoordinate(const ResizeParams& p, const AxisPlan& ax, const Expr& y_index) {
  const Expr y = codegen::Cast(y_index, DType::kF64);
  const double in = static_cast<double>(ax.in);
  const std::string& m = p.ctm;
  if (m == "align_corners") {
    if (ax.out_f == 1) return F64(0);
    return y * F64(in - 1) / F64(ax.out_f - 1);
  }
  if (m == "asymmetric") return y / F64(ax.scale);
  if (m == "tf_crop_and_resize") {
    const double span = ax.roi1 - ax.roi0;
    Expr x = ax.out_f == 1 ? F64(span * (in - 1) / 2) : y * F64(span) * F64(in - 1) / F64(ax.out_f - 1);
    return x + F64(ax.roi0 * (in - 1));
  }
  if (m == "pytorch_half_pixel") {
    if (ax.out_f == 1) return F64(-0.5);
    return (y + F64(0.5)) / F64(ax.scale) - F64(0.5);
  }
  if (m == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(ax.out) / ax.out_f;
    const double offset = in / 2 * (1 - adjustment);
    return F64(offset) + (y + F64(0.5)) / F64(ax.scale) - F64(0.5);
  }
  if (m == "tf_half_pixel_for_nn") return (y + F64(0.5)) / F64(ax.scale);
  return (y + F64(0.5)) / F64(ax.scale) - F64(0.5);  // half_pixel
}

// The weights of taps base+first+j (f32) at fraction r in (0, 1] (f32).
std::vector<Expr> TapWeights(const ResizeParams& p, const AxisPlan& ax, const Expr& r) {
  std::vector<Expr> w;
  const double A = p.cubic_a;
  if (ax.aa_scale < 1) {
    // Antialiasing: the kernel stretched by 1/scale, normalized to sum 1.
    Expr sum;
    for (int64_t j = 0; j < ax.taps; ++j) {
      Expr t = codegen::Unary(codegen::UnaryOp::kAbs,
                              (F32(static_cast<double>(ax.first + j)) - r) * F32(ax.aa_scale));
      Expr k;
      if (p.mode == "linear") {
        k = codegen::Max(F32(1) - t, F32(0));
      } else {
        Expr t2 = t * t, t3 = t2 * t;
        Expr inner = F32(A + 2) * t3 - F32(A + 3) * t2 + F32(1);
        Expr outer = F32(A) * t3 - F32(5 * A) * t2 + F32(8 * A) * t - F32(4 * A);
        k = codegen::Select(t <= F32(1), inner, codegen::Select(t < F32(2), outer, F32(0)));
      }
      w.push_back(k);
      sum = sum.is_null() ? k : sum + k;
    }
    for (Expr& k : w) k = k / sum;
    return w;
  }
  if (p.mode == "linear") return {F32(1) - r, r};
  // cubic: Keys' kernel at distances r+1, r, 1-r, 2-r.
  const Expr s = F32(1) - r;
  const Expr r1 = r + F32(1), s1 = s + F32(1);
  w.push_back(((F32(A) * r1 - F32(5 * A)) * r1 + F32(8 * A)) * r1 - F32(4 * A));
  w.push_back((F32(A + 2) * r - F32(A + 3)) * r * r + F32(1));
  w.push_back((F32(A + 2) * s - F32(A + 3)) * s * s + F32(1));
  w.push_back(((F32(A) * s1 - F32(5 * A)) * s1 + F32(8 * A)) * s1 - F32(4 * A));
  return w;
}

// One resized axis at one output index: its taps (clamped indices) and weights.
struct AxisSample {
  std::vector<Expr> index;   // i64, in [0, in)
  std::vector<Expr> weight;  // f32; empty for nearest / identity axes
  Expr outside;              // bool; tf_crop_and_resize extrapolation (null otherwise)
};

AxisSample SampleAxis(const ResizeParams& p, const AxisPlan& ax, const Expr& y) {
  AxisSample s;
  if (ax.identity) {
    s.index.push_back(y);
    return s;
  }
  const Expr x = SourceCoordinate(p, ax, y);
  const double in = static_cast<double>(ax.in);
  if (p.crop) s.outside = x < F64(0) || x > F64(in - 1);
  // Far outside the input every tap clamps to the edge anyway; bounding x keeps
  // the float->int conversion in range.
  const double margin = static_cast<double>(ax.taps + 2);
  const Expr xc = codegen::Min(codegen::Max(x, F64(-margin)), F64(in + margin));
  const Expr fl = codegen::Unary(codegen::UnaryOp::kFloor, xc);
  const Expr frac = xc - fl;
  const Expr is_int = codegen::Binary(codegen::BinaryOp::kEq, frac, F64(0));
  // base = ceil(x) - 1, r = x - base in (0, 1].
  const Expr base = codegen::Cast(fl, DType::kI64) - codegen::Select(is_int, Expr(1), Expr(0));
  const Expr r64 = codegen::Select(is_int, F64(1), frac);
  if (p.mode == "nearest") {
    Expr up;  // pick base+1
    if (p.nearest == "round_prefer_ceil") up = r64 >= F64(0.5);
    else if (p.nearest == "floor") up = is_int;
    else if (p.nearest == "ceil") up = codegen::IntConst(1, DType::kBool);
    else up = r64 > F64(0.5);  // round_prefer_floor
    s.index.push_back(codegen::Clamp(codegen::Select(up, base + 1, base), 0, ax.in - 1));
    return s;
  }
  const Expr r = codegen::Cast(r64, DType::kF32);
  s.weight = TapWeights(p, ax, r);
  for (int64_t j = 0; j < ax.taps; ++j) s.index.push_back(codegen::Clamp(base + (ax.first + j), 0, ax.in - 1));
  if (p.exclude_outside) {
    Expr sum;
    for (int64_t j = 0; j < ax.taps; ++j) {
      const Expr t = base + (ax.first + j);
      s.weight[static_cast<size_t>(j)] = codegen::Select(t >= 0 && t < ax.in, s.weight[static_cast<size_t>(j)], F32(0));
      sum = sum.is_null() ? s.weight[static_cast<size_t>(j)] : sum + s.weight[static_cast<size_t>(j)];
    }
    sum = codegen::Select(codegen::Binary(codegen::BinaryOp::kEq, sum, F32(0)), F32(1), sum);
    for (Expr& w : s.weight) w = w / sum;
  }
  return s;
}

// `v` (f32 or f64) stored to `dt`: floats convert, integers round half to even and saturate (the ONNX reference).
Expr ToOutput(const Expr& v, DType dt) {
  if (IsFloatType(dt)) return codegen::Cast(v, dt);
  Expr rounded = codegen::Unary(codegen::UnaryOp::kRound, codegen::Cast(v, DType::kF64));
  double lo = 0, hi = 0;
  switch (dt) {
    case DType::kI8: lo = -128; hi = 127; break;
    case DType::kU8: lo = 0; hi = 255; break;
    case DType::kI16: lo = -32768; hi = 32767; break;
    case DType::kU16: lo = 0; hi = 65535; break;
    case DType::kI32: lo = -2147483648.0; hi = 2147483647.0; break;
    case DType::kU32: lo = 0; hi = 4294967295.0; break;
    case DType::kU64: lo = 0; hi = 18446744073709549568.0; break;
    default: lo = -9223372036854775808.0; hi = 9223372036854774784.0; break;  // i64: largest doubles inside
  }
  return codegen::Cast(codegen::Min(codegen::Max(rounded, F64(lo)), F64(hi)), dt);
}

Status DefineResize(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  TensorFn fn;
  fn.type = node.output(0)->type();
  KEEL_ASSIGN_OR_RETURN(ResizeParams p, MakeParams(node, in->type.shape, fn.type.shape));
  const DType dt = fn.type.dtype;
  const bool nearest = p.mode == "nearest";
  if (!nearest && !IsFloatType(dt) && !IsIntegerType(dt)) {
    return NodeUnsupported(node, p.mode + " interpolation of " + ir::DTypeName(dt) + " data");
  }
  // f64 data accumulates in f64; everything else in f32 (f16/bf16 widen).
  const DType acc_type = dt == DType::kF64 ? DType::kF64 : DType::kF32;
  fn.at = [in, p, dt, nearest, acc_type](const std::vector<Expr>& idx) {
    const size_t rank = idx.size();
    std::vector<AxisSample> samples;
    Expr outside;
    for (size_t d = 0; d < rank; ++d) {
      samples.push_back(SampleAxis(p, p.axes[d], idx[d]));
      const Expr& o = samples.back().outside;
      if (!o.is_null()) outside = outside.is_null() ? o : (outside || o);
    }
    Expr value;
    if (nearest) {
      std::vector<Expr> src(rank);
      for (size_t d = 0; d < rank; ++d) src[d] = samples[d].index[0];
      value = in->at(src);
    } else {
      // Sum over the tap product (odometer over the per-axis taps).
      std::vector<size_t> tap(rank, 0);
      while (true) {
        std::vector<Expr> src(rank);
        Expr w;
        for (size_t d = 0; d < rank; ++d) {
          src[d] = samples[d].index[tap[d]];
          if (!samples[d].weight.empty()) {
            const Expr& wd = samples[d].weight[tap[d]];
            w = w.is_null() ? wd : w * wd;
          }
        }
        Expr v = codegen::Cast(in->at(src), acc_type);
        if (!w.is_null()) v = v * codegen::Cast(w, acc_type);
        value = value.is_null() ? v : value + v;
        size_t d = rank;
        while (d > 0 && ++tap[d - 1] == samples[d - 1].index.size()) tap[--d] = 0;
        if (d == 0) break;
      }
      value = ToOutput(value, dt);
    }
    if (!outside.is_null()) value = codegen::Select(outside, ToOutput(F32(p.extrapolation), dt), value);
    return codegen::Cast(value, dt);
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// The CPU's separable form of a Resize alone in its group (OpDef::alone_kernel,
// LowerOptions::resize_rows): f32 data, no crop, at most 4 taps per axis, only the last two axes
// resized. A parallel iteration is a block of output rows of one plane (the leading axes). It
// computes the last axis' taps and weights for every output column once (`rs_col_idx`,
// `rs_col_w`), resizes each source row the block reads along the last axis into a local plane
// (`rs_rows`: the taps' reads gathered from rows that stay in L1), then writes each output row as
// the weighted sum of its source rows' resized copies, unit-stride in vector chunks. Source
// coordinates, taps and weights are SampleAxis' (the injective form's), so the values match it.
constexpr int64_t kResizeRowsFloats = 8192;  // the local plane of resized source rows (32 KiB of stack)
constexpr int64_t kResizeLanes = 16;

std::optional<codegen::Stmt> ResizeInRows(codegen::LowerContext& ctx, const ir::Node& node,
                                          const codegen::StoreFn& store) {
  using codegen::For;
  using codegen::LoopKind;
  using codegen::Stmt;
  if (!ctx.options().resize_rows) return std::nullopt;
  Result<const TensorFn*> in_or = ctx.Input(node, 0);
  if (!in_or.ok()) return std::nullopt;
  const TensorFn* in = *in_or;
  const ir::TensorType& ot = node.output(0)->type();
  const std::vector<int64_t>& xs = in->type.shape;
  if (in->type.dtype != DType::kF32 || ot.dtype != DType::kF32 || xs.size() < 2) return std::nullopt;
  Result<ResizeParams> p_or = MakeParams(node, xs, ot.shape);
  if (!p_or.ok()) return std::nullopt;
  const ResizeParams p = std::move(*p_or);
  const size_t rank = xs.size(), hd = rank - 2, wd = rank - 1;
  if (p.crop) return std::nullopt;
  for (size_t d = 0; d < hd; ++d)
    if (!p.axes[d].identity) return std::nullopt;
  const AxisPlan& ah = p.axes[hd];
  const AxisPlan& aw = p.axes[wd];
  if (ah.identity && aw.identity) return std::nullopt;
  auto taps_of = [&](const AxisPlan& ax) -> int64_t { return ax.identity || p.mode == "nearest" ? 1 : ax.taps; };
  const int64_t TH = taps_of(ah), TW = taps_of(aw);
  if (TH > 4 || TW > 4 || ah.aa_scale < 1 || aw.aa_scale < 1) return std::nullopt;
  const int64_t IH = xs[hd], OH = ot.shape[hd], OW = ot.shape[wd];
  std::vector<int64_t> lead(ot.shape.begin(), ot.shape.begin() + static_cast<std::ptrdiff_t>(hd));
  const int64_t planes = codegen::NumElements(lead);
  // Source rows a block of `rows` output rows reads: the coordinate's slope is at most
  // in / (out_f - 1) (1 / scale, or align_corners' (in - 1) / (out_f - 1)), plus the taps and
  // one row for rounding on each side.
  const double slope = ah.identity ? 1.0 : static_cast<double>(IH) / std::max(ah.out_f - 1, 1.0);
  auto span_of = [&](int64_t rows) {
    return std::min<int64_t>(static_cast<int64_t>(std::floor(static_cast<double>(rows - 1) * slope)) + TH + 2, IH);
  };
  // Enough parallel iterations to balance two threads to a few percent (32), rows of at least 8.
  int64_t blocks = std::min<int64_t>(std::max<int64_t>((32 + planes - 1) / planes, 1), std::max<int64_t>(OH / 8, 1));
  int64_t RB = (OH + blocks - 1) / blocks;
  while (RB > 1 && span_of(RB) * OW > kResizeRowsFloats) RB = (RB + 1) / 2;
  if (span_of(RB) * OW > kResizeRowsFloats) return std::nullopt;
  blocks = (OH + RB - 1) / RB;
  const int64_t span = span_of(RB);

  codegen::KernelFunc& k = ctx.kernel();
  const int col_idx = k.AddLocal("rs_col_idx", DType::kI64, {TW, OW});
  const int col_w = k.AddLocal("rs_col_w", DType::kF32, {TW, OW});
  const int rows = k.AddLocal("rs_rows", DType::kF32, {span, OW});
  const int row_idx = k.AddLocal("rs_row_idx", DType::kI64, {TH + 1});  // taps' local rows, then the first source row
  const int row_w = k.AddLocal("rs_row_w", DType::kF32, {TH});
  Expr t = k.NewVar("t");
  const std::vector<Expr> plane_idx = codegen::Delinearize(lead, t / blocks);
  Expr oy0 = codegen::Min((t % blocks) * RB, Expr(OH - RB));
  std::vector<Stmt> body;
  // The columns' taps and weights.
  {
    Expr ox = k.NewVar("ox");
    const AxisSample cs = SampleAxis(p, aw, ox);
    std::vector<Stmt> per;
    for (int64_t j = 0; j < TW; ++j) {
      per.push_back(k.Store(col_idx, {Expr(j), ox}, cs.index[static_cast<size_t>(j)]));
      per.push_back(k.Store(col_w, {Expr(j), ox}, cs.weight.empty() ? F32(1) : cs.weight[static_cast<size_t>(j)]));
    }
    body.push_back(For(ox, 0, OW, LoopKind::kVectorize, codegen::Block(std::move(per))));
  }
  // The first source row of the block, then each source row it reads resized along the last axis.
  const Expr first = k.Load(row_idx, {Expr(TH)});
  body.push_back(k.Store(row_idx, {Expr(TH)}, SampleAxis(p, ah, oy0).index[0]));
  const bool lanes = OW >= kResizeLanes;
  auto columns = [&](const std::function<Stmt(const Expr&)>& at) -> Stmt {
    if (!lanes) {
      Expr ox = k.NewVar("ox");
      return For(ox, 0, OW, LoopKind::kSerial, at(ox));
    }
    Expr q = k.NewVar("q"), j = k.NewVar("j");
    return For(q, 0, (OW + kResizeLanes - 1) / kResizeLanes, LoopKind::kSerial,
               For(j, 0, kResizeLanes, LoopKind::kLanes, at(codegen::Min(q * kResizeLanes, Expr(OW - kResizeLanes)) + j)));
  };
  {
    Expr r = k.NewVar("r");
    Expr y = codegen::Min(first + r, Expr(IH - 1));
    body.push_back(For(r, 0, span, LoopKind::kSerial, columns([&](const Expr& ox) {
      Expr v;
      for (int64_t j = 0; j < TW; ++j) {
        std::vector<Expr> src = plane_idx;
        src.push_back(y);
        src.push_back(k.Load(col_idx, {Expr(j), ox}));
        Expr term = in->at(src) * k.Load(col_w, {Expr(j), ox});
        v = v.is_null() ? term : v + term;
      }
      return k.Store(rows, {r, ox}, v);
    })));
  }
  // Each output row: its taps' local rows and weights (scalars), then the weighted sum.
  {
    Expr i = k.NewVar("i");
    Expr oy = oy0 + i;
    const AxisSample rs = SampleAxis(p, ah, oy);
    std::vector<Stmt> per;
    for (int64_t j = 0; j < TH; ++j) {
      per.push_back(k.Store(row_idx, {Expr(j)}, codegen::Clamp(rs.index[static_cast<size_t>(j)] - first, 0, span - 1)));
      per.push_back(k.Store(row_w, {Expr(j)}, rs.weight.empty() ? F32(1) : rs.weight[static_cast<size_t>(j)]));
    }
    per.push_back(columns([&](const Expr& ox) {
      Expr v;
      for (int64_t j = 0; j < TH; ++j) {
        Expr term = k.Load(rows, {k.Load(row_idx, {Expr(j)}), ox});
        if (!rs.weight.empty()) term = term * k.Load(row_w, {Expr(j)});
        v = v.is_null() ? term : v + term;
      }
      std::vector<Expr> out = plane_idx;
      out.push_back(oy);
      out.push_back(ox);
      return store(out, v);
    }));
    body.push_back(For(i, 0, RB, LoopKind::kSerial, codegen::Block(std::move(per))));
  }
  const int64_t iterations = planes * blocks;
  const bool par = iterations > 1 && planes * OH * OW >= ctx.options().min_parallel_elements;
  return For(t, 0, iterations, par ? LoopKind::kParallel : LoopKind::kSerial, codegen::Block(std::move(body)));
}

// Layout (OpDef::permute_axes): the canonical geometry is one entry per axis
// (roi: the starts, then the ends), so reading transposed inputs is the same
// resize with the entries moved along: old axis i is new axis perm[i].
Result<bool> PermuteResizeAxes(ir::Node& node, const std::vector<int64_t>& perm) {
  ir::Attributes& a = node.attrs();
  if (!a.Has("keel.sizes")) return false;  // not canonical yet
  KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, a.GetInts("keel.sizes", {}));
  KEEL_ASSIGN_OR_RETURN(std::vector<double> scales, GetDoubles(node, "keel.scales"));
  KEEL_ASSIGN_OR_RETURN(std::vector<double> roi, GetDoubles(node, "keel.roi"));
  const size_t rank = perm.size();
  if (sizes.size() != rank || scales.size() != rank || (!roi.empty() && roi.size() != 2 * rank)) return false;
  for (auto* v : {&scales, &roi}) PermuteAxisValues(*v, perm);
  PermuteAxisValues(sizes, perm);
  a.Set("keel.sizes", sizes);
  a.Set("keel.scales", scales);
  if (!roi.empty()) a.Set("keel.roi", roi);
  return true;
}

OpDef ResizeDef(const std::string& name, std::vector<int> versions) {
  OpDef def;
  def.name = name;
  def.versions = std::move(versions);
  def.fusion = FusionClass::kInjective;
  def.canonicalize = CanonicalizeResize;
  def.infer = InferResize;
  def.injective = DefineResize;
  def.alone_kernel = ResizeInRows;
  def.permute_axes = PermuteResizeAxes;
  return def;
}

}  // namespace

void RegisterResizeOps(Registry& r) {
  {
    OpDef def = ResizeDef("Resize", {10, 11, 13, 18, 19});
    def.normalize = NormalizeResize;
    r.Add(std::move(def));
  }
  {
    // Version 10 is listed so that its import says why it is refused (ONNX
    // deprecated the op there) instead of a bare "not implemented".
    OpDef def = ResizeDef("Upsample", {1, 7, 9, 10});
    def.supported = {7, 9, 10};
    def.normalize = NormalizeUpsample;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
