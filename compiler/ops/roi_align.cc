// compiler/ops/roi_align.cc — RoiAlign (10, 16, 22): pools each region of
// interest of a feature map X [N, C, H, W] into [R, C, output_height,
// output_width] by bilinear sampling.
//
// The ROI boxes [R, 4] (x1, y1, x2, y2 in input coordinates, scaled by
// spatial_scale; half_pixel shifts them by -0.5) and their batch indices [R]
// are run-time data, so this is an anchor with its own loop nest: per output
// bin, a grid of sampling points (sampling_ratio per axis, or when it is 0
// ceil(roi size / bins), which depends on the ROI: a run-time loop bound) is
// bilinearly interpolated and averaged (avg) or max-pooled (max: the maximum of
// the four weighted corner terms, as the ONNX reference and onnxruntime do).
// Sampling points more than one pixel outside the map contribute 0. Versions:
// 10 has no coordinate_transformation_mode and behaves as output_half_pixel
// (normalize sets it); 16 adds it with default half_pixel; 22 adds types.
//
// Bad run-time data never reads out of bounds: batch indices are clamped into
// [0, N) and the adaptive sample count per bin axis is capped at
// kMaxSamplesPerAxis (a garbage or NaN box cannot make the kernel spin).
#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/codegen/lower_context.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::DType;
using codegen::Expr;
using codegen::Stmt;
using codegen::TensorFn;

constexpr int64_t kMaxSamplesPerAxis = 4096;

struct RoiParams {
  bool max_mode = false, half_pixel = true;
  int64_t out_h = 1, out_w = 1, sampling = 0;
  double scale = 1.0;
};

Result<RoiParams> ReadRoiParams(const ir::Node& node) {
  const ir::Attributes& a = node.attrs();
  RoiParams p;
  KEEL_ASSIGN_OR_RETURN(std::string mode, a.GetString("mode", "avg"));
  KEEL_ASSIGN_OR_RETURN(std::string ctm, a.GetString("coordinate_transformation_mode", "half_pixel"));
  KEEL_ASSIGN_OR_RETURN(p.out_h, a.GetInt("output_height", 1));
  KEEL_ASSIGN_OR_RETURN(p.out_w, a.GetInt("output_width", 1));
  KEEL_ASSIGN_OR_RETURN(p.sampling, a.GetInt("sampling_ratio", 0));
  KEEL_ASSIGN_OR_RETURN(p.scale, a.GetFloat("spatial_scale", 1.0));
  if (mode != "avg" && mode != "max") return NodeError(node, "mode must be 'avg' or 'max', got '" + mode + "'");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    return NodeError(node, "coordinate_transformation_mode must be 'half_pixel' or 'output_half_pixel', got '" + ctm + "'");
  }
  if (p.out_h <= 0 || p.out_w <= 0) return NodeError(node, "output_height and output_width must be positive");
  if (p.sampling < 0) return NodeError(node, "sampling_ratio must be non-negative");
  p.sampling = std::min(p.sampling, kMaxSamplesPerAxis);
  p.max_mode = mode == "max";
  p.half_pixel = ctm == "half_pixel";
  return p;
}

Status NormalizeRoiAlign(ir::Node& node, int version) {
  if (version < 16 && !node.attrs().Has("coordinate_transformation_mode")) {
    node.attrs().Set("coordinate_transformation_mode", std::string("output_half_pixel"));
  }
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferRoiAlign(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 3, 3));
  KEEL_ASSIGN_OR_RETURN(RoiParams p, ReadRoiParams(node));
  const ir::TensorType& x = InputType(node, 0);
  const ir::TensorType& rois = InputType(node, 1);
  const ir::TensorType& bi = InputType(node, 2);
  if (!IsFloatType(x.dtype)) return NodeUnsupported(node, std::string("RoiAlign on ") + ir::DTypeName(x.dtype));
  if (x.shape.size() != 4) return NodeError(node, "X must be [N, C, H, W], got " + x.ToString());
  if (rois.shape.size() != 2 || rois.shape[1] != 4 || rois.dtype != x.dtype) {
    return NodeError(node, "rois must be [num_rois, 4] of X's dtype, got " + rois.ToString());
  }
  if (bi.shape != std::vector<int64_t>{rois.shape[0]} || IsFloatType(bi.dtype) || bi.dtype == ir::DType::kBool) {
    return NodeError(node, "batch_indices must be an integer [" + std::to_string(rois.shape[0]) + "], got " + bi.ToString());
  }
  if ((x.shape[0] == 0 || x.shape[2] == 0 || x.shape[3] == 0) && rois.shape[0] > 0 && x.shape[1] > 0) {
    return NodeError(node, "ROIs on an empty feature map " + x.ToString());
  }
  std::vector<int64_t> out{rois.shape[0], x.shape[1], p.out_h, p.out_w};
  KEEL_RETURN_IF_ERROR(CheckedElements(node, out).status());
  return One({x.dtype, out});
}

// ---- the kernel ---------------------------------------------------------------------------

