// compiler/codegen/llvm_math.cc — see llvm_math.h.
#include "compiler/codegen/llvm_math.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

namespace keel::codegen {

llvm::Value* EmitErfF32(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Value* x, const EmitFn1& exp,
                        const EmitFn2& div) {
  llvm::Type* t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto intrinsic = [&](llvm::Intrinsic::ID id, std::vector<llvm::Value*> args) {
    return b.CreateCall(llvm::Intrinsic::getDeclaration(&m, id, {t}), args);
  };
  llvm::Value* ax = intrinsic(llvm::Intrinsic::fabs, {x});
  llvm::Value* tt = div(c(1.0), b.CreateFAdd(c(1.0), b.CreateFMul(c(0.3275911), ax)));
  llvm::Value* poly = c(1.061405429);
  for (double a : {-1.453152027, 1.421413741, -0.284496736, 0.254829592}) poly = b.CreateFAdd(c(a), b.CreateFMul(tt, poly));
  poly = b.CreateFMul(tt, poly);
  llvm::Value* e = exp(b.CreateFNeg(b.CreateFMul(ax, ax)));
  llvm::Value* y = b.CreateFSub(c(1.0), b.CreateFMul(poly, e));
  return intrinsic(llvm::Intrinsic::copysign, {y, x});
}

}  // namespace keel::codegen
