// compiler/codegen/llvm_nvptx_kernel.h — translates one kernel-IR KernelFunc
// into an LLVM IR CUDA kernel (target nvptx64-nvidia-cuda) following a
// GpuMapping (gpu_mapping.h).
//
// For a kernel named K the module receives
//   void @K(ptr noalias align 16 %arg0, ..., [ptr %workspace])
// marked as a kernel in !nvvm.annotations (with maxntid = the mapping's block
// size): one device pointer per argument in signature order, the workspace
// last, exactly what the VM passes to cuLaunchKernel. Read-only arguments carry
// `readonly` so the back end may use the non-coherent (texture) load path.
// Math functions are calls to libdevice (__nv_expf, __nv_tanhf, ...), resolved
// when the emitter links libdevice into the module; sqrt/floor/ceil/fabs are
// LLVM intrinsics. Row reductions use llvm.nvvm.shfl.sync.bfly and a 32-entry
// static shared array per kernel (`K.red`).
//
// Thread-safety: uses the module's LLVMContext; one thread per context.
// Errors: kInternal for malformed kernel IR (KernelFunc::Verify) or a mapping
// that does not belong to the kernel; kUnsupported for dtypes the back end
// does not handle.
#pragma once

#include "compiler/codegen/gpu_mapping.h"
#include "compiler/codegen/kernel_ir.h"
#include "keel/status.h"

namespace llvm {
class Module;
}

namespace keel::codegen {

// sm_version (e.g. 90 for sm_90; 0: no newer features) enables:
//   90+: the kernel begins with griddepcontrol.launch_dependents (the next
//        kernel's blocks may be scheduled early) and griddepcontrol.wait
//        (nothing is read or written before the previous grid has completed
//        and its memory is visible), so the VM may launch it with programmatic
//        stream serialization and hide launch latency between dependent kernels;
//   80+: f32 -> bf16 conversions as one cvt.rn.bf16.f32 instruction.
// Kernels whose every result is f16/bf16 compute their f32 divisions with
// div.full.f32 / rcp.approx (within 2 ulp of f32, 2^11 times finer than the
// half rounding that follows); other kernels divide exactly (div.rn).
Status EmitNvptxKernel(const KernelFunc& kernel, const GpuMapping& mapping, llvm::Module& module,
                       int sm_version = 0);

}  // namespace keel::codegen
