// compiler/ir/type_inference.cc — canonicalization and output-type rules for every
// supported op (see type_inference.h; normalized forms in frontend/op_schemas.h).
#include "compiler/ir/type_inference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

namespace keel::ir {

std::string NodeDescription(const Node& node) { return node.op_type() + " '" + node.name() + "'"; }

namespace {

std::string ShapeStr(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) { if (i) r += ","; r += std::to_string(s[i]); }
  return r + "]";
}

Status NodeError(const Node& n, const std::string& msg) { return InvalidArgument(NodeDescription(n) + ": " + msg); }
Status NodeUnsupported(const Node& n, const std::string& msg) {
  return Unsupported(NodeDescription(n) + ": " + msg);
}

// Reads an integer tensor (i32/i64) into int64 values.
Result<std::vector<int64_t>> ReadInts(const TensorData& t) {
  std::vector<int64_t> out;
  int64_t n = t.type.NumElements();
  if (t.type.dtype == DType::kI64) {
    for (int64_t i = 0; i < n; ++i) out.push_back(t.data<int64_t>()[i]);
  } else if (t.type.dtype == DType::kI32) {
    for (int64_t i = 0; i < n; ++i) out.push_back(t.data<int32_t>()[i]);
  } else {
    return InvalidArgument(std::string("expected an integer tensor, got ") + DTypeName(t.type.dtype));
  }
  return out;
}

Result<double> ReadScalarFloat(const TensorData& t) {
  if (t.type.NumElements() != 1) return InvalidArgument("expected a scalar");
  switch (t.type.dtype) {
    case DType::kF32: return static_cast<double>(t.data<float>()[0]);
    case DType::kF64: return t.data<double>()[0];
    case DType::kI64: return static_cast<double>(t.data<int64_t>()[0]);
    case DType::kI32: return static_cast<double>(t.data<int32_t>()[0]);
    default: return InvalidArgument("unsupported scalar dtype");
  }
}

Result<int64_t> NormAxis(const Node& n, int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    return NodeError(n, std::string(what) + " " + std::to_string(axis) + " out of range for rank " +
                            std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// Lifts constant input `index` (integers) into attribute `attr` and drops it
// from the inputs (inputs after it keep their positions by becoming nullptr
// when they are not the last).
Status LiftIntsInput(Node& node, size_t index, const std::string& attr) {
  Value* v = node.input(index);
  if (v == nullptr || !v->is_constant()) return Status::Ok();
  KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> ints, ReadInts(*v->constant()));
  node.attrs().Set(attr, ints);
  node.SetInput(index, nullptr);
  return Status::Ok();
}

void TrimTrailingNulls(Node& node) {
  std::vector<Value*> in = node.inputs();
  size_t n = in.size();
  while (n > 1 && in[n - 1] == nullptr) --n;
  if (n != in.size()) {
    in.resize(n);
    node.SetInputs(in);
  }
}

Status CanonAxesAttr(Node& node, const std::string& attr, int64_t rank, bool sort) {
  if (!node.attrs().Has(attr)) return Status::Ok();
  KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, node.attrs().GetInts(attr, {}));
  for (int64_t& a : axes) {
    KEEL_ASSIGN_OR_RETURN(a, NormAxis(node, a, rank, "axis"));
  }
  if (sort) std::sort(axes.begin(), axes.end());
  node.attrs().Set(attr, axes);
  return Status::Ok();
}

Status CanonAxisAttr(Node& node, const std::string& attr, int64_t def, int64_t rank) {
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt(attr, def));
  KEEL_ASSIGN_OR_RETURN(axis, NormAxis(node, axis, rank, attr.c_str()));
  node.attrs().Set(attr, axis);
  return Status::Ok();
}

