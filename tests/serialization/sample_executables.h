// tests/serialization/sample_executables.h — executables shared by the serialization tests.
//
// SampleSpec describes a small valid executable that uses every section and every
// instruction kind; tests read back exactly these inputs (never values taken from
// the code under test). MinimalBase gives a writer with a tiny plan, one kernel
// and one constant, to which a test appends a hand-written (often broken) `main`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "keel/status.h"
#include "serialization/executable_writer.h"

namespace keel::ser::samples {

struct SampleConstant {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  DeviceKind device;
  std::vector<uint8_t> bytes;
};

struct SampleSpec {
  std::string producer = "keel-tests 1.0";
  std::string kernel_library_id = "lib-0123456789abcdef";
  std::vector<KernelDesc> kernels;
  std::vector<SampleConstant> constants;
  MemoryPlanDesc plan;
};

// The spec of the sample (deterministic: constant bytes from a fixed formula).
SampleSpec MakeSampleSpec();

// How WriteSample hands the constants' bytes to the writer: AddConstant (copied)
// or AddConstantRef (referenced: `spec` must then outlive the writer's Finish).
enum class ConstantBytes { kCopied, kReferenced };

// Writes `spec` plus two functions: `main` (every instruction kind) and `helper`.
// The instruction sequence of main is documented in the .cc.
void WriteSample(const SampleSpec& spec, ExecutableWriter& w, ConstantBytes constants = ConstantBytes::kCopied);

// Finish() of WriteSample(MakeSampleSpec()), asserting success.
std::vector<uint8_t> SampleFile();

// A writer holding: plan {arena 0: cpu 1024 B; slot 0: 256 B in arena 0; slot 1: 64 B
// dynamic (arena -1)}, kernel 0 "k_add" (cpu_generated; args f32[4] read, f32[4] read,
// f32[4] write), constant 0 f32[4]. No functions.
void MinimalBase(ExecutableWriter& w);
// Signature of a f32[4] cpu tensor.
TensorSigDesc F32x4(std::string name);

// Asserts that ReadExecutable(file) fails with `code` and a message containing `needle`.
void ExpectReadError(const std::vector<uint8_t>& file, StatusCode code, const std::string& needle);

}  // namespace keel::ser::samples
