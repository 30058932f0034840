// compiler/ops/movement_util.h — small helpers shared by the data-movement op
// families (movement_*.cc): typed constants, run-time index normalization and
// compile-time index checks.
//
// Index reads: indices that come from tensors are normalized the ONNX way
// (negative counts from the end) and then clamped into the dimension, so a
// lowering never loads out of bounds even when a run-time index is bad;
// constant indices are checked at compile time instead (CheckConstantIndices),
// where the model is wrong. Thread-safety: pure functions.
#pragma once

#include <functional>
#include <string>

#include "compiler/codegen/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "keel/status.h"

namespace keel::ops {

// The number `v` as an expression of dtype `dt` (floats rounded, integers truncated).
codegen::Expr TypedConst(double v, ir::DType dt);

// a == b (kernel IR has no operator== on Expr: it would compare handles).
codegen::Expr Eq(codegen::Expr a, codegen::Expr b);

// Index `g` (any integer dtype) as i64: negative values count from `dim`,
// then clamped into [0, dim - 1] (dim >= 1).
codegen::Expr WrapIndex(codegen::Expr g, int64_t dim);
// True when `g` (i64, before wrapping) is a valid index into a dimension of `dim`.
codegen::Expr IndexInRange(codegen::Expr g, int64_t dim);

// InvalidArgument unless input `index` has dtype i32 or i64.
Status CheckIndexDType(const ir::Node& node, size_t index);
// When input `index` is constant: every value in [-dim_of(i), dim_of(i)) where
// dim_of gives the dimension the i-th value indexes; InvalidArgument naming the
// first bad one otherwise.
Status CheckConstantIndices(const ir::Node& node, size_t index, const std::function<int64_t(int64_t i)>& dim_of);

}  // namespace keel::ops