Expr F(double v) { return codegen::FloatConst(v, DType::kF32); }
Expr F32(Expr e) { return codegen::Cast(std::move(e), DType::kF32); }

Result<Stmt> LowerRoiAlign(codegen::LowerContext& ctx, const ir::Node& node, const codegen::StoreFn& store) {
  codegen::KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(RoiParams p, ReadRoiParams(node));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* xp, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* rp, ctx.Input(node, 1));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* bp, ctx.Input(node, 2));
  const TensorFn X = *xp, Rois = *rp, Batch = *bp;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const int64_t N = X.type.shape[0], C = X.type.shape[1], H = X.type.shape[2], W = X.type.shape[3];
  const int64_t R = os[0], PH = os[2], PW = os[3];
  if (codegen::NumElements(os) == 0) return codegen::Block({});

  Expr row = k.NewVar("row"), pw = k.NewVar("pw"), iy = k.NewVar("iy"), ix = k.NewVar("ix");
  const std::vector<Expr> rix = codegen::Delinearize({R, C, PH}, row);
  const Expr r = rix[0], c = rix[1], ph = rix[2];
  const Expr n = codegen::Clamp(codegen::Cast(Batch.at({r}), DType::kI64), 0, N - 1);
  const Expr off = F(p.half_pixel ? 0.5 : 0.0);
  auto coord = [&](int64_t j) { return F32(Rois.at({r, Expr(j)})) * F(p.scale) - off; };
  const Expr x0 = coord(0), y0 = coord(1);
  Expr rw = coord(2) - x0, rh = coord(3) - y0;
  if (!p.half_pixel) {  // malformed ROIs become 1x1
    rw = codegen::Max(rw, F(1));
    rh = codegen::Max(rh, F(1));
  }
  const Expr bh = rh / F(static_cast<double>(PH)), bw = rw / F(static_cast<double>(PW));
  // Samples per bin axis: ceil(bin size) when adaptive; NaN and non-positive -> 0 samples.
  auto grid = [&](const Expr& bin) -> Expr {
    if (p.sampling > 0) return Expr(p.sampling);
    const Expr g = codegen::Unary(codegen::UnaryOp::kCeil, bin);
    return codegen::Cast(codegen::Select(g > F(0), codegen::Min(g, F(kMaxSamplesPerAxis)), F(0)), DType::kI64);
  };
  const Expr gh = grid(bh), gw = grid(bw);

  // One sampling point: the four corner terms w_i * X[corner_i] (zero weights outside the map).
  const Expr ys = y0 + F32(ph) * bh + (F32(iy) + F(0.5)) * bh / F32(gh);
  const Expr xs = x0 + F32(pw) * bw + (F32(ix) + F(0.5)) * bw / F32(gw);
  const Expr outside = (ys < F(-1)) || (ys > F(static_cast<double>(H))) || (xs < F(-1)) || (xs > F(static_cast<double>(W)));
  auto axis = [&](const Expr& v, int64_t len, Expr& lo, Expr& hi, Expr& frac) {
    const Expr vc = codegen::Min(codegen::Max(v, F(0)), F(static_cast<double>(len)));  // clamped: outside is masked
    const Expr low = codegen::Cast(codegen::Unary(codegen::UnaryOp::kFloor, vc), DType::kI64);
    const Expr at_end = low >= Expr(len - 1);
    lo = codegen::Clamp(codegen::Select(at_end, Expr(len - 1), low), 0, len - 1);  // clamps keep NaN boxes in bounds
    hi = codegen::Clamp(codegen::Select(at_end, Expr(len - 1), low + Expr(1)), 0, len - 1);
    frac = codegen::Select(at_end, F(0), vc - F32(low));
  };
  Expr ylo, yhi, ly, xlo, xhi, lx;
  axis(ys, H, ylo, yhi, ly);
  axis(xs, W, xlo, xhi, lx);
  const Expr hy = F(1) - ly, hx = F(1) - lx;
  auto tap = [&](const Expr& yy, const Expr& xx, const Expr& w) {
    return codegen::Select(outside, F(0), w * F32(X.at({n, c, yy, xx})));
  };
  const Expr t1 = tap(ylo, xlo, hy * hx), t2 = tap(ylo, xhi, hy * lx), t3 = tap(yhi, xlo, ly * hx), t4 = tap(yhi, xhi, ly * lx);

  const int acc = k.AddLocal("roi_acc", DType::kF32, {1});
  const Expr a = k.Load(acc, {Expr(0)});
  Stmt update;
  Expr init, result;
  const Expr count = gh * gw;
  if (p.max_mode) {
    update = k.Store(acc, {Expr(0)}, codegen::Max(a, codegen::Max(codegen::Max(t1, t2), codegen::Max(t3, t4))));
    init = F(-std::numeric_limits<double>::infinity());
    result = codegen::Select(count > Expr(0), a, F(0));  // no sample: 0
  } else {
    update = k.Store(acc, {Expr(0)}, a + ((t1 + t2) + (t3 + t4)));
    init = F(0);
    result = a / F32(codegen::Max(count, Expr(1)));
  }
  Stmt samples = codegen::For(iy, 0, gh, codegen::LoopKind::kSerial, codegen::For(ix, 0, gw, codegen::LoopKind::kSerial, update));
  Stmt per_out = codegen::Block({k.Store(acc, {Expr(0)}, init), samples, store({r, c, ph, pw}, result)});
  const int64_t rows = R * C * PH;
  const bool par = rows > 1 && rows * PW * 4 >= ctx.options().min_parallel_elements;
  return codegen::For(row, 0, rows, par ? codegen::LoopKind::kParallel : codegen::LoopKind::kSerial,
                      codegen::For(pw, 0, PW, codegen::LoopKind::kSerial, per_out));
}

