// compiler/ops/normalization.cc — normalizations over trailing axes or over
// channel groups: LayerNormalization (with its Mean and InvStdDev outputs),
// RMSNormalization, InstanceNormalization and GroupNormalization; plus the
// helpers the family shares (normalization.h). BatchNormalization is in
// normalization_batch.cc, LRN / MeanVarianceNormalization / LpNormalization in
// normalization_misc.cc.
//
// All lower to codegen::LowerRowNorm (one parallel iteration per row, the
// statistics in registers). Statistics are computed in f32 (f64 for f64 data
// or stash_type = double) and rounded to the output type when stored.
#include <cmath>

#include "compiler/ops/normalization.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"

namespace keel::ops {

using codegen::Expr;
using codegen::FloatConst;

// ---- shared helpers ---------------------------------------------------------------------

RowStatistics ComputeRowStatistics(const std::vector<double>& x, int64_t rows,
                                   const std::function<int64_t(int64_t)>& row_of) {
  RowStatistics s;
  const size_t n = static_cast<size_t>(rows);
  s.mean.assign(n, 0.0);
  s.var.assign(n, 0.0);
  s.sum_sq.assign(n, 0.0);
  s.sum_abs.assign(n, 0.0);
  std::vector<double> count(n, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t r = static_cast<size_t>(row_of(static_cast<int64_t>(i)));
    s.mean[r] += x[i];
    s.sum_sq[r] += x[i] * x[i];
    s.sum_abs[r] += std::fabs(x[i]);
    count[r] += 1;
  }
  for (size_t r = 0; r < n; ++r) s.mean[r] /= std::max(count[r], 1.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t r = static_cast<size_t>(row_of(static_cast<int64_t>(i)));
    s.var[r] += (x[i] - s.mean[r]) * (x[i] - s.mean[r]);
  }
  for (size_t r = 0; r < n; ++r) s.var[r] /= std::max(count[r], 1.0);
  return s;
}

std::function<int64_t(int64_t)> RowOfKeptDims(const std::vector<int64_t>& shape, const std::vector<bool>& reduced,
                                              int64_t* rows) {
  std::vector<int64_t> kept(shape.size());
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    kept[d] = reduced[d] ? 1 : shape[d];
    n *= kept[d];
  }
  *rows = n;
  std::vector<int64_t> strides = BroadcastStrides(kept, shape.size());
  return [shape, strides](int64_t i) { return StridedOffset(i, shape, strides); };
}

Result<ir::DType> CanonicalizeStashType(ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(int64_t code, node.attrs().GetInt("stash_type", 1));
  Result<ir::DType> dt = DTypeFromOnnx(code);
  if (!dt.ok() || !IsFloatType(*dt)) return NodeError(node, "stash_type " + std::to_string(code) + " is not a float type");
  node.attrs().Set("stash_type", code);
  return *dt;
}

std::vector<bool> TrailingDims(size_t rank, int64_t axis) {
  std::vector<bool> r(rank);
  for (size_t d = 0; d < rank; ++d) r[d] = static_cast<int64_t>(d) >= axis;
  return r;
}

codegen::DType NormComputeType(ir::DType data, ir::DType stash) {
  return data == ir::DType::kF64 || stash == ir::DType::kF64 ? ir::DType::kF64 : ir::DType::kF32;
}

Result<codegen::IndexFn> InputAs(codegen::LowerContext& ctx, const ir::Node& node, size_t i, codegen::DType ct) {
  KEEL_ASSIGN_OR_RETURN(const codegen::TensorFn* p, ctx.Input(node, i));
  codegen::TensorFn fn = *p;
  return codegen::IndexFn([fn, ct](const std::vector<Expr>& idx) { return codegen::Cast(fn.at(idx), ct); });
}

Result<codegen::IndexFn> BroadcastInput(codegen::LowerContext& ctx, const ir::Node& node, size_t i,
                                        const std::vector<int64_t>& x_shape, codegen::DType ct) {
  KEEL_ASSIGN_OR_RETURN(codegen::IndexFn at, InputAs(ctx, node, i, ct));
  const std::vector<int64_t> in_shape = InputType(node, i).shape;
  return codegen::IndexFn(
      [at, x_shape, in_shape](const std::vector<Expr>& idx) { return at(codegen::BroadcastIndex(x_shape, in_shape, idx)); });
}

