// compiler/ops/normalization.cc — LayerNormalization (over the trailing axes
// from `axis`) and BatchNormalization (inference form; folded into the
// producing Conv/Gemm or rewritten to Mul + Add by batchnorm-folding, so it
// never reaches code generation).
#include <cmath>

#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

Result<std::vector<ir::TensorDataPtr>> EvaluateLayerNorm(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                         const std::vector<ir::TensorType>& out_types) {
  const ir::TensorType& xt = in[0]->type;
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", -1));
  KEEL_ASSIGN_OR_RETURN(double eps, node.attrs().GetFloat("epsilon", 1e-5));
  const std::vector<int64_t> norm_shape(xt.shape.begin() + axis, xt.shape.end());
  int64_t len = 1;
  for (int64_t d : norm_shape) len *= d;
  const int64_t outer = xt.NumElements() / std::max<int64_t>(len, 1);
  const std::vector<double> x = TensorToDoubles(*in[0]), scale = TensorToDoubles(*in[1]);
  const bool has_bias = in.size() > 2 && in[2];
  const std::vector<double> bias = has_bias ? TensorToDoubles(*in[2]) : std::vector<double>{};
  const std::vector<int64_t> sts = BroadcastStrides(in[1]->type.shape, norm_shape.size());
  const std::vector<int64_t> stb = has_bias ? BroadcastStrides(in[2]->type.shape, norm_shape.size()) : std::vector<int64_t>{};
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    const double* px = x.data() + o * len;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < len; ++j) mean += px[j];
    mean /= static_cast<double>(len);
    for (int64_t j = 0; j < len; ++j) var += (px[j] - mean) * (px[j] - mean);
    var /= static_cast<double>(len);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < len; ++j) {
      const double s = scale[static_cast<size_t>(StridedOffset(j, norm_shape, sts))];
      const double b = has_bias ? bias[static_cast<size_t>(StridedOffset(j, norm_shape, stb))] : 0.0;
      y[static_cast<size_t>(o * len + j)] = (px[j] - mean) * inv * s + b;
    }
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(out_types[0], y));
  return std::vector<ir::TensorDataPtr>{out};
}

Result<std::vector<ir::TensorDataPtr>> EvaluateBatchNorm(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                         const std::vector<ir::TensorType>& out_types) {
  const ir::TensorType& xt = in[0]->type;
  KEEL_ASSIGN_OR_RETURN(double eps, node.attrs().GetFloat("epsilon", 1e-5));
  const int64_t n = xt.shape[0], c = xt.shape[1];
  const int64_t inner = xt.NumElements() / std::max<int64_t>(n * c, 1);
  std::vector<double> y = TensorToDoubles(*in[0]);
  const std::vector<double> g = TensorToDoubles(*in[1]), b = TensorToDoubles(*in[2]), m = TensorToDoubles(*in[3]),
                            v = TensorToDoubles(*in[4]);
  for (int64_t bi = 0; bi < n; ++bi) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const size_t ci = static_cast<size_t>(ch);
      const double scale = g[ci] / std::sqrt(v[ci] + eps), shift = b[ci] - m[ci] * scale;
      for (int64_t i = 0; i < inner; ++i) {
        double& e = y[static_cast<size_t>((bi * c + ch) * inner + i)];
        e = e * scale + shift;
      }
    }
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(out_types[0], y));
  return std::vector<ir::TensorDataPtr>{out};
}

}  // namespace

void RegisterNormalizationOps(Registry& r) {
  {
    OpDef def;
    def.name = "LayerNormalization";
    def.versions = {17};
    def.fusion = FusionClass::kAnchor;
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_RETURN_IF_ERROR(CanonicalizeAxisAttr(node, "axis", -1, static_cast<int64_t>(InputType(node, 0).shape.size())));
      KEEL_ASSIGN_OR_RETURN(double eps, node.attrs().GetFloat("epsilon", 1e-5));
      node.attrs().Set("epsilon", eps);
      return Status::Ok();
    };
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
      KEEL_RETURN_IF_ERROR(CheckOutputs(node, 1, "Mean and InvStdDev"));
      if (!IsFloatType(InputType(node, 0).dtype)) return NodeUnsupported(node, "LayerNormalization on integers");
      return One(InputType(node, 0));
    };
    def.evaluate = EvaluateLayerNorm;
    def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
      return codegen::LowerLayerNorm(ctx, node, stores[0]);
    };
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "BatchNormalization";
    def.versions = {1, 6, 7, 9, 14, 15};
    def.supported = {7, 9, 14, 15};
    def.removed_by = "batchnorm-folding";
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_ASSIGN_OR_RETURN(int64_t tm, node.attrs().GetInt("training_mode", 0));
      if (tm != 0) return NodeUnsupported(node, "training_mode=1 (Keel runs inference)");
      KEEL_ASSIGN_OR_RETURN(double eps, node.attrs().GetFloat("epsilon", 1e-5));
      node.attrs().Set("epsilon", eps);
      return Status::Ok();
    };
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 5, 5));
      KEEL_RETURN_IF_ERROR(CheckOutputs(node, 1, "running statistics are training outputs"));
      const ir::TensorType& x = InputType(node, 0);
      if (x.shape.size() < 2) return NodeError(node, "input rank must be >= 2, got " + x.ToString());
      for (size_t i = 1; i < 5; ++i) {
        if (InputType(node, i).NumElements() != x.shape[1]) {
          return NodeError(node, "parameter " + std::to_string(i) + " has " + std::to_string(InputType(node, i).NumElements()) +
                                     " elements, channels are " + std::to_string(x.shape[1]));
        }
      }
      return One(x);
    };
    def.evaluate = EvaluateBatchNorm;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