// ---- the reference -----------------------------------------------------------------------------

Result<std::vector<ir::TensorDataPtr>> EvaluateRoiAlign(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                        const std::vector<ir::TensorType>& out_types) {
  KEEL_ASSIGN_OR_RETURN(RoiParams p, ReadRoiParams(node));
  const std::vector<double> x = TensorToDoubles(*in[0]);
  const std::vector<double> rois = TensorToDoubles(*in[1]);
  const std::vector<int64_t>& xs = in[0]->type.shape;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const std::vector<int64_t>& os = out_types[0].shape;
  const int64_t R = os[0], PH = os[2], PW = os[3];
  std::vector<double> y(static_cast<size_t>(out_types[0].NumElements()), 0.0);
  const double off = p.half_pixel ? 0.5 : 0.0;
  for (int64_t r = 0; r < R; ++r) {
    const int64_t n = std::clamp<int64_t>(ElementAsInt(*in[2], r), 0, N - 1);
    const double* box = &rois[static_cast<size_t>(r * 4)];
    const double x0 = box[0] * p.scale - off, y0 = box[1] * p.scale - off;
    double rw = box[2] * p.scale - off - x0, rh = box[3] * p.scale - off - y0;
    if (!p.half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(PH), bw = rw / static_cast<double>(PW);
    auto grid = [&](double bin) -> int64_t {
      if (p.sampling > 0) return p.sampling;
      const double g = std::ceil(bin);
      return g > 0 ? static_cast<int64_t>(std::min(g, static_cast<double>(kMaxSamplesPerAxis))) : 0;
    };
    const int64_t gh = grid(bh), gw = grid(bw);
    for (int64_t c = 0; c < C; ++c) {
      const double* plane = &x[static_cast<size_t>((n * C + c) * H * W)];
      for (int64_t ph = 0; ph < PH; ++ph) {
        for (int64_t pw = 0; pw < PW; ++pw) {
          double acc = 0.0;
          bool any = false;
          for (int64_t iy = 0; iy < gh; ++iy) {
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = y0 + ph * bh + (iy + 0.5) * bh / gh;
              double xx = x0 + pw * bw + (ix + 0.5) * bw / gw;
              double terms[4] = {0, 0, 0, 0};
              if (!(yy < -1.0 || yy > H || xx < -1.0 || xx > W)) {
                yy = std::max(yy, 0.0);
                xx = std::max(xx, 0.0);
                int64_t ylo = static_cast<int64_t>(yy), xlo = static_cast<int64_t>(xx), yhi, xhi;
                if (ylo >= H - 1) {
                  yhi = ylo = H - 1;
                  yy = static_cast<double>(ylo);
                } else {
                  yhi = ylo + 1;
                }
                if (xlo >= W - 1) {
                  xhi = xlo = W - 1;
                  xx = static_cast<double>(xlo);
                } else {
                  xhi = xlo + 1;
                }
                const double ly = yy - ylo, lx = xx - xlo, hy = 1 - ly, hx = 1 - lx;
                terms[0] = hy * hx * plane[ylo * W + xlo];
                terms[1] = hy * lx * plane[ylo * W + xhi];
                terms[2] = ly * hx * plane[yhi * W + xlo];
                terms[3] = ly * lx * plane[yhi * W + xhi];
              }
              if (p.max_mode) {
                const double v = std::max(std::max(terms[0], terms[1]), std::max(terms[2], terms[3]));
                acc = any ? std::max(acc, v) : v;
              } else {
                acc += terms[0] + terms[1] + terms[2] + terms[3];
              }
              any = true;
            }
          }
          if (!p.max_mode) acc /= static_cast<double>(std::max<int64_t>(gh * gw, 1));
          y[static_cast<size_t>(((r * C + c) * PH + ph) * PW + pw)] = acc;
        }
      }
    }
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(out_types[0], y));
  return std::vector<ir::TensorDataPtr>{out};
}

}  // namespace

void RegisterRoiAlignOps(Registry& r) {
  OpDef def;
  def.name = "RoiAlign";
  def.versions = {10, 16, 22};
  def.fusion = FusionClass::kAnchor;
  KeepF32(def, "sampling coordinates and bilinear weights");
  def.normalize = NormalizeRoiAlign;
  def.infer = InferRoiAlign;
  def.evaluate = EvaluateRoiAlign;
  def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
    return LowerRoiAlign(ctx, node, stores[0]);
  };
  r.Add(std::move(def));
}

}  // namespace keel::ops
