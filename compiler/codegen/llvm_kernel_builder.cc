// compiler/codegen/llvm_kernel_builder.cc — target-independent kernel IR →
// LLVM IR translation shared by the CPU and NVPTX back ends (see
// llvm_kernel_builder.h). The instruction sequences here are exactly what both
// back ends emitted before they shared this code: the compiled libraries stay
// byte-identical.
#include "compiler/codegen/llvm_kernel_builder.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

namespace keel::codegen {
namespace {

void CollectLocalBuffersExpr(const KernelFunc& k, const Expr& e, std::set<int>& out) {
  if (e.is_null()) return;
  if (e->kind == ExprKind::kLoad && k.buffer(e->buffer).scope == BufferScope::kLocal) out.insert(e->buffer);
  for (const Expr& o : e->operands) CollectLocalBuffersExpr(k, o, out);
}

}  // namespace

void CollectLocalBuffers(const KernelFunc& k, const StmtNode& s, bool stop_at_parallel, std::set<int>& out) {
  if (stop_at_parallel && s.kind == StmtKind::kFor && s.loop == LoopKind::kParallel) return;
  if (s.kind == StmtKind::kStore && k.buffer(s.buffer).scope == BufferScope::kLocal) out.insert(s.buffer);
  for (const Expr& i : s.indices) CollectLocalBuffersExpr(k, i, out);
  CollectLocalBuffersExpr(k, s.value, out);
  CollectLocalBuffersExpr(k, s.cond, out);
  CollectLocalBuffersExpr(k, s.begin, out);
  CollectLocalBuffersExpr(k, s.end, out);
  for (const Stmt& c : s.body) CollectLocalBuffers(k, *c, stop_at_parallel, out);
  for (const Stmt& c : s.else_body) CollectLocalBuffers(k, *c, stop_at_parallel, out);
}

LlvmKernelBuilder::LlvmKernelBuilder(const KernelFunc& k, llvm::Module& m, std::string target_name,
                                     bool fuse_div_mod)
    : k_(k), m_(m), ctx_(m.getContext()), b_(ctx_), target_name_(std::move(target_name)), fuse_div_mod_(fuse_div_mod) {
  llvm::FastMathFlags fmf;
  fmf.setAllowReassoc();
  fmf.setAllowContract();
  fmf.setNoSignedZeros();
  b_.setFastMathFlags(fmf);
}

Status LlvmKernelBuilder::CheckArgDTypes() const {
  for (const KernelArg& a : k_.args())
    if (!IsSupportedKernelDType(a.dtype))
      return Unsupported(target_name_ + " codegen: kernel " + k_.name() + " argument " + a.name + " has dtype " +
                         ir::DTypeName(a.dtype));
  return Status::Ok();
}

Status LlvmKernelBuilder::Fail(const std::string& message) {
  if (status_.ok()) status_ = Internal(target_name_ + " codegen: kernel " + k_.name() + ": " + message);
  return status_;
}

llvm::Type* LlvmKernelBuilder::MemType(DType t) {
  switch (t) {
    case DType::kF32: return b_.getFloatTy();
    case DType::kF64: return b_.getDoubleTy();
    case DType::kF16: return b_.getHalfTy();
    // bf16 values are kept as their 16 bits: ConvertTo widens/narrows them with
    // integer operations (portable to every target, no bfloat legalization).
    case DType::kBF16: return b_.getInt16Ty();
    case DType::kI8: case DType::kU8: case DType::kBool: return b_.getInt8Ty();
    case DType::kI16: case DType::kU16: return b_.getInt16Ty();
    case DType::kI32: case DType::kU32: return b_.getInt32Ty();
    case DType::kI64: case DType::kU64: return b_.getInt64Ty();
  }
  return b_.getFloatTy();  // unreachable for listed types (CheckArgDTypes / Verify reject the rest)
}

// ---- memory ------------------------------------------------------------------

llvm::Value* LlvmKernelBuilder::BufferBase(KernelRegion& r, const Buffer& buf) {
  switch (buf.scope) {
    case BufferScope::kArg:
      return r.ptrs.at(static_cast<size_t>(buf.arg_index));
    case BufferScope::kWorkspace:
      return b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), r.ptrs.back(), static_cast<uint64_t>(buf.byte_offset));
    case BufferScope::kLocal: {
      auto it = r.locals.find(buf.id);
      if (it == r.locals.end()) { (void)Fail("local " + buf.name + " not allocated in this region"); return nullptr; }
      return it->second;
    }
    case BufferScope::kConstant:
      return ConstantGlobal(buf);
  }
  return nullptr;
}

