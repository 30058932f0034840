// compiler/ops/normalization.h — helpers shared by the normalization family
// (normalization.cc: Layer/RMS/Instance/GroupNormalization;
// normalization_batch.cc: BatchNormalization; normalization_misc.cc: LRN,
// MeanVarianceNormalization, LpNormalization). Internal to compiler/ops.
//
// Reference side: RowStatistics groups a tensor's elements into rows (the
// elements a normalization reduces together) and computes each row's mean and
// population variance in double, naively, for the evaluators.
// Lowering side: the ops build a codegen::RowNormSpec (lower_ops.h); the
// helpers here read inputs widened to the compute type.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/codegen/lower_ops.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/registry.h"
#include "keel/status.h"

namespace keel::ops {

void RegisterBatchNormOps(Registry& r);
void RegisterNormalizationMiscOps(Registry& r);

// ---- reference ---------------------------------------------------------------------
struct RowStatistics {
  std::vector<double> mean, var, sum_sq, sum_abs;  // per row; var is the population variance
};
// `row_of(i)` is the row of flat element i (in [0, rows)).
RowStatistics ComputeRowStatistics(const std::vector<double>& x, int64_t rows,
                                   const std::function<int64_t(int64_t)>& row_of);
// The row of each flat element of `shape` when the dims in `reduced` form a row
// (rows numbered row-major over the kept dims).
std::function<int64_t(int64_t)> RowOfKeptDims(const std::vector<int64_t>& shape, const std::vector<bool>& reduced,
                                              int64_t* rows);

// ---- types and attributes ------------------------------------------------------------
// `stash_type` (an ONNX float type code, default 1 = float) validated and stored
// back; its IR dtype.
Result<ir::DType> CanonicalizeStashType(ir::Node& node);
// The dims from `axis` on are reduced.
std::vector<bool> TrailingDims(size_t rank, int64_t axis);

// ---- lowering ------------------------------------------------------------------------
// The compute precision of a normalization: f64 for f64 data (or stash type), else f32.
codegen::DType NormComputeType(ir::DType data, ir::DType stash = ir::DType::kF32);
// Input `i` read at an index of its own shape, widened to `ct`.
Result<codegen::IndexFn> InputAs(codegen::LowerContext& ctx, const ir::Node& node, size_t i, codegen::DType ct);
// Input `i` read at x-index `idx` under numpy broadcasting against `x_shape`,
// widened to `ct`.
Result<codegen::IndexFn> BroadcastInput(codegen::LowerContext& ctx, const ir::Node& node, size_t i,
                                        const std::vector<int64_t>& x_shape, codegen::DType ct);

}  // namespace keel::ops
