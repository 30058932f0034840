// vm/executable.h — the decoded, immutable form of a loaded executable.
//
// Load (vm/executable.cc) maps or copies the file, runs ser::ReadExecutable (the
// FlatBuffers verifier plus every semantic check), opens the kernel library and
// then decodes the entry function into the compact tables below. The interpreter
// only ever reads these tables: no FlatBuffers access at run time, every kernel
// pointer resolved, every constant a pointer into the file bytes, every byte size
// precomputed.
//
// Ownership/lifetime: LoadedExecutable owns the file bytes (mmap or aligned copy,
// or borrows them — LoadOptions::borrow_buffer) and the kernel library; pointers
// in the tables (Instruction::shape, ConstantEntry::host_data, KernelEntry::host_fn)
// stay valid as long as it lives. keel::Executable owns it; VMs hold a
// shared_ptr<const Executable>.
// Thread-safety: immutable after load; any number of threads may read it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "keel/kernel_abi.h"
#include "keel/status.h"
#include "keel/vm.h"
#include "vm/host_memory.h"
#include "vm/kernel_library.h"

namespace keel::vm_internal {

// One decoded instruction (48 bytes). Field use per opcode:
//   alloc_storage: a=dst, b=plan slot, arena (-1: dynamic), offset=offset in the
//                  arena (dynamic: the alignment), bytes=storage size, device
//   alloc_tensor:  a=dst, b=storage register, offset=byte offset, bytes=view size,
//                  shape/count=shape/rank, dtype
//   load_const:    a=dst, b=constant index
//   copy:          a=dst, b=src, bytes, direction, device (the device doing the copy)
//   invoke:        a=kernel index, b=first argument in LoadedExecutable::operands,
//                  count=number of arguments
//   free_storage:  a=register, device
//   ret:           b=first register in operands, count
struct Instruction {
  OpCode op = OpCode::kRet;
  uint8_t dtype = 0;
  DeviceType device = DeviceType::kCpu;
  CopyDirection direction = CopyDirection::kHostToHost;
  int32_t arena = -1;
  uint32_t a = 0;
  uint32_t b = 0;
  uint32_t count = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  const int64_t* shape = nullptr;
};

struct KernelArgEntry {
  DataType dtype = DataType::kF32;
  std::vector<int64_t> shape;
  uint8_t access = 0;  // ser::ArgAccess
  uint64_t bytes = 0;
};

struct AttrEntry {
  std::string key;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string str;
};

struct KernelEntry {
  uint32_t index = 0;
  std::string name;
  uint8_t kind = 0;  // ser::KernelKind
  DeviceType device = DeviceType::kCpu;
  std::string library_op;
  std::vector<KernelArgEntry> args;
  std::vector<AttrEntry> attrs;  // sorted by key
  bool has_launch = false;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;
  uint64_t workspace_bytes = 0;
  keel_cpu_kernel_fn host_fn = nullptr;  // cpu_generated: resolved from the library at load
};

struct ConstantEntry {
  std::string name;
  DataType dtype = DataType::kF32;
  std::vector<int64_t> shape;
  DeviceType device = DeviceType::kCpu;
  uint64_t bytes = 0;
  const uint8_t* host_data = nullptr;  // into the file bytes
  uint64_t data_offset = 0;            // from the start of the data segment (device block layout)
};

struct StorageEntry {
  uint64_t size = 0;
  uint32_t alignment = 64;
  DeviceType device = DeviceType::kCpu;
  int32_t arena = -1;
  uint64_t offset = 0;
};

struct ArenaEntry {
  DeviceType device = DeviceType::kCpu;
  uint64_t size = 0;
  uint32_t alignment = 64;
};

// Owns file bytes: an mmap, a 64-byte aligned copy (from LoadOptions::host_allocator),
// or nothing (borrowed).
class FileBytes {
 public:
  FileBytes() = default;
  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  static Result<std::unique_ptr<FileBytes>> Map(const std::string& path);
  static Result<std::unique_ptr<FileBytes>> Copy(std::span<const uint8_t> bytes, const keel_allocator_t& allocator);
  static std::unique_ptr<FileBytes> Borrow(std::span<const uint8_t> bytes);
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  enum class Kind { kBorrowed, kMapped, kHeap };
  Kind kind_ = Kind::kBorrowed;
  keel_allocator_t allocator_{};  // kHeap: the allocator that made data_
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

struct LoadedExecutable {
  std::unique_ptr<FileBytes> file;
  std::unique_ptr<KernelLibrary> library;  // null when the executable needs none
  std::string library_path;

  std::string producer;
  std::string plan_strategy;
  bool allow_tf32 = false;  // format 1.2: compiled with keelc --precision tf32
  std::vector<TensorInfo> inputs;   // = entry function params (registers 0..n-1)
  std::vector<TensorInfo> outputs;  // = entry function results

  uint32_t num_registers = 0;
  std::vector<Instruction> instructions;
  std::vector<std::string> debug_names;  // one per instruction (may be empty)
  std::vector<uint32_t> operands;        // invoke arguments and ret registers
  std::vector<int64_t> shapes;           // alloc_tensor shapes (Instruction::shape points here)
  uint32_t max_invoke_args = 0;
  bool has_dynamic_storage = false;
  // Registers that may still hold a dynamic storage when Run returns (not freed by
  // the program, e.g. outputs): the VM frees them before the next Run.
  std::vector<uint32_t> dynamic_registers;

  std::vector<KernelEntry> kernels;
  std::vector<ConstantEntry> constants;
  std::vector<StorageEntry> storages;
  std::vector<ArenaEntry> arenas;
  // Where the host arenas and host input buffers lie in one block (a caller-owned
  // buffer, VmOptions::arena_buffer); its size is Executable::memory_requirements.
  HostBlockLayout host_block;
  uint32_t devices_used = 0;  // bit (1 << DeviceType) for each device the executable touches
};

// "[2,3,5]" ("[]" for a scalar): how the runtime's error messages spell shapes.
std::string ShapeString(std::span<const int64_t> shape);

// Decodes verified `file` bytes into `out` (its file/library fields already set).
// Errors: kInvalidExecutable for what ReadExecutable rejects plus the runtime's own
// safety checks (writes into read-only constants, use of a freed storage, a kernel
// argument on another device); kNotFound for a missing kernel symbol.
Status DecodeExecutable(LoadedExecutable& out, const LoadOptions& options, const std::string& default_library);

}  // namespace keel::vm_internal

namespace keel {
// keel::Executable's private implementation (keel/vm.h names it only) is the
// decoded program itself.
struct Executable::Impl final : vm_internal::LoadedExecutable {};
}  // namespace keel
