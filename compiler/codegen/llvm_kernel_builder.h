// compiler/codegen/llvm_kernel_builder.h — the target-independent half of the
// kernel IR → LLVM IR translation, shared by the CPU (llvm_cpu_kernel.cc) and
// NVPTX (llvm_nvptx_kernel.cc) back ends.
//
// LlvmKernelBuilder turns kernel-IR expressions into LLVM values (constants,
// variables, loads with row-major linearized addresses, casts, selects, unary
// and binary arithmetic with `reassoc contract nsz` float math) and provides
// the statement scaffolding both back ends emit the same way (store operands,
// if/else, loop bounds, fully unrolled loops, canonical loops, loop metadata).
// What differs between targets is behind small hooks:
//   EmitMath / EmitFloatRem / EmitPow   math lowering (CPU: LLVM intrinsics,
//                                       libm, inline erf; NVPTX: libdevice);
//   NewConstantGlobal                   where baked constants live;
//   EmitExprUncached (virtual)          the CPU's kLanes values extend it.
// How loops meet the machine (CPU parallel_for outlining and kLanes SIMD code,
// GPU mappings) stays in the back ends.
//
// Values may be scalars or, inside a CPU kLanes loop, LLVM vectors of
// `lanes_` elements; IsWide/Splat/Match reconcile the two (nothing is ever
// wide on the GPU, where they emit nothing).
//
// Ownership/lifetime: a builder references the kernel and the module it was
// built with; both must outlive it. It is single-use per kernel.
// Thread-safety: uses the module's LLVMContext; one thread per context.
// Errors: expression emitters return nullptr after recording the first error
// in `status_` (kInternal, "<target> codegen: kernel K: ..."); statement
// helpers return that status.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/kernel_ir.h"
#include "keel/status.h"

namespace llvm {
class BranchInst;
class Constant;
class Function;
class Metadata;
class Module;
}  // namespace llvm

namespace keel::codegen {

// Collects the kernel-local buffers referenced under `s`; with
// stop_at_parallel, parallel loops are not entered (the CPU outlines them into
// functions that allocate their own locals).
void CollectLocalBuffers(const KernelFunc& k, const StmtNode& s, bool stop_at_parallel, std::set<int>& out);

// One LLVM function being filled: the buffers and variables its code sees.
struct KernelRegion {
  llvm::Function* fn = nullptr;
  std::vector<llvm::Value*> ptrs;  // argument pointers (+ workspace last)
  llvm::Value* ctx = nullptr;      // CPU: the KeelKernelContext*, top-level region only
  std::map<int, llvm::Value*> locals;
  std::map<int64_t, llvm::Value*> vars;
};

// Block names of a canonical loop (they only label the IR).
struct LoopLabels {
  std::string header, body, exit;
};

class LlvmKernelBuilder {
 protected:
  // target_name prefixes error messages ("CPU", "NVPTX"). fuse_div_mod: a pair
  // of indices (e / S, e % S) over a dimension of size S linearizes to e (see
  // LinearTerms).
  LlvmKernelBuilder(const KernelFunc& k, llvm::Module& m, std::string target_name, bool fuse_div_mod);
  virtual ~LlvmKernelBuilder() = default;
  LlvmKernelBuilder(const LlvmKernelBuilder&) = delete;
  LlvmKernelBuilder& operator=(const LlvmKernelBuilder&) = delete;

  // kUnsupported when an argument has a dtype the back ends do not handle.
  [[nodiscard]] Status CheckArgDTypes() const;
  // Records the first error (kInternal) and returns it.
  Status Fail(const std::string& message);

  llvm::Type* MemType(DType t);
  llvm::Type* RegType(DType t) { return t == DType::kBool ? b_.getInt1Ty() : MemType(t); }
  llvm::Value* I64(int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); }
  std::string VarName(const StmtNode& s) const { return k_.var_names().at(static_cast<size_t>(s.var->int_value)); }

  // ---- scalar / lane-vector shapes ----
  static bool IsWide(const llvm::Value* v) { return v->getType()->isVectorTy(); }
  llvm::Value* Splat(llvm::Value* v) { return IsWide(v) ? v : b_.CreateVectorSplat(lanes_, v); }
  void Match(llvm::Value*& a, llvm::Value*& b) {
    if (IsWide(a) != IsWide(b)) { a = Splat(a); b = Splat(b); }
  }

