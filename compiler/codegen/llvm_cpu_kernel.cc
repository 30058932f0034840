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
// the span plus a shuffle, anything else a gather/scatter. An unrolled loop
// around a kLanes copy that transposes a square tile is emitted as contiguous
// loads, shuffles and contiguous stores (TryTransposeTile).
// Index pairs (e / S, e % S) over a dimension of size S linearize to e, which
// keeps accesses through delinearized indices (conv outputs) unit-stride.
// Target-independent expression/statement emission lives in
// llvm_kernel_builder.h; this file adds the CPU ABI, parallel_for outlining,
// kLanes SIMD code and the CPU's math lowering.
#include "compiler/codegen/llvm_cpu_kernel.h"

#include "compiler/codegen/llvm_math.h"
#include "compiler/codegen/llvm_kernel_builder.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <map>
#include <optional>
#include <set>

namespace keel::codegen {
namespace {

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

class CpuKernelEmitter : public LlvmKernelBuilder {
 public:
  CpuKernelEmitter(const KernelFunc& k, const CpuFunctionAttrs& attrs, llvm::Module& m)
      : LlvmKernelBuilder(k, m, "CPU", /*fuse_div_mod=*/true), attrs_(attrs) {}

  Status Emit() {
    KEEL_RETURN_IF_ERROR(CheckArgDTypes());
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
  using Region = KernelRegion;

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
    CollectLocalBuffers(k_, body, /*stop_at_parallel=*/true, locals);
    for (int id : locals) {
      const Buffer& buf = k_.buffer(id);
      llvm::Type* t = MemType(buf.dtype);
      llvm::AllocaInst* a = b_.CreateAlloca(t, b_.getInt64(buf.NumElements()), buf.name);
      a->setAlignment(llvm::Align(64));
      r.locals[id] = a;
    }
    return EmitStmt(r, body);
  }

  llvm::Constant* NewConstantGlobal(const Buffer& buf, llvm::Constant* init) override {
    auto* g = new llvm::GlobalVariable(m_, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init,
                                       k_.name() + "." + buf.name);
    g->setAlignment(llvm::Align(64));
    g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    return g;
  }

  // ---- kLanes emission ----

  bool UsesLane(const Expr& e) const { return UsesVar(e, lane_var_); }

  // The coefficient of the lane variable when `e` is affine in it (kernel_ir.h
  // VarCoefficient), else nullopt.
  std::optional<int64_t> LaneStride(const Expr& e) const { return VarCoefficient(e, lane_var_); }

  std::optional<int64_t> LinearLaneStride(const Buffer& buf, const std::vector<Expr>& indices) const {
    return LinearVarStride(buf, indices, lane_var_);
  }
  // The element stride of a buffer access per step of variable `var`, when affine in it.
  std::optional<int64_t> LinearVarStride(const Buffer& buf, const std::vector<Expr>& indices, int64_t var) const {
    int64_t total = 0;
    for (const auto& [x, stride] : LinearTerms(buf, indices)) {
      std::optional<int64_t> s = VarCoefficient(x, var);
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
      return EmitUnrolled(r, s, begin, begin + n, Child(r));
    }
    lane_var_ = s.var->int_value;
    lanes_ = static_cast<unsigned>(n);
    lane_begin_ = begin;
    for (const Stmt& c : s.body) KEEL_RETURN_IF_ERROR(EmitStmt(r, *c));
    lane_var_ = -1;
    return status_;
  }