namespace {

Status CheckFloat(const ir::Node& node, size_t i) {
  const ir::DType d = InputType(node, i).dtype;
  if (!IsFloatType(d)) return NodeUnsupported(node, std::string(node.op_type()) + " on " + ir::DTypeName(d));
  return Status::Ok();
}

// Input `i` broadcasts to x's shape without growing it (scale/bias of Layer/RMSNormalization).
Status CheckBroadcastsTo(const ir::Node& node, size_t i, const std::string& what) {
  const std::vector<int64_t>& x = InputType(node, 0).shape;
  const std::vector<int64_t>& p = InputType(node, i).shape;
  Result<std::vector<int64_t>> b = BroadcastShapes(x, p);
  if (!b.ok() || *b != x) return NodeError(node, what + " shape " + ShapeString(p) + " does not broadcast to " + ShapeString(x));
  return CheckFloat(node, i);
}

// Input `i` has exactly `n` elements (per-channel / per-group parameters).
Status CheckCount(const ir::Node& node, size_t i, int64_t n, const std::string& what) {
  if (InputType(node, i).NumElements() != n) {
    return NodeError(node, what + " has " + std::to_string(InputType(node, i).NumElements()) + " elements, expected " +
                               std::to_string(n));
  }
  return CheckFloat(node, i);
}

// ---- LayerNormalization / RMSNormalization --------------------------------------------

Status CanonicalizeTrailingNorm(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CanonicalizeAxisAttr(node, "axis", -1, static_cast<int64_t>(InputType(node, 0).shape.size())));
  KEEL_ASSIGN_OR_RETURN(double eps, node.attrs().GetFloat("epsilon", 1e-5));
  node.attrs().Set("epsilon", eps);
  return CanonicalizeStashType(node).status();
}

Result<ir::DType> StashType(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(int64_t code, node.attrs().GetInt("stash_type", 1));
  return DTypeFromOnnx(code);
}

Result<std::vector<ir::TensorType>> InferLayerNorm(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
  KEEL_RETURN_IF_ERROR(CheckOutputs(node, 3, "LayerNormalization has 3 outputs"));
  KEEL_RETURN_IF_ERROR(CheckFloat(node, 0));
  KEEL_RETURN_IF_ERROR(CheckBroadcastsTo(node, 1, "Scale"));
  if (HasInput(node, 2)) KEEL_RETURN_IF_ERROR(CheckBroadcastsTo(node, 2, "B"));
  const ir::TensorType& x = InputType(node, 0);
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", -1));
  KEEL_ASSIGN_OR_RETURN(ir::DType stash, StashType(node));
  std::vector<int64_t> stat_shape = x.shape;
  for (size_t d = static_cast<size_t>(axis); d < stat_shape.size(); ++d) stat_shape[d] = 1;
  std::vector<ir::TensorType> out = {x, {stash, stat_shape}, {stash, stat_shape}};
  out.resize(node.outputs().size());
  return out;
}

Result<std::vector<ir::TensorType>> InferRmsNorm(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
  KEEL_RETURN_IF_ERROR(CheckOutputs(node, 1, "RMSNormalization has 1 output"));
  KEEL_RETURN_IF_ERROR(CheckFloat(node, 0));
  KEEL_RETURN_IF_ERROR(CheckBroadcastsTo(node, 1, "Scale"));
  return One(InputType(node, 0));
}

