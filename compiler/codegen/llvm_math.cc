// compiler/codegen/llvm_math.cc — see llvm_math.h.
#include "compiler/codegen/llvm_math.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

namespace keel::codegen {
namespace {

// Horner's rule over `coefficients` (lowest degree first) at t.
llvm::Value* Horner(llvm::IRBuilder<>& b, llvm::Value* t, std::initializer_list<double> coefficients) {
  llvm::Type* type = t->getType();
  const double* c = coefficients.end();
  llvm::Value* p = llvm::ConstantFP::get(type, *--c);
  while (c != coefficients.begin()) p = b.CreateFAdd(b.CreateFMul(p, t), llvm::ConstantFP::get(type, *--c));
  return p;
}

// Contraction into FMAs only: no reassociation, no sign-of-zero freedom.
void ContractOnly(llvm::IRBuilder<>& b) {
  llvm::FastMathFlags fmf;
  fmf.setAllowContract();
  b.setFastMathFlags(fmf);
}

}  // namespace

llvm::Value* EmitExpNonPositiveF32(llvm::IRBuilder<>& b, llvm::Value* v) {
  llvm::IRBuilderBase::FastMathFlagGuard keep(b);
  ContractOnly(b);
  llvm::Type* t = v->getType();
  auto c = [&](double x) { return llvm::ConstantFP::get(t, x); };
  // max(v, -86) that keeps a NaN (select on an ordered less-than).
  v = b.CreateSelect(b.CreateFCmpOLT(v, c(-86.0)), c(-86.0), v);
  // n = round(v / ln 2) by adding 1.5 * 2^23: the sum's unit is 1, so its rounding rounds v / ln 2
  // to an integer (ties to even; exact for v / ln 2 in [-124, 0]), which then sits in the low
  // mantissa bits, and subtracting the constant again gives n exactly. No conversion
  // instructions (SSE2 has no vector rounding; llvm.roundeven would be a libm call per lane).
  llvm::Type* it = t->isVectorTy() ? llvm::VectorType::get(b.getInt32Ty(), llvm::cast<llvm::VectorType>(t))
                                   : static_cast<llvm::Type*>(b.getInt32Ty());
  llvm::Value* shifted = b.CreateFAdd(b.CreateFMul(v, c(1.4426950408889634)), c(12582912.0));
  llvm::Value* n = b.CreateFSub(shifted, c(12582912.0));
  // ln 2 = 0.693145751953125 (exact in 16 bits, so n * hi is exact) + 1.4286068e-6.
  llvm::Value* f = b.CreateFSub(v, b.CreateFMul(n, c(0.693145751953125)));
  f = b.CreateFSub(f, b.CreateFMul(n, c(1.428606765330187e-06)));
  // e^f = 1 + f (1 + f (c2 + c3 f + ... + c6 f^4)).
  llvm::Value* p = Horner(b, f, {0.4999999403953552, 0.1666652113199234, 0.04166838899254799,
                                 0.00836869701743126, 0.0013814546400681138});
  p = b.CreateFAdd(b.CreateFMul(p, f), c(1.0));
  p = b.CreateFAdd(b.CreateFMul(p, f), c(1.0));
  // p * 2^n: n added to p's exponent field (p is in [0.7, 1.42], biased exponent 126 or 127,
  // and n >= -124 for v >= -86, so the result stays normal). The shifted sum's bits are
  // 0x4B400000 + n; shifted left by 23, only n's two's complement is left in the top 9 bits
  // (0x4B400000 << 23 is 0 mod 2^32), and a NaN's shifted bits are 0: it stays NaN.
  llvm::Value* bits = b.CreateAdd(b.CreateBitCast(p, it), b.CreateShl(b.CreateBitCast(shifted, it), 23));
  return b.CreateBitCast(bits, t);
}

llvm::Value* EmitErfF32(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, const EmitFn1& exp) {
  llvm::IRBuilderBase::FastMathFlagGuard keep(b);
  ContractOnly(b);
  llvm::Type* t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto intrinsic = [&](llvm::Intrinsic::ID id, std::vector<llvm::Value*> args) {
    return b.CreateCall(llvm::Intrinsic::getDeclaration(&m, id, {t}), args);
  };
  llvm::Value* ax = intrinsic(llvm::Intrinsic::fabs, {x});
  // P(t) = t (c1 + c2 t + ... + c8 t^7) ~ log(erfc(t)), fitted on [0, 3.9]. Beyond, P falls
  // monotonically from P(3.9) = -17.2 (to -inf where t^8 overflows), so erf stays 1 in f32 and
  // |x| needs no clamp; a NaN stays NaN.
  llvm::Value* poly = Horner(b, ax, {-1.128380298614502, -0.636597752571106, -0.10291961580514908,
                                     0.019583968445658684, -0.0005369423306547105, -0.0010323961032554507,
                                     0.00030880043050274253, -3.1439947633771226e-05});
  llvm::Value* y = b.CreateFSub(c(1.0), exp(b.CreateFMul(poly, ax)));
  return intrinsic(llvm::Intrinsic::copysign, {y, x});
}

// Where the rational form reaches 1 - 2^-24 (Eigen's bound): beyond it, it would exceed 1.
constexpr double kTanhClamp = 7.90531110763549805;

llvm::Value* EmitTanhF32(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x) {
  llvm::IRBuilderBase::FastMathFlagGuard keep(b);
  ContractOnly(b);
  llvm::Type* t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  // Clamped by selects on ordered compares, so that a NaN passes through unchanged.
  llvm::Value* xc = b.CreateSelect(b.CreateFCmpOGT(x, c(kTanhClamp)), c(kTanhClamp), x);
  xc = b.CreateSelect(b.CreateFCmpOLT(xc, c(-kTanhClamp)), c(-kTanhClamp), xc);
  llvm::Value* x2 = b.CreateFMul(xc, xc);
  llvm::Value* p = Horner(b, x2, {4.89352455891786e-03, 6.37261928875436e-04, 1.48572235717979e-05,
                                  5.12229709037114e-08, -8.60467152213735e-11, 2.00018790482477e-13,
                                  -2.76076847742355e-16});
  llvm::Value* q = Horner(b, x2, {4.89352518554385e-03, 2.26843463243900e-03, 1.18534705686654e-04,
                                  1.19825839466702e-06});
  llvm::Value* y = b.CreateFDiv(b.CreateFMul(xc, p), q);
  llvm::Value* ax = b.CreateCall(llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::fabs, {t}), {x});
  return b.CreateSelect(b.CreateFCmpOLT(ax, c(4e-4)), x, y);
}

}  // namespace keel::codegen
