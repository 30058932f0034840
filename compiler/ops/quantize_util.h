// compiler/ops/quantize_util.h — what the quantization op files share (internal
// to compiler/ops): the integer quantized types and their saturation ranges.
#pragma once

#include <cstdint>

#include "compiler/ir/graph.h"

namespace keel::ops {

// int8, uint8, int16, uint16: the integer types QuantizeLinear produces.
inline bool IsQuantizedType(ir::DType t) {
  return t == ir::DType::kI8 || t == ir::DType::kU8 || t == ir::DType::kI16 || t == ir::DType::kU16;
}

struct QuantRange {
  int64_t lo = 0, hi = 0;
};

// The representable range of an integer dtype (saturation bounds).
inline QuantRange RangeOf(ir::DType t) {
  switch (t) {
    case ir::DType::kI8: return {-128, 127};
    case ir::DType::kU8: return {0, 255};
    case ir::DType::kI16: return {-32768, 32767};
    case ir::DType::kU16: return {0, 65535};
    case ir::DType::kI32: return {INT32_MIN, INT32_MAX};
    case ir::DType::kU32: return {0, UINT32_MAX};
    default: return {0, 0};
  }
}

}  // namespace keel::ops