llvm::Value* LlvmKernelBuilder::ConstantGlobal(const Buffer& buf) {
  auto it = constants_.find(buf.id);
  if (it != constants_.end()) return it->second;
  llvm::Constant* init = llvm::ConstantDataArray::getRaw(
      llvm::StringRef(reinterpret_cast<const char*>(buf.constant_data.data()), buf.constant_data.size()),
      static_cast<uint64_t>(buf.NumElements()), MemType(buf.dtype));
  llvm::Constant* g = NewConstantGlobal(buf, init);
  constants_[buf.id] = g;
  return g;
}

std::vector<std::pair<Expr, int64_t>> LlvmKernelBuilder::LinearTerms(const Buffer& buf,
                                                                     const std::vector<Expr>& indices) const {
  std::vector<std::pair<Expr, int64_t>> terms;
  int64_t stride = 1;
  for (size_t i = indices.size(); i-- > 0;) {
    const Expr& x = indices[i];
    if (fuse_div_mod_ && i > 0 && x->kind == ExprKind::kBinary && x->binary == BinaryOp::kMod &&
        x->operands[1].IsIntConst(buf.shape[i])) {
      const Expr& hi = indices[i - 1];
      if (hi->kind == ExprKind::kBinary && hi->binary == BinaryOp::kDiv && hi->operands[1].IsIntConst(buf.shape[i]) &&
          hi->operands[0].get() == x->operands[0].get()) {
        terms.emplace_back(x->operands[0], stride);
        stride *= buf.shape[i] * buf.shape[i - 1];
        --i;
        continue;
      }
    }
    terms.emplace_back(x, stride);
    stride *= buf.shape[i];
  }
  return terms;
}

llvm::Value* LlvmKernelBuilder::Address(KernelRegion& r, int buffer, const std::vector<Expr>& indices) {
  const Buffer& buf = k_.buffer(buffer);
  llvm::Value* base = BufferBase(r, buf);
  if (!base) return nullptr;
  llvm::Value* linear = nullptr;
  for (const auto& [x, stride] : LinearTerms(buf, indices)) {
    llvm::Value* idx = EmitExpr(r, x);
    if (!idx) return nullptr;
    llvm::Value* term =
        stride == 1 ? idx
                    : b_.CreateMul(idx, llvm::ConstantInt::get(idx->getType(), static_cast<uint64_t>(stride)), "", false, true);
    if (linear) Match(linear, term);
    linear = linear ? b_.CreateAdd(linear, term, "", false, true) : term;
  }
  if (!linear) linear = b_.getInt64(0);
  return b_.CreateInBoundsGEP(MemType(buf.dtype), base, linear);
}

// ---- expressions ---------------------------------------------------------------

llvm::Value* LlvmKernelBuilder::EmitExpr(KernelRegion& r, const Expr& e) {
  if (e.is_null()) { (void)Fail("null expression"); return nullptr; }
  auto memo = memo_.find(e.get());
  if (memo != memo_.end()) return memo->second;
  llvm::Value* v = EmitExprUncached(r, e);
  memo_[e.get()] = v;
  return v;
}

llvm::Value* LlvmKernelBuilder::EmitExprUncached(KernelRegion& r, const Expr& e) {
  switch (e->kind) {
    case ExprKind::kIntConst:
      if (e->type == DType::kBool) return b_.getInt1(e->int_value != 0);
      return llvm::ConstantInt::get(RegType(e->type), static_cast<uint64_t>(e->int_value), true);
    case ExprKind::kFloatConst:
      // bf16 registers hold the bits (an i16): the rounding folds to a constant.
      if (e->type == DType::kBF16) {
        return LlvmKernelBuilder::NarrowToBF16(llvm::ConstantFP::get(b_.getFloatTy(), e->float_value));
      }
      return llvm::ConstantFP::get(RegType(e->type), e->float_value);
    case ExprKind::kVar: {
      auto it = r.vars.find(e->int_value);
      if (it == r.vars.end()) { (void)Fail("unbound variable"); return nullptr; }
      return it->second;
    }
    case ExprKind::kLoad: {
      llvm::Value* addr = Address(r, e->buffer, e->operands);
      if (!addr) return nullptr;
      const Buffer& buf = k_.buffer(e->buffer);
      llvm::Value* v = b_.CreateLoad(MemType(buf.dtype), addr);
      if (buf.dtype == DType::kBool) v = b_.CreateICmpNE(v, b_.getInt8(0));
      return v;
    }
    case ExprKind::kCast: {
      llvm::Value* a = EmitExpr(r, e->operands[0]);
      return a ? ConvertTo(a, e->operands[0].type(), e->type) : nullptr;
    }
    case ExprKind::kBitcast: {
      llvm::Value* a = EmitExpr(r, e->operands[0]);
      if (!a) return nullptr;
      llvm::Type* t = RegType(e->type);
      if (IsWide(a)) t = llvm::FixedVectorType::get(t, lanes_);
      return b_.CreateBitCast(a, t);
    }
    case ExprKind::kSelect: {
      llvm::Value* c = EmitExpr(r, e->operands[0]);
      llvm::Value* a = EmitExpr(r, e->operands[1]);
      llvm::Value* b = EmitExpr(r, e->operands[2]);
      if (!c || !a || !b) return nullptr;
      if (IsWide(c) || IsWide(a) || IsWide(b)) { c = Splat(c); a = Splat(a); b = Splat(b); }
      return b_.CreateSelect(c, a, b);
    }
    case ExprKind::kUnary: return EmitUnary(r, e);
    case ExprKind::kBinary: return EmitBinary(r, e);
  }
  return nullptr;
}

