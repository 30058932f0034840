// serialization/executable_writer.h — builds a Keel executable (model.keel) from plain C++.
//
// The compiler (compiler/lower) and the tests describe an executable with the
// plain structs below and get back the whole file image: a size-prefixed
// FlatBuffer (identifier "KEEL", root keel.fb.Executable) followed by zero
// padding up to a 64-byte boundary and the data segment holding the constant
// bytes: first the CPU constants, each 64-byte aligned, then each device's
// constants together, each 256-byte aligned, so that the VM uploads a device's
// weights in one copy into one block (see serialization/executable.fbs).
// Callers need no FlatBuffers knowledge.
//
// The writer deliberately does NOT validate indices or sizes: register,
// kernel, constant and plan-slot indices are written as given, so tests can
// produce malformed executables and check that ReadExecutable
// (serialization/executable_reader.h) rejects them. Validate with
// ReadExecutable(Finish()) when in doubt.
//
// Determinism: the same sequence of calls gives byte-identical output (kernel
// attributes are sorted by key with a stable sort; nothing depends on pointers
// or hashing).
//
// Thread-safety: an ExecutableWriter is a plain object; use one per thread.
// Errors: only Finish()/WriteFile() can fail (the FlatBuffer would pass 2 GB,
// the data segment would overflow 64 bits, the file cannot be written).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "keel/status.h"
#include "serialization/format.h"

namespace keel::ser {

// A parameter or result of a function (a tensor with a static shape).
struct TensorSigDesc {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
  DeviceKind device = DeviceKind::kCpu;
};

// One argument of a kernel's signature.
struct KernelArgDesc {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  ArgAccess access = ArgAccess::kRead;
};

// A named attribute of a library kernel; exactly one of the value fields is meant
// to be used (the helpers below fill one).
struct AttrDesc {
  std::string key;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string str;

  static AttrDesc Ints(std::string key, std::vector<int64_t> v) { return {std::move(key), std::move(v), {}, {}}; }
  static AttrDesc Floats(std::string key, std::vector<double> v) { return {std::move(key), {}, std::move(v), {}}; }
  static AttrDesc Str(std::string key, std::string v) { return {std::move(key), {}, {}, std::move(v)}; }
};

// CUDA launch configuration of a cuda_generated kernel (the reader requires it for
// that kind: 3 grid and 3 block entries, each >= 1).
struct LaunchDesc {
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t shared_bytes = 0;
};

struct KernelDesc {
  std::string name;        // exported symbol / CUDA function name; for library kernels a readable name
  KernelKind kind = KernelKind::kCpuGenerated;
  DeviceKind device = DeviceKind::kCpu;
  std::string library_op;  // kind == kLibrary: e.g. "cublas.gemm"; empty otherwise
  std::vector<KernelArgDesc> args;
  std::vector<AttrDesc> attrs;       // any order; written sorted by key (stable)
  std::optional<LaunchDesc> launch;  // written when set
  uint64_t workspace_bytes = 0;
};

struct PlannedStorageDesc {
  uint64_t size = 0;
  uint32_t alignment = 64;
  DeviceKind device = DeviceKind::kCpu;
  int32_t arena = -1;   // index into MemoryPlanDesc::arenas, or -1: allocated at run time
  uint64_t offset = 0;  // within the arena
};

struct ArenaDesc {
  DeviceKind device = DeviceKind::kCpu;
  uint64_t size = 0;
  uint32_t alignment = 64;
};

struct MemoryPlanDesc {
  std::string strategy;  // "naive", "greedy-size", "dynamic", ...
  std::vector<PlannedStorageDesc> storages;
  std::vector<ArenaDesc> arenas;
  uint64_t lower_bound_peak_live = 0;
  uint64_t lower_bound_positional_max = 0;
};

// Metadata of a constant whose offset/size are given explicitly instead of being
// assigned by the writer (AddRawConstant). For tests of the reader's bounds
// checks, and for callers that lay out the data segment themselves.
struct RawConstantDesc {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  DeviceKind device = DeviceKind::kCpu;
  uint64_t offset = 0;  // from the start of the data segment
  uint64_t size = 0;    // bytes
};

// Overrides for Finish(), to produce deliberately bad files in tests. Every unset
// field keeps the correct value. Overriding the data-segment fields changes only
// the metadata, not where the writer puts the bytes.
struct FinishOptions {
  std::optional<uint16_t> version_major;
  std::optional<uint16_t> version_minor;
  bool omit_version = false;                    // leave Executable.version out
  std::optional<std::string> file_identifier;   // first 4 characters used (padded with '\0')
  std::optional<uint64_t> data_segment_offset;  // metadata value
  std::optional<uint64_t> data_segment_size;    // metadata value
};

// Instructions of a function, as plain structs (one per keel.fb.Op member).
struct AllocStorageInst { uint32_t dst = 0; uint32_t plan_slot = 0; };
struct AllocTensorInst {
  uint32_t dst = 0;
  uint32_t storage = 0;
  uint64_t offset = 0;
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
};
struct LoadConstInst { uint32_t dst = 0; uint32_t const_index = 0; };
struct CopyInst { uint32_t dst = 0; uint32_t src = 0; };
struct InvokeInst { uint32_t kernel = 0; std::vector<uint32_t> args; };
struct FreeStorageInst { uint32_t reg = 0; };
struct RetInst { std::vector<uint32_t> regs; };
// An Instruction whose `op` union is NONE: never valid; for reader tests only.
struct EmptyInst {};

using InstructionOp = std::variant<AllocStorageInst, AllocTensorInst, LoadConstInst, CopyInst,
                                   InvokeInst, FreeStorageInst, RetInst, EmptyInst>;

struct InstructionDesc {
  InstructionOp op;
  std::string debug_name;  // optional; empty: not written
};

// Appends the instructions of one function. Obtained from
// ExecutableWriter::AddFunction; owned by that writer and valid until it is
// destroyed (references stay valid as more functions are added). Each method
// returns *this for chaining.
class FunctionBuilder {
 public:
  FunctionBuilder(std::string name, std::vector<TensorSigDesc> params, std::vector<TensorSigDesc> results,
                  uint32_t num_registers)
      : name_(std::move(name)), params_(std::move(params)), results_(std::move(results)),
        num_registers_(num_registers) {}

