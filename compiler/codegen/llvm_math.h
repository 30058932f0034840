// compiler/codegen/llvm_math.h — inline LLVM IR expansions of math functions
// shared by the CPU and NVPTX back ends, where the library call would branch,
// stay scalar or cost a call: on the CPU, glibc's libmvec has no vector erf,
// and its vector expf is a call, which inside a GEMM epilogue (ConvNeXt's
// GELU) spills every live vector register around it; on the GPU, libdevice's
// erf branches per element, which splits a flat kernel's unrolled elements into
// basic blocks the load/store vectorizer cannot merge (GELU ran with 2-byte
// accesses in half precision).
//
// Each function emits straight-line IR at the builder's insertion point, for a
// scalar or vector operand (the result has the operand's type), so loops and
// kLanes statements that use it stay vectorized, and both targets compute the
// same approximation. The expansions use only fmul/fadd (contracted into FMAs
// where the target has them), fabs, comparisons and integer bit operations,
// and they turn off the builder's reassociation while they emit: a
// reassociated range reduction or Horner chain would lose the accuracy stated
// below.
// Thread-safety: uses only the given builder and module (one thread per module).
// Errors: none.
#pragma once

#include <functional>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace keel::codegen {

// e^v of f32 (or a vector of f32) for v <= 0, straight-line: n = round(v /
// ln 2) (by adding and subtracting 1.5 * 2^23), f = v - n ln 2
// (two-constant Cody-Waite), e^f by a degree-6 polynomial (relative error
// 3.1e-9 on |f| <= ln 2 / 2), and n added to its exponent field. v is
// clamped below at -86 (e^-86 = 4.5e-38, still normal) and a NaN stays NaN;
// results for v > 0 are not defined (the exponent field overflows above
// v = 88).
llvm::Value* EmitExpNonPositiveF32(llvm::IRBuilder<>& b, llvm::Value* v);

// erf of f32 (or a vector of f32) without a division:
// erf(x) = sign(x) (1 - e^{P(t)}), t = |x|, where P is a degree-8
// polynomial with P(0) = 0 fitted to log(erfc(t)) on [0, 3.9], weighted by
// erfc(t) (so the absolute error of erf is even across the range). Evaluated in f32 the
// absolute error is at most 8.7e-8 with FMAs and 9.1e-8 without, over
// [-6, 6] against the correctly rounded erf (the A&S 7.1.26 form this
// replaced: 5.3e-7); beyond 3.9, P falls monotonically below -17.2 and erf
// is 1 to f32 precision. `exp` emits e^v
// for v <= 0 (the CPU: EmitExpNonPositiveF32; the GPU: libdevice's expf).
using EmitFn1 = std::function<llvm::Value*(llvm::Value*)>;
llvm::Value* EmitErfF32(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, const EmitFn1& exp);

// tanh of f32 (or a vector of f32), straight-line: x clamped to +-7.9053 (where
// tanh is 1 - 2^-24 in f32; beyond, the rational form would exceed 1), then
// x P(x^2) / Q(x^2), the rational approximation of degrees 13 / 6 that Eigen
// and ONNX Runtime (MLAS) use; a |x| below 4e-4 returns x itself (its f32
// tanh). Over [-10, 10] against tanh in double, absolute and relative error at
// most 2.6e-7 with FMAs and 3.2e-7 without (lanes_test.cc checks every ISA). A
// NaN stays NaN; the sign of zero is kept. Replaces libm's tanhf, which has no
// vector form below glibc 2.35 and was called once per lane (the tanh-GELU of
// a T5 feed-forward layer took 8x its GEMM's time; a GRU's gates use it too).
llvm::Value* EmitTanhF32(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x);

}  // namespace keel::codegen
