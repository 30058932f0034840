// serialization/executable_reader.h — reads and verifies a Keel executable (model.keel).
//
// ReadExecutable is the runtime's single entry point to the file format: after
// it returns OK, every index, size and offset in the executable has been
// checked, so the VM may decode it without further bounds checks:
//
//   1. framing: file large enough, identifier "KEEL", size prefix within the file;
//   2. the FlatBuffers Verifier over the FlatBuffer part;
//   3. the format version (own major, any minor);
//   4. the data segment (64-byte aligned, after the FlatBuffer, inside the file) and
//      every constant (64-byte aligned, inside the data segment,
//      size == product(shape) * dtype size, overflow-checked);
//   5. tables: targets, kernels (enums, argument shapes, library op, launch config,
//      attributes sorted and unique), memory plan (alignments powers of two,
//      arena index in range or -1, storages inside their arenas);
//   6. every function, by a forward pass over its instructions tracking what each
//      register holds (nothing / a tensor of known dtype, element count and device /
//      a storage of a known plan slot): indices in range, params <= num_registers,
//      no register read before it is written, storages and tensors not mixed up,
//      views inside their planned storage and aligned to their element size, no
//      use of a view after FreeStorage of its storage, FreeStorage only of
//      arena -1 slots, no write to a constant (Copy destination, or
//      a write/read_write kernel argument), Invoke arguments matching the kernel signature (count,
//      dtype, element count, device), Copy of equal byte sizes, Ret matching the
//      function's results, exactly one Ret and it is the last instruction,
//      function names non-empty and unique.
//
// Errors: kInvalidArgument for a null/misaligned buffer, kUnsupported for a
// version this runtime cannot read, kInvalidExecutable for everything else. Each
// message names the problem and, for function checks, the function, the
// instruction index and the register or index involved, e.g.
//   "function 'main' instruction 3 (Invoke): argument 1: register 9 out of range (num_registers 5)".
//
// Ownership and lifetime: the caller owns the file bytes (a std::vector, an mmap)
// and keeps them alive and unchanged while the returned ExecutableView (which
// points into them) is used. The bytes must be 8-byte aligned (any allocator or
// mmap gives that) because FlatBuffers reads 64-bit fields in place.
// Thread-safety: ReadExecutable is reentrant; an ExecutableView is read-only and
// may be shared between threads.
#pragma once

#include <cstdint>
#include <span>

#include "keel/status.h"
#include "serialization/executable_generated.h"
#include "serialization/format.h"

namespace keel::ser {

// Limits that keep verification cheap on hostile input (documented so the
// compiler can stay below them).
inline constexpr uint32_t kMaxRegistersPerFunction = 1u << 24;
inline constexpr uint32_t kMaxRank = 32;

// A verified executable: typed access into the caller's bytes.
struct ExecutableView {
  const keel::fb::Executable* root = nullptr;  // never null in a view returned by ReadExecutable
  std::span<const uint8_t> file;               // the whole file
  std::span<const uint8_t> data_segment;       // file[data_segment_offset, +data_segment_size)
  uint16_t version_major = 0;
  uint16_t version_minor = 0;

  // The bytes of constants()[index] (verified in range by ReadExecutable);
  // empty for an index out of range.
  std::span<const uint8_t> ConstantBytes(uint32_t index) const;
  // functions()[0], the entry point.
  const keel::fb::Function* main() const { return root->functions()->Get(0); }
};

// Verifies `file` as described above and returns a view into it.
Result<ExecutableView> ReadExecutable(std::span<const uint8_t> file);

// Conversions from the generated enums (valid after ReadExecutable checked the range).
// The schema's DType enum must be the list of keel/dtype_list.h, value for value.
static_assert(static_cast<uint8_t>(keel::fb::DType::MAX) == kDTypeMax && sizeof(keel::fb::EnumValuesDType()) == kDTypeMax + 1, "executable.fbs DType != keel/dtype_list.h");
#define KEEL_X(tok, val, bytes, name, kind) static_assert(IsValidDType(val), "dtype value " #val " missing");
KEEL_DTYPE_LIST(KEEL_X)
#undef KEEL_X
inline DType FromFb(keel::fb::DType t) { return static_cast<DType>(t); }
inline DeviceKind FromFb(keel::fb::DeviceKind d) { return static_cast<DeviceKind>(d); }
inline KernelKind FromFb(keel::fb::KernelKind k) { return static_cast<KernelKind>(k); }
inline ArgAccess FromFb(keel::fb::ArgAccess a) { return static_cast<ArgAccess>(a); }

}  // namespace keel::ser
