// compiler/ops/grid_sample.cc — sampling an input at run-time coordinates:
// GridSample (16, 20, 22) and the grid generator AffineGrid (20).
//
// Both are injective: an output element is a fixed number of clamped reads of
// the inputs, weighted by index- and data-dependent float expressions.
//
// GridSample: X [N, C, D1..Dr], grid [N, O1..Or, r] of normalized coordinates
// in [-1, 1] (last entry = first spatial axis... reversed: grid[..., 0] is the
// innermost axis, x). Along each axis the coordinate is denormalized (align_corners
// picks whether -1/1 are the centers or the edges of the corner pixels), then
// out-of-range coordinates are clamped (border) or mirrored (reflection) before
// interpolation; with zeros padding, taps outside the input read 0. Modes:
// nearest (round half to even), linear (2^r taps), cubic (4^r taps, A = -0.75).
// Coordinate math is f32 like the ONNX reference's.
//
// AffineGrid: grid[n, spatial..., k] = sum_j theta[n, k, j] * base_j, with base
// = (x, y[, z], 1) the normalized coordinates of the output position; the size
// input decides the output shape and must be constant.
#include <cmath>

#include "compiler/ops/op_util.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using codegen::TensorFn;
using ir::DType;

Expr F32(double v) { return codegen::FloatConst(v, DType::kF32); }
Expr Floor(const Expr& x) { return codegen::Unary(codegen::UnaryOp::kFloor, x); }

// ---- GridSample ---------------------------------------------------------------------------

Status NormalizeGridSample(ir::Node& node, int version) {
  KEEL_ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("mode", version < 20 ? "bilinear" : "linear"));
  if (version < 20) {
    // GridSample-16 names its modes after the 2-D case.
    if (mode == "bilinear") mode = "linear";
    else if (mode == "bicubic") mode = "cubic";
    else if (mode != "nearest") return NodeError(node, "mode '" + mode + "' is not one of bilinear, nearest, bicubic");
    node.attrs().Set("keel.spatial_rank", int64_t{2});  // opset 16 is 4-D only
  }
  node.attrs().Set("mode", mode);
  return Status::Ok();
}

struct GridParams {
  std::string mode, padding;
  bool align = false;
};

Result<GridParams> ReadGridParams(const ir::Node& node) {
  GridParams p;
  KEEL_ASSIGN_OR_RETURN(p.mode, node.attrs().GetString("mode", "linear"));
  KEEL_ASSIGN_OR_RETURN(p.padding, node.attrs().GetString("padding_mode", "zeros"));
  KEEL_ASSIGN_OR_RETURN(int64_t align, node.attrs().GetInt("align_corners", 0));
  p.align = align != 0;
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic") {
    return NodeError(node, "mode '" + p.mode + "' is not one of linear, nearest, cubic");
  }
  if (p.padding != "zeros" && p.padding != "border" && p.padding != "reflection") {
    return NodeError(node, "padding_mode '" + p.padding + "' is not one of zeros, border, reflection");
  }
  return p;
}

Result<std::vector<ir::TensorType>> InferGridSample(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
  KEEL_ASSIGN_OR_RETURN(GridParams p, ReadGridParams(node));
  const ir::TensorType& x = InputType(node, 0);
  const ir::TensorType& grid = InputType(node, 1);
  const size_t rank = x.shape.size();
  if (rank < 3) return NodeError(node, "X must be [N, C, spatial...], got " + x.ToString());
  const size_t r = rank - 2;
  KEEL_ASSIGN_OR_RETURN(int64_t fixed, node.attrs().GetInt("keel.spatial_rank", 0));
  if (fixed != 0 && static_cast<int64_t>(r) != fixed) {
    return NodeError(node, "GridSample-16 takes 4-D input, got " + x.ToString());
  }
  if (grid.shape.size() != rank || grid.shape[0] != x.shape[0] || grid.shape[rank - 1] != static_cast<int64_t>(r)) {
    return NodeError(node, "grid " + grid.ToString() + " is not [N, out spatial..., " + std::to_string(r) + "] for X " +
                               x.ToString());
  }
  if (!IsFloatType(grid.dtype)) return NodeError(node, std::string("grid must be float, got ") + ir::DTypeName(grid.dtype));
  if (p.mode != "nearest" && !IsFloatType(x.dtype)) {
    return NodeUnsupported(node, p.mode + " sampling of " + ir::DTypeName(x.dtype) + " data");
  }
  std::vector<int64_t> out{x.shape[0], x.shape[1]};
  out.insert(out.end(), grid.shape.begin() + 1, grid.shape.end() - 1);
  KEEL_RETURN_IF_ERROR(CheckedElements(node, out).status());
  return One({x.dtype, out});
}

