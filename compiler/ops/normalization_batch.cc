// compiler/ops/normalization_batch.cc — BatchNormalization, versions 7, 9, 14
// and 15 (1 and 6 carry the legacy is_test/consumed_inputs forms and are
// refused).
//
// Canonical form: attributes epsilon, momentum, spatial (1 = per-channel
// parameters of shape [C]; 0, opset 7 only = per-activation parameters of
// shape x.shape[1:]) and training_mode (0/1). Opsets 7 and 9 have no
// training_mode: a node whose running-statistics outputs are used is a
// training node there (normalize sets training_mode = 1); their saved_mean /
// saved_var outputs are refused.
//
// Inference nodes with constant f32 parameters are folded into the producing
// Conv/Gemm or into Mul + Add by the batchnorm-folding pass; the rest (runtime
// parameters, other dtypes, spatial = 0, training mode) compile as this
// anchor: inference is elementwise arithmetic on the broadcast parameters,
// training mode normalizes each channel with the batch statistics (a row
// normalization over every dim but 1) and outputs the running statistics
// running = input * momentum + batch * (1 - momentum), with the batch's
// population variance, as ONNX specifies.
#include <cmath>

#include "compiler/ops/normalization.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using codegen::FloatConst;

struct BnAttrs {
  double eps = 1e-5, momentum = 0.9;
  bool spatial = true, training = false;
};

Result<BnAttrs> GetBnAttrs(const ir::Node& node) {
  BnAttrs a;
  KEEL_ASSIGN_OR_RETURN(a.eps, node.attrs().GetFloat("epsilon", 1e-5));
  KEEL_ASSIGN_OR_RETURN(a.momentum, node.attrs().GetFloat("momentum", 0.9));
  KEEL_ASSIGN_OR_RETURN(int64_t spatial, node.attrs().GetInt("spatial", 1));
  KEEL_ASSIGN_OR_RETURN(int64_t training, node.attrs().GetInt("training_mode", 0));
  a.spatial = spatial != 0;
  a.training = training != 0;
  return a;
}

// The parameters' shape: [C], or x.shape[1:] for spatial = 0.
std::vector<int64_t> ParamShape(const std::vector<int64_t>& xs, bool spatial) {
  if (spatial) return {xs[1]};
  return std::vector<int64_t>(xs.begin() + 1, xs.end());
}

Result<std::vector<ir::TensorType>> InferBatchNorm(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 5, 5));
  KEEL_RETURN_IF_ERROR(CheckOutputs(node, 3, "saved_mean and saved_var are training internals"));
  KEEL_ASSIGN_OR_RETURN(BnAttrs a, GetBnAttrs(node));
  const ir::TensorType& x = InputType(node, 0);
  if (!IsFloatType(x.dtype)) return NodeUnsupported(node, std::string("BatchNormalization on ") + ir::DTypeName(x.dtype));
  if (x.shape.size() < 2) return NodeError(node, "input rank must be >= 2, got " + x.ToString());
  if (node.outputs().size() > 1 && !a.training) {
    return NodeError(node, "running mean/var outputs exist only with training_mode=1");
  }
  const std::vector<int64_t> ps = ParamShape(x.shape, a.spatial);
  int64_t count = 1;
  for (int64_t d : ps) count *= d;
  static const char* kNames[] = {"", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) {
    const ir::TensorType& p = InputType(node, i);
    if (!IsFloatType(p.dtype)) return NodeUnsupported(node, std::string(kNames[i]) + " of type " + ir::DTypeName(p.dtype));
    if (p.NumElements() != count) {
      return NodeError(node, std::string(kNames[i]) + " has " + std::to_string(p.NumElements()) + " elements, expected " +
                                 ShapeString(ps));
    }
  }
  std::vector<ir::TensorType> out = {x, {InputType(node, 3).dtype, ps}, {InputType(node, 4).dtype, ps}};
  out.resize(node.outputs().size());
  return out;
}