// Both ops: y = (x - mean) * inv * scale (+ bias), over the dims from `axis`;
// RMSNormalization has no centering and no bias.
Result<std::vector<ir::TensorDataPtr>> EvaluateTrailingNorm(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                            const std::vector<ir::TensorType>& out_types) {
  const bool rms = node.op_type() == "RMSNormalization";
  const std::vector<int64_t>& xs = in[0]->type.shape;
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", -1));
  KEEL_ASSIGN_OR_RETURN(double eps, node.attrs().GetFloat("epsilon", 1e-5));
  int64_t rows = 0;
  const auto row_of = RowOfKeptDims(xs, TrailingDims(xs.size(), axis), &rows);
  const std::vector<double> x = TensorToDoubles(*in[0]), scale = TensorToDoubles(*in[1]);
  const bool has_bias = !rms && in.size() > 2 && in[2];
  const std::vector<double> bias = has_bias ? TensorToDoubles(*in[2]) : std::vector<double>{};
  const std::vector<int64_t> sts = BroadcastStrides(in[1]->type.shape, xs.size());
  const std::vector<int64_t> stb = has_bias ? BroadcastStrides(in[2]->type.shape, xs.size()) : std::vector<int64_t>{};
  const RowStatistics st = ComputeRowStatistics(x, rows, row_of);
  const int64_t len = static_cast<int64_t>(x.size()) / std::max<int64_t>(rows, 1);
  std::vector<double> mean(st.mean.size()), inv(st.mean.size());
  for (size_t r = 0; r < mean.size(); ++r) {
    mean[r] = rms ? 0.0 : st.mean[r];
    const double var = rms ? st.sum_sq[r] / static_cast<double>(std::max<int64_t>(len, 1)) : st.var[r];
    inv[r] = 1.0 / std::sqrt(var + eps);
  }
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    const size_t r = static_cast<size_t>(row_of(i)), iu = static_cast<size_t>(i);
    y[iu] = (x[iu] - mean[r]) * inv[r] * scale[static_cast<size_t>(StridedOffset(i, xs, sts))];
    if (has_bias) y[iu] += bias[static_cast<size_t>(StridedOffset(i, xs, stb))];
  }
  std::vector<ir::TensorDataPtr> outs;
  const std::vector<double>* values[] = {&y, &mean, &inv};
  for (size_t o = 0; o < out_types.size() && o < 3; ++o) {
    KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr t, TensorFromDoubles(out_types[o], *values[o]));
    outs.push_back(t);
  }
  return outs;
}

Result<codegen::Stmt> LowerTrailingNorm(codegen::LowerContext& ctx, const ir::Node& node,
                                        const std::vector<codegen::StoreFn>& stores) {
  const bool rms = node.op_type() == "RMSNormalization";
  const std::vector<int64_t> xs = InputType(node, 0).shape;
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", -1));
  KEEL_ASSIGN_OR_RETURN(double eps, node.attrs().GetFloat("epsilon", 1e-5));
  KEEL_ASSIGN_OR_RETURN(ir::DType stash, StashType(node));
  codegen::RowNormSpec spec;
  spec.shape = xs;
  spec.reduced = TrailingDims(xs.size(), axis);
  spec.compute = NormComputeType(InputType(node, 0).dtype, stash);
  const codegen::DType ct = spec.compute;
  KEEL_ASSIGN_OR_RETURN(spec.x, InputAs(ctx, node, 0, ct));
  KEEL_ASSIGN_OR_RETURN(codegen::IndexFn scale, BroadcastInput(ctx, node, 1, xs, ct));
  codegen::IndexFn bias;
  if (!rms && HasInput(node, 2)) {
    KEEL_ASSIGN_OR_RETURN(bias, BroadcastInput(ctx, node, 2, xs, ct));
  }
  spec.center = !rms;
  spec.inv = [eps, ct](Expr, Expr sum, double count) {
    return codegen::Unary(codegen::UnaryOp::kRsqrt, sum / FloatConst(count, ct) + FloatConst(eps, ct));
  };
  const codegen::StoreFn y = stores[0];
  spec.element = [y, scale, bias](const std::vector<Expr>& it, Expr x, Expr mean, Expr inv) {
    Expr v = (x - mean) * inv * scale(it);
    return y(it, bias ? v + bias(it) : v);
  };
  if (stores.size() > 1) {
    const std::vector<codegen::StoreFn> st = stores;
    spec.row = [st](const std::vector<Expr>& row, Expr mean, Expr, Expr inv) {
      std::vector<codegen::Stmt> s = {st[1](row, mean)};
      if (st.size() > 2) s.push_back(st[2](row, inv));
      return codegen::Block(std::move(s));
    };
  }
  return codegen::LowerRowNorm(ctx, spec);
}

// ---- InstanceNormalization / GroupNormalization ----------------------------------------
// Both normalize x [N, C, spatial...] over rows of G groups of C/G channels
// (InstanceNormalization: G = C), then apply a per-channel affine (per group
// for GroupNormalization-18, attribute keel.group_affine = 1).

struct Grouping {
  int64_t n = 0, c = 0, groups = 0, spatial = 1;
};