Status CanonWindowAttrs(Node& node, int64_t spatial, bool has_dilations) {
  Attributes& a = node.attrs();
  KEEL_ASSIGN_OR_RETURN(std::string auto_pad, a.GetString("auto_pad", "NOTSET"));
  if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    return NodeUnsupported(node, "auto_pad=" + auto_pad + " is not supported (only NOTSET and VALID)");
  }
  if (auto_pad == "VALID") a.Set("pads", std::vector<int64_t>(static_cast<size_t>(2 * spatial), 0));
  a.Set("auto_pad", std::string("NOTSET"));
  KEEL_ASSIGN_OR_RETURN(auto strides, a.GetInts("strides", std::vector<int64_t>(static_cast<size_t>(spatial), 1)));
  KEEL_ASSIGN_OR_RETURN(auto pads, a.GetInts("pads", std::vector<int64_t>(static_cast<size_t>(2 * spatial), 0)));
  if (static_cast<int64_t>(strides.size()) != spatial || static_cast<int64_t>(pads.size()) != 2 * spatial) {
    return NodeError(node, "strides/pads do not match " + std::to_string(spatial) + " spatial dims");
  }
  a.Set("strides", strides);
  a.Set("pads", pads);
  if (has_dilations) {
    KEEL_ASSIGN_OR_RETURN(auto dil, a.GetInts("dilations", std::vector<int64_t>(static_cast<size_t>(spatial), 1)));
    if (static_cast<int64_t>(dil.size()) != spatial) return NodeError(node, "dilations do not match spatial dims");
    a.Set("dilations", dil);
  }
  return Status::Ok();
}

const TensorType* InType(const Node& node, size_t i) {
  Value* v = node.input(i);
  return v && v->has_type() ? &v->type() : nullptr;
}

}  // namespace

bool IsElementwiseBinary(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow";
}

bool IsElementwiseUnary(const std::string& op) {
  return op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "Erf" || op == "Sqrt" || op == "Clip" ||
         op == "Cast" || op == "Identity" || op == "Neg" || op == "Exp" || op == "Dropout";
}

