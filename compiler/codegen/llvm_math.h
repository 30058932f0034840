// compiler/codegen/llvm_math.h — inline LLVM IR expansions of math functions
// shared by the CPU and NVPTX back ends, where the library call would branch
// or stay scalar: on the CPU, glibc's libmvec has no vector variant; on the
// GPU, libdevice's erf branches per element, which splits a flat kernel's
// unrolled elements into basic blocks the load/store vectorizer cannot merge
// (GELU ran with 2-byte accesses in half precision).
//
// Each function emits straight-line IR at the builder's insertion point, for a
// scalar or vector operand (the result has the operand's type), so loops and
// kLanes statements that use it stay vectorized, and both targets compute the
// same approximation.
// Thread-safety: uses only the given builder and module (one thread per module).
// Errors: none.
#pragma once

#include <functional>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace keel::codegen {

// erf of f32 (or a vector of f32): Abramowitz & Stegun 7.1.26,
// erf(x) = sign(x) (1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) e^{-x^2}),
// t = 1 / (1 + p |x|); absolute error below 1.5e-7 (f32 rounding level).
// `exp` emits e^v for the target (the CPU: llvm.exp, vectorized through libmvec
// where enabled; the GPU: libdevice's expf); `div` emits a / b (t's reciprocal;
// its denominator is at least 1).
using EmitFn1 = std::function<llvm::Value*(llvm::Value*)>;
using EmitFn2 = std::function<llvm::Value*(llvm::Value*, llvm::Value*)>;
llvm::Value* EmitErfF32(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, const EmitFn1& exp,
                        const EmitFn2& div);

}  // namespace keel::codegen