Result<std::vector<ir::TensorDataPtr>> EvaluateBatchNorm(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                         const std::vector<ir::TensorType>& out_types) {
  KEEL_ASSIGN_OR_RETURN(BnAttrs a, GetBnAttrs(node));
  const std::vector<int64_t>& xs = in[0]->type.shape;
  const std::vector<double> x = TensorToDoubles(*in[0]), g = TensorToDoubles(*in[1]), b = TensorToDoubles(*in[2]);
  std::vector<double> m = TensorToDoubles(*in[3]), v = TensorToDoubles(*in[4]);
  int64_t inner = 1;
  for (size_t d = 2; d < xs.size(); ++d) inner *= xs[d];
  const int64_t c = xs[1], per = c * inner;  // elements per batch item
  std::vector<double> run_mean = m, run_var = v;
  if (a.training) {
    std::vector<bool> reduced(xs.size(), true);
    reduced[1] = false;
    int64_t rows = 0;
    const RowStatistics bs = ComputeRowStatistics(x, c, RowOfKeptDims(xs, reduced, &rows));
    for (size_t ch = 0; ch < static_cast<size_t>(c); ++ch) {
      run_mean[ch] = m[ch] * a.momentum + bs.mean[ch] * (1 - a.momentum);
      run_var[ch] = v[ch] * a.momentum + bs.var[ch] * (1 - a.momentum);
    }
    m = bs.mean;
    v = bs.var;
  }
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    // Parameter index: the channel, or the whole position within the batch item (spatial = 0).
    const int64_t within = static_cast<int64_t>(i) % std::max<int64_t>(per, 1);
    const size_t p = static_cast<size_t>(a.spatial ? within / std::max<int64_t>(inner, 1) : within);
    y[i] = (x[i] - m[p]) / std::sqrt(v[p] + a.eps) * g[p] + b[p];
  }
  std::vector<ir::TensorDataPtr> outs;
  const std::vector<double>* values[] = {&y, &run_mean, &run_var};
  for (size_t o = 0; o < out_types.size() && o < 3; ++o) {
    KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr t, TensorFromDoubles(out_types[o], *values[o]));
    outs.push_back(t);
  }
  return outs;
}

Result<codegen::Stmt> LowerBatchNorm(codegen::LowerContext& ctx, const ir::Node& node,
                                     const std::vector<codegen::StoreFn>& stores) {
  KEEL_ASSIGN_OR_RETURN(BnAttrs a, GetBnAttrs(node));
  const std::vector<int64_t> xs = InputType(node, 0).shape;
  const codegen::DType ct = NormComputeType(InputType(node, 0).dtype);
  KEEL_ASSIGN_OR_RETURN(codegen::IndexFn x, InputAs(ctx, node, 0, ct));
  std::vector<codegen::IndexFn> p(5);
  std::vector<std::vector<int64_t>> shapes(5);
  for (size_t i = 1; i < 5; ++i) {
    KEEL_ASSIGN_OR_RETURN(p[i], InputAs(ctx, node, i, ct));
    shapes[i] = InputType(node, i).shape;
  }
  const std::vector<int64_t> inner(xs.begin() + 1, xs.end());
  const bool spatial = a.spatial;
  // Parameter i at x-index idx (read by flat position: any shape with the right count).
  auto param = [p, shapes, inner, spatial](size_t i, const std::vector<Expr>& idx) {
    Expr flat = spatial ? idx[1] : codegen::Linearize(inner, std::vector<Expr>(idx.begin() + 1, idx.end()));
    return p[i](codegen::Delinearize(shapes[i], flat));
  };
  const codegen::StoreFn y = stores[0];
  const double eps = a.eps;
  if (!a.training) {
    return codegen::LoopNest(ctx, xs, [&](const std::vector<Expr>& idx) {
      Expr inv = codegen::Unary(codegen::UnaryOp::kRsqrt, param(4, idx) + FloatConst(eps, ct));
      return y(idx, (x(idx) - param(3, idx)) * inv * param(1, idx) + param(2, idx));
    });
  }
  if (!spatial) return NodeUnsupported(node, "training_mode with spatial=0");
  codegen::RowNormSpec spec;
  spec.shape = xs;
  spec.reduced.assign(xs.size(), true);
  spec.reduced[1] = false;
  spec.compute = ct;
  spec.x = x;
  spec.inv = [eps, ct](Expr, Expr sum, double count) {
    return codegen::Unary(codegen::UnaryOp::kRsqrt, sum / FloatConst(count, ct) + FloatConst(eps, ct));
  };
  spec.element = [y, param](const std::vector<Expr>& it, Expr xv, Expr mean, Expr inv) {
    return y(it, (xv - mean) * inv * param(1, it) + param(2, it));
  };
  if (stores.size() > 1) {
    const std::vector<codegen::StoreFn> st = stores;
    const double mom = a.momentum;
    // Batch variance = sum / (elements per channel).
    int64_t count = 1;
    for (size_t d = 0; d < xs.size(); ++d)
      if (d != 1) count *= xs[d];
    const double n = static_cast<double>(std::max<int64_t>(count, 1));
    spec.row = [st, param, mom, ct, n](const std::vector<Expr>& row, Expr mean, Expr sum, Expr) {
      std::vector<codegen::Stmt> s;
      s.push_back(st[1]({row[1]}, param(3, row) * FloatConst(mom, ct) + mean * FloatConst(1 - mom, ct)));
      if (st.size() > 2) {
        s.push_back(st[2]({row[1]}, param(4, row) * FloatConst(mom, ct) + sum / FloatConst(n, ct) * FloatConst(1 - mom, ct)));
      }
      return codegen::Block(std::move(s));
    };
  }
  return codegen::LowerRowNorm(ctx, spec);
}

