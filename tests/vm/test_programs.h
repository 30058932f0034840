// tests/vm/test_programs.h — executables for the VM tests and benchmarks,
// built with ser::ExecutableWriter against the kernels of test_kernels.c.
//
// FullProgram uses every instruction (alloc_storage, alloc_tensor, load_const,
// copy, invoke incl. a parallel_for kernel and an empty one, free_storage on the
// dynamic plan, ret). AddProgram is a tiny y = x + c whose indices can be
// overridden one at a time to produce malformed executables.
// The expected results are computed here by plain loops (Reference*), never by
// the VM.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "keel/status.h"
#include "serialization/executable_writer.h"

namespace keel::vmtest {

inline constexpr char kLibraryId[] = "keel-test-kernels";

// Kernel table indices (same order in every test executable).
enum Kernel : uint32_t { kAdd = 0, kRelu = 1, kMatmul = 2, kEmpty = 3, kScale = 4, kFail = 5 };
void AddTestKernels(ser::ExecutableWriter& w);

enum class Plan { kStatic, kDynamic };

// Inputs x f32[2,3], y f32[4], z f32[1024]; outputs relu f32[4] = relu(y + c),
// matmul f32[2,2] = x @ w, scaled f32[1024] = 2z + 1.
Result<std::vector<uint8_t>> FullProgram(Plan plan);
std::vector<float> ConstC();  // c, f32[4]
std::vector<float> ConstW();  // w, f32[3,2]
struct FullInputs {
  std::vector<float> x, y, z;
};
FullInputs MakeFullInputs(int seed);
struct FullOutputs {
  std::vector<float> relu, matmul, scaled;
};
FullOutputs ReferenceFull(const FullInputs& in);

// y f32[4] = x f32[4] + c. Every field can be overridden to break the file.
struct AddProgramSpec {
  uint32_t num_registers = 4;
  uint32_t storage_dst = 1;
  uint32_t plan_slot = 0;
  uint32_t view_storage = 1;
  uint64_t view_offset = 0;
  std::vector<int64_t> view_shape = {4};
  uint32_t const_index = 0;
  uint32_t kernel = kAdd;
  uint32_t ret_reg = 2;
  uint64_t storage_size = 16;
  std::string library_id = kLibraryId;
  std::string add_kernel_name = "test_add_f32_4";
  bool dynamic = false;
  // When set, the executable records this file's size and SHA-256 (format 1.1).
  std::string digest_of_library;
  // Format 1.2: compiled for TF32 (keelc --precision tf32).
  bool allow_tf32 = false;
};
Result<std::vector<uint8_t>> AddProgram(const AddProgramSpec& spec, const ser::FinishOptions& finish = {});

// N invokes of the empty kernel (kind=invoke) or N alloc_tensors, then ret.
Result<std::vector<uint8_t>> DispatchProgram(uint32_t n, bool alloc_tensors);

// Writes bytes to `path`; false on failure.
bool WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace keel::vmtest