// `v` mirrored into [lo, hi] (the ONNX reference's reflection; lo < hi).
Expr Reflect(const Expr& v, double lo, double hi) {
  const double range = hi - lo;
  auto fold = [&](const Expr& dx, const Expr& even_base, const Expr& odd_base, bool from_low) {
    const Expr n = Floor(dx / F32(range));  // dx >= 0: floor is the truncation
    const Expr rest = dx - n * F32(range);
    const Expr odd = codegen::Binary(codegen::BinaryOp::kNe, n - F32(2) * Floor(n / F32(2)), F32(0));
    const Expr even_v = from_low ? even_base + rest : even_base - rest;
    const Expr odd_v = from_low ? odd_base - rest : odd_base + rest;
    return codegen::Select(odd, odd_v, even_v);
  };
  const Expr below = fold(F32(lo) - v, F32(lo), F32(hi), true);
  const Expr above = fold(v - F32(hi), F32(hi), F32(lo), false);
  return codegen::Select(v < F32(lo), below, codegen::Select(v > F32(hi), above, v));
}

// Denormalized, padded coordinate along one axis of length `len` (f32).
Expr AxisCoordinate(const GridParams& p, const Expr& normalized, int64_t len) {
  const double L = static_cast<double>(len);
  Expr x = p.align ? (normalized + F32(1)) / F32(2) * F32(L - 1) : ((normalized + F32(1)) * F32(L) - F32(1)) / F32(2);
  if (p.mode == "nearest") x = codegen::Unary(codegen::UnaryOp::kRound, x);
  const double lo = p.align ? 0.0 : -0.5, hi = p.align ? L - 1 : L - 0.5;
  if (p.padding == "border") {
    x = codegen::Select(x < F32(lo) || x > F32(hi), codegen::Min(codegen::Max(x, F32(0)), F32(L - 1)), x);
  } else if (p.padding == "reflection") {
    x = hi > lo ? Reflect(x, lo, hi) : F32(lo);
  }
  // Bounded so that the float->int conversions below stay in range (taps this
  // far out read the zero padding or clamp to the edge either way).
  return codegen::Min(codegen::Max(x, F32(-8)), F32(L + 8));
}

// The input index for integer tap `i` (i64) along an axis of length `len`, and
// whether it reads the input (false: zero padding).
std::pair<Expr, Expr> TapIndex(const GridParams& p, const Expr& i, int64_t len) {
  if (p.padding == "reflection") {
    const double lo = p.align ? 0.0 : -0.5, hi = p.align ? static_cast<double>(len) - 1 : static_cast<double>(len) - 0.5;
    Expr fi = codegen::Cast(i, DType::kF32);
    if (hi > lo) fi = Reflect(fi, lo, hi);
    // int() truncates toward zero; the reflected value is >= -0.5.
    const Expr t = codegen::Cast(codegen::Select(fi < F32(0), F32(0), fi), DType::kI64);
    return {codegen::Clamp(t, 0, len - 1), Expr()};
  }
  const Expr clamped = codegen::Clamp(i, 0, len - 1);
  if (p.padding == "border") return {clamped, Expr()};
  return {clamped, i >= 0 && i < len};
}

std::vector<Expr> CubicWeights(const Expr& t) {
  const double A = -0.75;
  const Expr s = F32(1) - t, t1 = t + F32(1), s1 = s + F32(1);
  return {((F32(A) * t1 - F32(5 * A)) * t1 + F32(8 * A)) * t1 - F32(4 * A),
          (F32(A + 2) * t - F32(A + 3)) * t * t + F32(1), (F32(A + 2) * s - F32(A + 3)) * s * s + F32(1),
          ((F32(A) * s1 - F32(5 * A)) * s1 + F32(8 * A)) * s1 - F32(4 * A)};
}

