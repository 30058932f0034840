// compiler/codegen/llvm_nvptx_emitter.h — builds the CUDA kernel library
// (model.keel.so) from lowered kernels with LLVM 16's NVPTX back end.
//
// Pipeline: kernel IR → GPU mapping (gpu_mapping.h) → one LLVM module for all
// kernels (triple nvptx64-nvidia-cuda, sm_90, PTX ISA 7.8) → libdevice linked
// in (only what is used) → non-kernel symbols internalized, module flag
// nvvm-reflect-ftz = 0 (NVVMReflect runs at the start of the pipeline) → O3 →
// PTX → `ptxas -arch=<arch> -O3` → cubin. The library is a small x86-64 shared
// object (LLVM globals → object → `cc -shared`, no build id) exporting
//   keel_kernel_abi_version, keel_kernel_library_id,
//   keel_cuda_cubin[] / keel_cuda_cubin_size   (cubin bytes; size 0 without ptxas)
//   keel_cuda_ptx[]   / keel_cuda_ptx_size     (PTX text + a terminating NUL that
//                                               is not counted in the size)
// Kernels are the module's functions named as the specs, one device pointer
// per argument in signature order (workspace last); launch them with
// CudaKernelLaunch(spec) (the same mapping the emitter used).
//
// Determinism: the same specs, id and options give a byte-identical .so.
// Thread-safety: each call builds its own LLVMContext; concurrent calls are safe.
// Errors: kInvalidArgument (duplicate/invalid kernel names), kUnsupported
// (dtypes, arch), kInternal (malformed kernel IR, LLVM verifier), kNotFound
// (libdevice missing), kIoError (temp files, ptxas or linker failures, with
// the tool's output).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/gpu_mapping.h"
#include "compiler/codegen/kernel_spec.h"
#include "keel/status.h"

namespace keel::codegen {

struct NvptxTargetOptions {
  std::string arch = "sm_90";
  std::string ptx_version = "ptx78";  // PTX ISA 7.8: the newest LLVM 16 emits, sm_90 needs it
  int opt_level = 3;                  // 0..3
  std::string libdevice = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
  // ptxas executable; empty or missing: the library carries PTX only (the
  // driver JIT-compiles it at load) and the summary says so.
  std::string ptxas = "/usr/local/cuda/bin/ptxas";
  std::string linker = "cc";
  GpuMappingOptions mapping;
};

struct NvptxLibraryInfo {
  std::string arch;
  uint64_t ptx_bytes = 0;
  uint64_t cubin_bytes = 0;  // 0: no ptxas, PTX only
  std::string note;          // e.g. "ptxas not found: PTX only"
};

// True for architectures with programmatic dependent launch (sm_90 and later):
// the kernels then start with griddepcontrol.wait and the library exports
// keel_cuda_grid_dependency = 1 (see llvm_nvptx_kernel.h).
bool NvptxGridDependency(const std::string& arch);
// The number of "sm_XY" (XY; 0 for another form).
int NvptxSmVersion(const std::string& arch);

// The launch configuration (and mapping) of a kernel on the CUDA target.
Result<GpuMapping> CudaKernelMapping(const KernelSpec& spec, const NvptxTargetOptions& options);

// The LLVM IR of the device module (after libdevice linking and optimization
// when `optimized`), for --dump-llvm and tests.
Result<std::string> EmitNvptxModuleIR(const std::vector<KernelSpec>& kernels, const NvptxTargetOptions& options,
                                      bool optimized);

// The PTX text of the device module.
Result<std::string> EmitNvptxPtx(const std::vector<KernelSpec>& kernels, const NvptxTargetOptions& options);

// Assembles PTX with ptxas into a cubin. kNotFound when ptxas cannot be run.
Result<std::vector<uint8_t>> AssemblePtx(const std::string& ptx, const NvptxTargetOptions& options);

// Writes the CUDA kernel library to out_so_path (replacing it).
Status EmitCudaKernelLibrary(const std::vector<KernelSpec>& kernels, const std::string& library_id,
                             const std::string& out_so_path, const NvptxTargetOptions& options,
                             NvptxLibraryInfo* info = nullptr);

}  // namespace keel::codegen