  // A square tile `for j (kUnroll, T): for i (kLanes, T): out[..i..j..] =
  // f(in[..i..j..], ...)` whose store is unit-stride in i and whose value reads
  // `in` (one load node) unit-stride in j and far apart in i (a transpose,
  // which emits as T-lane gathers) is emitted as T contiguous loads along j,
  // an in-register transpose (log2 T rounds of two-input shuffles), then per
  // row j the value as a T-lane expression with that load replaced by the
  // transposed row (f's other operands load along i as in any kLanes loop: a
  // residual add's operand is one contiguous load) and T contiguous stores
  // along i. A plain copy (f the identity) is the common case. The same values
  // reach the same addresses; only the order of the accesses differs, and the
  // lanes of a kLanes loop never read what another writes.
  // Returns false (nothing emitted) for any other loop.
  bool TryTransposeTile(Region& r, const StmtNode& s, Status& result) {
    if (lane_var_ >= 0 || s.body.size() != 1 || !s.begin.IsIntConst() || !s.end.IsIntConst()) return false;
    const StmtNode& lanes = *s.body[0];
    if (lanes.kind != StmtKind::kFor || lanes.loop != LoopKind::kLanes || lanes.body.size() != 1 ||
        !lanes.begin.IsIntConst() || !lanes.end.IsIntConst())
      return false;
    const int64_t t = s.end.int_value() - s.begin.int_value();
    if (t < 2 || t > 16 || (t & (t - 1)) != 0 || lanes.end.int_value() - lanes.begin.int_value() != t) return false;
    const StmtNode& st = *lanes.body[0];
    if (st.kind != StmtKind::kStore) return false;
    const Buffer& out = k_.buffer(st.buffer);
    if (out.dtype == DType::kBool || LinearVarStride(out, st.indices, lanes.var->int_value) != std::optional<int64_t>(1))
      return false;
    const int64_t j = s.var->int_value, i = lanes.var->int_value;
    // The transposed load: unit-stride in j, strided in i (not lane-invariant: a
    // per-channel scale's load is unit-stride in j too); exactly one such node.
    std::set<const ExprNode*> transposed;
    Expr tload;
    std::function<void(const Expr&)> find = [&](const Expr& e) {
      if (e.is_null()) return;
      if (e->kind == ExprKind::kLoad && e->buffer != st.buffer) {
        const Buffer& b = k_.buffer(e->buffer);
        std::optional<int64_t> si = LinearVarStride(b, e->operands, i);
        if (b.dtype != DType::kBool && LinearVarStride(b, e->operands, j) == std::optional<int64_t>(1) && si && *si != 0 && *si != 1 &&
            transposed.insert(e.get()).second)
          tload = e;
      }
      for (const Expr& o : e->operands) find(o);
    };
    find(st.value);
    if (transposed.size() != 1) return false;
    const Buffer& in = k_.buffer(tload->buffer);
    llvm::Type* vt = llvm::FixedVectorType::get(MemType(in.dtype), static_cast<unsigned>(t));
    const llvm::Align align = ElementAlign(in.dtype);
    auto address_at = [&](int buffer, const std::vector<Expr>& indices, int64_t iv, int64_t jv) {
      memo_.clear();
      r.vars[i] = I64(lanes.begin.int_value() + iv);
      r.vars[j] = I64(s.begin.int_value() + jv);
      return Address(r, buffer, indices);
    };
    std::vector<llvm::Value*> rows;  // rows[a][b]: the value lane a stores in iteration b
    for (int64_t a = 0; a < t; ++a) {
      llvm::Value* addr = address_at(tload->buffer, tload->operands, a, 0);
      if (!addr) { result = Fail("bad transpose load"); return true; }
      rows.push_back(b_.CreateAlignedLoad(vt, addr, align));
    }
    // Swapping the off-diagonal h x h blocks of every 2h x 2h block, for each h,
    // transposes the tile (each round swaps bit h of the row and column indices).
    for (int64_t h = t / 2; h >= 1; h /= 2) {
      for (int64_t a = 0; a < t; ++a) {
        if (a & h) continue;
        std::vector<int> low, high;
        for (int64_t c = 0; c < t; ++c) {
          low.push_back(static_cast<int>((c & h) ? t + c - h : c));
          high.push_back(static_cast<int>((c & h) ? t + c : c + h));
        }
        llvm::Value* x = rows[static_cast<size_t>(a)];
        llvm::Value* y = rows[static_cast<size_t>(a + h)];
        rows[static_cast<size_t>(a)] = b_.CreateShuffleVector(x, y, low);
        rows[static_cast<size_t>(a + h)] = b_.CreateShuffleVector(x, y, high);
      }
    }
    const bool copy = st.value.get() == tload.get() && out.dtype == in.dtype;
    for (int64_t b = 0; b < t; ++b) {
      llvm::Value* addr = address_at(st.buffer, st.indices, 0, b);
      if (!addr) { result = Fail("bad transpose store"); return true; }
      llvm::Value* v = rows[static_cast<size_t>(b)];
      if (!copy) {  // the value as a T-lane expression over row b, the load replaced by the row
        r.vars.erase(i);
        lane_var_ = i;
        lanes_ = static_cast<unsigned>(t);
        lane_begin_ = lanes.begin.int_value();
        memo_.clear();
        memo_[tload.get()] = v;
        v = EmitExpr(r, st.value);
        lane_var_ = -1;
        if (!v) { result = Fail("bad transpose value"); return true; }
        v = Splat(v);
      }
      b_.CreateAlignedStore(v, addr, ElementAlign(out.dtype));
    }
    r.vars.erase(i);
    r.vars.erase(j);
    memo_.clear();
    result = status_;
    return true;
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

  // exp / log of a vector of f32 through libmvec's variant for the target's
  // widest vectors (_ZGVeN16v_* with AVX-512, _ZGVdN8v_* with AVX2), called
  // once per part of that width (a shorter last part is padded). Null when
  // the library is not linked with libmvec, the value is no f32 vector or the
  // target has neither. Needed because the llvm.exp / llvm.log intrinsics of
  // a kLanes statement (e.g. a GEMM epilogue's GELU, 16 or 32 lanes wide)
  // reach code generation as vectors no libmvec mapping covers, which LLVM
  // scalarizes into one libm call per lane (ConvNeXt-T's GELU took 2.5x the
  // time of its GEMM).
  llvm::Value* VectorLibmCall(const char* f32_name, llvm::Value* a) {
    auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType());
    if (!attrs_.vector_math || vt == nullptr || !vt->getElementType()->isFloatTy()) return nullptr;
    const bool avx512 = attrs_.features.find("+avx512f") != std::string::npos;
    if (!avx512 && attrs_.features.find("+avx2") == std::string::npos) return nullptr;
    const unsigned width = avx512 ? 16 : 8, n = vt->getNumElements();
    auto* part_t = llvm::FixedVectorType::get(b_.getFloatTy(), width);
    const std::string name = std::string(avx512 ? "_ZGVeN16v_" : "_ZGVdN8v_") + f32_name;
    llvm::FunctionCallee f = m_.getOrInsertFunction(name, llvm::FunctionType::get(part_t, {part_t}, false));
    if (auto* fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
      fn->setDoesNotThrow();
      fn->setDoesNotAccessMemory();
      fn->setWillReturn();
    }
    std::vector<llvm::Value*> parts;
    for (unsigned at = 0; at < n; at += width) {
      std::vector<int> take;  // lanes at..at+width of a (-1: padding, poison)
      for (unsigned l = 0; l < width; ++l) take.push_back(at + l < n ? static_cast<int>(at + l) : -1);
      llvm::CallInst* c = b_.CreateCall(f, {b_.CreateShuffleVector(a, take)});
      c->setDoesNotAccessMemory();
      c->setDoesNotThrow();
      parts.push_back(c);
    }
    // Concatenate the parts' first n lanes.
    std::vector<int> lanes;
    for (unsigned l = 0; l < n; ++l) lanes.push_back(static_cast<int>(l));
    if (parts.size() == 1) return b_.CreateShuffleVector(parts[0], lanes);
    llvm::Value* out = llvm::PoisonValue::get(vt);
    for (unsigned l = 0; l < n; ++l) {
      out = b_.CreateInsertElement(out, b_.CreateExtractElement(parts[l / width], static_cast<uint64_t>(l % width)),
                                   static_cast<uint64_t>(l));
    }
    return out;
  }

