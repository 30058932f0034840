// compiler/ops/loss.cc — the training losses of opset 12+:
// NegativeLogLikelihoodLoss (12, 13, 22) and SoftmaxCrossEntropyLoss (12, 13).
//
// Both are composite ops (expansion.h): the ONNX spec defines them by a
// function body, and Keel expands them into ops it already compiles (an
// injective GatherElements, fused elementwise chains, ReduceSum, LogSoftmax),
// so the targets stay run-time data.
//
// Semantics (the ONNX reference): input x [N, C, d1, ...], target [N, d1, ...]
// of class indices, optional weight [C]. For every target element t:
//   w    = weight[t] (1 without weights), 0 where t == ignore_index
//   loss = -x[n, t, d...] * w, exactly 0 where t == ignore_index
// reduction "none" keeps loss (target's shape), "sum" sums it, "mean" divides
// the sum by the sum of w (by the element count without weights and
// ignore_index; 0/0 = NaN when every element is ignored, as the reference).
// SoftmaxCrossEntropyLoss is that loss on x' = LogSoftmax(x, axis 1), and its
// optional second output is x'.
// A target equal to ignore_index may lie outside [0, C): targets are clamped
// into range before every gather so reads stay in bounds (other out-of-range
// targets are invalid input; they read a clamped class, never out of bounds).
// Dtypes: x and weight f32/f16/bf16/f64 (the same type), target i32/i64.
#include <string>

#include "compiler/ops/expansion.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using ir::Value;

enum LossInput { kX, kTarget, kWeight };

enum class Reduce { kNone, kSum, kMean };

Result<Reduce> Reduction(const ir::Node& node) {
  const Result<std::string> r = node.attrs().GetString("reduction", "mean");
  if (!r.ok()) return r.status();
  static const std::pair<const char*, Reduce> kNames[] = {
      {"none", Reduce::kNone}, {"sum", Reduce::kSum}, {"mean", Reduce::kMean}};
  for (const auto& [name, kind] : kNames) {
    if (r->compare(name) == 0) return kind;
  }
  return NodeError(node, "reduction must be none, sum or mean, got '" + *r + "'");
}

bool IsLossFloat(ir::DType t) {
  return t == ir::DType::kF32 || t == ir::DType::kF16 || t == ir::DType::kBF16 || t == ir::DType::kF64;
}

// Output types: the loss (target's shape for "none", a scalar otherwise), then
// for SoftmaxCrossEntropyLoss the log-probabilities (x's type).
Result<std::vector<ir::TensorType>> InferLoss(const ir::Node& node, size_t max_outputs) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
  if (node.outputs().empty() || node.outputs().size() > max_outputs) {
    return NodeError(node, "expects 1 to " + std::to_string(max_outputs) + " outputs, got " +
                               std::to_string(node.outputs().size()));
  }
  const ir::TensorType& x = InputType(node, kX);
  const ir::TensorType& t = InputType(node, kTarget);
  if (!IsLossFloat(x.dtype)) return NodeUnsupported(node, node.op_type() + " on " + ir::DTypeName(x.dtype));
  if (t.dtype != ir::DType::kI32 && t.dtype != ir::DType::kI64) {
    return NodeUnsupported(node, std::string("target of type ") + ir::DTypeName(t.dtype) + " (i32 or i64 expected)");
  }
  if (x.shape.size() < 2) return NodeError(node, "input must have rank >= 2, got " + ShapeString(x.shape));
  std::vector<int64_t> expected = x.shape;
  expected.erase(expected.begin() + 1);
  if (t.shape != expected) {
    return NodeError(node, "target " + ShapeString(t.shape) + " does not match input " + ShapeString(x.shape) +
                               " without its class dimension");
  }
  const int64_t classes = x.shape[1];
  if (classes < 1) return NodeUnsupported(node, "an input with no classes (C = 0)");
  if (HasInput(node, kWeight)) {
    const ir::TensorType& w = InputType(node, kWeight);
    if (w.dtype != x.dtype || w.shape != std::vector<int64_t>{classes}) {
      return NodeError(node, "weight must be a " + std::string(ir::DTypeName(x.dtype)) + " tensor of shape [" +
                                 std::to_string(classes) + "], got " + ir::DTypeName(w.dtype) + " " +
                                 ShapeString(w.shape));
    }
  }
  KEEL_ASSIGN_OR_RETURN(Reduce reduction, Reduction(node));
  std::vector<ir::TensorType> out;
  out.push_back({x.dtype, reduction == Reduce::kNone ? t.shape : std::vector<int64_t>{}});
  out.push_back(x);
  out.resize(node.outputs().size());
  return out;
}

