// compiler/ops/shape_ops.cc — ops that only change or report shapes: Reshape,
// Flatten, Squeeze, Unsqueeze (all become the view keel.Reshape in simplify),
// keel.Reshape itself, Shape and Size (folded: their values depend only on
// types), Dropout (inference: the identity, removed by simplify) and the
// keel.Fused group node.
//
// Reshape-like ops keep an index-function lowering (a row-major re-indexing)
// for the rare case where one must be computed inside a kernel.
#include <algorithm>

#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/semantics.h"

namespace keel::ops {
namespace {

using codegen::Expr;

// Row-major re-indexing from `out_shape` to the input's shape. When the shapes
// agree after dropping 1-sized dims, indices map one to one (no div/mod).
Status DefineReshape(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const codegen::TensorFn* in, ctx.Input(node, 0));
  const std::vector<int64_t> in_shape = in->type.shape;
  const std::vector<int64_t> out_shape = node.output(0)->type().shape;
  if (codegen::NumElements(in_shape) != codegen::NumElements(out_shape)) {
    return NodeError(node, "element count changes from " + ShapeString(in_shape) + " to " + ShapeString(out_shape));
  }
  std::vector<size_t> in_nz, out_nz;
  for (size_t i = 0; i < in_shape.size(); ++i) if (in_shape[i] != 1) in_nz.push_back(i);
  for (size_t i = 0; i < out_shape.size(); ++i) if (out_shape[i] != 1) out_nz.push_back(i);
  bool direct = in_nz.size() == out_nz.size();
  for (size_t i = 0; direct && i < in_nz.size(); ++i) direct = in_shape[in_nz[i]] == out_shape[out_nz[i]];
  codegen::TensorFn fn;
  fn.type = node.output(0)->type();
  if (direct) {
    fn.at = [in, in_nz, out_nz, n = in_shape.size()](const std::vector<Expr>& idx) {
      std::vector<Expr> r(n, Expr(0));
      for (size_t i = 0; i < in_nz.size(); ++i) r[in_nz[i]] = idx[out_nz[i]];
      return in->at(r);
    };
  } else {
    fn.at = [in, in_shape, out_shape](const std::vector<Expr>& idx) {
      return in->at(codegen::Delinearize(in_shape, codegen::Linearize(out_shape, idx)));
    };
  }
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// ONNX Reshape's target: 0 copies the input dim (unless allowzero), one -1 is inferred.
Result<std::vector<int64_t>> ReshapeTarget(const ir::Node& node, const std::vector<int64_t>& in,
                                           std::vector<int64_t> shape, bool allowzero) {
  KEEL_ASSIGN_OR_RETURN(int64_t total, CheckedElements(node, in));
  int64_t known = 1;
  int minus_one = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowzero) {
      if (i >= in.size()) return NodeError(node, "shape " + ShapeString(shape) + " has 0 at index " + std::to_string(i) + ", beyond the input's rank");
      shape[i] = in[i];
    }
    if (shape[i] == -1) {
      if (minus_one >= 0) return NodeError(node, "shape " + ShapeString(shape) + " has more than one -1");
      minus_one = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return NodeError(node, "shape " + ShapeString(shape) + " has a negative dimension");
    } else if (shape[i] != 0 && known > kMaxElements / shape[i]) {
      return NodeError(node, "shape " + ShapeString(shape) + " has more than 2^40 elements");
    } else {
      known *= shape[i];
    }
  }
  if (minus_one >= 0) {
    if (known == 0 || total % known != 0) {
      return NodeError(node, "cannot reshape " + ShapeString(in) + " to " + ShapeString(shape));
    }
    shape[static_cast<size_t>(minus_one)] = total / known;
  } else if (known != total) {
    return NodeError(node, "cannot reshape " + ShapeString(in) + " (" + std::to_string(total) + " elements) to " +
                               ShapeString(shape));
  }
  return shape;
}

