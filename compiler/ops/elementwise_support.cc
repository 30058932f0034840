// compiler/ops/elementwise_support.cc — see elementwise_support.h.
#include "compiler/ops/elementwise_support.h"

#include <cmath>

#include "compiler/ops/op_util.h"

namespace keel::ops {

bool InClass(ir::DType d, unsigned classes) {
  if (IsFloatType(d)) return classes & kFloatTypes;
  if (IsSignedIntType(d)) return classes & kSignedTypes;
  if (IsUnsignedIntType(d)) return classes & kUnsignedTypes;
  if (IsBoolType(d)) return classes & kBoolType;
  return false;
}

std::string ClassText(unsigned c) {
  if (c == kAllTypes) return "any";
  if (c == kNumericTypes) return "numeric";
  if (c == kFloatTypes) return "floating-point";
  if (c == kIntTypes) return "integer";
  if (c == kBoolType) return "bool";
  if (c == (kFloatTypes | kSignedTypes)) return "floating-point or signed integer";
  if (c == kUnsignedTypes) return "unsigned integer";
  std::string s;
  for (auto [bit, name] : {std::pair{kFloatTypes, "float"}, {kSignedTypes, "signed"}, {kUnsignedTypes, "unsigned"},
                           {kBoolType, "bool"}}) {
    if (c & bit) s += (s.empty() ? "" : "/") + std::string(name);
  }
  return s;
}

Result<std::vector<int64_t>> BroadcastInputs(const ir::Node& node) {
  std::vector<int64_t> shape;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    if (!HasInput(node, i)) continue;
    auto b = BroadcastShapes(shape, InputType(node, i).shape);
    if (!b.ok()) return NodeError(node, b.status().message());
    shape = std::move(*b);
  }
  return shape;
}

codegen::Expr ConstOf(double value, ir::DType t) {
  if (codegen::IsFloat(t)) return codegen::FloatConst(value, t);
  return codegen::IntConst(static_cast<int64_t>(std::llround(value)), t);
}

void AddElementwise(Registry& r, ElementwiseSpec spec) {
  OpDef def;
  def.name = spec.name;
  def.versions = spec.versions;
  def.fusion = FusionClass::kElementwise;
  def.commutative = spec.commutative;
  def.epilogue = spec.epilogue;
  def.identity_like = spec.identity_like;
  def.scalar = spec.scalar;
  if (!spec.keep_f32_reason.empty()) KeepF32(def, spec.keep_f32_reason);
  def.normalize = spec.normalize;
  def.canonicalize = spec.canonicalize;
  def.infer = [spec](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
    KEEL_RETURN_IF_ERROR(CheckArity(node, spec.min_inputs, spec.max_inputs));
    KEEL_RETURN_IF_ERROR(CheckOutputs(node, 1, "the op has one output"));
    const ir::DType first = InputType(node, spec.first_data).dtype;
    for (size_t i = spec.first_data; i < node.inputs().size(); ++i) {
      if (!HasInput(node, i)) continue;
      const ir::DType d = InputType(node, i).dtype;
      if (!InClass(d, spec.types)) {
        return NodeUnsupported(node, "input " + std::to_string(i) + " has dtype " + ir::DTypeName(d) + "; " +
                                         spec.name + " takes " + ClassText(spec.types) + " tensors");
      }
      if (spec.same_dtype && d != first) {
        return NodeError(node, std::string("input dtypes differ: ") + ir::DTypeName(first) + " and " + ir::DTypeName(d));
      }
    }
    KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> shape, BroadcastInputs(node));
    const ir::DType out = spec.output == OutputType::kBool ? ir::DType::kBool : first;
    return One({out, shape});
  };
  r.Add(std::move(def));
}

}  // namespace keel::ops
