// include/keel/data_type.h — keel::DataType, the C++ element-type enum every
// layer uses (the IR's ir::DType and the format's ser::DType are this type),
// with its constexpr traits. Derived from the one list in keel/dtype_list.h.
//
// Header-only and dependency-free; everything is constexpr and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "keel/dtype_list.h"

namespace keel {

// Element types; the numbering is the executable format's (keel.fb.DType) and the C API's.
enum class DataType : uint8_t {
#define KEEL_X(tok, val, bytes, name, kind) k##tok = val,
  KEEL_DTYPE_LIST(KEEL_X)
#undef KEEL_X
};

// True when `v` is the value of a listed type (file input is checked with this first).
constexpr bool IsValidDataType(uint8_t v) {
  switch (v) {
#define KEEL_X(tok, val, bytes, name, kind) case val:
    KEEL_DTYPE_LIST(KEEL_X)
#undef KEEL_X
    return true;
  }
  return false;
}

// Bytes per element; 0 for a value outside the list.
constexpr size_t DataTypeSize(DataType t) {
  switch (t) {
#define KEEL_X(tok, val, bytes, name, kind) case DataType::k##tok: return bytes;
    KEEL_DTYPE_LIST(KEEL_X)
#undef KEEL_X
  }
  return 0;
}

// "f32", "i64", "bool", ...; "?" for a value outside the list.
constexpr const char* DataTypeName(DataType t) {
  switch (t) {
#define KEEL_X(tok, val, bytes, name, kind) case DataType::k##tok: return name;
    KEEL_DTYPE_LIST(KEEL_X)
#undef KEEL_X
  }
  return "?";
}

namespace dtype_internal {
constexpr int Kind(DataType t) {
  switch (t) {
#define KEEL_X(tok, val, bytes, name, kind) case DataType::k##tok: return kind;
    KEEL_DTYPE_LIST(KEEL_X)
#undef KEEL_X
  }
  return -1;
}
}  // namespace dtype_internal

constexpr bool IsFloatType(DataType t) { return dtype_internal::Kind(t) == KEEL_DTYPE_FLOAT; }
constexpr bool IsSignedIntType(DataType t) { return dtype_internal::Kind(t) == KEEL_DTYPE_SIGNED; }
constexpr bool IsUnsignedIntType(DataType t) { return dtype_internal::Kind(t) == KEEL_DTYPE_UNSIGNED; }
constexpr bool IsBoolType(DataType t) { return dtype_internal::Kind(t) == KEEL_DTYPE_BOOL; }
// Signed or unsigned integers (not bool).
constexpr bool IsIntegerType(DataType t) { return IsSignedIntType(t) || IsUnsignedIntType(t); }

inline constexpr uint8_t kMaxDataTypeValue = KEEL_DTYPE_MAX_VALUE;

}  // namespace keel