// Inference BN on f32 data with constant per-channel parameters is y = s*x + t;
// the others stay and compile as the op's own kernel.
Result<std::optional<ScaleShift>> BatchNormAsScaleShift(const ir::Node& bn) {
  KEEL_ASSIGN_OR_RETURN(int64_t training, bn.attrs().GetInt("training_mode", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t spatial, bn.attrs().GetInt("spatial", 1));
  if (training != 0 || spatial == 0 || bn.outputs().size() != 1 || bn.inputs().size() != 5) return std::optional<ScaleShift>();
  const ir::Value* x = bn.input(0);
  if (!x || !x->has_type() || x->type().dtype != ir::DType::kF32) return std::optional<ScaleShift>();
  for (size_t i = 1; i < 5; ++i) {
    if (!bn.input(i) || !bn.input(i)->is_constant()) return std::optional<ScaleShift>();
  }
  if (x->type().shape.size() < 2) return NodeError(bn, "input must have rank >= 2");
  KEEL_ASSIGN_OR_RETURN(double eps, bn.attrs().GetFloat("epsilon", 1e-5));
  auto values = [&](size_t i) { return TensorToDoubles(*bn.input(i)->constant()); };
  const std::vector<double> gamma = values(1), beta = values(2), mean = values(3), var = values(4);
  const size_t c = static_cast<size_t>(x->type().shape[1]);
  if (gamma.size() != c || beta.size() != c || mean.size() != c || var.size() != c) {
    return NodeError(bn, "parameters do not have " + std::to_string(c) + " elements");
  }
  ScaleShift st{std::vector<double>(c), std::vector<double>(c)};
  for (size_t i = 0; i < c; ++i) {
    st.s[i] = gamma[i] / std::sqrt(var[i] + eps);
    st.t[i] = beta[i] - mean[i] * st.s[i];
  }
  return std::optional<ScaleShift>(std::move(st));
}

}  // namespace

void RegisterBatchNormOps(Registry& r) {
  OpDef def;
  def.name = "BatchNormalization";
  KeepF32(def, "variance and scale not folded into a convolution");
  def.versions = {1, 6, 7, 9, 14, 15};
  def.supported = {7, 9, 14, 15};
  def.fusion = FusionClass::kAnchor;
  def.normalize = [](ir::Node& node, int version) -> Status {
    // Before 14 the mode is implied by the outputs: running statistics are training outputs.
    if (version < 14 && node.outputs().size() > 1) node.attrs().Set("training_mode", int64_t{1});
    return Status::Ok();
  };
  def.canonicalize = [](ir::Node& node) -> Status {
    KEEL_ASSIGN_OR_RETURN(BnAttrs a, GetBnAttrs(node));
    node.attrs().Set("epsilon", a.eps);
    node.attrs().Set("momentum", a.momentum);
    node.attrs().Set("spatial", int64_t{a.spatial ? 1 : 0});
    node.attrs().Set("training_mode", int64_t{a.training ? 1 : 0});
    if (a.training && !a.spatial) return NodeUnsupported(node, "training_mode with spatial=0");
    return Status::Ok();
  };
  def.infer = InferBatchNorm;
  def.evaluate = EvaluateBatchNorm;
  def.kernel = LowerBatchNorm;
  def.as_scale_shift = BatchNormAsScaleShift;
  r.Add(std::move(def));
}

}  // namespace keel::ops
