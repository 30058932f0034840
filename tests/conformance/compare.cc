// tests/conformance/compare.cc — see the header.
#include "tests/conformance/compare.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace keel::conformance {
namespace {

// Element `i` of a buffer of `dtype`, widened to double (exact for every integer
// type up to 2^53; the exact integer comparison below does not go through this).
double Load(DataType dtype, const void* data, uint64_t i) {
  auto at = [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, static_cast<const char*>(data) + i * sizeof(T), sizeof(T));
    return v;
  };
  switch (dtype) {
    case DataType::kF32: return at(float{});
    case DataType::kF64: return at(double{});
    case DataType::kF16: return HalfToFloat(at(uint16_t{}));
    case DataType::kBF16: return BFloat16ToFloat(at(uint16_t{}));
    case DataType::kI8: return at(int8_t{});
    case DataType::kI16: return at(int16_t{});
    case DataType::kI32: return at(int32_t{});
    case DataType::kI64: return static_cast<double>(at(int64_t{}));
    case DataType::kU8: return at(uint8_t{});
    case DataType::kU16: return at(uint16_t{});
    case DataType::kU32: return at(uint32_t{});
    case DataType::kU64: return static_cast<double>(at(uint64_t{}));
    case DataType::kBool: return at(uint8_t{}) != 0;
  }
  return 0;
}

std::string Num(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

}  // namespace

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}

float BFloat16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

Comparison CompareTensors(DataType dtype, const void* got, const void* expected, uint64_t count, double rtol,
                          double atol) {
  Comparison c;
  uint64_t bad = 0, first_bad = 0;
  if (!IsFloatType(dtype)) {
    const size_t size = DataTypeSize(dtype);
    for (uint64_t i = 0; i < count; ++i) {
      const char* g = static_cast<const char*>(got) + i * size;
      const char* e = static_cast<const char*>(expected) + i * size;
      // bool: any non-zero byte is true on both sides.
      const bool same = dtype == DataType::kBool ? ((*g != 0) == (*e != 0)) : std::memcmp(g, e, size) == 0;
      if (!same && bad++ == 0) first_bad = i;
    }
    if (bad) {
      c.ok = false;
      c.message = std::to_string(bad) + " of " + std::to_string(count) + " elements differ; first at flat index " +
                  std::to_string(first_bad) + ": got " + Num(Load(dtype, got, first_bad)) + ", expected " +
                  Num(Load(dtype, expected, first_bad));
    }
    return c;
  }
  if (dtype == DataType::kBF16) rtol = std::max(rtol, 1.0 / 64);
  double worst_excess = -1;
  uint64_t worst = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const double g = Load(dtype, got, i), e = Load(dtype, expected, i);
    bool close;
    if (std::isnan(e) || std::isnan(g)) {
      close = std::isnan(e) && std::isnan(g);
    } else if (std::isinf(e) || std::isinf(g)) {
      close = g == e;
    } else {
      const double err = std::fabs(g - e);
      c.max_abs_error = std::max(c.max_abs_error, err);
      close = err <= atol + rtol * std::fabs(e);
      if (!close && err - (atol + rtol * std::fabs(e)) > worst_excess) {
        worst_excess = err - (atol + rtol * std::fabs(e));
        worst = i;
      }
    }
    if (!close && bad++ == 0) first_bad = i;
  }
  if (bad) {
    const uint64_t at = worst_excess >= 0 ? worst : first_bad;
    c.ok = false;
    c.message = std::to_string(bad) + " of " + std::to_string(count) + " elements differ (rtol " + Num(rtol) +
                ", atol " + Num(atol) + "); max abs error " + Num(c.max_abs_error) + "; worst at flat index " +
                std::to_string(at) + ": got " + Num(Load(dtype, got, at)) + ", expected " +
                Num(Load(dtype, expected, at));
  }
  return c;
}

}  // namespace keel::conformance