  // libm / libmvec for exp, log; erf and tanh of f32 inline, erf's exp too (llvm_math.h).
  llvm::Value* EmitMath(UnaryOp op, llvm::Value* a) override {
    switch (op) {
      case UnaryOp::kExp:
        if (llvm::Value* v = VectorLibmCall("expf", a)) return v;
        return Intrinsic1(llvm::Intrinsic::exp, a);
      case UnaryOp::kLog:
        if (llvm::Value* v = VectorLibmCall("logf", a)) return v;
        return Intrinsic1(llvm::Intrinsic::log, a);
      case UnaryOp::kRsqrt:
        return b_.CreateFDiv(llvm::ConstantFP::get(a->getType(), 1.0), Intrinsic1(llvm::Intrinsic::sqrt, a));
      case UnaryOp::kErf:
        if (!a->getType()->getScalarType()->isFloatTy()) return LibCall("erff", "erf", a);
        return EmitErfF32(b_, m_, a, [this](llvm::Value* v) { return EmitExpNonPositiveF32(b_, v); });
      case UnaryOp::kTanh:
        if (!a->getType()->getScalarType()->isFloatTy()) return LibCall("tanhf", "tanh", a);
        return EmitTanhF32(b_, m_, a);
      case UnaryOp::kRound: return Intrinsic1(llvm::Intrinsic::roundeven, a);
      default:
        if (const char* name = LibmName(op)) return LibCall(std::string(name) + "f", name, a);
        (void)Fail(std::string("no math lowering for ") + UnaryOpName(op));
        return nullptr;
    }
  }
  llvm::Value* EmitFloatRem(llvm::Value* a, llvm::Value* b) override { return b_.CreateFRem(a, b); }
  llvm::Value* EmitPow(llvm::Value* a, llvm::Value* b) override {
    llvm::Function* f = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::pow, {a->getType()});
    return b_.CreateCall(f, {a, b});
  }

  // Inside a kLanes loop the lane variable is a vector of lane values (or the
  // first lane's value while addressing lane 0) and loads are lane loads.
  llvm::Value* EmitExprUncached(Region& r, const Expr& e) override {
    if (lane_var_ >= 0 && e->kind == ExprKind::kVar && e->int_value == lane_var_) {
      if (lane_scalar_) return b_.getInt64(static_cast<uint64_t>(lane_begin_));
      std::vector<llvm::Constant*> iota;
      for (unsigned l = 0; l < lanes_; ++l) iota.push_back(b_.getInt64(static_cast<uint64_t>(lane_begin_ + l)));
      return llvm::ConstantVector::get(iota);
    }
    if (lane_var_ >= 0 && !lane_scalar_ && e->kind == ExprKind::kLoad) return LaneLoad(r, e);
    return LlvmKernelBuilder::EmitExprUncached(r, e);
  }

