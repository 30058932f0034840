// compiler/codegen/llvm_cpu_math.h — inline LLVM IR expansions of math
// functions for the CPU back end, used where the library call would stay
// scalar (glibc's libmvec has no vector variant) and dominate a kernel.
//
// Each function emits straight-line IR at the builder's insertion point, for a
// scalar or vector operand (the result has the operand's type), so loops and
// kLanes statements that use it stay vectorized.
// Thread-safety: uses only the given builder and module (one thread per module).
// Errors: none.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace keel::codegen {

// erf of f32 (or a vector of f32): Abramowitz & Stegun 7.1.26,
// erf(x) = sign(x) (1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) e^{-x^2}),
// t = 1 / (1 + p |x|); absolute error below 1.5e-7 (f32 rounding level).
// exp is llvm.exp (vectorized through libmvec where enabled).
llvm::Value* EmitErfF32(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x);

}  // namespace keel::codegen
