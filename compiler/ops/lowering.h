// compiler/ops/lowering.h — calling an op's lowering hook: the shared part of
// turning elementwise and injective nodes into TensorFns, used both by code
// generation (compiler/codegen/lower.cc) and by the reference interpreter
// (reference.h), so both see exactly the same definition of the op.
//
// Elementwise nodes: each output index reads every operand at its numpy-
// broadcast index, widens f16/bf16 operands to f32, applies the op's `scalar`
// expression and converts the result to the output dtype (so a chain of f16 ops
// rounds at every op boundary, as ONNX specifies). The op's expression is built
// once per node over typed placeholders and instantiated per index by
// substitution; its errors surface here, not in the middle of a loop nest.
//
// Thread-safety: as the LowerContext it is given (one thread).
#pragma once

#include "compiler/codegen/lower_context.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/op_def.h"

namespace keel::ops {

// Defines every output of `node` (elementwise, injective or view op) in `ctx`;
// its inputs must already be defined (or be constants, defined on demand).
Status DefineOutputs(const OpDef& def, codegen::LowerContext& ctx, const ir::Node& node);

// The compute dtype of a storage dtype: f16/bf16 widen to f32, others stay.
ir::DType ComputeType(ir::DType storage);

}  // namespace keel::ops