  FunctionBuilder& AllocStorage(uint32_t dst, uint32_t plan_slot, std::string debug_name = {});
  FunctionBuilder& AllocTensor(uint32_t dst, uint32_t storage, uint64_t offset, std::vector<int64_t> shape,
                               DType dtype, std::string debug_name = {});
  FunctionBuilder& LoadConst(uint32_t dst, uint32_t const_index, std::string debug_name = {});
  FunctionBuilder& Copy(uint32_t dst, uint32_t src, std::string debug_name = {});
  FunctionBuilder& Invoke(uint32_t kernel, std::vector<uint32_t> args, std::string debug_name = {});
  FunctionBuilder& FreeStorage(uint32_t reg, std::string debug_name = {});
  FunctionBuilder& Ret(std::vector<uint32_t> regs, std::string debug_name = {});
  // Any instruction, including EmptyInst (for tests).
  FunctionBuilder& Add(InstructionDesc inst);

  // The register count may be fixed after the body is emitted (register allocation).
  void SetNumRegisters(uint32_t n) { num_registers_ = n; }

  const std::string& name() const { return name_; }
  uint32_t num_registers() const { return num_registers_; }
  const std::vector<TensorSigDesc>& params() const { return params_; }
  const std::vector<TensorSigDesc>& results() const { return results_; }
  const std::vector<InstructionDesc>& instructions() const { return instructions_; }

 private:
  std::string name_;
  std::vector<TensorSigDesc> params_;
  std::vector<TensorSigDesc> results_;
  uint32_t num_registers_;
  std::vector<InstructionDesc> instructions_;
};

class ExecutableWriter {
 public:
  ExecutableWriter();
  ~ExecutableWriter();
  ExecutableWriter(const ExecutableWriter&) = delete;
  ExecutableWriter& operator=(const ExecutableWriter&) = delete;

  // Each Add* returns the index of the new entry in its table (0, 1, 2, ...).
  uint32_t AddTarget(DeviceKind device, std::string arch, std::string features = {});
  uint32_t AddKernel(KernelDesc kernel);

  // A constant whose bytes are COPIED into the writer; placed in the data
  // segment at the next 64-byte boundary. The byte count is written as given
  // (the reader checks it equals product(shape) * DTypeSize(dtype)).
  uint32_t AddConstant(std::string name, DType dtype, std::vector<int64_t> shape, DeviceKind device,
                       std::span<const uint8_t> bytes);
  // Same, but the bytes are only REFERENCED: the caller keeps them alive and
  // unchanged until the last Finish()/WriteFile() call (avoids a copy of large weights).
  uint32_t AddConstantRef(std::string name, DType dtype, std::vector<int64_t> shape, DeviceKind device,
                          std::span<const uint8_t> bytes);
  // A constant entry with explicit offset/size and no bytes written (tests, custom layouts).
  uint32_t AddRawConstant(RawConstantDesc constant);

  void SetMemoryPlan(MemoryPlanDesc plan);
  void SetKernelLibraryId(std::string id);
  // The kernel library's byte size and SHA-256 (format 1.1): the VM refuses a
  // library that differs, before dlopen. Unset: nothing is recorded or checked.
  void SetKernelLibraryDigest(uint64_t size, const std::array<uint8_t, 32>& sha256);
  void SetProducer(std::string producer);
  // Format 1.2: the program was compiled for TF32 (keelc --precision tf32): the VM
  // lets library GEMM/conv use TF32 unless its caller overrides. Default false.
  void SetAllowTf32(bool allow);

  // Functions are written in the order added; the first is the entry (`main`).
  FunctionBuilder& AddFunction(std::string name, std::vector<TensorSigDesc> params,
                               std::vector<TensorSigDesc> results, uint32_t num_registers);

  // The whole file image. May be called several times (same result each time).
  Result<std::vector<uint8_t>> Finish() const { return Finish(FinishOptions{}); }
  Result<std::vector<uint8_t>> Finish(const FinishOptions& options) const;

  // Writes the same bytes as Finish() to `path` atomically (temporary file in the
  // same directory, then rename), streaming the constants instead of building the
  // image in memory. Errors: kIoError naming the path.
  Status WriteFile(const std::string& path) const;
  Status WriteFile(const std::string& path, const FinishOptions& options) const;

 private:
  // Produces the file image as consecutive chunks passed to `sink` (false: stop
  // with kIoError); sets *total_size before the first chunk.
  Status Emit(const FinishOptions& options, const std::function<bool(std::span<const uint8_t>)>& sink,
              uint64_t* total_size) const;

  struct State;
  std::unique_ptr<State> state_;
  std::deque<FunctionBuilder> functions_;  // deque: references stay valid
};

}  // namespace keel::ser