Result<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) {
      return InvalidArgument("shapes " + ShapeStr(a) + " and " + ShapeStr(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Status CanonicalizeNode(Node& node) {
  const std::string& op = node.op_type();
  Attributes& a = node.attrs();
  const TensorType* x = InType(node, 0);
  const int64_t rank = x ? static_cast<int64_t>(x->shape.size()) : 0;
  if (op == "Conv") {
    const TensorType* w = InType(node, 1);
    if (!x || !w) return Status::Ok();
    if (w->shape.size() < 3) return NodeError(node, "weight must have rank >= 3, got " + w->ToString());
    int64_t spatial = static_cast<int64_t>(w->shape.size()) - 2;
    if (!a.Has("kernel_shape")) a.Set("kernel_shape", std::vector<int64_t>(w->shape.begin() + 2, w->shape.end()));
    KEEL_RETURN_IF_ERROR(CanonWindowAttrs(node, spatial, true));
    KEEL_ASSIGN_OR_RETURN(int64_t group, a.GetInt("group", 1));
    a.Set("group", group);
  } else if (op == "MaxPool" || op == "AveragePool") {
    if (!x) return Status::Ok();
    if (!a.Has("kernel_shape")) return NodeError(node, "kernel_shape is required");
    KEEL_RETURN_IF_ERROR(CanonWindowAttrs(node, rank - 2, op == "MaxPool"));
    KEEL_ASSIGN_OR_RETURN(int64_t ceil_mode, a.GetInt("ceil_mode", 0));
    a.Set("ceil_mode", ceil_mode);
    if (op == "AveragePool") {
      KEEL_ASSIGN_OR_RETURN(int64_t cip, a.GetInt("count_include_pad", 0));
      a.Set("count_include_pad", cip);
    } else {
      KEEL_ASSIGN_OR_RETURN(int64_t so, a.GetInt("storage_order", 0));
      if (so != 0) return NodeUnsupported(node, "storage_order=1 is not supported");
    }
  } else if (op == "Gemm") {
    KEEL_ASSIGN_OR_RETURN(double alpha, a.GetFloat("alpha", 1.0));
    KEEL_ASSIGN_OR_RETURN(double beta, a.GetFloat("beta", 1.0));
    KEEL_ASSIGN_OR_RETURN(int64_t ta, a.GetInt("transA", 0));
    KEEL_ASSIGN_OR_RETURN(int64_t tb, a.GetInt("transB", 0));
    a.Set("alpha", alpha);
    a.Set("beta", beta);
    a.Set("transA", ta);
    a.Set("transB", tb);
  } else if (op == "Softmax") {
    if (!x) return Status::Ok();
    KEEL_ASSIGN_OR_RETURN(int64_t legacy, a.GetInt("keel.legacy_flatten", 0));
    // Opset < 13 Softmax defaults to axis 1 (and flattens from there on).
    KEEL_RETURN_IF_ERROR(CanonAxisAttr(node, "axis", legacy ? 1 : -1, rank));
    if (legacy && *a.GetInt("axis", 0) != rank - 1) {
      return NodeUnsupported(node, "opset < 13 Softmax over several trailing axes is not supported");
    }
    a.Erase("keel.legacy_flatten");
  } else if (op == "LayerNormalization") {
    if (!x) return Status::Ok();
    KEEL_RETURN_IF_ERROR(CanonAxisAttr(node, "axis", -1, rank));
    KEEL_ASSIGN_OR_RETURN(double eps, a.GetFloat("epsilon", 1e-5));
    a.Set("epsilon", eps);
  } else if (op == "BatchNormalization") {
    KEEL_ASSIGN_OR_RETURN(double eps, a.GetFloat("epsilon", 1e-5));
    a.Set("epsilon", eps);
  } else if (op == "Concat" || op == "Gather") {
    if (!x) return Status::Ok();
    KEEL_RETURN_IF_ERROR(CanonAxisAttr(node, "axis", 0, rank));
  } else if (op == "Flatten") {
    if (!x) return Status::Ok();
    KEEL_ASSIGN_OR_RETURN(int64_t axis, a.GetInt("axis", 1));
    if (axis < -rank || axis > rank) return NodeError(node, "axis out of range");
    a.Set("axis", axis < 0 ? axis + rank : axis);
  } else if (op == "Reshape") {
    KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "shape"));
    TrimTrailingNulls(node);
  } else if (op == "Transpose") {
    if (!x) return Status::Ok();
    if (!a.Has("perm")) {
      std::vector<int64_t> perm(static_cast<size_t>(rank));
      for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = rank - 1 - i;
      a.Set("perm", perm);
    }
    KEEL_RETURN_IF_ERROR(CanonAxesAttr(node, "perm", rank, false));
  } else if (op == "Slice") {
    KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "starts"));
    KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 2, "ends"));
    KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 3, "axes"));
    KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 4, "steps"));
    TrimTrailingNulls(node);
    if (!x || node.inputs().size() > 1) return Status::Ok();
    if (!a.Has("starts") || !a.Has("ends")) return NodeError(node, "starts and ends are required");
    KEEL_ASSIGN_OR_RETURN(auto starts, a.GetInts("starts", {}));
    KEEL_ASSIGN_OR_RETURN(auto ends, a.GetInts("ends", {}));
    std::vector<int64_t> def_axes(starts.size());
    for (size_t i = 0; i < def_axes.size(); ++i) def_axes[i] = static_cast<int64_t>(i);
    KEEL_ASSIGN_OR_RETURN(auto axes, a.GetInts("axes", def_axes));
    KEEL_ASSIGN_OR_RETURN(auto steps, a.GetInts("steps", std::vector<int64_t>(starts.size(), 1)));
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
      return NodeError(node, "starts/ends/axes/steps have different lengths");
    }
    // Clamp to the ONNX-defined effective range so that the attributes are final.
    for (size_t i = 0; i < starts.size(); ++i) {
      KEEL_ASSIGN_OR_RETURN(axes[i], NormAxis(node, axes[i], rank, "axis"));
      int64_t dim = x->shape[static_cast<size_t>(axes[i])];
      if (steps[i] == 0) return NodeError(node, "step 0");
      int64_t s = starts[i], e = ends[i];
      if (s < 0) s += dim;
      if (e < 0) e += dim;
      if (steps[i] > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
      } else {
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
      }
      starts[i] = s;
      ends[i] = e;
    }
    a.Set("starts", starts);
    a.Set("ends", ends);
    a.Set("axes", axes);
    a.Set("steps", steps);
  } else if (op == "Unsqueeze") {
    KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "axes"));
    TrimTrailingNulls(node);
    if (!x || node.inputs().size() > 1) return Status::Ok();
    KEEL_ASSIGN_OR_RETURN(auto axes, a.GetInts("axes", {}));
    KEEL_RETURN_IF_ERROR(CanonAxesAttr(node, "axes", rank + static_cast<int64_t>(axes.size()), true));
  } else if (op == "Squeeze") {
    KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "axes"));
    TrimTrailingNulls(node);
    if (!x || node.inputs().size() > 1) return Status::Ok();
    if (!a.Has("axes")) {
      std::vector<int64_t> axes;
      for (int64_t i = 0; i < rank; ++i) {
        if (x->shape[static_cast<size_t>(i)] == 1) axes.push_back(i);
      }
      a.Set("axes", axes);
    }
    KEEL_RETURN_IF_ERROR(CanonAxesAttr(node, "axes", rank, true));
  } else if (op == "ReduceMean") {
    KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "axes"));
    TrimTrailingNulls(node);
    if (!x || node.inputs().size() > 1) return Status::Ok();
    if (!a.Has("axes")) {
      std::vector<int64_t> axes;
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
      a.Set("axes", axes);
    }
    KEEL_RETURN_IF_ERROR(CanonAxesAttr(node, "axes", rank, true));
    KEEL_ASSIGN_OR_RETURN(int64_t keep, a.GetInt("keepdims", 1));
    a.Set("keepdims", keep);
  } else if (op == "Clip") {
    for (size_t i = 1; i <= 2; ++i) {
      Value* v = node.input(i);
      if (v == nullptr || !v->is_constant()) continue;
      KEEL_ASSIGN_OR_RETURN(double bound, ReadScalarFloat(*v->constant()));
      a.Set(i == 1 ? "min" : "max", bound);
      node.SetInput(i, nullptr);
    }
    TrimTrailingNulls(node);
    if (node.inputs().size() > 1) return Status::Ok();
    KEEL_ASSIGN_OR_RETURN(double lo, a.GetFloat("min", -std::numeric_limits<double>::infinity()));
    KEEL_ASSIGN_OR_RETURN(double hi, a.GetFloat("max", std::numeric_limits<double>::infinity()));
    a.Set("min", lo);
    a.Set("max", hi);
  } else if (op == "Shape") {
    if (!x) return Status::Ok();
    KEEL_ASSIGN_OR_RETURN(int64_t start, a.GetInt("start", 0));
    KEEL_ASSIGN_OR_RETURN(int64_t end, a.GetInt("end", rank));
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    a.Set("start", std::clamp<int64_t>(start, 0, rank));
    a.Set("end", std::clamp<int64_t>(end, 0, rank));
  }
  return Status::Ok();
}

