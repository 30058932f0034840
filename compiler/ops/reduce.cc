// compiler/ops/reduce.cc — reductions over axes (ReduceMean) and Softmax.
//
// Reduce ops: `axes` is an attribute before opset 18 (13 for ReduceSum) and an
// input since (lifted when constant); canonical form: `axes` sorted and
// non-negative, every axis when absent — or none when noop_with_empty_axes=1
// (the op is then the identity), `keepdims` 0/1.
// Softmax: one axis (opset 13 semantics); older models' "flatten from axis"
// form is accepted when the axis is the last one.
// Lowerings: compiler/codegen/lower_reduce.cc.
#include <cmath>
#include <limits>

#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

Status CanonicalizeReduce(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "axes"));
  if (HasInput(node, 1)) return NeedsConstant(node, 1, "the reduced axes decide the output shape");
  const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
  KEEL_ASSIGN_OR_RETURN(int64_t noop, node.attrs().GetInt("noop_with_empty_axes", 0));
  KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", {}));
  if (axes.empty() && !noop) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  node.attrs().Set("axes", axes);
  node.attrs().Erase("noop_with_empty_axes");
  KEEL_ASSIGN_OR_RETURN(int64_t keep, node.attrs().GetInt("keepdims", 1));
  node.attrs().Set("keepdims", keep != 0 ? int64_t{1} : int64_t{0});
  return CanonicalizeAxesAttr(node, "axes", rank, true);
}

Result<std::vector<ir::TensorType>> InferReduce(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", {}));
  KEEL_ASSIGN_OR_RETURN(int64_t keep, node.attrs().GetInt("keepdims", 1));
  std::vector<int64_t> out;
  for (int64_t d = 0; d < static_cast<int64_t>(x.shape.size()); ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (reduced && keep) out.push_back(1);
    if (!reduced) out.push_back(x.shape[static_cast<size_t>(d)]);
  }
  return One({x.dtype, out});
}

Result<std::vector<ir::TensorDataPtr>> EvaluateReduceMean(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                          const std::vector<ir::TensorType>& out_types) {
  const ir::TensorType& xt = in[0]->type;
  KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", {}));
  const size_t r = xt.shape.size();
  std::vector<int64_t> kept(r);
  for (size_t d = 0; d < r; ++d) {
    kept[d] = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end() ? 1 : xt.shape[d];
  }
  const std::vector<int64_t> ks = BroadcastStrides(kept, r);
  const std::vector<double> x = TensorToDoubles(*in[0]);
  std::vector<double> y(static_cast<size_t>(out_types[0].NumElements()), 0.0);
  const int64_t count = xt.NumElements() / std::max<int64_t>(out_types[0].NumElements(), 1);
  for (int64_t i = 0; i < xt.NumElements(); ++i) y[static_cast<size_t>(StridedOffset(i, xt.shape, ks))] += x[static_cast<size_t>(i)];
  for (double& v : y) v /= static_cast<double>(std::max<int64_t>(count, 1));
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(out_types[0], y));
  return std::vector<ir::TensorDataPtr>{out};
}

Result<std::vector<ir::TensorDataPtr>> EvaluateSoftmax(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                       const std::vector<ir::TensorType>& out_types) {
  const ir::TensorType& xt = in[0]->type;
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", -1));
  int64_t outer, len, inner;
  SplitAxis(xt.shape, axis, outer, len, inner);
  std::vector<double> y = TensorToDoubles(*in[0]);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) -> double& { return y[static_cast<size_t>((o * len + j) * inner + i)]; };
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < len; ++j) mx = std::max(mx, at(j));
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) sum += std::exp(at(j) - mx);
      for (int64_t j = 0; j < len; ++j) at(j) = std::exp(at(j) - mx) / sum;
    }
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(out_types[0], y));
  return std::vector<ir::TensorDataPtr>{out};
}

}  // namespace

void RegisterReduceOps(Registry& r) {
  {
    OpDef def;
    def.name = "ReduceMean";
    def.versions = {1, 11, 13, 18};
    def.fusion = FusionClass::kAnchor;
    def.canonicalize = CanonicalizeReduce;
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_ASSIGN_OR_RETURN(auto types, InferReduce(node));
      if (!IsFloatType(types[0].dtype)) return NodeUnsupported(node, std::string("ReduceMean on ") + ir::DTypeName(types[0].dtype));
      return types;
    };
    def.evaluate = EvaluateReduceMean;
    def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
      return codegen::LowerReduce(ctx, node, stores[0]);
    };
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "Softmax";
    def.versions = {1, 11, 13};
    def.fusion = FusionClass::kAnchor;
    def.normalize = [](ir::Node& node, int version) -> Status {
      if (version < 13) node.attrs().Set("keel.legacy_flatten", int64_t{1});
      return Status::Ok();
    };
    def.canonicalize = [](ir::Node& node) -> Status {
      const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
      KEEL_ASSIGN_OR_RETURN(int64_t legacy, node.attrs().GetInt("keel.legacy_flatten", 0));
      // Before opset 13 the default axis is 1 and the input is flattened from it on.
      KEEL_RETURN_IF_ERROR(CanonicalizeAxisAttr(node, "axis", legacy ? 1 : -1, rank));
      if (legacy && *node.attrs().GetInt("axis", 0) != rank - 1) {
        return NodeUnsupported(node, "opset < 13 Softmax over several trailing axes is not supported");
      }
      node.attrs().Erase("keel.legacy_flatten");
      return Status::Ok();
    };
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
      if (!IsFloatType(InputType(node, 0).dtype)) return NodeUnsupported(node, "Softmax on integers");
      return One(InputType(node, 0));
    };
    def.evaluate = EvaluateSoftmax;
    def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
      return codegen::LowerSoftmax(ctx, node, stores[0]);
    };
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
