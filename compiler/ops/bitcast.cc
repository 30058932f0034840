// compiler/ops/bitcast.cc — BitCast (opset 26): each element's bits
// reinterpreted as another dtype of the same size (ONNX requires equal bit
// widths; the output keeps the input's shape).
//
// Canonical form: `to` is the IR dtype name ("i32"), as Cast's. An
// elementwise op: between two integer (or bool) types the reinterpretation is
// the wrapping conversion the store already does (two's complement), so the
// operand passes through; a float on either side goes through the kernel
// IR's kBitcast. f16 operands arrive widened to f32 (lowering.h), so they are
// narrowed back to f16 (exact) before their bits are taken; bf16 values are
// their 16 bits already.
#include "compiler/ops/op_util.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::Expr;

Result<ir::DType> Target(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(std::string to, node.attrs().GetString("to", ""));
  return DTypeFromName(to);
}

}  // namespace

void RegisterBitCastOps(Registry& r) {
  OpDef def;
  def.name = "BitCast";
  def.versions = {26};
  def.fusion = FusionClass::kElementwise;
  def.normalize = [](ir::Node& node, int) -> Status {
    KEEL_ASSIGN_OR_RETURN(int64_t code, node.attrs().GetInt("to", 0));
    auto d = DTypeFromOnnx(code);
    if (!d.ok()) return NodeUnsupported(node, "bitcast to " + d.status().message());
    node.attrs().Set("to", std::string(ir::DTypeName(*d)));
    return Status::Ok();
  };
  def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
    KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
    KEEL_ASSIGN_OR_RETURN(ir::DType to, Target(node));
    const ir::TensorType& x = InputType(node, 0);
    if (ir::DTypeSize(x.dtype) != ir::DTypeSize(to)) {
      return NodeError(node, std::string("cannot reinterpret ") + ir::DTypeName(x.dtype) + " as " + ir::DTypeName(to) +
                                 ": the bit widths differ");
    }
    return One({to, x.shape});
  };
  def.scalar = [](const ScalarArgs& a) -> Result<Expr> {
    const ir::DType from = InputType(a.node, 0).dtype;
    KEEL_ASSIGN_OR_RETURN(ir::DType to, Target(a.node));
    const bool from_int = !IsFloatType(from), to_int = !IsFloatType(to);
    if (from_int && to_int) return a.operands[0];  // the store wraps to `to`
    // Back to the storage type first (exact: f16/bf16 operands were widened
    // to f32), then its bits. Bool is never a float's width (infer checked).
    return codegen::Bitcast(codegen::Cast(a.operands[0], from), to);
  };
  r.Add(std::move(def));
}

}  // namespace keel::ops
