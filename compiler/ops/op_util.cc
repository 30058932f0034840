// compiler/ops/op_util.cc — see op_util.h.
#include "compiler/ops/op_util.h"

#include <algorithm>
#include <iterator>

#include "compiler/ops/reference.h"

namespace keel::ops {

Status NodeError(const ir::Node& node, const std::string& message) {
  return InvalidArgument(NodeDescription(node) + ": " + message);
}

Status NodeUnsupported(const ir::Node& node, const std::string& message) {
  return Unsupported(NodeDescription(node) + ": " + message);
}

Status NeedsConstant(const ir::Node& node, size_t index, const std::string& what) {
  const ir::Value* v = node.input(index);
  std::string name = v ? v->name() : std::string("?");
  return Unsupported(NodeDescription(node) + ": input " + std::to_string(index) + " ('" + name +
                     "') must be a compile-time constant (" + what +
                     "; Keel compiles static shapes: pass a constant, or freeze a graph input with --freeze-input)");
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool HasInput(const ir::Node& node, size_t index) { return node.input(index) != nullptr; }

const ir::TensorType& InputType(const ir::Node& node, size_t index) { return node.input(index)->type(); }

Status CheckArity(const ir::Node& node, size_t min_inputs, size_t max_inputs) {
  for (size_t i = 0; i < min_inputs; ++i) {
    if (!HasInput(node, i)) {
      return NodeError(node, "expects at least " + std::to_string(min_inputs) + " inputs, input " + std::to_string(i) +
                                 " is missing");
    }
  }
  if (node.inputs().size() > max_inputs) {
    return NodeError(node, "expects at most " + std::to_string(max_inputs) + " inputs, has " +
                               std::to_string(node.inputs().size()));
  }
  return Status::Ok();
}

Status CheckOutputs(const ir::Node& node, size_t n, const std::string& what_is_missing) {
  if (node.outputs().size() <= n) return Status::Ok();
  return NodeUnsupported(node, "output " + std::to_string(n) + " ('" + node.output(n)->name() + "') is not supported (" +
                                   what_is_missing + ")");
}

Result<std::vector<int64_t>> ReadInts(const ir::TensorData& t) {
  const int64_t n = t.type.NumElements();
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) {
    switch (t.type.dtype) {
      case ir::DType::kI64: out.push_back(t.data<int64_t>()[i]); break;
      case ir::DType::kI32: out.push_back(t.data<int32_t>()[i]); break;
      case ir::DType::kI16: out.push_back(t.data<int16_t>()[i]); break;
      case ir::DType::kI8: out.push_back(t.data<int8_t>()[i]); break;
      case ir::DType::kU8: out.push_back(t.data<uint8_t>()[i]); break;
      case ir::DType::kU16: out.push_back(t.data<uint16_t>()[i]); break;
      case ir::DType::kU32: out.push_back(t.data<uint32_t>()[i]); break;
      case ir::DType::kU64: out.push_back(static_cast<int64_t>(t.data<uint64_t>()[i])); break;
      default:
        return InvalidArgument(std::string("expected an integer tensor, got ") + ir::DTypeName(t.type.dtype));
    }
  }
  return out;
}

Result<double> ReadScalar(const ir::TensorData& t) {
  if (t.type.NumElements() != 1) return InvalidArgument("expected one value, got " + t.type.ToString());
  switch (t.type.dtype) {
    case ir::DType::kF32: return static_cast<double>(t.data<float>()[0]);
    case ir::DType::kF64: return t.data<double>()[0];
    default: {
      auto ints = ReadInts(t);
      if (!ints.ok()) return InvalidArgument(std::string("expected a number, got ") + ir::DTypeName(t.type.dtype));
      return static_cast<double>((*ints)[0]);
    }
  }
}

const ir::TensorData* ConstantInput(const ir::Node& node, size_t index) {
  const ir::Value* v = node.input(index);
  return v && v->is_constant() ? v->constant().get() : nullptr;
}

ir::Value* AddF32Constant(ir::Graph& g, const std::string& name, std::vector<int64_t> shape,
                          const std::vector<double>& values) {
  std::vector<float> f(values.begin(), values.end());
  return g.AddConstant(name, MakeTensorF32(std::move(shape), f));
}

void TrimTrailingNulls(ir::Node& node) {
  std::vector<ir::Value*> in = node.inputs();
  size_t n = in.size();
  while (n > 1 && in[n - 1] == nullptr) --n;
  if (n != in.size()) {
    in.resize(n);
    node.SetInputs(in);
  }
}

Status LiftIntsInput(ir::Node& node, size_t index, const std::string& attr) {
  const ir::TensorData* data = ConstantInput(node, index);
  if (!data) return Status::Ok();
  auto ints = ReadInts(*data);
  if (!ints.ok()) return NodeError(node, "input " + std::to_string(index) + ": " + ints.status().message());
  node.attrs().Set(attr, *ints);
  node.SetInput(index, nullptr);
  TrimTrailingNulls(node);
  return Status::Ok();
}

Status LiftScalarInput(ir::Node& node, size_t index, const std::string& attr) {
  const ir::TensorData* data = ConstantInput(node, index);
  if (!data) return Status::Ok();
  auto v = ReadScalar(*data);
  if (!v.ok()) return NodeError(node, "input " + std::to_string(index) + ": " + v.status().message());
  node.attrs().Set(attr, *v);
  node.SetInput(index, nullptr);
  TrimTrailingNulls(node);
  return Status::Ok();
}

Result<int64_t> NormalizeAxis(const ir::Node& node, int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank) {
    return NodeError(node, what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

Status CanonicalizeAxisAttr(ir::Node& node, const std::string& attr, int64_t def, int64_t rank) {
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt(attr, def));
  KEEL_ASSIGN_OR_RETURN(axis, NormalizeAxis(node, axis, rank, attr));
  node.attrs().Set(attr, axis);
  return Status::Ok();
}

Status CanonicalizeAxesAttr(ir::Node& node, const std::string& attr, int64_t rank, bool sort) {
  if (!node.attrs().Has(attr)) return Status::Ok();
  KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, node.attrs().GetInts(attr, {}));
  for (int64_t& a : axes) {
    KEEL_ASSIGN_OR_RETURN(a, NormalizeAxis(node, a, rank, "axis"));
  }
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return NodeError(node, attr + " " + ShapeString(axes) + " repeats an axis");
  }
  node.attrs().Set(attr, sort ? sorted : axes);
  return Status::Ok();
}

