// compiler/codegen/llvm_cpu_kernel.h — translates one kernel-IR KernelFunc into
// LLVM IR functions implementing the CPU kernel ABI (include/keel/kernel_abi.h).
//
// For a kernel named K the module receives:
//   i32 @K(ptr %args, ptr %ctx)              exported; loads the argument pointers
//   internal i32 @K.impl(ptr noalias ..., ptr %ctx)     the body (noalias lets the
//                                            vectorizer skip runtime alias checks)
//   internal void @K.par<i>(ptr %closure, i64 %begin, i64 %end)  one per parallel
//                                            loop, called through ctx->parallel_for
//   internal void @K.par<i>.impl(ptr noalias ..., i64 captured vars..., i64, i64)
// Kernels assume their arguments do not overlap in memory (destination-passing
// style with planner-disjoint buffers).
//
// Thread-safety: uses the module's LLVMContext; one thread per context.
// Errors: kInternal for malformed kernel IR (run KernelFunc::Verify first),
// kUnsupported for dtypes the CPU back end does not handle.
#pragma once

#include <string>

#include "compiler/codegen/kernel_ir.h"
#include "keel/status.h"

namespace llvm {
class Module;
}

namespace keel::codegen {

struct CpuFunctionAttrs {
  std::string cpu;       // "target-cpu" attribute, e.g. "x86-64-v3"
  std::string features;  // "target-features" attribute, e.g. "+avx2,+fma"
  // The library is linked with glibc's libmvec: vector f32 exp/log of kLanes
  // statements call its AVX2 / AVX-512 variants directly.
  bool vector_math = false;
};

Status EmitCpuKernel(const KernelFunc& kernel, const CpuFunctionAttrs& attrs, llvm::Module& module);

}  // namespace keel::codegen
