// compiler/ops/lowering.cc — see lowering.h.
#include "compiler/ops/lowering.h"

#include "compiler/ops/op_util.h"

namespace keel::ops {

using codegen::Expr;

ir::DType ComputeType(ir::DType storage) {
  return storage == ir::DType::kF16 || storage == ir::DType::kBF16 ? ir::DType::kF32 : storage;
}

namespace {

Status DefineElementwise(const OpDef& def, codegen::LowerContext& ctx, const ir::Node& node) {
  if (node.outputs().size() != 1 || !node.output(0) || !node.output(0)->has_type()) {
    return NodeError(node, "an elementwise op has one typed output");
  }
  const ir::TensorType out_type = node.output(0)->type();
  // The op's expression over placeholders, one per present operand.
  std::vector<const codegen::TensorFn*> ins(node.inputs().size(), nullptr);
  std::vector<Expr> placeholders(node.inputs().size());
  std::vector<int64_t> ids(node.inputs().size(), -1);
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    if (!node.input(i)) continue;
    KEEL_ASSIGN_OR_RETURN(ins[i], ctx.Input(node, i));
    const Expr var = ctx.kernel().NewVar(codegen::IndexedName("x", static_cast<int64_t>(i)));
    ids[i] = var.int_value();
    placeholders[i] = codegen::Placeholder(ids[i], ComputeType(ins[i]->type.dtype));
  }
  ScalarArgs args{node, placeholders, ComputeType(out_type.dtype)};
  KEEL_ASSIGN_OR_RETURN(Expr body, def.scalar(args));
  if (body.is_null()) return Internal(NodeDescription(node) + ": the elementwise lowering returned no value");
  body = codegen::Cast(body, out_type.dtype);

  codegen::TensorFn fn;
  fn.type = out_type;
  const std::vector<int64_t> out_shape = out_type.shape;
  // TensorFns live in the context (stable addresses): capture pointers, not copies,
  // so long chains stay linear in time and memory.
  fn.at = [ins, ids, body, out_shape](const std::vector<Expr>& idx) {
    return codegen::SubstituteVars(body, [&](int64_t id) -> Expr {
      for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] == id) {
          const codegen::TensorFn& in = *ins[i];
          return codegen::Cast(in.at(codegen::BroadcastIndex(out_shape, in.type.shape, idx)), ComputeType(in.type.dtype));
        }
      }
      return Expr();
    });
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

}  // namespace

Status DefineOutputs(const OpDef& def, codegen::LowerContext& ctx, const ir::Node& node) {
  for (const ir::Value* in : node.inputs()) {
    if (in && !ctx.Find(in)) {
      if (!in->is_constant()) return Internal(NodeDescription(node) + ": input '" + in->name() + "' has no reader");
      KEEL_RETURN_IF_ERROR(ctx.DefineConstant(in));
    }
  }
  for (const ir::Value* out : node.outputs()) {
    if (out && !out->has_type()) return NodeError(node, "output '" + out->name() + "' has no type");
  }
  if (def.fusion == FusionClass::kElementwise && def.scalar) return DefineElementwise(def, ctx, node);
  if (def.injective) return def.injective(ctx, node);
  return Internal(NodeDescription(node) + ": op " + def.name + " (" + FusionClassName(def.fusion) +
                  ") has no index-function lowering");
}

}  // namespace keel::ops
