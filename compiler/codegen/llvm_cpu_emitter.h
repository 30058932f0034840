// compiler/codegen/llvm_cpu_emitter.h — builds the CPU kernel library
// (model.keel.so) from lowered kernels with LLVM 16.
//
// Pipeline: kernel IR → one LLVM module for all kernels (+ the ABI symbols
// keel_kernel_abi_version and keel_kernel_library_id) → new pass manager at O3
// with loop + SLP vectorization for the chosen CPU → x86-64 ELF object →
// `cc -shared` (no build id) into the output path.
//
// Determinism: the same specs, id and options give a byte-identical .so: the
// module has a fixed source name, the object and library are written under
// fixed file names in a private temporary directory, and the link uses
// -Wl,--build-id=none.
//
// Thread-safety: each call builds its own LLVMContext; concurrent calls are safe.
// Errors: kInvalidArgument (duplicate/invalid kernel names), kUnsupported (a
// dtype or CPU the back end cannot handle), kInternal (malformed kernel IR or an
// LLVM verifier failure), kIoError (temp files, linker failures; the message
// carries the linker's output).
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen/kernel_spec.h"
#include "keel/status.h"

namespace keel::codegen {

struct CpuTargetOptions {
  // LLVM CPU name. "auto": x86-64-v4 (AVX-512 F/BW/DQ/VL) when the build host
  // supports it, else x86-64-v3 (AVX2 + FMA) when it does, else the x86-64
  // baseline. "native": the host CPU (not portable).
  // Anything else ("x86-64", "x86-64-v4", "znver3", ...) is used as given.
  std::string cpu = "auto";
  std::string extra_features;  // appended, e.g. "-avx512f"
  int opt_level = 3;           // 0..3
  bool vector_math_library = true;  // vectorize exp/log/pow through glibc libmvec
  std::string linker = "cc";   // driver used as `linker -shared ...`
};

// The target the kernels were compiled for; goes into the executable's
// `targets` table (arch = cpu, features = the enabled ISA extensions).
struct CpuTargetInfo {
  std::string triple;    // "x86_64-unknown-linux-gnu"
  std::string cpu;       // resolved, e.g. "x86-64-v3"
  std::string features;  // e.g. "+avx,+avx2,+fma,+sse4.2"
};

Result<CpuTargetInfo> ResolveCpuTarget(const CpuTargetOptions& options);

// The (optionally optimized) LLVM IR text of the module, for --dump-llvm and tests.
Result<std::string> EmitCpuKernelModuleIR(const std::vector<KernelSpec>& kernels, const std::string& library_id,
                                          const CpuTargetOptions& options, bool optimized);

// Writes the kernel library to out_so_path (replacing it). `info`, when given,
// receives the resolved target.
Status EmitCpuKernelLibrary(const std::vector<KernelSpec>& kernels, const std::string& library_id,
                            const std::string& out_so_path, const CpuTargetOptions& options,
                            CpuTargetInfo* info = nullptr);

}  // namespace keel::codegen