Result<Grouping> GetGrouping(const ir::Node& node) {
  const std::vector<int64_t>& xs = InputType(node, 0).shape;
  if (xs.size() < 2) return NodeError(node, "input rank must be >= 2, got " + ShapeString(xs));
  Grouping g;
  g.n = xs[0];
  g.c = xs[1];
  for (size_t d = 2; d < xs.size(); ++d) g.spatial *= xs[d];
  if (node.op_type() == "InstanceNormalization") {
    g.groups = g.c;
  } else {
    KEEL_ASSIGN_OR_RETURN(g.groups, node.attrs().GetInt("num_groups", 0));
    if (g.groups <= 0 || g.c % g.groups != 0) {
      return NodeError(node, "num_groups " + std::to_string(g.groups) + " does not divide the " + std::to_string(g.c) +
                                 " channels");
    }
  }
  return g;
}

Result<std::vector<ir::TensorType>> InferGroupedNorm(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 3, 3));
  KEEL_RETURN_IF_ERROR(CheckOutputs(node, 1, "the op has 1 output"));
  KEEL_RETURN_IF_ERROR(CheckFloat(node, 0));
  KEEL_ASSIGN_OR_RETURN(Grouping g, GetGrouping(node));
  KEEL_ASSIGN_OR_RETURN(int64_t per_group, node.attrs().GetInt("keel.group_affine", 0));
  const int64_t params = per_group ? g.groups : g.c;
  KEEL_RETURN_IF_ERROR(CheckCount(node, 1, params, "scale"));
  KEEL_RETURN_IF_ERROR(CheckCount(node, 2, params, "bias"));
  return One(InputType(node, 0));
}

Result<std::vector<ir::TensorDataPtr>> EvaluateGroupedNorm(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                           const std::vector<ir::TensorType>& out_types) {
  KEEL_ASSIGN_OR_RETURN(Grouping g, GetGrouping(node));
  KEEL_ASSIGN_OR_RETURN(double eps, node.attrs().GetFloat("epsilon", 1e-5));
  KEEL_ASSIGN_OR_RETURN(int64_t per_group, node.attrs().GetInt("keel.group_affine", 0));
  const int64_t cpg = g.c / g.groups, row_len = cpg * g.spatial;
  const std::vector<double> x = TensorToDoubles(*in[0]), scale = TensorToDoubles(*in[1]), bias = TensorToDoubles(*in[2]);
  auto row_of = [row_len](int64_t i) { return i / std::max<int64_t>(row_len, 1); };
  const RowStatistics st = ComputeRowStatistics(x, g.n * g.groups, row_of);
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    const int64_t r = row_of(i), ch = (i / std::max<int64_t>(g.spatial, 1)) % g.c;
    const size_t p = static_cast<size_t>(per_group ? ch / cpg : ch), ru = static_cast<size_t>(r);
    const size_t iu = static_cast<size_t>(i);
    y[iu] = (x[iu] - st.mean[ru]) / std::sqrt(st.var[ru] + eps) * scale[p] + bias[p];
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(out_types[0], y));
  return std::vector<ir::TensorDataPtr>{out};
}