llvm::Value* LlvmKernelBuilder::EmitUnary(KernelRegion& r, const Expr& e) {
  llvm::Value* a = EmitExpr(r, e->operands[0]);
  if (!a) return nullptr;
  bool fl = IsFloat(e->operands[0].type());
  if (!fl && e->unary != UnaryOp::kNeg && e->unary != UnaryOp::kAbs && e->unary != UnaryOp::kNot) {
    (void)Fail(std::string("integer ") + UnaryOpName(e->unary));
    return nullptr;
  }
  switch (e->unary) {
    case UnaryOp::kNeg: return fl ? b_.CreateFNeg(a) : b_.CreateNeg(a);
    case UnaryOp::kAbs:
      if (fl) return Intrinsic1(llvm::Intrinsic::fabs, a);
      return b_.CreateSelect(b_.CreateICmpSLT(a, llvm::ConstantInt::get(a->getType(), 0)), b_.CreateNeg(a), a);
    case UnaryOp::kExp:
    case UnaryOp::kLog:
    case UnaryOp::kRsqrt:
    case UnaryOp::kTanh:
    case UnaryOp::kErf: return EmitMath(e->unary, a);
    case UnaryOp::kSqrt: return Intrinsic1(llvm::Intrinsic::sqrt, a);
    case UnaryOp::kSigmoid: {
      llvm::Value* one = llvm::ConstantFP::get(a->getType(), 1.0);
      return EmitFDiv(one, b_.CreateFAdd(one, EmitMath(UnaryOp::kExp, b_.CreateFNeg(a))));
    }
    case UnaryOp::kFloor: return Intrinsic1(llvm::Intrinsic::floor, a);
    case UnaryOp::kCeil: return Intrinsic1(llvm::Intrinsic::ceil, a);
    case UnaryOp::kNot: return b_.CreateNot(a);
    case UnaryOp::kSin: case UnaryOp::kCos: case UnaryOp::kTan: case UnaryOp::kAsin: case UnaryOp::kAcos:
    case UnaryOp::kAtan: case UnaryOp::kSinh: case UnaryOp::kCosh: case UnaryOp::kAsinh: case UnaryOp::kAcosh:
    case UnaryOp::kAtanh: case UnaryOp::kRound:
      return EmitMath(e->unary, a);
  }
  return nullptr;
}