namespace {

Result<std::vector<TensorType>> One(TensorType t) { return std::vector<TensorType>{std::move(t)}; }

Result<std::vector<int64_t>> WindowOutput(const Node& node, const std::vector<int64_t>& in_spatial,
                                          const std::vector<int64_t>& kernel, bool ceil_mode) {
  const Attributes& a = node.attrs();
  size_t sp = in_spatial.size();
  KEEL_ASSIGN_OR_RETURN(auto strides, a.GetInts("strides", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(auto pads, a.GetInts("pads", std::vector<int64_t>(2 * sp, 0)));
  KEEL_ASSIGN_OR_RETURN(auto dil, a.GetInts("dilations", std::vector<int64_t>(sp, 1)));
  if (kernel.size() != sp || strides.size() != sp || pads.size() != 2 * sp || dil.size() != sp) {
    return NodeError(node, "kernel_shape/strides/pads/dilations do not match " + std::to_string(sp) +
                               " spatial dims");
  }
  std::vector<int64_t> out(sp);
  for (size_t i = 0; i < sp; ++i) {
    if (strides[i] <= 0 || dil[i] <= 0 || kernel[i] <= 0) return NodeError(node, "non-positive window attribute");
    int64_t padded = in_spatial[i] + pads[i] + pads[i + sp];
    int64_t eff = (kernel[i] - 1) * dil[i] + 1;
    if (padded < eff) return NodeError(node, "window larger than the padded input");
    int64_t num = padded - eff;
    int64_t o = ceil_mode ? (num + strides[i] - 1) / strides[i] + 1 : num / strides[i] + 1;
    // A window must start inside the input or its begin padding.
    if (ceil_mode && (o - 1) * strides[i] >= in_spatial[i] + pads[i]) --o;
    out[i] = o;
  }
  return out;
}

Result<std::vector<int64_t>> ReshapeTarget(const Node& node, const std::vector<int64_t>& in,
                                           std::vector<int64_t> shape, bool allowzero) {
  int64_t total = 1;
  for (int64_t d : in) total *= d;
  int64_t known = 1;
  int minus_one = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowzero) {
      if (i >= in.size()) return NodeError(node, "shape has 0 at index beyond input rank");
      shape[i] = in[i];
    }
    if (shape[i] == -1) {
      if (minus_one >= 0) return NodeError(node, "shape has more than one -1");
      minus_one = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return NodeError(node, "negative dimension in shape " + ShapeStr(shape));
    } else {
      known *= shape[i];
    }
  }
  if (minus_one >= 0) {
    if (known == 0 || total % known != 0) {
      return NodeError(node, "cannot reshape " + ShapeStr(in) + " to " + ShapeStr(shape));
    }
    shape[static_cast<size_t>(minus_one)] = total / known;
  } else if (known != total) {
    return NodeError(node, "cannot reshape " + ShapeStr(in) + " (" + std::to_string(total) + " elements) to " +
                               ShapeStr(shape));
  }
  return shape;
}

}  // namespace