  // ---- memory ----
  llvm::Value* BufferBase(KernelRegion& r, const Buffer& buf);
  // The module global holding a kConstant buffer, created once per buffer.
  llvm::Value* ConstantGlobal(const Buffer& buf);
  // Creates the global for `buf` with initializer `init`; returns the pointer
  // kernels use to address it.
  virtual llvm::Constant* NewConstantGlobal(const Buffer& buf, llvm::Constant* init) = 0;
  // The row-major linear index of `indices` as (term, element stride) pairs,
  // last dimension first; with fuse_div_mod a pair (e / S, e % S) over a
  // dimension of size S is one term e (valid for in-bounds indices, e >= 0).
  std::vector<std::pair<Expr, int64_t>> LinearTerms(const Buffer& buf, const std::vector<Expr>& indices) const;
  llvm::Value* Address(KernelRegion& r, int buffer, const std::vector<Expr>& indices);

  // ---- expressions ----
  // Memoized per statement (callers clear memo_ around each statement).
  llvm::Value* EmitExpr(KernelRegion& r, const Expr& e);
  virtual llvm::Value* EmitExprUncached(KernelRegion& r, const Expr& e);
  llvm::Value* EmitUnary(KernelRegion& r, const Expr& e);
  llvm::Value* EmitBinary(KernelRegion& r, const Expr& e);
  llvm::Value* ConvertTo(llvm::Value* v, DType from, DType to);
  // `scalar` with the lane count of `like` (a vector type when `like` is wide).
  llvm::Type* LikeShape(llvm::Type* scalar, const llvm::Value* like) const;
  llvm::Value* WidenBF16(llvm::Value* bits);    // bf16 bits (i16) -> f32
  // f32 -> bf16 bits (i16), round to nearest even (a target with a conversion
  // instruction overrides it).
  virtual llvm::Value* NarrowToBF16(llvm::Value* f32);
  // Float division a / b (a target may use a faster, less exact form where
  // the kernel's results allow it).
  virtual llvm::Value* EmitFDiv(llvm::Value* a, llvm::Value* b) { return b_.CreateFDiv(a, b); }
  llvm::Value* Intrinsic1(llvm::Intrinsic::ID id, llvm::Value* a);
  // Float math: op is one of kExp, kLog, kRsqrt, kTanh, kErf.
  virtual llvm::Value* EmitMath(UnaryOp op, llvm::Value* a) = 0;
  virtual llvm::Value* EmitFloatRem(llvm::Value* a, llvm::Value* b) = 0;
  virtual llvm::Value* EmitPow(llvm::Value* a, llvm::Value* b) = 0;

  // ---- statements ----
  using EmitChild = std::function<Status(const StmtNode&)>;
  // The stored value (bool widened to its i8 memory form) and the address of a
  // scalar kStore; memo_ is cleared around it.
  Status StoreOperands(KernelRegion& r, const StmtNode& s, llvm::Value*& value, llvm::Value*& addr);
  // A loop's begin and end values (memo_ cleared around them); `what` names
  // the failure.
  Status LoopBounds(KernelRegion& r, const StmtNode& s, llvm::Value*& begin, llvm::Value*& end,
                    const std::string& what);
  // if / else over s.body and s.else_body.
  Status EmitIf(KernelRegion& r, const StmtNode& s, const EmitChild& emit);
  // The body once per value of the loop variable in [begin, end) (constants).
  Status EmitUnrolled(KernelRegion& r, const StmtNode& s, int64_t begin, int64_t end, const EmitChild& emit);
  // for (iv = begin; iv < end; iv += step) body(iv), in function fn; leaves the
  // builder at the exit block and the back edge in *latch (for loop metadata).
  Status CanonicalLoop(llvm::Function* fn, llvm::Value* begin, llvm::Value* end, llvm::Value* step,
                       const std::string& iv_name, const LoopLabels& labels,
                       const std::function<Status(llvm::Value*)>& body, llvm::BranchInst** latch);
  // Attaches a self-referential llvm.loop node holding one property (e.g.
  // {"llvm.loop.unroll.full"}) to a loop's back edge.
  void SetLoopProperty(llvm::BranchInst* latch, const std::vector<llvm::Metadata*>& property);

  const KernelFunc& k_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  std::map<const ExprNode*, llvm::Value*> memo_;  // lookup only; cleared per statement
  std::map<int, llvm::Constant*> constants_;      // by buffer id
  unsigned lanes_ = 0;                            // lane count of the kLanes loop being emitted (CPU)
  Status status_;

 private:
  std::string target_name_;
  bool fuse_div_mod_ = false;
};

}  // namespace keel::codegen