  EmitChild Child(Region& r) {
    return [this, &r](const StmtNode& c) { return EmitStmt(r, c); };
  }

  Status EmitStmt(Region& r, const StmtNode& s) {
    if (!status_.ok()) return status_;
    switch (s.kind) {
      case StmtKind::kBlock:
        for (const Stmt& c : s.body) KEEL_RETURN_IF_ERROR(EmitStmt(r, *c));
        return status_;
      case StmtKind::kStore: {
        if (lane_var_ >= 0) return LaneStore(r, s);
        llvm::Value *v = nullptr, *addr = nullptr;
        KEEL_RETURN_IF_ERROR(StoreOperands(r, s, v, addr));
        b_.CreateStore(v, addr);
        return status_;
      }
      case StmtKind::kPrefetch: {
        // Into L2 (locality 2: prefetcht1), for reading, data cache.
        llvm::Value* addr = Address(r, s.buffer, s.indices);
        b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {addr->getType()}, {addr, b_.getInt32(0), b_.getInt32(2), b_.getInt32(1)});
        return status_;
      }
      case StmtKind::kIf:
        return EmitIf(r, s, Child(r));
      case StmtKind::kFor: {
        if (s.loop == LoopKind::kParallel) return EmitParallel(r, s);
        if (s.loop == LoopKind::kLanes) return EmitLanes(r, s);
        if (s.loop == LoopKind::kUnroll) {
          Status tile;
          if (TryTransposeTile(r, s, tile)) return tile;
          return EmitUnrolled(r, s, s.begin.int_value(), s.end.int_value(), Child(r));
        }
        llvm::Value *begin = nullptr, *end = nullptr;
        KEEL_RETURN_IF_ERROR(LoopBounds(r, s, begin, end, "bad loop bounds"));
        return EmitLoop(r, s, begin, end, nullptr);
      }
    }
    return status_;
  }

  // A canonical loop iv in [begin, end); the variable is `offset + iv` when
  // offset is given (parallel chunks), else iv.
  Status EmitLoop(Region& r, const StmtNode& s, llvm::Value* begin, llvm::Value* end, llvm::Value* offset) {
    llvm::BranchInst* back = nullptr;
    KEEL_RETURN_IF_ERROR(CanonicalLoop(r.fn, begin, end, I64(1), VarName(s), {"loop", "body", "exit"},
                                       [&](llvm::Value* iv) {
                                         r.vars[s.var->int_value] = offset ? b_.CreateAdd(offset, iv, "", false, true) : iv;
                                         for (const Stmt& c : s.body) KEEL_RETURN_IF_ERROR(EmitStmt(r, *c));
                                         r.vars.erase(s.var->int_value);
                                         return status_;
                                       },
                                       &back));
    // kVectorize forces the loop vectorizer; a serial loop whose body holds
    // explicitly unrolled loops (a register-blocked micro-kernel, already SLP
    // vectorized) must not be loop-vectorized again: that turns the register
    // tile into spilled reductions.
    bool blocked = s.loop == LoopKind::kNoVectorize || (s.loop == LoopKind::kSerial && ContainsUnroll(s));
    if (s.loop == LoopKind::kVectorize || blocked) {
      SetLoopProperty(back, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                             llvm::ConstantAsMetadata::get(blocked ? b_.getFalse() : b_.getTrue())});
    }
    return status_;
  }

  Status EmitParallel(Region& r, const StmtNode& s) {
    if (!r.ctx) return Fail("nested parallel loop");
    llvm::Value *begin = nullptr, *end = nullptr;
    KEEL_RETURN_IF_ERROR(LoopBounds(r, s, begin, end, "bad parallel bounds"));
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
        CollectLocalBuffers(k_, *c, /*stop_at_parallel=*/true, locals);
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

  const CpuFunctionAttrs& attrs_;
  size_t num_ptrs_ = 0;
  int next_parallel_ = 0;
  int64_t lane_var_ = -1;    // the variable of the kLanes loop being emitted, or -1 (lanes_: its lane count)
  int64_t lane_begin_ = 0;   // its first value
  bool lane_scalar_ = false;  // evaluating the first lane as scalars (unit-stride addresses)
};

}  // namespace

Status EmitCpuKernel(const KernelFunc& kernel, const CpuFunctionAttrs& attrs, llvm::Module& module) {
  KEEL_RETURN_IF_ERROR(kernel.Verify());
  return CpuKernelEmitter(kernel, attrs, module).Emit();
}

}  // namespace keel::codegen