Result<ir::DType> DTypeFromOnnx(int64_t code) {
  // TensorProto.DataType numbering (onnx.proto).
  switch (code) {
    case 1: return ir::DType::kF32;
    case 2: return ir::DType::kU8;
    case 3: return ir::DType::kI8;
    case 4: return ir::DType::kU16;
    case 5: return ir::DType::kI16;
    case 6: return ir::DType::kI32;
    case 7: return ir::DType::kI64;
    case 9: return ir::DType::kBool;
    case 10: return ir::DType::kF16;
    case 11: return ir::DType::kF64;
    case 12: return ir::DType::kU32;
    case 13: return ir::DType::kU64;
    case 16: return ir::DType::kBF16;
    default: break;
  }
  static const char* kNames[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64",
                                 "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64",
                                 "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                 "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2"};
  const std::string name = code >= 0 && code < static_cast<int64_t>(std::size(kNames)) ? kNames[code] : "unknown";
  return Unsupported("ONNX data type " + std::to_string(code) + " (" + name + ") is not supported");
}

Result<ir::DType> DTypeFromName(const std::string& name) {
  for (unsigned v = 0; v <= keel::kMaxDataTypeValue; ++v) {
    if (!keel::IsValidDataType(static_cast<uint8_t>(v))) continue;
    const auto d = static_cast<ir::DType>(v);
    if (name == ir::DTypeName(d)) return d;
  }
  return InvalidArgument("unknown dtype '" + name + "'");
}

Result<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) {
      return InvalidArgument("shapes " + ShapeString(a) + " and " + ShapeString(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Result<int64_t> CheckedElements(const ir::Node& node, const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return NodeError(node, "negative dimension in " + ShapeString(shape));
    if (d != 0 && n > kMaxElements / d) {
      return NodeError(node, "shape " + ShapeString(shape) + " has more than 2^40 elements");
    }
    n *= d;
  }
  return n;
}

Status CheckShape(const ir::Node& node, const std::vector<int64_t>& shape, const std::string& what) {
  for (int64_t d : shape) {
    if (d < 0) return NodeError(node, what + " " + ShapeString(shape) + " has a negative dimension");
  }
  auto n = CheckedElements(node, shape);
  if (!n.ok()) return NodeError(node, what + " " + ShapeString(shape) + " has more than 2^40 elements");
  return Status::Ok();
}

OpDef InjectiveOp(const std::string& name, std::vector<int> versions) {
  OpDef def;
  def.name = name;
  def.versions = std::move(versions);
  def.fusion = FusionClass::kInjective;
  return def;
}

}  // namespace keel::ops
