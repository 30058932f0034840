// compiler/codegen/llvm_cpu_kernel.cc — kernel IR → LLVM IR for the CPU ABI.
//
// Straightforward structural translation: every `for` becomes a canonical loop
// (unroll loops are replicated here so that SROA + SLP see constant indices,
// which is how the GEMM micro-kernel's accumulators end up in vector registers),
// every parallel loop is outlined into a body function called through
// ctx->parallel_for, loads/stores linearize their multi-dimensional index
// row-major. Float math carries `reassoc contract` so reductions vectorize and
// multiply-adds fuse into FMA.
//
// kLanes loops are emitted as explicit SIMD code (no auto-vectorizer involved):
// inside one, every expression is either uniform (a scalar) or varying (an
// LLVM vector with one element per lane). An access whose linear index is
// affine in the lane variable with stride 1 becomes one vector load/store, a
// lane-invariant one stays scalar, a load with stride 2..4 a masked load of
// the span plus a shuffle, anything else a gather/scatter.
// Index pairs (e / S, e % S) over a dimension of size S linearize to e, which
// keeps accesses through delinearized indices (conv outputs) unit-stride.
#include "compiler/codegen/llvm_cpu_kernel.h"

#include "compiler/codegen/llvm_cpu_math.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <map>
#include <optional>
#include <set>

namespace keel::codegen {
namespace {

// Collects the kernel-local buffers referenced under a statement (not crossing
// into parallel loops, which allocate their own).
void CollectLocals(const KernelFunc& k, const StmtNode& s, std::set<int>& out);

void CollectLocalsExpr(const KernelFunc& k, const Expr& e, std::set<int>& out) {
  if (e.is_null()) return;
  if (e->kind == ExprKind::kLoad && k.buffer(e->buffer).scope == BufferScope::kLocal) out.insert(e->buffer);
  for (const Expr& o : e->operands) CollectLocalsExpr(k, o, out);
}

void CollectLocals(const KernelFunc& k, const StmtNode& s, std::set<int>& out) {
  if (s.kind == StmtKind::kFor && s.loop == LoopKind::kParallel) return;
  if (s.kind == StmtKind::kStore && k.buffer(s.buffer).scope == BufferScope::kLocal) out.insert(s.buffer);
  for (const Expr& i : s.indices) CollectLocalsExpr(k, i, out);
  CollectLocalsExpr(k, s.value, out);
  CollectLocalsExpr(k, s.cond, out);
  CollectLocalsExpr(k, s.begin, out);
  CollectLocalsExpr(k, s.end, out);
  for (const Stmt& c : s.body) CollectLocals(k, *c, out);
  for (const Stmt& c : s.else_body) CollectLocals(k, *c, out);
}

// True when `s` (a loop) directly contains an unrolled loop, not counting
// nested non-unrolled loops.
bool ContainsUnroll(const StmtNode& s) {
  for (const Stmt& c : s.body) {
    if (c->kind == StmtKind::kFor) {
      if (c->loop == LoopKind::kUnroll || c->loop == LoopKind::kLanes) return true;
      continue;
    }
    if (ContainsUnroll(*c)) return true;
  }
  for (const Stmt& c : s.else_body)
    if (c->kind != StmtKind::kFor && ContainsUnroll(*c)) return true;
  return false;
}

class CpuKernelEmitter {
 public:
  CpuKernelEmitter(const KernelFunc& k, const CpuFunctionAttrs& attrs, llvm::Module& m)
      : k_(k), attrs_(attrs), m_(m), ctx_(m.getContext()), b_(ctx_) {
    llvm::FastMathFlags fmf;
    fmf.setAllowReassoc();
    fmf.setAllowContract();
    fmf.setNoSignedZeros();
    b_.setFastMathFlags(fmf);
  }

  Status Emit() {
    for (const KernelArg& a : k_.args())
      if (!IsSupportedKernelDType(a.dtype))
        return Unsupported("CPU codegen: kernel " + k_.name() + " argument " + a.name + " has dtype " +
                           ir::DTypeName(a.dtype));
    num_ptrs_ = k_.args().size() + (k_.workspace_bytes() > 0 ? 1 : 0);
    llvm::Type* ptr = b_.getPtrTy();
    llvm::Type* i32 = b_.getInt32Ty();

    // impl: (ptr noalias × num_ptrs, ptr ctx) -> i32
    std::vector<llvm::Type*> impl_params(num_ptrs_, ptr);
    impl_params.push_back(ptr);
    llvm::Function* impl = NewFunction(k_.name() + ".impl", llvm::FunctionType::get(i32, impl_params, false), true);
    for (size_t i = 0; i < num_ptrs_; ++i) impl->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);