// Common shape of the reshape-like ops' definitions.
OpDef ReshapeLike(const std::string& name, std::vector<int> versions) {
  OpDef def;
  def.name = name;
  def.versions = std::move(versions);
  def.fusion = FusionClass::kView;
  def.reshape_like = true;
  def.injective = DefineReshape;
  def.strided_view = [](const ir::Node& node, const StridedView& in) {
    return ReshapeView(in, node.output(0)->type().shape);
  };
  return def;
}

// Squeeze/Unsqueeze axes: an attribute before opset 13, an input since (lifted when constant).
Status LiftAxes(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "axes"));
  if (HasInput(node, 1)) return NeedsConstant(node, 1, "the axes decide the output shape");
  return Status::Ok();
}

// Shape's values as an index function: a select chain over the (constant) dims.
Status DefineShape(codegen::LowerContext& ctx, const ir::Node& node) {
  const std::vector<int64_t> shape = InputType(node, 0).shape;
  KEEL_ASSIGN_OR_RETURN(int64_t start, node.attrs().GetInt("start", 0));
  codegen::TensorFn fn;
  fn.type = node.output(0)->type();
  const int64_t n = fn.type.shape.empty() ? 0 : fn.type.shape[0];
  if (start < 0 || start + n > static_cast<int64_t>(shape.size())) return NodeError(node, "start/end out of range");
  fn.at = [shape, start, n](const std::vector<Expr>& idx) {
    Expr r = codegen::IntConst(0);
    for (int64_t i = n; i-- > 0;) r = codegen::Select(codegen::Binary(codegen::BinaryOp::kEq, idx[0], Expr(i)), codegen::IntConst(shape[static_cast<size_t>(start + i)]), r);
    return r;
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> SameAsInput(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, node.inputs().size()));
  return One(InputType(node, 0));
}

}  // namespace

