// serialization/format.h — plain C++ vocabulary of the Keel executable format.
//
// The enums below mirror, value for value, the enums of serialization/executable.fbs
// (keel.fb.DType, DeviceKind, KernelKind, ArgAccess), so that writer users (the
// compiler, tests) and reader users (the VM) can talk about dtypes and devices
// without including the FlatBuffers-generated header. The reader converts with a
// static_cast after checking the range (IsValid*).
//
// Header-only, no dependencies beyond the standard library. Everything here is
// constexpr / stateless and therefore thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/constant_block.h"
#include "keel/data_type.h"

namespace keel::ser {

// Format version written by ExecutableWriter and accepted by ReadExecutable:
// a reader accepts its own major and any minor (see executable.fbs).
inline constexpr uint16_t kFormatVersionMajor = 1;
inline constexpr uint16_t kFormatVersionMinor = 2;  // 1.1: kernel library size + SHA-256; 1.2: allow_tf32

// The 4-byte FlatBuffers file identifier ("KEEL") and the alignment of the data
// segment and of every constant inside it.
inline constexpr char kFileIdentifier[5] = "KEEL";
inline constexpr uint64_t kDataAlignment = 64;
// The writer places device constants at this (stronger) alignment, each device's
// together: the layout of the device block they are uploaded into.
inline constexpr uint64_t kDeviceDataAlignment = common::kDeviceConstantAlignment;

// Element types: keel::DataType (keel/data_type.h, numbered as keel.fb.DType;
// executable_reader.cc checks the schema against the list at compile time).
using DType = keel::DataType;
inline constexpr uint8_t kDTypeMax = keel::kMaxDataTypeValue;

// Same numbering as keel.fb.DeviceKind.
enum class DeviceKind : uint8_t { kCpu = 0, kCuda = 1 };
inline constexpr uint8_t kDeviceKindMax = 1;

// Same numbering as keel.fb.KernelKind.
enum class KernelKind : uint8_t { kCpuGenerated = 0, kCudaGenerated = 1, kLibrary = 2 };
inline constexpr uint8_t kKernelKindMax = 2;

// Same numbering as keel.fb.ArgAccess.
enum class ArgAccess : uint8_t { kRead = 0, kWrite = 1, kReadWrite = 2 };
inline constexpr uint8_t kArgAccessMax = 2;

constexpr bool IsValidDType(uint8_t v) { return keel::IsValidDataType(v); }
constexpr bool IsValidDeviceKind(uint8_t v) { return v <= kDeviceKindMax; }
constexpr bool IsValidKernelKind(uint8_t v) { return v <= kKernelKindMax; }
constexpr bool IsValidArgAccess(uint8_t v) { return v <= kArgAccessMax; }

// Bytes per element and short names ("f32", "bool"); 0 / "?" outside the list.
constexpr size_t DTypeSize(DType t) { return keel::DataTypeSize(t); }
constexpr const char* DTypeName(DType t) { return keel::DataTypeName(t); }

constexpr const char* DeviceKindName(DeviceKind d) {
  switch (d) {
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kCuda: return "cuda";
  }
  return "?";
}

constexpr const char* KernelKindName(KernelKind k) {
  switch (k) {
    case KernelKind::kCpuGenerated: return "cpu_generated";
    case KernelKind::kCudaGenerated: return "cuda_generated";
    case KernelKind::kLibrary: return "library";
  }
  return "?";
}

constexpr const char* ArgAccessName(ArgAccess a) {
  switch (a) {
    case ArgAccess::kRead: return "read";
    case ArgAccess::kWrite: return "write";
    case ArgAccess::kReadWrite: return "read_write";
  }
  return "?";
}

}  // namespace keel::ser