    // exported wrapper
    llvm::Function* entry = llvm::Function::Create(llvm::FunctionType::get(i32, {ptr, ptr}, false),
                                                   llvm::GlobalValue::ExternalLinkage, k_.name(), m_);
    SetAttrs(entry);
    {
      b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
      std::vector<llvm::Value*> call_args;
      for (size_t i = 0; i < num_ptrs_; ++i) {
        llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptr, entry->getArg(0), i);
        call_args.push_back(b_.CreateLoad(ptr, slot, IndexedName("arg", static_cast<int64_t>(i))));
      }
      call_args.push_back(entry->getArg(1));
      b_.CreateRet(b_.CreateCall(impl, call_args));
    }

    // impl body
    Region r;
    r.fn = impl;
    for (size_t i = 0; i < num_ptrs_; ++i) r.ptrs.push_back(impl->getArg(static_cast<unsigned>(i)));
    r.ctx = impl->getArg(static_cast<unsigned>(num_ptrs_));
    KEEL_RETURN_IF_ERROR(EmitRegionBody(r, *k_.body()));
    b_.CreateRet(b_.getInt32(0));
    return status_;
  }

 private:
  struct Region {
    llvm::Function* fn = nullptr;
    std::vector<llvm::Value*> ptrs;  // argument pointers (+ workspace)
    llvm::Value* ctx = nullptr;      // only in the top-level region
    std::map<int, llvm::Value*> locals;
    std::map<int64_t, llvm::Value*> vars;
  };