void RegisterShapeOps(Registry& r) {
  {
    OpDef def = ReshapeLike("Reshape", {1, 5, 13, 14, 19, 21, 23, 24, 25});
    def.supported = {5, 13, 14, 19, 21, 23, 24, 25};
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 2));
      KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "shape"));
      if (HasInput(node, 1)) return NeedsConstant(node, 1, "the target shape");
      if (!node.attrs().Has("shape")) return NodeError(node, "missing the shape input");
      return Status::Ok();
    };
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_ASSIGN_OR_RETURN(auto shape, node.attrs().GetInts("shape", {}));
      KEEL_ASSIGN_OR_RETURN(int64_t allowzero, node.attrs().GetInt("allowzero", 0));
      const ir::TensorType& x = InputType(node, 0);
      KEEL_ASSIGN_OR_RETURN(auto out, ReshapeTarget(node, x.shape, shape, allowzero != 0));
      return One({x.dtype, out});
    };
    r.Add(std::move(def));
  }
  {
    OpDef def = ReshapeLike("keel.Reshape", {});
    def.domain = "keel";
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_ASSIGN_OR_RETURN(auto shape, node.attrs().GetInts("shape", {}));
      const ir::TensorType& x = InputType(node, 0);
      KEEL_ASSIGN_OR_RETURN(auto out, ReshapeTarget(node, x.shape, shape, true));
      return One({x.dtype, out});
    };
    r.Add(std::move(def));
  }
  {
    OpDef def = ReshapeLike("Flatten", {1, 9, 11, 13, 21, 23, 24, 25});
    def.canonicalize = [](ir::Node& node) -> Status {
      const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
      KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 1));
      if (axis < -rank || axis > rank) return NodeError(node, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
      node.attrs().Set("axis", axis < 0 ? axis + rank : axis);
      return Status::Ok();
    };
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
      const ir::TensorType& x = InputType(node, 0);
      KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 1));
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < static_cast<int64_t>(x.shape.size()); ++d) (d < axis ? outer : inner) *= x.shape[static_cast<size_t>(d)];
      return One({x.dtype, {outer, inner}});
    };
    r.Add(std::move(def));
  }
  {
    OpDef def = ReshapeLike("Squeeze", {1, 11, 13, 21, 23, 24, 25});
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_RETURN_IF_ERROR(LiftAxes(node));
      const ir::TensorType& x = InputType(node, 0);
      const int64_t rank = static_cast<int64_t>(x.shape.size());
      if (!node.attrs().Has("axes")) {
        std::vector<int64_t> axes;
        for (int64_t i = 0; i < rank; ++i) if (x.shape[static_cast<size_t>(i)] == 1) axes.push_back(i);
        node.attrs().Set("axes", axes);
      }
      return CanonicalizeAxesAttr(node, "axes", rank, true);
    };
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
      KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", {}));
      const ir::TensorType& x = InputType(node, 0);
      std::vector<int64_t> out;
      for (int64_t d = 0; d < static_cast<int64_t>(x.shape.size()); ++d) {
        const bool squeezed = std::find(axes.begin(), axes.end(), d) != axes.end();
        if (squeezed && x.shape[static_cast<size_t>(d)] != 1) {
          return NodeError(node, "cannot squeeze axis " + std::to_string(d) + " of " + x.ToString());
        }
        if (!squeezed) out.push_back(x.shape[static_cast<size_t>(d)]);
      }
      return One({x.dtype, out});
    };
    r.Add(std::move(def));
  }
  {
    OpDef def = ReshapeLike("Unsqueeze", {1, 11, 13, 21, 23, 24, 25});
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_RETURN_IF_ERROR(LiftAxes(node));
      if (!node.attrs().Has("axes")) return NodeError(node, "axes are required");
      KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", {}));
      const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
      return CanonicalizeAxesAttr(node, "axes", rank + static_cast<int64_t>(axes.size()), true);
    };
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
      KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", {}));
      const ir::TensorType& x = InputType(node, 0);
      const int64_t out_rank = static_cast<int64_t>(x.shape.size() + axes.size());
      std::vector<int64_t> out;
      size_t src = 0;
      for (int64_t d = 0; d < out_rank; ++d) {
        if (std::find(axes.begin(), axes.end(), d) != axes.end()) {
          out.push_back(1);
        } else {
          if (src >= x.shape.size()) return NodeError(node, "axes " + ShapeString(axes) + " are out of range");
          out.push_back(x.shape[src++]);
        }
      }
      return One({x.dtype, out});
    };
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "Shape";
    def.versions = {1, 13, 15, 19, 21, 23, 24, 25};
    def.value_independent = true;
    // Folded wherever it is used; a kernel (writing the constant dims) only
    // when the shape itself is a graph output.
    def.fusion = FusionClass::kInjective;
    def.injective = DefineShape;
    def.canonicalize = [](ir::Node& node) -> Status {
      // start/end clamp to [0, rank] (negative values count from the end).
      const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
      KEEL_ASSIGN_OR_RETURN(int64_t start, node.attrs().GetInt("start", 0));
      KEEL_ASSIGN_OR_RETURN(int64_t end, node.attrs().GetInt("end", rank));
      if (start < 0) start += rank;
      if (end < 0) end += rank;
      start = std::clamp<int64_t>(start, 0, rank);
      end = std::clamp<int64_t>(end, start, rank);
      node.attrs().Set("start", start);
      node.attrs().Set("end", end);
      return Status::Ok();
    };
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
      KEEL_ASSIGN_OR_RETURN(int64_t start, node.attrs().GetInt("start", 0));
      KEEL_ASSIGN_OR_RETURN(int64_t end, node.attrs().GetInt("end", static_cast<int64_t>(InputType(node, 0).shape.size())));
      return One({ir::DType::kI64, {std::max<int64_t>(0, end - start)}});
    };
    def.evaluate = [](const ir::Node& node, const std::vector<ir::TensorDataPtr>&,
                      const std::vector<ir::TensorType>& out) -> Result<std::vector<ir::TensorDataPtr>> {
      const auto& shape = InputType(node, 0).shape;
      KEEL_ASSIGN_OR_RETURN(int64_t start, node.attrs().GetInt("start", 0));
      std::vector<int64_t> dims(shape.begin() + start, shape.begin() + start + out[0].shape[0]);
      return std::vector<ir::TensorDataPtr>{MakeTensorI64({static_cast<int64_t>(dims.size())}, dims)};
    };
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "Size";
    def.versions = {1, 13, 19, 21, 23, 24, 25};
    def.value_independent = true;
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
      return One({ir::DType::kI64, {}});
    };
    def.evaluate = [](const ir::Node& node, const std::vector<ir::TensorDataPtr>&,
                      const std::vector<ir::TensorType>&) -> Result<std::vector<ir::TensorDataPtr>> {
      return std::vector<ir::TensorDataPtr>{MakeTensorI64({}, {InputType(node, 0).NumElements()})};
    };
    r.Add(std::move(def));
  }
  {
    // Inference: the identity. A constant-true training_mode is refused; the
    // mask output is not produced.
    OpDef def;
    def.name = "Dropout";
    def.versions = {1, 6, 7, 10, 12, 13, 22};
    def.identity_like = true;
    def.removed_by = "simplify";
    def.canonicalize = [](ir::Node& node) -> Status {
      if (HasInput(node, 2)) {
        const ir::TensorData* mode = ConstantInput(node, 2);
        if (!mode) return NeedsConstant(node, 2, "training_mode");
        // Training with ratio 0 drops nothing: still the identity.
        if (ElementAsInt(*mode, 0) != 0 && HasInput(node, 1) && !ConstantInput(node, 1)) {
          return NeedsConstant(node, 1, "in training mode, the ratio decides whether anything is dropped");
        }
        const ir::TensorData* ratio = HasInput(node, 1) ? ConstantInput(node, 1) : nullptr;
        const bool drops = !ratio || ElementAsDouble(*ratio, 0) != 0.0;  // the default ratio is 0.5
        if (ElementAsInt(*mode, 0) != 0 && drops) {
          return NodeUnsupported(node, "training_mode=true with a non-zero ratio (random; Keel runs inference)");
        }
      }
      return Status::Ok();
    };
    // Inference: output 0 is the input; the optional mask (output 1) is all true.
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, SameAsInput(node));
      if (node.outputs().size() > 1) types.push_back({ir::DType::kBool, InputType(node, 0).shape});
      return types;
    };
    def.evaluate = [](const ir::Node&, const std::vector<ir::TensorDataPtr>& in,
                      const std::vector<ir::TensorType>& out_types) -> Result<std::vector<ir::TensorDataPtr>> {
      std::vector<ir::TensorDataPtr> outs{in[0]};
      if (out_types.size() > 1) {
        std::shared_ptr<ir::TensorData> mask = NewTensor(out_types[1]);
        for (int64_t i = 0; i < out_types[1].NumElements(); ++i) StoreInt(*mask, i, 1);
        outs.push_back(mask);
      }
      return outs;
    };
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "keel.Fused";
    def.domain = "keel";
    def.fusion = FusionClass::kNone;  // lowered as a group by compiler/codegen/lower.cc
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      if (!node.body()) return NodeError(node, "fused node without a body");
      std::vector<ir::TensorType> out;
      for (const ir::Value* v : node.body()->outputs()) {
        if (!v->has_type()) return NodeError(node, "body output without a type");
        out.push_back(v->type());
      }
      return out;
    };
    def.evaluate = [](const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                      const std::vector<ir::TensorType>&) -> Result<std::vector<ir::TensorDataPtr>> {
      return EvaluateGraph(*node.body(), in);
    };
    r.Add(std::move(def));
  }
  {
    // Constant nodes become constant values at import (compiler/frontend);
    // registered for their versions.
    OpDef def;
    def.name = "Constant";
    def.versions = {1, 9, 11, 12, 13, 19, 21, 23, 24, 25};
    def.removed_by = "the importer";
    def.imported_as_constant = true;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