Result<codegen::Stmt> LowerGroupedNorm(codegen::LowerContext& ctx, const ir::Node& node,
                                       const std::vector<codegen::StoreFn>& stores) {
  KEEL_ASSIGN_OR_RETURN(Grouping g, GetGrouping(node));
  KEEL_ASSIGN_OR_RETURN(double eps, node.attrs().GetFloat("epsilon", 1e-5));
  KEEL_ASSIGN_OR_RETURN(int64_t per_group, node.attrs().GetInt("keel.group_affine", 0));
  KEEL_ASSIGN_OR_RETURN(ir::DType stash, StashType(node));
  const std::vector<int64_t> xs = InputType(node, 0).shape;
  const int64_t cpg = g.c / g.groups;
  // Iteration space [N, G, C/G, spatial...]; rows are (n, g).
  codegen::RowNormSpec spec;
  spec.shape = {g.n, g.groups, cpg};
  spec.shape.insert(spec.shape.end(), xs.begin() + 2, xs.end());
  spec.reduced.assign(spec.shape.size(), true);
  spec.reduced[0] = spec.reduced[1] = false;
  spec.compute = NormComputeType(InputType(node, 0).dtype, stash);
  const codegen::DType ct = spec.compute;
  auto to_x = [cpg](const std::vector<Expr>& it) {
    std::vector<Expr> idx = {it[0], it[1] * cpg + it[2]};
    idx.insert(idx.end(), it.begin() + 3, it.end());
    return idx;
  };
  KEEL_ASSIGN_OR_RETURN(codegen::IndexFn x, InputAs(ctx, node, 0, ct));
  KEEL_ASSIGN_OR_RETURN(codegen::IndexFn scale, InputAs(ctx, node, 1, ct));
  KEEL_ASSIGN_OR_RETURN(codegen::IndexFn bias, InputAs(ctx, node, 2, ct));
  const std::vector<int64_t> ps = InputType(node, 1).shape, pb = InputType(node, 2).shape;
  // Parameters are read by their flat position (any shape with the right count).
  auto param = [cpg, per_group](const codegen::IndexFn& p, const std::vector<int64_t>& shape, const std::vector<Expr>& it) {
    return p(codegen::Delinearize(shape, per_group ? it[1] : it[1] * cpg + it[2]));
  };
  spec.x = [x, to_x](const std::vector<Expr>& it) { return x(to_x(it)); };
  spec.inv = [eps, ct](Expr, Expr sum, double count) {
    return codegen::Unary(codegen::UnaryOp::kRsqrt, sum / FloatConst(count, ct) + FloatConst(eps, ct));
  };
  const codegen::StoreFn y = stores[0];
  spec.element = [=](const std::vector<Expr>& it, Expr xv, Expr mean, Expr inv) {
    return y(to_x(it), (xv - mean) * inv * param(scale, ps, it) + param(bias, pb, it));
  };
  return codegen::LowerRowNorm(ctx, spec);
}

}  // namespace

void RegisterNormalizationOps(Registry& r) {
  {
    OpDef def;
    def.name = "LayerNormalization";
    KeepF32(def, "mean and variance over the normalized axes");
    def.versions = {17};
    def.fusion = FusionClass::kAnchor;
    def.canonicalize = CanonicalizeTrailingNorm;
    def.infer = InferLayerNorm;
    def.evaluate = EvaluateTrailingNorm;
    def.kernel = LowerTrailingNorm;
    def.reads_row_once = true;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "RMSNormalization";
    KeepF32(def, "mean of squares over the normalized axes");
    def.versions = {23};
    def.fusion = FusionClass::kAnchor;
    def.canonicalize = CanonicalizeTrailingNorm;
    def.infer = InferRmsNorm;
    def.evaluate = EvaluateTrailingNorm;
    def.kernel = LowerTrailingNorm;
    def.reads_row_once = true;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "InstanceNormalization";
    KeepF32(def, "mean and variance over each channel");
    def.versions = {1, 6, 22};
    def.supported = {6, 22};
    def.fusion = FusionClass::kAnchor;
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_ASSIGN_OR_RETURN(double eps, node.attrs().GetFloat("epsilon", 1e-5));
      node.attrs().Set("epsilon", eps);
      return Status::Ok();
    };
    def.infer = InferGroupedNorm;
    def.evaluate = EvaluateGroupedNorm;
    def.kernel = LowerGroupedNorm;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "GroupNormalization";
    KeepF32(def, "mean and variance over each group");
    def.versions = {18, 21};
    def.fusion = FusionClass::kAnchor;
    // Version 18 has one scale/bias per group; 21 one per channel.
    def.normalize = [](ir::Node& node, int version) -> Status {
      if (version < 21) node.attrs().Set("keel.group_affine", int64_t{1});
      return Status::Ok();
    };
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_ASSIGN_OR_RETURN(double eps, node.attrs().GetFloat("epsilon", 1e-5));
      node.attrs().Set("epsilon", eps);
      if (!node.attrs().Has("num_groups")) return NodeError(node, "attribute num_groups is required");
      return CanonicalizeStashType(node).status();
    };
    def.infer = InferGroupedNorm;
    def.evaluate = EvaluateGroupedNorm;
    def.kernel = LowerGroupedNorm;
    r.Add(std::move(def));
  }
  RegisterBatchNormOps(r);
  RegisterNormalizationMiscOps(r);
}

}  // namespace keel::ops