// The loss of log-probabilities `logp` [N, C, d...] against the node's target
// and weight (see the file comment).
Result<Value*> LossFromLogProb(Expander& b, const ir::Node& node, Value* logp) {
  const ir::DType dt = logp->type().dtype;
  const int64_t classes = logp->type().shape[1];
  Value* target = node.input(kTarget);
  const ir::DType tt = target->type().dtype;
  const int64_t rank = static_cast<int64_t>(target->type().shape.size());
  KEEL_ASSIGN_OR_RETURN(Reduce reduction, Reduction(node));

  // Ignored elements (a bool mask of target's shape), when ignore_index is set.
  Value* ignored = nullptr;
  if (node.attrs().Has("ignore_index")) {
    KEEL_ASSIGN_OR_RETURN(int64_t ii, node.attrs().GetInt("ignore_index", 0));
    KEEL_ASSIGN_OR_RETURN(ignored, b.Op("Equal", {target, b.Scalar(static_cast<double>(ii), tt)}));
  }
  // Class indices clamped into [0, C): ignore_index may lie outside.
  KEEL_ASSIGN_OR_RETURN(Value* cls, b.Op("Max", {target, b.Scalar(0, tt)}));
  KEEL_ASSIGN_OR_RETURN(cls, b.Op("Min", {cls, b.Scalar(static_cast<double>(classes - 1), tt)}));

  // -logp[n, cls, d...]: GatherElements along the class axis of [N, 1, d...].
  KEEL_ASSIGN_OR_RETURN(Value* index, b.Op("Unsqueeze", {cls}, {{"axes", std::vector<int64_t>{1}}}));
  KEEL_ASSIGN_OR_RETURN(Value* picked, b.Op("GatherElements", {logp, index}, {{"axis", int64_t{1}}}));
  KEEL_ASSIGN_OR_RETURN(picked, b.Op("Squeeze", {picked}, {{"axes", std::vector<int64_t>{1}}}));
  KEEL_ASSIGN_OR_RETURN(Value* loss, b.Op("Neg", {picked}));

  // Per-element weights: weight[cls], 0 where ignored; without weights only
  // the mean of an ignore_index loss needs them (the count of kept elements).
  Value* w = nullptr;
  if (HasInput(node, kWeight)) {
    KEEL_ASSIGN_OR_RETURN(w, b.Op("Gather", {node.input(kWeight), cls}, {{"axis", int64_t{0}}}));
    if (ignored) {
      KEEL_ASSIGN_OR_RETURN(w, b.Op("Where", {ignored, b.Scalar(0, dt), w}));
    }
    KEEL_ASSIGN_OR_RETURN(loss, b.Op("Mul", {loss, w}));
  } else if (ignored && reduction == Reduce::kMean) {
    KEEL_ASSIGN_OR_RETURN(w, b.Op("Where", {ignored, b.Scalar(0, dt), b.Scalar(1, dt)}));
  }
  if (ignored) {
    // Exactly 0, as the reference sets it: -x * 0 would be NaN for x = -inf.
    KEEL_ASSIGN_OR_RETURN(loss, b.Op("Where", {ignored, b.Scalar(0, dt), loss}));
  }
  if (reduction == Reduce::kNone) return loss;

  std::vector<int64_t> all(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) all[static_cast<size_t>(i)] = i;
  const AttrList sum_all{{"axes", all}, {"keepdims", int64_t{0}}};
  if (reduction == Reduce::kMean && !w) return b.Op("ReduceMean", {loss}, sum_all);
  KEEL_ASSIGN_OR_RETURN(Value* total, b.Op("ReduceSum", {loss}, sum_all));
  if (reduction == Reduce::kSum) return total;
  KEEL_ASSIGN_OR_RETURN(Value* denom, b.Op("ReduceSum", {w}, sum_all));
  return b.Op("Div", {total, denom});
}

Result<std::vector<Value*>> ExpandNll(Expander& b, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(Value* loss, LossFromLogProb(b, node, node.input(kX)));
  return std::vector<Value*>{loss};
}

Result<std::vector<Value*>> ExpandSce(Expander& b, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(Value* logp, b.Op("LogSoftmax", {node.input(kX)}, {{"axis", int64_t{1}}}));
  KEEL_ASSIGN_OR_RETURN(Value* loss, LossFromLogProb(b, node, logp));
  std::vector<Value*> outs{loss, logp};
  outs.resize(node.outputs().size());
  return outs;
}

}  // namespace

void RegisterLossOps(Registry& r) {
  {
    OpDef def;
    def.name = "NegativeLogLikelihoodLoss";
    def.versions = {12, 13, 22};
    def.removed_by = "shape-inference (expansion)";
    def.canonicalize = [](ir::Node& node) -> Status { return Reduction(node).status(); };
    def.infer = [](const ir::Node& node) { return InferLoss(node, 1); };
    def.expand = ExpandNll;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "SoftmaxCrossEntropyLoss";
    def.versions = {12, 13};
    def.removed_by = "shape-inference (expansion)";
    def.canonicalize = [](ir::Node& node) -> Status { return Reduction(node).status(); };
    def.infer = [](const ir::Node& node) { return InferLoss(node, 2); };
    def.expand = ExpandSce;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