Status DefineGridSample(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* x, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* grid, ctx.Input(node, 1));
  KEEL_ASSIGN_OR_RETURN(GridParams p, ReadGridParams(node));
  TensorFn fn;
  fn.type = node.output(0)->type();
  const DType dt = fn.type.dtype;
  const std::vector<int64_t> xs = x->type.shape;
  fn.at = [x, grid, p, dt, xs](const std::vector<Expr>& idx) {
    const size_t r = xs.size() - 2;
    // Per spatial axis a: the taps (index, in-range flag) and weights.
    std::vector<std::vector<std::pair<Expr, Expr>>> taps(r);
    std::vector<std::vector<Expr>> weights(r);
    for (size_t a = 0; a < r; ++a) {
      std::vector<Expr> gi{idx[0]};
      gi.insert(gi.end(), idx.begin() + 2, idx.end());
      gi.push_back(codegen::IntConst(static_cast<int64_t>(r - 1 - a)));  // grid's last dim is reversed
      const Expr g = codegen::Cast(grid->at(gi), DType::kF32);
      const int64_t len = xs[a + 2];
      const Expr c = AxisCoordinate(p, g, len);
      const Expr fl = Floor(c);
      const Expr base = codegen::Cast(fl, DType::kI64);
      const Expr t = c - fl;
      if (p.mode == "nearest") {
        taps[a].push_back(TapIndex(p, base, len));  // c is already whole
      } else if (p.mode == "linear") {
        taps[a] = {TapIndex(p, base, len), TapIndex(p, base + 1, len)};
        weights[a] = {F32(1) - t, t};
      } else {
        for (int64_t j = -1; j <= 2; ++j) taps[a].push_back(TapIndex(p, base + j, len));
        weights[a] = CubicWeights(t);
      }
    }
    const bool nearest = p.mode == "nearest";
    const DType acc = nearest ? dt : (dt == DType::kF64 ? DType::kF64 : DType::kF32);
    Expr value;
    std::vector<size_t> k(r, 0);
    while (true) {
      std::vector<Expr> src{idx[0], idx[1]};
      Expr w, inside;
      for (size_t a = 0; a < r; ++a) {
        src.push_back(taps[a][k[a]].first);
        const Expr& in = taps[a][k[a]].second;
        if (!in.is_null()) inside = inside.is_null() ? in : (inside && in);
        if (!weights[a].empty()) w = w.is_null() ? weights[a][k[a]] : w * weights[a][k[a]];
      }
      Expr v = codegen::Cast(x->at(src), acc);
      if (!inside.is_null()) {
        v = codegen::Select(inside, v, IsFloatType(acc) ? codegen::FloatConst(0, acc) : codegen::IntConst(0, acc));
      }
      if (!w.is_null()) v = v * codegen::Cast(w, acc);
      value = value.is_null() ? v : value + v;
      size_t d = r;
      while (d > 0 && ++k[d - 1] == taps[d - 1].size()) k[--d] = 0;
      if (d == 0) break;
    }
    return codegen::Cast(value, dt);
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// ---- AffineGrid ---------------------------------------------------------------------------

Status CanonicalizeAffineGrid(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "size"));
  if (HasInput(node, 1)) return NeedsConstant(node, 1, "size decides the output shape");
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferAffineGrid(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& theta = InputType(node, 0);
  KEEL_ASSIGN_OR_RETURN(auto size, node.attrs().GetInts("size", {}));
  if (size.size() != 4 && size.size() != 5) {
    return NodeError(node, "size " + ShapeString(size) + " is not [N, C, H, W] or [N, C, D, H, W]");
  }
  const int64_t r = static_cast<int64_t>(size.size()) - 2;
  if (theta.shape != std::vector<int64_t>{size[0], r, r + 1}) {
    return NodeError(node, "theta " + theta.ToString() + " is not [N, " + std::to_string(r) + ", " +
                               std::to_string(r + 1) + "] for size " + ShapeString(size));
  }
  if (!IsFloatType(theta.dtype)) return NodeError(node, std::string("theta must be float, got ") + ir::DTypeName(theta.dtype));
  std::vector<int64_t> out{size[0]};
  out.insert(out.end(), size.begin() + 2, size.end());
  out.push_back(r);
  KEEL_RETURN_IF_ERROR(CheckShape(node, out, "the output shape"));
  return One({theta.dtype, out});
}

Status DefineAffineGrid(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* theta, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(int64_t align, node.attrs().GetInt("align_corners", 0));
  TensorFn fn;
  fn.type = node.output(0)->type();
  const DType dt = fn.type.dtype;
  const DType acc = dt == DType::kF64 ? DType::kF64 : DType::kF32;
  const std::vector<int64_t> os = fn.type.shape;
  fn.at = [theta, align, dt, acc, os](const std::vector<Expr>& idx) {
    const size_t r = os.size() - 2;
    // base_j for j < r: the normalized coordinate of spatial axis r-1-j (x first).
    Expr sum;
    for (size_t j = 0; j <= r; ++j) {
      Expr b;
      if (j == r) {
        b = codegen::FloatConst(1, acc);
      } else {
        const size_t axis = r - 1 - j;  // spatial axis (0 = D or H)
        const double len = static_cast<double>(os[axis + 1]);
        const Expr i = codegen::Cast(idx[axis + 1], acc);
        if (align) {
          b = len > 1 ? codegen::FloatConst(-1, acc) + i * codegen::FloatConst(2.0 / (len - 1), acc)
                      : codegen::FloatConst(-1, acc);
        } else {
          const double step = 2.0 / len;
          b = codegen::FloatConst(-1 + step / 2, acc) + i * codegen::FloatConst(step, acc);
        }
      }
      const Expr t = codegen::Cast(theta->at({idx[0], idx[r + 1], codegen::IntConst(static_cast<int64_t>(j))}), acc);
      sum = sum.is_null() ? t * b : sum + t * b;
    }
    return codegen::Cast(sum, dt);
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

}  // namespace

void RegisterGridSampleOps(Registry& r) {
  {
    OpDef def;
    def.name = "GridSample";
    KeepF32(def, "sampling coordinates and bilinear weights");
    def.versions = {16, 20, 22};
    def.fusion = FusionClass::kInjective;
    def.normalize = NormalizeGridSample;
    def.infer = InferGridSample;
    def.injective = DefineGridSample;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "AffineGrid";
    KeepF32(def, "sampling coordinates");
    def.versions = {20};
    def.fusion = FusionClass::kInjective;
    def.canonicalize = CanonicalizeAffineGrid;
    def.infer = InferAffineGrid;
    def.injective = DefineAffineGrid;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