llvm::Value* LlvmKernelBuilder::EmitBinary(KernelRegion& r, const Expr& e) {
  llvm::Value* a = EmitExpr(r, e->operands[0]);
  llvm::Value* b = EmitExpr(r, e->operands[1]);
  if (!a || !b) return nullptr;
  Match(a, b);
  DType t = e->operands[0].type();
  bool fl = IsFloat(t);
  bool uns = IsUnsigned(t);
  switch (e->binary) {
    case BinaryOp::kAdd: return fl ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b, "", false, !uns);
    case BinaryOp::kSub: return fl ? b_.CreateFSub(a, b) : b_.CreateSub(a, b, "", false, !uns);
    case BinaryOp::kMul: return fl ? b_.CreateFMul(a, b) : b_.CreateMul(a, b, "", false, !uns);
    case BinaryOp::kDiv: return fl ? EmitFDiv(a, b) : (uns ? b_.CreateUDiv(a, b) : b_.CreateSDiv(a, b));
    case BinaryOp::kMod: return fl ? EmitFloatRem(a, b) : (uns ? b_.CreateURem(a, b) : b_.CreateSRem(a, b));
    case BinaryOp::kMin:
      return b_.CreateSelect(fl ? b_.CreateFCmpOLT(a, b) : (uns ? b_.CreateICmpULT(a, b) : b_.CreateICmpSLT(a, b)), a, b);
    case BinaryOp::kMax:
      return b_.CreateSelect(fl ? b_.CreateFCmpOGT(a, b) : (uns ? b_.CreateICmpUGT(a, b) : b_.CreateICmpSGT(a, b)), a, b);
    case BinaryOp::kPow:
      if (!fl) { (void)Fail("integer pow"); return nullptr; }
      return EmitPow(a, b);
    case BinaryOp::kLt: return fl ? b_.CreateFCmpOLT(a, b) : (uns ? b_.CreateICmpULT(a, b) : b_.CreateICmpSLT(a, b));
    case BinaryOp::kLe: return fl ? b_.CreateFCmpOLE(a, b) : (uns ? b_.CreateICmpULE(a, b) : b_.CreateICmpSLE(a, b));
    case BinaryOp::kGt: return fl ? b_.CreateFCmpOGT(a, b) : (uns ? b_.CreateICmpUGT(a, b) : b_.CreateICmpSGT(a, b));
    case BinaryOp::kGe: return fl ? b_.CreateFCmpOGE(a, b) : (uns ? b_.CreateICmpUGE(a, b) : b_.CreateICmpSGE(a, b));
    case BinaryOp::kEq: return fl ? b_.CreateFCmpOEQ(a, b) : b_.CreateICmpEQ(a, b);
    case BinaryOp::kNe: return fl ? b_.CreateFCmpUNE(a, b) : b_.CreateICmpNE(a, b);
    case BinaryOp::kAnd: return b_.CreateAnd(a, b);
    case BinaryOp::kOr: return b_.CreateOr(a, b);
    case BinaryOp::kXor: return b_.CreateXor(a, b);
    case BinaryOp::kShl: return b_.CreateShl(a, b);
    case BinaryOp::kShr: return uns ? b_.CreateLShr(a, b) : b_.CreateAShr(a, b);
  }
  return nullptr;
}

llvm::Value* LlvmKernelBuilder::ConvertTo(llvm::Value* v, DType from, DType to) {
  if (from == to) return v;
  if (from == DType::kBF16) return ConvertTo(WidenBF16(v), DType::kF32, to);
  if (to == DType::kBF16) return NarrowToBF16(ConvertTo(v, from, DType::kF32));
  llvm::Type* t = RegType(to);
  if (IsWide(v)) t = llvm::FixedVectorType::get(t, lanes_);
  bool fsrc = IsFloat(from), fdst = IsFloat(to);
  bool usrc = IsUnsigned(from);
  if (to == DType::kBool) {
    return fsrc ? b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0))
                : b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  if (fsrc && fdst) return b_.CreateFPCast(v, t);
  if (fsrc) return keel::IsUnsignedIntType(to) ? b_.CreateFPToUI(v, t) : b_.CreateFPToSI(v, t);
  if (fdst) return usrc ? b_.CreateUIToFP(v, t) : b_.CreateSIToFP(v, t);
  return b_.CreateIntCast(v, t, !usrc);
}

llvm::Type* LlvmKernelBuilder::LikeShape(llvm::Type* scalar, const llvm::Value* like) const {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(like->getType())) {
    return llvm::FixedVectorType::get(scalar, vt->getNumElements());
  }
  return scalar;
}

// bf16 bits -> f32: the bf16 bits are the f32's upper half.
llvm::Value* LlvmKernelBuilder::WidenBF16(llvm::Value* bits) {
  llvm::Value* wide = b_.CreateShl(b_.CreateZExt(bits, LikeShape(b_.getInt32Ty(), bits)), 16);
  return b_.CreateBitCast(wide, LikeShape(b_.getFloatTy(), bits));
}

