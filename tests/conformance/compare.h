// tests/conformance/compare.h — an output against its expected value, the way
// ONNX's backend test runner compares (onnx/backend/test/runner/__init__.py):
// same dtype and shape, then for floating point
//   |got - expected| <= atol + rtol * |expected|   (np.testing.assert_allclose)
// with NaN equal to NaN and an infinity equal to the same infinity; bfloat16
// gets rtol >= 2^-6 (two bf16 ulps, as ONNX does). Integers and bool must be
// exactly equal (stricter than ONNX, which applies rtol to integers too: an
// off-by-one integer is a bug, not a rounding difference).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "keel/data_type.h"

namespace keel::conformance {

struct Comparison {
  bool ok = true;
  double max_abs_error = 0;  // over the elements (floating point; 0 for exact types)
  std::string message;       // one line when !ok: count, first bad index, values
};

// `got` and `expected` hold `count` elements of `dtype` each.
Comparison CompareTensors(DataType dtype, const void* got, const void* expected, uint64_t count, double rtol,
                          double atol);

// f16 / bf16 bit patterns to float.
float HalfToFloat(uint16_t h);
float BFloat16ToFloat(uint16_t b);

}  // namespace keel::conformance