Result<std::vector<TensorType>> InferNodeTypes(const Node& node, const std::vector<TensorType>& in) {
  const std::string& op = node.op_type();
  const Attributes& a = node.attrs();
  auto need = [&](size_t n) -> Status {
    if (in.size() < n) {
      return NodeError(node, "expects at least " + std::to_string(n) + " inputs, has " + std::to_string(in.size()));
    }
    return Status::Ok();
  };
  auto need_lifted = [&](size_t max_inputs, const char* what) -> Status {
    if (node.inputs().size() > max_inputs) {
      return NodeUnsupported(node, std::string(what) + " must be a compile-time constant");
    }
    return Status::Ok();
  };
  if (op == "keel.Fused") {
    if (!node.body()) return NodeError(node, "fused node without a body");
    std::vector<TensorType> out;
    for (Value* v : node.body()->outputs()) {
      if (!v->has_type()) return NodeError(node, "body output without a type");
      out.push_back(v->type());
    }
    return out;
  }
  KEEL_RETURN_IF_ERROR(need(1));
  const TensorType& x = in[0];
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (IsElementwiseBinary(op)) {
    KEEL_RETURN_IF_ERROR(need(2));
    if (op != "Pow" && in[0].dtype != in[1].dtype) {
      return NodeError(node, std::string("input dtypes differ: ") + DTypeName(in[0].dtype) + " and " +
                                 DTypeName(in[1].dtype));
    }
    auto shape = BroadcastShapes(in[0].shape, in[1].shape);
    if (!shape.ok()) return NodeError(node, shape.status().message());
    return One({x.dtype, *shape});
  }
  if (op == "Cast") {
    KEEL_ASSIGN_OR_RETURN(std::string to, a.GetString("to", ""));
    for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI8, DType::kI16, DType::kI32,
                    DType::kI64, DType::kU8, DType::kBool}) {
      if (to == DTypeName(d)) return One({d, x.shape});
    }
    return NodeError(node, "unknown target dtype '" + to + "'");
  }
  if (op == "Clip") {
    KEEL_RETURN_IF_ERROR(need_lifted(1, "min/max"));
    return One(x);
  }
  if (IsElementwiseUnary(op) || op == "Softmax" || op == "LayerNormalization" || op == "BatchNormalization") {
    if (op == "LayerNormalization" || op == "BatchNormalization") {
      KEEL_RETURN_IF_ERROR(need(op == "LayerNormalization" ? 2 : 5));
      if (op == "BatchNormalization") {
        if (rank < 2) return NodeError(node, "input rank must be >= 2");
        for (size_t i = 1; i < 5; ++i) {
          if (in[i].NumElements() != x.shape[1]) {
            return NodeError(node, "parameter " + std::to_string(i) + " has " + std::to_string(in[i].NumElements()) +
                                       " elements, channels are " + std::to_string(x.shape[1]));
          }
        }
      }
    }
    return One(x);
  }
  if (op == "Conv") {
    KEEL_RETURN_IF_ERROR(need(2));
    const TensorType& w = in[1];
    if (rank < 3 || w.shape.size() != x.shape.size()) {
      return NodeError(node, "input " + x.ToString() + " and weight " + w.ToString() + " ranks do not match");
    }
    KEEL_ASSIGN_OR_RETURN(int64_t group, a.GetInt("group", 1));
    if (group <= 0 || x.shape[1] != w.shape[1] * group || w.shape[0] % group != 0) {
      return NodeError(node, "input channels " + std::to_string(x.shape[1]) + " do not match weight " +
                                 w.ToString() + " with group " + std::to_string(group));
    }
    if (in.size() > 2 && in[2].NumElements() != w.shape[0]) {
      return NodeError(node, "bias " + in[2].ToString() + " does not match " + std::to_string(w.shape[0]) +
                                 " output channels");
    }
    KEEL_ASSIGN_OR_RETURN(auto kernel, a.GetInts("kernel_shape",
                                                 std::vector<int64_t>(w.shape.begin() + 2, w.shape.end())));
    if (kernel != std::vector<int64_t>(w.shape.begin() + 2, w.shape.end())) {
      return NodeError(node, "kernel_shape does not match weight " + w.ToString());
    }
    KEEL_ASSIGN_OR_RETURN(auto sp, WindowOutput(node, {x.shape.begin() + 2, x.shape.end()}, kernel, false));
    std::vector<int64_t> out{x.shape[0], w.shape[0]};
    out.insert(out.end(), sp.begin(), sp.end());
    return One({x.dtype, out});
  }
  if (op == "MaxPool" || op == "AveragePool") {
    if (rank < 3) return NodeError(node, "input rank must be >= 3, got " + x.ToString());
    KEEL_ASSIGN_OR_RETURN(auto kernel, a.GetInts("kernel_shape", {}));
    KEEL_ASSIGN_OR_RETURN(int64_t ceil_mode, a.GetInt("ceil_mode", 0));
    KEEL_ASSIGN_OR_RETURN(auto sp, WindowOutput(node, {x.shape.begin() + 2, x.shape.end()}, kernel, ceil_mode != 0));
    std::vector<int64_t> out{x.shape[0], x.shape[1]};
    out.insert(out.end(), sp.begin(), sp.end());
    return One({x.dtype, out});
  }
  if (op == "GlobalAveragePool") {
    if (rank < 3) return NodeError(node, "input rank must be >= 3, got " + x.ToString());
    std::vector<int64_t> out(x.shape.size(), 1);
    out[0] = x.shape[0];
    out[1] = x.shape[1];
    return One({x.dtype, out});
  }
  if (op == "Gemm") {
    KEEL_RETURN_IF_ERROR(need(2));
    if (in[0].shape.size() != 2 || in[1].shape.size() != 2) {
      return NodeError(node, "inputs must be 2-D, got " + in[0].ToString() + " and " + in[1].ToString());
    }
    KEEL_ASSIGN_OR_RETURN(int64_t ta, a.GetInt("transA", 0));
    KEEL_ASSIGN_OR_RETURN(int64_t tb, a.GetInt("transB", 0));
    int64_t m = ta ? in[0].shape[1] : in[0].shape[0];
    int64_t k = ta ? in[0].shape[0] : in[0].shape[1];
    int64_t k2 = tb ? in[1].shape[1] : in[1].shape[0];
    int64_t n = tb ? in[1].shape[0] : in[1].shape[1];
    if (k != k2) {
      return NodeError(node, "inner dimensions differ: " + in[0].ToString() + " x " + in[1].ToString());
    }
    if (in.size() > 2) {
      auto b = BroadcastShapes(in[2].shape, {m, n});
      if (!b.ok() || *b != std::vector<int64_t>{m, n}) {
        return NodeError(node, "bias " + in[2].ToString() + " does not broadcast to [" + std::to_string(m) + "," +
                                   std::to_string(n) + "]");
      }
    }
    return One({x.dtype, {m, n}});
  }
  if (op == "MatMul") {
    KEEL_RETURN_IF_ERROR(need(2));
    std::vector<int64_t> sa = in[0].shape, sb = in[1].shape;
    if (sa.empty() || sb.empty()) return NodeError(node, "scalar operands are not allowed");
    bool va = sa.size() == 1, vb = sb.size() == 1;
    if (va) sa.insert(sa.begin(), 1);
    if (vb) sb.push_back(1);
    int64_t k = sa.back(), k2 = sb[sb.size() - 2];
    if (k != k2) {
      return NodeError(node, "inner dimensions differ: " + in[0].ToString() + " x " + in[1].ToString());
    }
    std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
    auto batch = BroadcastShapes(ba, bb);
    if (!batch.ok()) return NodeError(node, "batch dimensions: " + batch.status().message());
    std::vector<int64_t> out = *batch;
    if (!va) out.push_back(sa[sa.size() - 2]);
    if (!vb) out.push_back(sb.back());
    return One({x.dtype, out});
  }
  if (op == "Concat") {
    KEEL_ASSIGN_OR_RETURN(int64_t axis, a.GetInt("axis", 0));
    if (axis < 0 || axis >= rank) return NodeError(node, "axis out of range");
    std::vector<int64_t> out = x.shape;
    for (size_t i = 1; i < in.size(); ++i) {
      if (in[i].shape.size() != x.shape.size()) {
        return NodeError(node, "input " + std::to_string(i) + " has rank " + std::to_string(in[i].shape.size()) +
                                   ", input 0 has rank " + std::to_string(rank));
      }
      if (in[i].dtype != x.dtype) return NodeError(node, "input dtypes differ");
      for (int64_t d = 0; d < rank; ++d) {
        if (d != axis && in[i].shape[static_cast<size_t>(d)] != x.shape[static_cast<size_t>(d)]) {
          return NodeError(node, "input " + std::to_string(i) + " " + in[i].ToString() + " does not match " +
                                     x.ToString() + " outside axis " + std::to_string(axis));
        }
      }
      out[static_cast<size_t>(axis)] += in[i].shape[static_cast<size_t>(axis)];
    }
    return One({x.dtype, out});
  }
  if (op == "Flatten") {
    KEEL_ASSIGN_OR_RETURN(int64_t axis, a.GetInt("axis", 1));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= x.shape[static_cast<size_t>(d)];
    return One({x.dtype, {outer, inner}});
  }
  if (op == "Reshape" || op == "keel.Reshape") {
    KEEL_RETURN_IF_ERROR(need_lifted(1, "the shape input"));
    if (!a.Has("shape")) return NodeError(node, "missing shape");
    KEEL_ASSIGN_OR_RETURN(auto shape, a.GetInts("shape", {}));
    KEEL_ASSIGN_OR_RETURN(int64_t allowzero, a.GetInt("allowzero", 0));
    KEEL_ASSIGN_OR_RETURN(auto out, ReshapeTarget(node, x.shape, shape, allowzero != 0 || op == "keel.Reshape"));
    return One({x.dtype, out});
  }
  if (op == "Transpose") {
    KEEL_ASSIGN_OR_RETURN(auto perm, a.GetInts("perm", {}));
    if (static_cast<int64_t>(perm.size()) != rank) return NodeError(node, "perm length does not match rank");
    std::vector<int64_t> out(perm.size());
    std::vector<bool> seen(perm.size(), false);
    for (size_t i = 0; i < perm.size(); ++i) {
      if (perm[i] < 0 || perm[i] >= rank || seen[static_cast<size_t>(perm[i])]) {
        return NodeError(node, "perm is not a permutation");
      }
      seen[static_cast<size_t>(perm[i])] = true;
      out[i] = x.shape[static_cast<size_t>(perm[i])];
    }
    return One({x.dtype, out});
  }
  if (op == "Slice") {
    KEEL_RETURN_IF_ERROR(need_lifted(1, "starts/ends/axes/steps"));
    KEEL_ASSIGN_OR_RETURN(auto starts, a.GetInts("starts", {}));
    KEEL_ASSIGN_OR_RETURN(auto ends, a.GetInts("ends", {}));
    KEEL_ASSIGN_OR_RETURN(auto axes, a.GetInts("axes", {}));
    KEEL_ASSIGN_OR_RETURN(auto steps, a.GetInts("steps", {}));
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
      return NodeError(node, "not canonical (starts/ends/axes/steps)");
    }
    std::vector<int64_t> out = x.shape;
    for (size_t i = 0; i < starts.size(); ++i) {
      if (axes[i] < 0 || axes[i] >= rank || steps[i] == 0) return NodeError(node, "bad axis or step");
      int64_t len = steps[i] > 0 ? (ends[i] - starts[i] + steps[i] - 1) / steps[i]
                                 : (starts[i] - ends[i] - steps[i] - 1) / (-steps[i]);
      out[static_cast<size_t>(axes[i])] = std::max<int64_t>(0, len);
    }
    return One({x.dtype, out});
  }
  if (op == "Gather") {
    KEEL_RETURN_IF_ERROR(need(2));
    KEEL_ASSIGN_OR_RETURN(int64_t axis, a.GetInt("axis", 0));
    if (axis < 0 || axis >= rank) return NodeError(node, "axis out of range");
    if (in[1].dtype != DType::kI64 && in[1].dtype != DType::kI32) return NodeError(node, "indices must be i32/i64");
    std::vector<int64_t> out(x.shape.begin(), x.shape.begin() + axis);
    out.insert(out.end(), in[1].shape.begin(), in[1].shape.end());
    out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
    return One({x.dtype, out});
  }
  if (op == "Shape") {
    KEEL_ASSIGN_OR_RETURN(int64_t start, a.GetInt("start", 0));
    KEEL_ASSIGN_OR_RETURN(int64_t end, a.GetInt("end", rank));
    return One({DType::kI64, {std::max<int64_t>(0, end - start)}});
  }
  if (op == "Unsqueeze") {
    KEEL_RETURN_IF_ERROR(need_lifted(1, "axes"));
    KEEL_ASSIGN_OR_RETURN(auto axes, a.GetInts("axes", {}));
    int64_t out_rank = rank + static_cast<int64_t>(axes.size());
    std::vector<int64_t> out;
    size_t src = 0;
    for (int64_t d = 0; d < out_rank; ++d) {
      if (std::find(axes.begin(), axes.end(), d) != axes.end()) {
        out.push_back(1);
      } else {
        if (src >= x.shape.size()) return NodeError(node, "axes out of range");
        out.push_back(x.shape[src++]);
      }
    }
    if (src != x.shape.size()) return NodeError(node, "duplicate axes");
    return One({x.dtype, out});
  }
  if (op == "Squeeze") {
    KEEL_RETURN_IF_ERROR(need_lifted(1, "axes"));
    KEEL_ASSIGN_OR_RETURN(auto axes, a.GetInts("axes", {}));
    std::vector<int64_t> out;
    for (int64_t d = 0; d < rank; ++d) {
      bool squeezed = std::find(axes.begin(), axes.end(), d) != axes.end();
      if (squeezed && x.shape[static_cast<size_t>(d)] != 1) {
        return NodeError(node, "cannot squeeze axis " + std::to_string(d) + " of " + x.ToString());
      }
      if (!squeezed) out.push_back(x.shape[static_cast<size_t>(d)]);
    }
    return One({x.dtype, out});
  }
  if (op == "ReduceMean") {
    KEEL_RETURN_IF_ERROR(need_lifted(1, "axes"));
    KEEL_ASSIGN_OR_RETURN(auto axes, a.GetInts("axes", {}));
    KEEL_ASSIGN_OR_RETURN(int64_t keep, a.GetInt("keepdims", 1));
    std::vector<int64_t> out;
    for (int64_t d = 0; d < rank; ++d) {
      bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
      if (reduced && keep) out.push_back(1);
      if (!reduced) out.push_back(x.shape[static_cast<size_t>(d)]);
    }
    return One({x.dtype, out});
  }
  return NodeUnsupported(node, "no type rule for op " + op);
}

}  // namespace keel::ir