// f32 -> bf16 bits, rounding to nearest even; NaN stays a (quiet) NaN.
llvm::Value* LlvmKernelBuilder::NarrowToBF16(llvm::Value* f) {
  llvm::Type* i32 = LikeShape(b_.getInt32Ty(), f);
  llvm::Value* bits = b_.CreateBitCast(f, i32);
  auto c32 = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  llvm::Value* lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), c32(1));
  llvm::Value* rounded = b_.CreateLShr(b_.CreateAdd(bits, b_.CreateAdd(lsb, c32(0x7FFF))), 16);
  llvm::Value* is_nan = b_.CreateFCmpUNO(f, f);
  llvm::Value* quiet = b_.CreateOr(b_.CreateLShr(bits, 16), c32(0x40));
  llvm::Value* out = b_.CreateSelect(is_nan, quiet, rounded);
  return b_.CreateTrunc(out, LikeShape(b_.getInt16Ty(), f));
}

llvm::Value* LlvmKernelBuilder::Intrinsic1(llvm::Intrinsic::ID id, llvm::Value* a) {
  return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, id, {a->getType()}), {a});
}

// ---- statements -------------------------------------------------------------------

Status LlvmKernelBuilder::StoreOperands(KernelRegion& r, const StmtNode& s, llvm::Value*& value, llvm::Value*& addr) {
  memo_.clear();
  value = EmitExpr(r, s.value);
  addr = Address(r, s.buffer, s.indices);
  memo_.clear();
  if (!value || !addr) return Fail("bad store");
  if (k_.buffer(s.buffer).dtype == DType::kBool) value = b_.CreateZExt(value, b_.getInt8Ty());
  return status_;
}

Status LlvmKernelBuilder::LoopBounds(KernelRegion& r, const StmtNode& s, llvm::Value*& begin, llvm::Value*& end,
                                     const std::string& what) {
  memo_.clear();
  begin = EmitExpr(r, s.begin);
  end = EmitExpr(r, s.end);
  memo_.clear();
  if (!begin || !end) return Fail(what);
  return status_;
}

Status LlvmKernelBuilder::EmitIf(KernelRegion& r, const StmtNode& s, const EmitChild& emit) {
  memo_.clear();
  llvm::Value* c = EmitExpr(r, s.cond);
  memo_.clear();
  if (!c) return Fail("bad condition");
  llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", r.fn);
  llvm::BasicBlock* else_bb = s.else_body.empty() ? nullptr : llvm::BasicBlock::Create(ctx_, "else", r.fn);
  llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "endif", r.fn);
  b_.CreateCondBr(c, then_bb, else_bb ? else_bb : join);
  b_.SetInsertPoint(then_bb);
  for (const Stmt& c2 : s.body) KEEL_RETURN_IF_ERROR(emit(*c2));
  b_.CreateBr(join);
  if (else_bb) {
    b_.SetInsertPoint(else_bb);
    for (const Stmt& c2 : s.else_body) KEEL_RETURN_IF_ERROR(emit(*c2));
    b_.CreateBr(join);
  }
  b_.SetInsertPoint(join);
  return status_;
}

Status LlvmKernelBuilder::EmitUnrolled(KernelRegion& r, const StmtNode& s, int64_t begin, int64_t end,
                                       const EmitChild& emit) {
  for (int64_t i = begin; i < end; ++i) {
    r.vars[s.var->int_value] = I64(i);
    for (const Stmt& c : s.body) KEEL_RETURN_IF_ERROR(emit(*c));
  }
  r.vars.erase(s.var->int_value);
  return status_;
}

Status LlvmKernelBuilder::CanonicalLoop(llvm::Function* fn, llvm::Value* begin, llvm::Value* end, llvm::Value* step,
                                        const std::string& iv_name, const LoopLabels& labels,
                                        const std::function<Status(llvm::Value*)>& body, llvm::BranchInst** latch) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, labels.header, fn);
  llvm::BasicBlock* bb = llvm::BasicBlock::Create(ctx_, labels.body, fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, labels.exit, fn);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, iv_name);
  iv->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(iv, end), bb, exit);
  b_.SetInsertPoint(bb);
  KEEL_RETURN_IF_ERROR(body(iv));
  llvm::Value* next = b_.CreateAdd(iv, step, "", false, true);
  llvm::BranchInst* back = b_.CreateBr(header);
  iv->addIncoming(next, b_.GetInsertBlock());
  b_.SetInsertPoint(exit);
  if (latch) *latch = back;
  return status_;
}

void LlvmKernelBuilder::SetLoopProperty(llvm::BranchInst* latch, const std::vector<llvm::Metadata*>& property) {
  llvm::MDNode* prop = llvm::MDNode::get(ctx_, property);
  llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx_, {nullptr, prop});
  loop_id->replaceOperandWith(0, loop_id);
  latch->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
}

}  // namespace keel::codegen
