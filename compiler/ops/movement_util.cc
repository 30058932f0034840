// compiler/ops/movement_util.cc — see movement_util.h.
#include "compiler/ops/movement_util.h"

#include "compiler/ops/op_util.h"

namespace keel::ops {

using codegen::Expr;

Expr TypedConst(double v, ir::DType dt) {
  if (codegen::IsFloat(dt)) return codegen::Cast(codegen::FloatConst(v, ir::DType::kF64), dt);
  return codegen::Cast(codegen::IntConst(static_cast<int64_t>(v)), dt);
}

Expr Eq(Expr a, Expr b) { return codegen::Binary(codegen::BinaryOp::kEq, std::move(a), std::move(b)); }

Expr WrapIndex(Expr g, int64_t dim) {
  g = codegen::Cast(g, ir::DType::kI64);
  return codegen::Clamp(codegen::Select(g < 0, g + dim, g), 0, dim > 0 ? dim - 1 : 0);
}

Expr IndexInRange(Expr g, int64_t dim) {
  g = codegen::Cast(g, ir::DType::kI64);
  return (g >= -dim) && (g < dim);
}

Status CheckIndexDType(const ir::Node& node, size_t index) {
  const ir::DType dt = InputType(node, index).dtype;
  if (dt != ir::DType::kI64 && dt != ir::DType::kI32) {
    return NodeError(node, "input " + std::to_string(index) + " (indices) must be i32 or i64, got " + ir::DTypeName(dt));
  }
  return Status::Ok();
}

Status CheckConstantIndices(const ir::Node& node, size_t index, const std::function<int64_t(int64_t i)>& dim_of) {
  const ir::TensorData* c = ConstantInput(node, index);
  if (!c) return Status::Ok();
  KEEL_ASSIGN_OR_RETURN(auto values, ReadInts(*c));
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t dim = dim_of(static_cast<int64_t>(i));
    if (values[i] < -dim || values[i] >= dim) {
      return NodeError(node, "index " + std::to_string(values[i]) + " is out of range for a dimension of size " +
                                 std::to_string(dim));
    }
  }
  return Status::Ok();
}

}  // namespace keel::ops