  llvm::Function* NewFunction(const std::string& name, llvm::FunctionType* type, bool noinline) {
    llvm::Function* f = llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage, name, m_);
    SetAttrs(f);
    if (noinline) f->addFnAttr(llvm::Attribute::NoInline);
    return f;
  }

  void SetAttrs(llvm::Function* f) {
    f->addFnAttr(llvm::Attribute::NoUnwind);
    if (!attrs_.cpu.empty()) f->addFnAttr("target-cpu", attrs_.cpu);
    if (!attrs_.features.empty()) f->addFnAttr("target-features", attrs_.features);
    // With AVX-512, LLVM's generic tuning prefers 256-bit vectors and keeps
    // 512-bit types illegal: ask for zmm registers (32 of them, which is what
    // the wide GEMM register tiles are sized for).
    if (attrs_.features.find("+avx512f") != std::string::npos) {
      f->addFnAttr("prefer-vector-width", "512");
      f->addFnAttr("min-legal-vector-width", "512");
    }
  }

  // Emits `body` into r.fn starting with a fresh entry block; allocates the
  // locals this region uses at its entry. Leaves the builder at the end.
  Status EmitRegionBody(Region& r, const StmtNode& body) {
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", r.fn));
    std::set<int> locals;
    CollectLocals(k_, body, locals);
    for (int id : locals) {
      const Buffer& buf = k_.buffer(id);
      llvm::Type* t = MemType(buf.dtype);
      llvm::AllocaInst* a = b_.CreateAlloca(t, b_.getInt64(buf.NumElements()), buf.name);
      a->setAlignment(llvm::Align(64));
      r.locals[id] = a;
    }
    return EmitStmt(r, body);
  }

  Status Fail(const std::string& m) {
    if (status_.ok()) status_ = Internal("CPU codegen: kernel " + k_.name() + ": " + m);
    return status_;
  }

  llvm::Type* MemType(DType t) {
    switch (t) {
      case DType::kF32: return b_.getFloatTy();
      case DType::kF64: return b_.getDoubleTy();
      case DType::kI8: case DType::kU8: case DType::kBool: return b_.getInt8Ty();
      case DType::kI32: return b_.getInt32Ty();
      case DType::kI64: return b_.getInt64Ty();
      default: return b_.getFloatTy();  // rejected by Emit()
    }
  }
  llvm::Type* RegType(DType t) { return t == DType::kBool ? b_.getInt1Ty() : MemType(t); }

  llvm::Value* BufferBase(Region& r, const Buffer& buf) {
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

  llvm::Value* ConstantGlobal(const Buffer& buf) {
    auto it = constants_.find(buf.id);
    if (it != constants_.end()) return it->second;
    llvm::Constant* init = llvm::ConstantDataArray::getRaw(
        llvm::StringRef(reinterpret_cast<const char*>(buf.constant_data.data()), buf.constant_data.size()),
        static_cast<uint64_t>(buf.NumElements()), MemType(buf.dtype));
    auto* g = new llvm::GlobalVariable(m_, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init,
                                       k_.name() + "." + buf.name);
    g->setAlignment(llvm::Align(64));
    g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    constants_[buf.id] = g;
    return g;
  }

  // The row-major linear index of `indices` as (term, element stride) pairs;
  // a pair (e / S, e % S) over a dimension of size S is one term e (valid for
  // in-bounds indices, where e >= 0).
  static std::vector<std::pair<Expr, int64_t>> LinearTerms(const Buffer& buf, const std::vector<Expr>& indices) {
    std::vector<std::pair<Expr, int64_t>> terms;
    int64_t stride = 1;
    for (size_t i = indices.size(); i-- > 0;) {
      const Expr& x = indices[i];
      if (i > 0 && x->kind == ExprKind::kBinary && x->binary == BinaryOp::kMod && x->operands[1].IsIntConst(buf.shape[i])) {
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

  llvm::Value* Address(Region& r, int buffer, const std::vector<Expr>& indices) {
    const Buffer& buf = k_.buffer(buffer);
    llvm::Value* base = BufferBase(r, buf);
    if (!base) return nullptr;
    llvm::Value* linear = nullptr;
    for (const auto& [x, stride] : LinearTerms(buf, indices)) {
      llvm::Value* idx = EmitExpr(r, x);
      if (!idx) return nullptr;
      llvm::Value* term =
          stride == 1 ? idx : b_.CreateMul(idx, llvm::ConstantInt::get(idx->getType(), static_cast<uint64_t>(stride)), "", false, true);
      if (linear) Match(linear, term);
      linear = linear ? b_.CreateAdd(linear, term, "", false, true) : term;
    }
    if (!linear) linear = b_.getInt64(0);
    return b_.CreateInBoundsGEP(MemType(buf.dtype), base, linear);
  }

  // ---- kLanes emission ----

  static bool IsWide(const llvm::Value* v) { return v->getType()->isVectorTy(); }
  llvm::Value* Splat(llvm::Value* v) { return IsWide(v) ? v : b_.CreateVectorSplat(lanes_, v); }
  void Match(llvm::Value*& a, llvm::Value*& b) {
    if (IsWide(a) != IsWide(b)) { a = Splat(a); b = Splat(b); }
  }

  bool UsesLane(const Expr& e) const {
    if (e.is_null()) return false;
    if (e->kind == ExprKind::kVar) return e->int_value == lane_var_;
    for (const Expr& o : e->operands)
      if (UsesLane(o)) return true;
    return false;
  }

  // The coefficient of the lane variable when `e` is affine in it (other
  // variables and loads not involving it count as constants), else nullopt.
  std::optional<int64_t> LaneStride(const Expr& e) const {
    if (!UsesLane(e)) return 0;
    switch (e->kind) {
      case ExprKind::kVar: return 1;
      case ExprKind::kBinary: {
        if (e->binary != BinaryOp::kAdd && e->binary != BinaryOp::kSub && e->binary != BinaryOp::kMul) return std::nullopt;
        std::optional<int64_t> a = LaneStride(e->operands[0]), b = LaneStride(e->operands[1]);
        if (!a || !b) return std::nullopt;
        if (e->binary == BinaryOp::kAdd) return *a + *b;
        if (e->binary == BinaryOp::kSub) return *a - *b;
        if (*b == 0 && e->operands[1].IsIntConst()) return *a * e->operands[1].int_value();
        if (*a == 0 && e->operands[0].IsIntConst()) return *b * e->operands[0].int_value();
        return std::nullopt;
      }
      default: return std::nullopt;
    }
  }

  std::optional<int64_t> LinearLaneStride(const Buffer& buf, const std::vector<Expr>& indices) const {
    int64_t total = 0;
    for (const auto& [x, stride] : LinearTerms(buf, indices)) {
      std::optional<int64_t> s = LaneStride(x);
      if (!s) return std::nullopt;
      total += *s * stride;
    }
    return total;
  }

  // The address of lane 0 (all lane-dependent values evaluated as scalars).
  llvm::Value* AddressAtFirstLane(Region& r, int buffer, const std::vector<Expr>& indices) {
    std::map<const ExprNode*, llvm::Value*> saved;
    saved.swap(memo_);
    lane_scalar_ = true;
    llvm::Value* addr = Address(r, buffer, indices);
    lane_scalar_ = false;
    memo_.swap(saved);
    return addr;
  }

  // Per-lane addresses: base + stride * lane for affine accesses, else the
  // index evaluated per lane. Returns {address, unit_stride}.
  std::pair<llvm::Value*, bool> LaneAddress(Region& r, int buffer, const std::vector<Expr>& indices) {
    const Buffer& buf = k_.buffer(buffer);
    std::optional<int64_t> stride = LinearLaneStride(buf, indices);
    if (stride) {
      llvm::Value* first = AddressAtFirstLane(r, buffer, indices);
      if (!first || *stride == 1) return {first, true};
      std::vector<llvm::Constant*> offs;
      for (unsigned l = 0; l < lanes_; ++l) offs.push_back(b_.getInt64(static_cast<uint64_t>(*stride * l)));
      return {b_.CreateGEP(MemType(buf.dtype), first, llvm::ConstantVector::get(offs)), false};
    }
    llvm::Value* addr = Address(r, buffer, indices);
    if (addr && !IsWide(addr)) addr = b_.CreateVectorSplat(lanes_, addr);
    return {addr, false};
  }

  llvm::Value* LaneLoad(Region& r, const Expr& e) {
    const Buffer& buf = k_.buffer(e->buffer);
    llvm::Type* t = MemType(buf.dtype);
    llvm::Value* v = nullptr;
    bool uniform = true;
    for (const Expr& i : e->operands) uniform = uniform && !UsesLane(i);
    if (uniform) {
      llvm::Value* addr = Address(r, e->buffer, e->operands);
      if (!addr) return nullptr;
      v = b_.CreateLoad(t, addr);
    } else if (std::optional<int64_t> st = LinearLaneStride(buf, e->operands); st && *st >= 2 && *st <= 4) {
      // Small constant stride (e.g. stride-2 convolutions): one masked load of
      // the whole span (masked-off elements are not accessed, so nothing past
      // the last lane is read) and a shuffle keeping every st-th element:
      // contiguous vector loads instead of a gather.
      llvm::Value* first = AddressAtFirstLane(r, e->buffer, e->operands);
      if (!first) return nullptr;
      const unsigned span = lanes_ * static_cast<unsigned>(*st);
      std::vector<llvm::Constant*> mask;
      for (unsigned i = 0; i < span; ++i) mask.push_back(b_.getInt1(i % *st == 0));
      llvm::Value* all = b_.CreateMaskedLoad(llvm::FixedVectorType::get(t, span), first, ElementAlign(buf.dtype),
                                             llvm::ConstantVector::get(mask));
      std::vector<int> pick;
      for (unsigned l = 0; l < lanes_; ++l) pick.push_back(static_cast<int>(l * *st));
      v = b_.CreateShuffleVector(all, pick);
    } else {
      auto [addr, unit] = LaneAddress(r, e->buffer, e->operands);
      if (!addr) return nullptr;
      llvm::Type* vt = llvm::FixedVectorType::get(t, lanes_);
      llvm::Align align = ElementAlign(buf.dtype);
      v = unit ? static_cast<llvm::Value*>(b_.CreateAlignedLoad(vt, addr, align))
               : b_.CreateMaskedGather(vt, addr, align, llvm::ConstantInt::getTrue(llvm::FixedVectorType::get(b_.getInt1Ty(), lanes_)));
    }
    if (buf.dtype == DType::kBool) v = b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    return v;
  }

  static llvm::Align ElementAlign(DType t) {
    return llvm::Align(t == DType::kF64 || t == DType::kI64 ? 8 : t == DType::kF32 || t == DType::kI32 ? 4 : 1);
  }

  Status LaneStore(Region& r, const StmtNode& s) {
    memo_.clear();
    const Buffer& buf = k_.buffer(s.buffer);
    llvm::Value* v = EmitExpr(r, s.value);
    if (!v) return Fail("bad store");
    if (buf.dtype == DType::kBool) v = b_.CreateZExt(v, IsWide(v) ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(b_.getInt8Ty(), lanes_)) : b_.getInt8Ty());
    bool uniform = true;
    for (const Expr& i : s.indices) uniform = uniform && !UsesLane(i);
    if (uniform) {
      // Every lane writes the same element: the last lane's value is what a serial loop leaves.
      llvm::Value* addr = Address(r, s.buffer, s.indices);
      if (!addr) return Fail("bad store");
      if (IsWide(v)) v = b_.CreateExtractElement(v, static_cast<uint64_t>(lanes_ - 1));
      b_.CreateStore(v, addr);
    } else {
      auto [addr, unit] = LaneAddress(r, s.buffer, s.indices);
      if (!addr) return Fail("bad store");
      llvm::Align align = ElementAlign(buf.dtype);
      if (unit) b_.CreateAlignedStore(Splat(v), addr, align);
      else b_.CreateMaskedScatter(Splat(v), addr, align, llvm::ConstantInt::getTrue(llvm::FixedVectorType::get(b_.getInt1Ty(), lanes_)));
    }
    memo_.clear();
    return status_;
  }

  Status EmitLanes(Region& r, const StmtNode& s) {
    const int64_t begin = s.begin.int_value(), n = s.end.int_value() - begin;
    if (n <= 1 || lane_var_ >= 0) {
      // One lane (or a kLanes loop inside another, which Verify rejects): plain code.
      for (int64_t i = begin; i < begin + n; ++i) {
        r.vars[s.var->int_value] = b_.getInt64(static_cast<uint64_t>(i));
        for (const Stmt& c : s.body) KEEL_RETURN_IF_ERROR(EmitStmt(r, *c));
      }
      r.vars.erase(s.var->int_value);
      return status_;
    }
    lane_var_ = s.var->int_value;
    lanes_ = static_cast<unsigned>(n);
    lane_begin_ = begin;
    for (const Stmt& c : s.body) KEEL_RETURN_IF_ERROR(EmitStmt(r, *c));
    lane_var_ = -1;
    return status_;
  }

  llvm::Value* Intrinsic1(llvm::Intrinsic::ID id, llvm::Value* a) {
    llvm::Function* f = llvm::Intrinsic::getDeclaration(&m_, id, {a->getType()});
    return b_.CreateCall(f, {a});
  }

  llvm::Value* LibCall(const std::string& f32_name, const std::string& f64_name, llvm::Value* a) {
    if (IsWide(a)) {  // no vector variant: one call per lane
      llvm::Value* out = llvm::PoisonValue::get(a->getType());
      for (unsigned l = 0; l < lanes_; ++l)
        out = b_.CreateInsertElement(out, LibCall(f32_name, f64_name, b_.CreateExtractElement(a, static_cast<uint64_t>(l))),
                                     static_cast<uint64_t>(l));
      return out;
    }
    bool f32 = a->getType()->isFloatTy();
    llvm::FunctionCallee f = m_.getOrInsertFunction(f32 ? f32_name : f64_name,
                                                   llvm::FunctionType::get(a->getType(), {a->getType()}, false));
    if (auto* fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
      fn->setDoesNotThrow();
      fn->setDoesNotAccessMemory();
      fn->setWillReturn();
    }
    llvm::CallInst* c = b_.CreateCall(f, {a});
    c->setDoesNotAccessMemory();
    c->setDoesNotThrow();
    return c;
  }

  llvm::Value* ConvertTo(llvm::Value* v, DType from, DType to) {
    if (from == to) return v;
    llvm::Type* t = RegType(to);
    if (IsWide(v)) t = llvm::FixedVectorType::get(t, lanes_);
    bool fsrc = IsFloat(from), fdst = IsFloat(to);
    bool usrc = from == DType::kU8 || from == DType::kBool;
    if (to == DType::kBool) {
      return fsrc ? b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0))
                  : b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    }
    if (fsrc && fdst) return b_.CreateFPCast(v, t);
    if (fsrc) return to == DType::kU8 ? b_.CreateFPToUI(v, t) : b_.CreateFPToSI(v, t);
    if (fdst) return usrc ? b_.CreateUIToFP(v, t) : b_.CreateSIToFP(v, t);
    return b_.CreateIntCast(v, t, !usrc);
  }

  llvm::Value* EmitExpr(Region& r, const Expr& e) {
    if (e.is_null()) { (void)Fail("null expression"); return nullptr; }
    auto memo = memo_.find(e.get());
    if (memo != memo_.end()) return memo->second;
    llvm::Value* v = EmitExprUncached(r, e);
    memo_[e.get()] = v;
    return v;
  }

  llvm::Value* EmitExprUncached(Region& r, const Expr& e) {
    switch (e->kind) {
      case ExprKind::kIntConst:
        if (e->type == DType::kBool) return b_.getInt1(e->int_value != 0);
        return llvm::ConstantInt::get(RegType(e->type), static_cast<uint64_t>(e->int_value), true);
      case ExprKind::kFloatConst:
        return llvm::ConstantFP::get(RegType(e->type), e->float_value);
      case ExprKind::kVar: {
        if (lane_var_ >= 0 && e->int_value == lane_var_) {
          if (lane_scalar_) return b_.getInt64(static_cast<uint64_t>(lane_begin_));
          std::vector<llvm::Constant*> iota;
          for (unsigned l = 0; l < lanes_; ++l) iota.push_back(b_.getInt64(static_cast<uint64_t>(lane_begin_ + l)));
          return llvm::ConstantVector::get(iota);
        }
        auto it = r.vars.find(e->int_value);
        if (it == r.vars.end()) { (void)Fail("unbound variable"); return nullptr; }
        return it->second;
      }
      case ExprKind::kLoad: {
        if (lane_var_ >= 0 && !lane_scalar_) return LaneLoad(r, e);
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
      case ExprKind::kSelect: {
        llvm::Value* c = EmitExpr(r, e->operands[0]);
        llvm::Value* a = EmitExpr(r, e->operands[1]);
        llvm::Value* b = EmitExpr(r, e->operands[2]);
        if (!c || !a || !b) return nullptr;
        if (IsWide(c) || IsWide(a) || IsWide(b)) { c = Splat(c); a = Splat(a); b = Splat(b); }
        return b_.CreateSelect(c, a, b);
      }
      case ExprKind::kUnary: {
        llvm::Value* a = EmitExpr(r, e->operands[0]);
        if (!a) return nullptr;
        bool fl = IsFloat(e->operands[0].type());
        switch (e->unary) {
          case UnaryOp::kNeg: return fl ? b_.CreateFNeg(a) : b_.CreateNeg(a);
          case UnaryOp::kAbs:
            if (fl) return Intrinsic1(llvm::Intrinsic::fabs, a);
            return b_.CreateSelect(b_.CreateICmpSLT(a, llvm::ConstantInt::get(a->getType(), 0)), b_.CreateNeg(a), a);
          case UnaryOp::kExp: return Intrinsic1(llvm::Intrinsic::exp, a);
          case UnaryOp::kLog: return Intrinsic1(llvm::Intrinsic::log, a);
          case UnaryOp::kSqrt: return Intrinsic1(llvm::Intrinsic::sqrt, a);
          case UnaryOp::kRsqrt:
            return b_.CreateFDiv(llvm::ConstantFP::get(a->getType(), 1.0), Intrinsic1(llvm::Intrinsic::sqrt, a));
          case UnaryOp::kTanh: return LibCall("tanhf", "tanh", a);
          case UnaryOp::kErf: return a->getType()->getScalarType()->isFloatTy() ? EmitErfF32(b_, m_, a) : LibCall("erff", "erf", a);
          case UnaryOp::kSigmoid: {
            llvm::Value* one = llvm::ConstantFP::get(a->getType(), 1.0);
            return b_.CreateFDiv(one, b_.CreateFAdd(one, Intrinsic1(llvm::Intrinsic::exp, b_.CreateFNeg(a))));
          }
          case UnaryOp::kFloor: return Intrinsic1(llvm::Intrinsic::floor, a);
          case UnaryOp::kCeil: return Intrinsic1(llvm::Intrinsic::ceil, a);
          case UnaryOp::kNot: return b_.CreateNot(a);
        }
        return nullptr;
      }
      case ExprKind::kBinary:
        return EmitBinary(r, e);
    }
    return nullptr;
  }

  llvm::Value* EmitBinary(Region& r, const Expr& e) {
    llvm::Value* a = EmitExpr(r, e->operands[0]);
    llvm::Value* b = EmitExpr(r, e->operands[1]);
    if (!a || !b) return nullptr;
    Match(a, b);
    DType t = e->operands[0].type();
    bool fl = IsFloat(t);
    bool uns = t == DType::kU8 || t == DType::kBool;
    switch (e->binary) {
      case BinaryOp::kAdd: return fl ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b, "", false, !uns);
      case BinaryOp::kSub: return fl ? b_.CreateFSub(a, b) : b_.CreateSub(a, b, "", false, !uns);
      case BinaryOp::kMul: return fl ? b_.CreateFMul(a, b) : b_.CreateMul(a, b, "", false, !uns);
      case BinaryOp::kDiv: return fl ? b_.CreateFDiv(a, b) : (uns ? b_.CreateUDiv(a, b) : b_.CreateSDiv(a, b));
      case BinaryOp::kMod: return fl ? b_.CreateFRem(a, b) : (uns ? b_.CreateURem(a, b) : b_.CreateSRem(a, b));
      case BinaryOp::kMin:
        return b_.CreateSelect(fl ? b_.CreateFCmpOLT(a, b) : (uns ? b_.CreateICmpULT(a, b) : b_.CreateICmpSLT(a, b)), a, b);
      case BinaryOp::kMax:
        return b_.CreateSelect(fl ? b_.CreateFCmpOGT(a, b) : (uns ? b_.CreateICmpUGT(a, b) : b_.CreateICmpSGT(a, b)), a, b);
      case BinaryOp::kPow: {
        if (!fl) { (void)Fail("integer pow"); return nullptr; }
        llvm::Function* f = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::pow, {a->getType()});
        return b_.CreateCall(f, {a, b});
      }
      case BinaryOp::kLt: return fl ? b_.CreateFCmpOLT(a, b) : (uns ? b_.CreateICmpULT(a, b) : b_.CreateICmpSLT(a, b));
      case BinaryOp::kLe: return fl ? b_.CreateFCmpOLE(a, b) : (uns ? b_.CreateICmpULE(a, b) : b_.CreateICmpSLE(a, b));
      case BinaryOp::kGt: return fl ? b_.CreateFCmpOGT(a, b) : (uns ? b_.CreateICmpUGT(a, b) : b_.CreateICmpSGT(a, b));
      case BinaryOp::kGe: return fl ? b_.CreateFCmpOGE(a, b) : (uns ? b_.CreateICmpUGE(a, b) : b_.CreateICmpSGE(a, b));
      case BinaryOp::kEq: return fl ? b_.CreateFCmpOEQ(a, b) : b_.CreateICmpEQ(a, b);
      case BinaryOp::kNe: return fl ? b_.CreateFCmpUNE(a, b) : b_.CreateICmpNE(a, b);
      case BinaryOp::kAnd: return b_.CreateAnd(a, b);
      case BinaryOp::kOr: return b_.CreateOr(a, b);
    }
    return nullptr;
  }

  Status EmitStmt(Region& r, const StmtNode& s) {
    if (!status_.ok()) return status_;
    switch (s.kind) {
      case StmtKind::kBlock:
        for (const Stmt& c : s.body) KEEL_RETURN_IF_ERROR(EmitStmt(r, *c));
        return status_;
      case StmtKind::kStore: {
        if (lane_var_ >= 0) return LaneStore(r, s);
        memo_.clear();
        llvm::Value* v = EmitExpr(r, s.value);
        llvm::Value* addr = Address(r, s.buffer, s.indices);
        memo_.clear();
        if (!v || !addr) return Fail("bad store");
        if (k_.buffer(s.buffer).dtype == DType::kBool) v = b_.CreateZExt(v, b_.getInt8Ty());
        b_.CreateStore(v, addr);
        return status_;
      }
      case StmtKind::kIf: {
        memo_.clear();
        llvm::Value* c = EmitExpr(r, s.cond);
        memo_.clear();
        if (!c) return Fail("bad condition");
        llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", r.fn);
        llvm::BasicBlock* else_bb = s.else_body.empty() ? nullptr : llvm::BasicBlock::Create(ctx_, "else", r.fn);
        llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "endif", r.fn);
        b_.CreateCondBr(c, then_bb, else_bb ? else_bb : join);
        b_.SetInsertPoint(then_bb);
        for (const Stmt& c2 : s.body) KEEL_RETURN_IF_ERROR(EmitStmt(r, *c2));
        b_.CreateBr(join);
        if (else_bb) {
          b_.SetInsertPoint(else_bb);
          for (const Stmt& c2 : s.else_body) KEEL_RETURN_IF_ERROR(EmitStmt(r, *c2));
          b_.CreateBr(join);
        }
        b_.SetInsertPoint(join);
        return status_;
      }
      case StmtKind::kFor:
        if (s.loop == LoopKind::kParallel) return EmitParallel(r, s);
        if (s.loop == LoopKind::kLanes) return EmitLanes(r, s);
        if (s.loop == LoopKind::kUnroll) {
          for (int64_t i = s.begin.int_value(); i < s.end.int_value(); ++i) {
            r.vars[s.var->int_value] = b_.getInt64(static_cast<uint64_t>(i));
            for (const Stmt& c : s.body) KEEL_RETURN_IF_ERROR(EmitStmt(r, *c));
          }
          r.vars.erase(s.var->int_value);
          return status_;
        }
        {
          memo_.clear();
          llvm::Value* begin = EmitExpr(r, s.begin);
          llvm::Value* end = EmitExpr(r, s.end);
          memo_.clear();
          if (!begin || !end) return Fail("bad loop bounds");
          return EmitLoop(r, s, begin, end, nullptr);
        }
    }
    return status_;
  }

  // A canonical loop iv in [begin, end); the variable is `offset + iv` when
  // offset is given (parallel chunks), else iv.
  Status EmitLoop(Region& r, const StmtNode& s, llvm::Value* begin, llvm::Value* end, llvm::Value* offset) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, "loop", r.fn);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "body", r.fn);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "exit", r.fn);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, k_.var_names().at(static_cast<size_t>(s.var->int_value)));
    iv->addIncoming(begin, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, end), body, exit);
    b_.SetInsertPoint(body);
    r.vars[s.var->int_value] = offset ? b_.CreateAdd(offset, iv, "", false, true) : iv;
    for (const Stmt& c : s.body) KEEL_RETURN_IF_ERROR(EmitStmt(r, *c));
    r.vars.erase(s.var->int_value);
    llvm::Value* next = b_.CreateAdd(iv, b_.getInt64(1), "", false, true);
    llvm::BranchInst* back = b_.CreateBr(header);
    iv->addIncoming(next, b_.GetInsertBlock());
    // kVectorize forces the loop vectorizer; a serial loop whose body holds
    // explicitly unrolled loops (a register-blocked micro-kernel, already SLP
    // vectorized) must not be loop-vectorized again: that turns the register
    // tile into spilled reductions.
    bool blocked = s.loop == LoopKind::kNoVectorize || (s.loop == LoopKind::kSerial && ContainsUnroll(s));
    if (s.loop == LoopKind::kVectorize || blocked) {
      llvm::MDNode* enable = llvm::MDNode::get(
          ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                 llvm::ConstantAsMetadata::get(blocked ? b_.getFalse() : b_.getTrue())});
      llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx_, {nullptr, enable});
      loop_id->replaceOperandWith(0, loop_id);
      back->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
    }
    b_.SetInsertPoint(exit);
    return status_;
  }

  Status EmitParallel(Region& r, const StmtNode& s) {
    if (!r.ctx) return Fail("nested parallel loop");
    memo_.clear();
    llvm::Value* begin = EmitExpr(r, s.begin);
    llvm::Value* end = EmitExpr(r, s.end);
    memo_.clear();
    if (!begin || !end) return Fail("bad parallel bounds");
    int index = next_parallel_++;
    std::string base = k_.name() + IndexedName(".par", index);
    llvm::Type* ptr = b_.getPtrTy();
    llvm::Type* i64 = b_.getInt64Ty();

    // Captured state: argument pointers, bound loop variables (by id: deterministic), loop begin.
    std::vector<int64_t> var_ids;
    for (const auto& [id, v] : r.vars) var_ids.push_back(id);
    std::vector<llvm::Type*> fields(num_ptrs_, ptr);
    for (size_t i = 0; i < var_ids.size() + 1; ++i) fields.push_back(i64);
    llvm::StructType* closure_t = llvm::StructType::get(ctx_, fields);

    // Body impl: (ptrs..., vars..., offset, begin, end)
    std::vector<llvm::Type*> impl_params(num_ptrs_, ptr);
    for (size_t i = 0; i < var_ids.size() + 3; ++i) impl_params.push_back(i64);
    llvm::Function* impl = NewFunction(base + ".impl", llvm::FunctionType::get(b_.getVoidTy(), impl_params, false), true);
    for (size_t i = 0; i < num_ptrs_; ++i) impl->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
    llvm::Function* body_fn =
        NewFunction(base, llvm::FunctionType::get(b_.getVoidTy(), {ptr, i64, i64}, false), false);

    // Caller side: fill the closure, call ctx->parallel_for(pool, n, body, closure).
    llvm::IRBuilderBase::InsertPoint saved = b_.saveIP();
    {
      llvm::IRBuilder<> eb(&r.fn->getEntryBlock(), r.fn->getEntryBlock().begin());
      llvm::AllocaInst* closure = eb.CreateAlloca(closure_t, nullptr, "closure");
      size_t f = 0;
      for (size_t i = 0; i < num_ptrs_; ++i, ++f) b_.CreateStore(r.ptrs[i], b_.CreateStructGEP(closure_t, closure, static_cast<unsigned>(f)));
      for (int64_t id : var_ids) b_.CreateStore(r.vars[id], b_.CreateStructGEP(closure_t, closure, static_cast<unsigned>(f++)));
      b_.CreateStore(begin, b_.CreateStructGEP(closure_t, closure, static_cast<unsigned>(f)));
      llvm::StructType* ctx_t = llvm::StructType::get(ctx_, {ptr, ptr});
      llvm::Value* pf = b_.CreateLoad(ptr, b_.CreateStructGEP(ctx_t, r.ctx, 0), "parallel_for");
      llvm::Value* pool = b_.CreateLoad(ptr, b_.CreateStructGEP(ctx_t, r.ctx, 1), "pool");
      llvm::Value* n = b_.CreateSub(end, begin);
      llvm::BasicBlock* call_bb = llvm::BasicBlock::Create(ctx_, "par.call", r.fn);
      llvm::BasicBlock* after = llvm::BasicBlock::Create(ctx_, "par.done", r.fn);
      b_.CreateCondBr(b_.CreateICmpSGT(n, b_.getInt64(0)), call_bb, after);
      b_.SetInsertPoint(call_bb);
      llvm::FunctionType* pf_t = llvm::FunctionType::get(b_.getVoidTy(), {ptr, i64, ptr, ptr}, false);
      b_.CreateCall(pf_t, pf, {pool, n, body_fn, closure});
      b_.CreateBr(after);
      b_.SetInsertPoint(after);
      saved = b_.saveIP();
    }

    // Body wrapper: unpack the closure, call impl.
    {
      b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", body_fn));
      std::vector<llvm::Value*> args;
      llvm::Value* closure = body_fn->getArg(0);
      for (size_t i = 0; i < fields.size(); ++i)
        args.push_back(b_.CreateLoad(fields[i], b_.CreateStructGEP(closure_t, closure, static_cast<unsigned>(i))));
      args.push_back(body_fn->getArg(1));
      args.push_back(body_fn->getArg(2));
      b_.CreateCall(impl, args);
      b_.CreateRetVoid();
    }

    // Body impl: for iv in [begin, end): var = offset + iv.
    {
      Region inner;
      inner.fn = impl;
      unsigned a = 0;
      for (size_t i = 0; i < num_ptrs_; ++i) inner.ptrs.push_back(impl->getArg(a++));
      for (int64_t id : var_ids) inner.vars[id] = impl->getArg(a++);
      llvm::Value* offset = impl->getArg(a++);
      llvm::Value* b0 = impl->getArg(a++);
      llvm::Value* e0 = impl->getArg(a++);
      b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", impl));
      std::set<int> locals;
      for (const Stmt& c : s.body) {
        // Locals of the parallel body are collected through its statements.
        CollectLocals(k_, *c, locals);
      }
      for (int id : locals) {
        const Buffer& buf = k_.buffer(id);
        llvm::AllocaInst* al = b_.CreateAlloca(MemType(buf.dtype), b_.getInt64(buf.NumElements()), buf.name);
        al->setAlignment(llvm::Align(64));
        inner.locals[id] = al;
      }
      StmtNode serial = s;
      serial.loop = LoopKind::kSerial;
      KEEL_RETURN_IF_ERROR(EmitLoop(inner, serial, b0, e0, offset));
      b_.CreateRetVoid();
    }
    b_.restoreIP(saved);
    return status_;
  }

  const KernelFunc& k_;
  const CpuFunctionAttrs& attrs_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  size_t num_ptrs_ = 0;
  int next_parallel_ = 0;
  std::map<int, llvm::GlobalVariable*> constants_;
  std::map<const ExprNode*, llvm::Value*> memo_;  // lookup only; cleared per statement
  int64_t lane_var_ = -1;    // the variable of the kLanes loop being emitted, or -1
  unsigned lanes_ = 0;       // its lane count
  int64_t lane_begin_ = 0;   // its first value
  bool lane_scalar_ = false;  // evaluating the first lane as scalars (unit-stride addresses)
  Status status_;
};

}  // namespace

Status EmitCpuKernel(const KernelFunc& kernel, const CpuFunctionAttrs& attrs, llvm::Module& module) {
  KEEL_RETURN_IF_ERROR(kernel.Verify());
  return CpuKernelEmitter(kernel, attrs, module).Emit();
}

}  // namespace keel::codegen
