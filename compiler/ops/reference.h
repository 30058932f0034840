// compiler/ops/reference.h — the reference side of op definitions: element
// access on ir::TensorData for every dtype, index helpers for the naive
// evaluators of anchors, and the reference interpreter that executes the
// lowering of elementwise and injective ops.
//
// Numbers. Reference values are computed in double (floating types) or exact
// 64-bit integers (integer types; u64 keeps its bits in an int64 and unsigned
// ops treat it as such) and rounded to the output dtype only when stored:
// floats round to nearest (f16/bf16 to nearest even), integers wrap, and a
// float stored to an integer type truncates toward zero (NaN gives 0,
// out-of-range values saturate), bool is "!= 0".
//
// The interpreter (InterpretOutputs) builds the node's outputs as TensorFns
// with the op's own lowering hooks (ops/lowering.h) over the input tensors and
// evaluates the resulting kernel-IR expressions at every output index, so an
// elementwise or injective op is defined exactly once. An expression that
// would load out of bounds is an Internal error (a lowering bug), never a read.
//
// Thread-safety: pure functions; results are fresh tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "compiler/codegen/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "keel/status.h"

namespace keel::ops {

struct OpDef;

// ---- element access ------------------------------------------------------------------
float HalfToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);  // round to nearest even
float BFloat16ToFloat(uint16_t bits);
uint16_t FloatToBFloat16(float value);  // round to nearest even

// Element i as double (integers converted) / as int64 (floats truncated; u64 bits kept).
double ElementAsDouble(const ir::TensorData& t, int64_t i);
int64_t ElementAsInt(const ir::TensorData& t, int64_t i);
// Stores with the rounding rules above.
void StoreDouble(ir::TensorData& t, int64_t i, double v);
void StoreInt(ir::TensorData& t, int64_t i, int64_t v);

// A zero-filled tensor of `type` (callers fill it, then share it as TensorDataPtr).
std::shared_ptr<ir::TensorData> NewTensor(const ir::TensorType& type);

// All values as double (any dtype).
std::vector<double> TensorToDoubles(const ir::TensorData& t);
// A tensor of `type` from doubles (Internal error when the count differs).
Result<ir::TensorDataPtr> TensorFromDoubles(const ir::TensorType& type, const std::vector<double>& values);
ir::TensorDataPtr MakeTensorF32(std::vector<int64_t> shape, const std::vector<float>& values);
ir::TensorDataPtr MakeTensorI64(std::vector<int64_t> shape, const std::vector<int64_t>& values);

// ---- index helpers --------------------------------------------------------------------
std::vector<int64_t> Strides(const std::vector<int64_t>& shape);  // row-major element strides
// Strides of `in` aligned to an output of rank out_rank under numpy broadcasting
// (broadcast dimensions get stride 0).
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& in, size_t out_rank);
// Offset into an input with `in_strides` (from BroadcastStrides or permuted
// Strides) of flat output index `idx` of `out_shape`.
int64_t StridedOffset(int64_t idx, const std::vector<int64_t>& out_shape, const std::vector<int64_t>& in_strides);
// shape = outer x len x inner around `axis`.
void SplitAxis(const std::vector<int64_t>& shape, int64_t axis, int64_t& outer, int64_t& len, int64_t& inner);

// ---- the interpreter --------------------------------------------------------------------
// Evaluates an elementwise or injective node (def.fusion) on `inputs`
// (positional, nullptr where the node input is absent) by interpreting its
// lowering; one tensor per output of `out_types`.
Result<std::vector<ir::TensorDataPtr>> InterpretOutputs(const OpDef& def, const ir::Node& node,
                                                        const std::vector<ir::TensorDataPtr>& inputs,
                                                        const std::vector<ir::TensorType>& out_types);

}  // namespace keel::ops
