// compiler/codegen/llvm_nvptx_kernel.cc — kernel IR → LLVM IR CUDA kernel.
//
// One LLVM function per kernel. The statement/expression translation mirrors
// the CPU back end (canonical loops, unroll loops replicated, row-major
// linearized addresses, `reassoc contract nsz` float math); what differs is
// how the outer loops meet the hardware, decided by the GpuMapping:
//   flat            g = global thread id, grid-stride over (row, inner/V)
//                   items, V contiguous inner iterations per item (unrolled so
//                   the load/store vectorizer can form 128-bit accesses);
//   thread_per_iter grid-stride over the parallel loop's iterations;
//   block_per_row   block-stride over rows; inside a row, reduction loops are
//                   split over threads and combined by a butterfly warp
//                   shuffle plus a shared-memory step across warps, other
//                   loops are split over threads, scalar code runs on every
//                   thread (stores to memory by thread 0, then a barrier);
//   single_block    one block; parallel loops split over its threads with a
//                   barrier after each, serial memory stores by thread 0 with a
//                   barrier after each.
// Locals are allocas in the entry block (SROA turns them into registers).
#include "compiler/codegen/llvm_nvptx_kernel.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>

namespace keel::codegen {
namespace {

// Stores outside per-thread code: kThread stores directly; kUniform (scalar code
// every thread of a block runs identically) lets thread 0 store to memory and
// then synchronizes the block.
enum class Mode { kThread, kUniform };

void CollectLocalIds(const KernelFunc& k, const StmtNode& s, std::set<int>& out);

void CollectLocalIdsExpr(const KernelFunc& k, const Expr& e, std::set<int>& out) {
  if (e.is_null()) return;
  if (e->kind == ExprKind::kLoad && k.buffer(e->buffer).scope == BufferScope::kLocal) out.insert(e->buffer);
  for (const Expr& o : e->operands) CollectLocalIdsExpr(k, o, out);
}

void CollectLocalIds(const KernelFunc& k, const StmtNode& s, std::set<int>& out) {
  if (s.kind == StmtKind::kStore && k.buffer(s.buffer).scope == BufferScope::kLocal) out.insert(s.buffer);
  for (const Expr& i : s.indices) CollectLocalIdsExpr(k, i, out);
  CollectLocalIdsExpr(k, s.value, out);
  CollectLocalIdsExpr(k, s.cond, out);
  CollectLocalIdsExpr(k, s.begin, out);
  CollectLocalIdsExpr(k, s.end, out);
  for (const Stmt& c : s.body) CollectLocalIds(k, *c, out);
  for (const Stmt& c : s.else_body) CollectLocalIds(k, *c, out);
}

class NvptxKernelEmitter {
 public:
  NvptxKernelEmitter(const KernelFunc& k, const GpuMapping& mapping, llvm::Module& m, bool grid_dependency)
      : k_(k), map_(mapping), m_(m), ctx_(m.getContext()), b_(ctx_), grid_dependency_(grid_dependency) {
    llvm::FastMathFlags fmf;
    fmf.setAllowReassoc();
    fmf.setAllowContract();
    fmf.setNoSignedZeros();
    b_.setFastMathFlags(fmf);
  }

  Status Emit() {
    for (const KernelArg& a : k_.args())
      if (!IsSupportedKernelDType(a.dtype))
        return Unsupported("NVPTX codegen: kernel " + k_.name() + " argument " + a.name + " has dtype " +
                           ir::DTypeName(a.dtype));
    const size_t num_ptrs = k_.args().size() + (k_.workspace_bytes() > 0 ? 1 : 0);
    std::vector<llvm::Type*> params(num_ptrs, b_.getPtrTy());
    fn_ = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false),
                                 llvm::GlobalValue::ExternalLinkage, k_.name(), m_);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    for (size_t i = 0; i < num_ptrs; ++i) {
      unsigned a = static_cast<unsigned>(i);
      fn_->addParamAttr(a, llvm::Attribute::NoAlias);
      fn_->addParamAttr(a, llvm::Attribute::getWithAlignment(ctx_, llvm::Align(16)));
      if (i < k_.args().size() && k_.args()[i].access == ArgAccess::kRead)
        fn_->addParamAttr(a, llvm::Attribute::ReadOnly);
      fn_->getArg(a)->setName(i < k_.args().size() ? k_.args()[i].name : std::string("workspace"));
      ptrs_.push_back(fn_->getArg(a));
    }
    Annotate();

    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn_));
    std::set<int> locals;
    CollectLocalIds(k_, *k_.body(), locals);
    for (int id : locals) {
      const Buffer& buf = k_.buffer(id);
      llvm::Type* t = llvm::ArrayType::get(MemType(buf.dtype), static_cast<uint64_t>(buf.NumElements()));
      llvm::AllocaInst* a = b_.CreateAlloca(t, nullptr, buf.name);
      a->setAlignment(llvm::Align(16));
      locals_[id] = a;
    }
    if (grid_dependency_) {
      auto* fty = llvm::FunctionType::get(b_.getVoidTy(), false);
      b_.CreateCall(llvm::InlineAsm::get(fty, "griddepcontrol.launch_dependents;", "~{memory}", true));
      b_.CreateCall(llvm::InlineAsm::get(fty, "griddepcontrol.wait;", "~{memory}", true));
    }
    tid_ = b_.CreateZExt(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), b_.getInt64Ty(), "tid");
    ntid_ = b_.CreateZExt(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x), b_.getInt64Ty(), "ntid");
    ctaid_ = b_.CreateZExt(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), b_.getInt64Ty(), "ctaid");
    nctaid_ = b_.CreateZExt(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), b_.getInt64Ty(), "nctaid");
    gid_ = b_.CreateAdd(b_.CreateMul(ctaid_, ntid_, "", true, true), tid_, "gid", true, true);
    gsize_ = b_.CreateMul(nctaid_, ntid_, "gsize", true, true);

    for (const GpuPhase& p : map_.phases) {
      if (!p.stmt) return Fail("phase without statement");
      switch (p.kind) {
        case GpuPhaseKind::kThreadPerIter: KEEL_RETURN_IF_ERROR(EmitThreadPerIter(*p.stmt)); break;
        case GpuPhaseKind::kFlat: KEEL_RETURN_IF_ERROR(EmitFlat(p)); break;
        case GpuPhaseKind::kBlockPerRow: KEEL_RETURN_IF_ERROR(EmitBlockPerRow(*p.stmt)); break;
        case GpuPhaseKind::kSingleBlock: KEEL_RETURN_IF_ERROR(EmitSingleBlock(*p.stmt)); break;
      }
    }
    b_.CreateRetVoid();
    return status_;
  }

 private:
  Status Fail(const std::string& m) {
    if (status_.ok()) status_ = Internal("NVPTX codegen: kernel " + k_.name() + ": " + m);
    return status_;
  }

  void Annotate() {
    llvm::NamedMDNode* ann = m_.getOrInsertNamedMetadata("nvvm.annotations");
    llvm::Metadata* fn = llvm::ValueAsMetadata::get(fn_);
    ann->addOperand(llvm::MDNode::get(
        ctx_, {fn, llvm::MDString::get(ctx_, "kernel"), llvm::ConstantAsMetadata::get(b_.getInt32(1))}));
    ann->addOperand(llvm::MDNode::get(ctx_, {fn, llvm::MDString::get(ctx_, "maxntidx"),
                                             llvm::ConstantAsMetadata::get(b_.getInt32(map_.launch.block))}));
  }

  llvm::Value* Sreg(llvm::Intrinsic::ID id) {
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, id), {});
  }
  void Barrier() { b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::nvvm_barrier0), {}); }

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

  // ---- loops -------------------------------------------------------------------

  // for (iv = begin; iv < end; iv += step) { body(iv) } — a canonical loop.
  Status Loop(llvm::Value* begin, llvm::Value* end, llvm::Value* step, const std::string& name,
              const std::function<Status(llvm::Value*)>& body, bool unroll_full = false) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, name + ".loop", fn_);
    llvm::BasicBlock* bb = llvm::BasicBlock::Create(ctx_, name + ".body", fn_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, name + ".exit", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, name);
    iv->addIncoming(begin, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, end), bb, exit);
    b_.SetInsertPoint(bb);
    KEEL_RETURN_IF_ERROR(body(iv));
    llvm::Value* next = b_.CreateAdd(iv, step, "", false, true);
    llvm::BranchInst* latch = b_.CreateBr(header);
    if (unroll_full) {
      llvm::MDNode* full = llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.full")});
      llvm::MDNode* self = llvm::MDNode::getDistinct(ctx_, {nullptr, full});
      self->replaceOperandWith(0, self);
      latch->setMetadata(llvm::LLVMContext::MD_loop, self);
    }
    iv->addIncoming(next, b_.GetInsertBlock());
    b_.SetInsertPoint(exit);
    return status_;
  }

  llvm::Value* I64(int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); }

  Status EmitBody(const StmtNode& s, Mode mode) {
    for (const Stmt& c : s.body) KEEL_RETURN_IF_ERROR(EmitStmt(*c, mode));
    return status_;
  }

  Status EmitThreadPerIter(const StmtNode& s) {
    return Loop(b_.CreateAdd(I64(s.begin.int_value()), gid_), I64(s.end.int_value()), gsize_, VarName(s),
                [&](llvm::Value* iv) {
                  vars_[s.var->int_value] = iv;
                  Status st = EmitBody(s, Mode::kThread);
                  vars_.erase(s.var->int_value);
                  return st;
                });
  }

  Status EmitFlat(const GpuPhase& p) {
    const StmtNode& outer = *p.stmt;
    std::vector<const StmtNode*> body;
    for (const Stmt& c : outer.body)
      for (const StmtNode* s : FlattenBlock(*c)) body.push_back(s);
    if (body.size() != 1 || body[0]->kind != StmtKind::kFor) return Fail("flat phase without a single inner loop");
    const StmtNode* inner = body[0];
    const int64_t V = p.vector_width, per_row = p.inner / V;
    return Loop(gid_, I64(p.Items()), gsize_, "item", [&](llvm::Value* g) {
      llvm::Value* t = b_.CreateAdd(I64(outer.begin.int_value()), b_.CreateUDiv(g, I64(per_row)), "", true, true);
      llvm::Value* j0 = b_.CreateMul(b_.CreateURem(g, I64(per_row)), I64(V), "", true, true);
      j0 = b_.CreateAdd(j0, I64(inner->begin.int_value()), "", true, true);
      vars_[outer.var->int_value] = t;
      for (int64_t c = 0; c < V; ++c) {
        vars_[inner->var->int_value] = c == 0 ? j0 : b_.CreateAdd(j0, I64(c), "", true, true);
        KEEL_RETURN_IF_ERROR(EmitBody(*inner, Mode::kThread));
      }
      vars_.erase(inner->var->int_value);
      vars_.erase(outer.var->int_value);
      return status_;
    });
  }

  // ---- block per row ---------------------------------------------------------------

  llvm::GlobalVariable* SharedScratch() {
    if (shared_) return shared_;
    llvm::ArrayType* t = llvm::ArrayType::get(b_.getFloatTy(), 32);
    shared_ = new llvm::GlobalVariable(m_, t, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(t),
                                       k_.name() + ".red", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
    shared_->setAlignment(llvm::Align(16));
    return shared_;
  }

  llvm::Value* Combine(BinaryOp op, llvm::Value* a, llvm::Value* b) {
    switch (op) {
      case BinaryOp::kMax: return b_.CreateSelect(b_.CreateFCmpOGT(a, b), a, b);
      case BinaryOp::kMin: return b_.CreateSelect(b_.CreateFCmpOLT(a, b), a, b);
      default: return b_.CreateFAdd(a, b);
    }
  }

  // Every thread of the block ends with the op-combination of all threads' `v`.
  llvm::Value* BlockAllReduce(BinaryOp op, llvm::Value* v) {
    llvm::Function* shfl = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::nvvm_shfl_sync_bfly_f32);
    for (int lane_mask = 16; lane_mask >= 1; lane_mask /= 2) {
      llvm::Value* other = b_.CreateCall(shfl, {b_.getInt32(0xffffffffu), v, b_.getInt32(lane_mask), b_.getInt32(0x1f)});
      v = Combine(op, v, other);
    }
    if (map_.launch.block <= 32) return v;
    const uint32_t warps = map_.launch.block / 32;
    llvm::GlobalVariable* sh = SharedScratch();
    llvm::Type* arr = sh->getValueType();
    llvm::Value* lane = b_.CreateAnd(tid_, I64(31));
    llvm::Value* warp = b_.CreateLShr(tid_, I64(5));
    llvm::BasicBlock* write = llvm::BasicBlock::Create(ctx_, "red.write", fn_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "red.written", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(lane, I64(0)), write, done);
    b_.SetInsertPoint(write);
    b_.CreateStore(v, b_.CreateInBoundsGEP(arr, sh, {I64(0), warp}));
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    Barrier();
    llvm::Value* total = b_.CreateLoad(b_.getFloatTy(), b_.CreateInBoundsGEP(arr, sh, {I64(0), I64(0)}));
    for (uint32_t w = 1; w < warps; ++w)
      total = Combine(op, total, b_.CreateLoad(b_.getFloatTy(), b_.CreateInBoundsGEP(arr, sh, {I64(0), I64(w)})));
    Barrier();  // the scratch may be rewritten by the next reduction
    return total;
  }

  Status EmitBlockPerRow(const StmtNode& outer) {
    return Loop(b_.CreateAdd(I64(outer.begin.int_value()), ctaid_), I64(outer.end.int_value()), nctaid_, VarName(outer),
                [&](llvm::Value* row) {
                  vars_[outer.var->int_value] = row;
                  for (const Stmt& c : outer.body)
                    for (const StmtNode* s : FlattenBlock(*c)) KEEL_RETURN_IF_ERROR(EmitRowStatement(*s));
                  vars_.erase(outer.var->int_value);
                  return status_;
                });
  }

  Status EmitRowStatement(const StmtNode& s) {
    if (s.kind == StmtKind::kStore) return EmitStmt(s, Mode::kUniform);
    if (s.kind != StmtKind::kFor) return Fail("unexpected statement in a block-per-row body");
    int buffer = -1;
    std::vector<Expr> index;
    BinaryOp op = BinaryOp::kAdd;
    Expr f;
    if (MatchRowReduction(k_, s, &buffer, &index, &op, &f)) {
      double identity = op == BinaryOp::kAdd   ? 0.0
                        : op == BinaryOp::kMax ? -std::numeric_limits<double>::infinity()
                                               : std::numeric_limits<double>::infinity();
      llvm::AllocaInst* partial = EntryAlloca(b_.getFloatTy(), "partial");
      b_.CreateStore(llvm::ConstantFP::get(b_.getFloatTy(), identity), partial);
      KEEL_RETURN_IF_ERROR(RowLoop(s, [&](llvm::Value* l) {
        vars_[s.var->int_value] = l;
        memo_.clear();
        llvm::Value* x = EmitExpr(f);
        memo_.clear();
        vars_.erase(s.var->int_value);
        if (!x) return Fail("bad reduction operand");
        b_.CreateStore(Combine(op, b_.CreateLoad(b_.getFloatTy(), partial), x), partial);
        return status_;
      }));
      llvm::Value* total = BlockAllReduce(op, b_.CreateLoad(b_.getFloatTy(), partial));
      llvm::Value* addr = Address(buffer, index);
      if (!addr) return Fail("bad reduction target");
      b_.CreateStore(Combine(op, b_.CreateLoad(b_.getFloatTy(), addr), total), addr);
      return status_;
    }
    KEEL_RETURN_IF_ERROR(RowLoop(s, [&](llvm::Value* l) {
      vars_[s.var->int_value] = l;
      Status st = EmitBody(s, Mode::kThread);
      vars_.erase(s.var->int_value);
      return st;
    }));
    Barrier();  // later statements of the row may read what this loop wrote
    return status_;
  }

  // A row loop split over the block: thread tid takes l = begin + tid + c*T for
  // c in [0, ceil(trip/T)), T the launch's block size (a compile-time constant,
  // see GpuMapping). The constant per-thread trip lets LLVM unroll short rows
  // fully, keeping the thread's elements in registers: the same loads in a
  // later loop of the row (softmax's max, sum and write passes, layer norm's
  // mean, variance and write passes) are then values already loaded, so the row
  // is read from memory once instead of once per pass.
  Status RowLoop(const StmtNode& s, const std::function<Status(llvm::Value*)>& body) {
    const int64_t T = map_.launch.block;
    const int64_t begin = s.begin.int_value(), end = s.end.int_value();
    const int64_t trip = std::max<int64_t>(0, end - begin);
    const int64_t per = (trip + T - 1) / T;
    const bool exact = trip % T == 0;
    llvm::Value* base = b_.CreateAdd(I64(begin), tid_, "", true, true);
    if (exact && per <= kMaxUnrolledRowTrip) {
      // Straight-line code: the loads of later passes meet the earlier ones in
      // one block, where CSE/GVN reuse them without relying on loop unrolling.
      for (int64_t c = 0; c < per; ++c) KEEL_RETURN_IF_ERROR(body(b_.CreateAdd(base, I64(c * T), "", true, true)));
      return status_;
    }
    return Loop(I64(0), I64(per), I64(1), VarName(s) + ".c", [&](llvm::Value* c) {
      llvm::Value* l = b_.CreateAdd(base, b_.CreateMul(c, I64(T), "", true, true), "", true, true);
      if (exact) return body(l);
      llvm::BasicBlock* in = llvm::BasicBlock::Create(ctx_, "row.in", fn_);
      llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "row.done", fn_);
      b_.CreateCondBr(b_.CreateICmpSLT(l, I64(end)), in, done);
      b_.SetInsertPoint(in);
      KEEL_RETURN_IF_ERROR(body(l));
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
      return status_;
    }, per <= kMaxUnrolledRowTrip);
  }
  static constexpr int64_t kMaxUnrolledRowTrip = 32;

  llvm::AllocaInst* EntryAlloca(llvm::Type* t, const std::string& name) {
    llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    return eb.CreateAlloca(t, nullptr, name);
  }

  // ---- single block -------------------------------------------------------------

  Status EmitSingleBlock(const StmtNode& body) {
    // Only block 0 runs the kernel (the launch has one block; be defensive).
    llvm::BasicBlock* run = llvm::BasicBlock::Create(ctx_, "block0", fn_);
    llvm::BasicBlock* skip = llvm::BasicBlock::Create(ctx_, "other_blocks", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(ctaid_, I64(0)), run, skip);
    b_.SetInsertPoint(run);
    KEEL_RETURN_IF_ERROR(EmitStmt(body, Mode::kUniform));
    b_.CreateBr(skip);
    b_.SetInsertPoint(skip);
    return status_;
  }

  // ---- statements -----------------------------------------------------------------

  std::string VarName(const StmtNode& s) { return k_.var_names().at(static_cast<size_t>(s.var->int_value)); }

  Status EmitStmt(const StmtNode& s, Mode mode) {
    if (!status_.ok()) return status_;
    switch (s.kind) {
      case StmtKind::kBlock:
        return EmitBody(s, mode);
      case StmtKind::kStore: {
        memo_.clear();
        llvm::Value* v = EmitExpr(s.value);
        llvm::Value* addr = Address(s.buffer, s.indices);
        memo_.clear();
        if (!v || !addr) return Fail("bad store");
        if (k_.buffer(s.buffer).dtype == DType::kBool) v = b_.CreateZExt(v, b_.getInt8Ty());
        bool guarded = mode == Mode::kUniform && k_.buffer(s.buffer).scope != BufferScope::kLocal;
        if (!guarded) {
          b_.CreateStore(v, addr);
          return status_;
        }
        llvm::BasicBlock* write = llvm::BasicBlock::Create(ctx_, "t0.store", fn_);
        llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "t0.done", fn_);
        b_.CreateCondBr(b_.CreateICmpEQ(tid_, I64(0)), write, done);
        b_.SetInsertPoint(write);
        b_.CreateStore(v, addr);
        b_.CreateBr(done);
        b_.SetInsertPoint(done);
        Barrier();
        return status_;
      }
      case StmtKind::kIf: {
        memo_.clear();
        llvm::Value* c = EmitExpr(s.cond);
        memo_.clear();
        if (!c) return Fail("bad condition");
        llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
        llvm::BasicBlock* else_bb = s.else_body.empty() ? nullptr : llvm::BasicBlock::Create(ctx_, "else", fn_);
        llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "endif", fn_);
        b_.CreateCondBr(c, then_bb, else_bb ? else_bb : join);
        b_.SetInsertPoint(then_bb);
        KEEL_RETURN_IF_ERROR(EmitBody(s, mode));
        b_.CreateBr(join);
        if (else_bb) {
          b_.SetInsertPoint(else_bb);
          for (const Stmt& c2 : s.else_body) KEEL_RETURN_IF_ERROR(EmitStmt(*c2, mode));
          b_.CreateBr(join);
        }
        b_.SetInsertPoint(join);
        return status_;
      }
      case StmtKind::kFor: {
        if (s.loop == LoopKind::kUnroll && s.begin.IsIntConst() && s.end.IsIntConst()) {
          for (int64_t i = s.begin.int_value(); i < s.end.int_value(); ++i) {
            vars_[s.var->int_value] = I64(i);
            KEEL_RETURN_IF_ERROR(EmitBody(s, mode));
          }
          vars_.erase(s.var->int_value);
          return status_;
        }
        memo_.clear();
        llvm::Value* begin = EmitExpr(s.begin);
        llvm::Value* end = EmitExpr(s.end);
        memo_.clear();
        if (!begin || !end) return Fail("bad loop bounds");
        // A parallel loop met in uniform (single-block) code: split over the block.
        bool split = s.loop == LoopKind::kParallel && mode == Mode::kUniform;
        if (split) begin = b_.CreateAdd(begin, tid_, "", true, true);
        KEEL_RETURN_IF_ERROR(Loop(begin, end, split ? ntid_ : I64(1), VarName(s), [&](llvm::Value* iv) {
          vars_[s.var->int_value] = iv;
          Status st = EmitBody(s, split ? Mode::kThread : mode);
          vars_.erase(s.var->int_value);
          return st;
        }));
        if (split) Barrier();
        return status_;
      }
    }
    return status_;
  }

  // ---- expressions -------------------------------------------------------------------

  llvm::Value* BufferBase(const Buffer& buf) {
    switch (buf.scope) {
      case BufferScope::kArg:
        return ptrs_.at(static_cast<size_t>(buf.arg_index));
      case BufferScope::kWorkspace:
        return b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), ptrs_.back(), static_cast<uint64_t>(buf.byte_offset));
      case BufferScope::kLocal: {
        auto it = locals_.find(buf.id);
        if (it == locals_.end()) { (void)Fail("local " + buf.name + " not allocated"); return nullptr; }
        return it->second;
      }
      case BufferScope::kConstant:
        return ConstantGlobal(buf);
    }
    return nullptr;
  }

  // Baked constants live in the module's global (device) memory, addrspace(1).
  llvm::Value* ConstantGlobal(const Buffer& buf) {
    auto it = constants_.find(buf.id);
    if (it != constants_.end()) return it->second;
    llvm::Constant* init = llvm::ConstantDataArray::getRaw(
        llvm::StringRef(reinterpret_cast<const char*>(buf.constant_data.data()), buf.constant_data.size()),
        static_cast<uint64_t>(buf.NumElements()), MemType(buf.dtype));
    auto* g = new llvm::GlobalVariable(m_, init->getType(), true, llvm::GlobalValue::InternalLinkage, init,
                                       k_.name() + "." + buf.name, nullptr, llvm::GlobalValue::NotThreadLocal, 1);
    g->setAlignment(llvm::Align(16));
    llvm::Constant* generic = llvm::ConstantExpr::getAddrSpaceCast(g, b_.getPtrTy());
    constants_[buf.id] = generic;
    return generic;
  }

  llvm::Value* Address(int buffer, const std::vector<Expr>& indices) {
    const Buffer& buf = k_.buffer(buffer);
    llvm::Value* base = BufferBase(buf);
    if (!base) return nullptr;
    llvm::Value* linear = nullptr;
    int64_t stride = 1;
    for (size_t i = indices.size(); i-- > 0;) {
      llvm::Value* idx = EmitExpr(indices[i]);
      if (!idx) return nullptr;
      llvm::Value* term = stride == 1 ? idx : b_.CreateMul(idx, I64(stride), "", false, true);
      linear = linear ? b_.CreateAdd(linear, term, "", false, true) : term;
      stride *= buf.shape[i];
    }
    if (!linear) linear = I64(0);
    return b_.CreateInBoundsGEP(MemType(buf.dtype), base, linear);
  }

  llvm::Value* Intrinsic1(llvm::Intrinsic::ID id, llvm::Value* a) {
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, id, {a->getType()}), {a});
  }

  // A libdevice function: __nv_<name>f for f32, __nv_<name> for f64.
  llvm::Value* Libdevice(const std::string& name, std::vector<llvm::Value*> args) {
    bool f32 = args[0]->getType()->isFloatTy();
    std::vector<llvm::Type*> types(args.size(), args[0]->getType());
    llvm::FunctionCallee f =
        m_.getOrInsertFunction("__nv_" + name + (f32 ? "f" : ""), llvm::FunctionType::get(args[0]->getType(), types, false));
    llvm::CallInst* c = b_.CreateCall(f, args);
    c->setDoesNotAccessMemory();
    c->setDoesNotThrow();
    return c;
  }

  llvm::Value* ConvertTo(llvm::Value* v, DType from, DType to) {
    if (from == to) return v;
    llvm::Type* t = RegType(to);
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

  llvm::Value* EmitExpr(const Expr& e) {
    if (e.is_null()) { (void)Fail("null expression"); return nullptr; }
    auto memo = memo_.find(e.get());
    if (memo != memo_.end()) return memo->second;
    llvm::Value* v = EmitExprUncached(e);
    memo_[e.get()] = v;
    return v;
  }

  llvm::Value* EmitExprUncached(const Expr& e) {
    switch (e->kind) {
      case ExprKind::kIntConst:
        if (e->type == DType::kBool) return b_.getInt1(e->int_value != 0);
        return llvm::ConstantInt::get(RegType(e->type), static_cast<uint64_t>(e->int_value), true);
      case ExprKind::kFloatConst:
        return llvm::ConstantFP::get(RegType(e->type), e->float_value);
      case ExprKind::kVar: {
        auto it = vars_.find(e->int_value);
        if (it == vars_.end()) { (void)Fail("unbound variable"); return nullptr; }
        return it->second;
      }
      case ExprKind::kLoad: {
        llvm::Value* addr = Address(e->buffer, e->operands);
        if (!addr) return nullptr;
        const Buffer& buf = k_.buffer(e->buffer);
        llvm::Value* v = b_.CreateLoad(MemType(buf.dtype), addr);
        if (buf.dtype == DType::kBool) v = b_.CreateICmpNE(v, b_.getInt8(0));
        return v;
      }
      case ExprKind::kCast: {
        llvm::Value* a = EmitExpr(e->operands[0]);
        return a ? ConvertTo(a, e->operands[0].type(), e->type) : nullptr;
      }
      case ExprKind::kSelect: {
        llvm::Value* c = EmitExpr(e->operands[0]);
        llvm::Value* a = EmitExpr(e->operands[1]);
        llvm::Value* b = EmitExpr(e->operands[2]);
        if (!c || !a || !b) return nullptr;
        return b_.CreateSelect(c, a, b);
      }
      case ExprKind::kUnary: return EmitUnary(e);
      case ExprKind::kBinary: return EmitBinary(e);
    }
    return nullptr;
  }

  llvm::Value* EmitUnary(const Expr& e) {
    llvm::Value* a = EmitExpr(e->operands[0]);
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
      case UnaryOp::kExp: return Libdevice("exp", {a});
      case UnaryOp::kLog: return Libdevice("log", {a});
      case UnaryOp::kSqrt: return Intrinsic1(llvm::Intrinsic::sqrt, a);
      case UnaryOp::kRsqrt: return Libdevice("rsqrt", {a});
      case UnaryOp::kTanh: return Libdevice("tanh", {a});
      case UnaryOp::kErf: return Libdevice("erf", {a});
      case UnaryOp::kSigmoid: {
        llvm::Value* one = llvm::ConstantFP::get(a->getType(), 1.0);
        return b_.CreateFDiv(one, b_.CreateFAdd(one, Libdevice("exp", {b_.CreateFNeg(a)})));
      }
      case UnaryOp::kFloor: return Intrinsic1(llvm::Intrinsic::floor, a);
      case UnaryOp::kCeil: return Intrinsic1(llvm::Intrinsic::ceil, a);
      case UnaryOp::kNot: return b_.CreateNot(a);
    }
    return nullptr;
  }

  llvm::Value* EmitBinary(const Expr& e) {
    llvm::Value* a = EmitExpr(e->operands[0]);
    llvm::Value* b = EmitExpr(e->operands[1]);
    if (!a || !b) return nullptr;
    DType t = e->operands[0].type();
    bool fl = IsFloat(t);
    bool uns = t == DType::kU8 || t == DType::kBool;
    switch (e->binary) {
      case BinaryOp::kAdd: return fl ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b, "", false, !uns);
      case BinaryOp::kSub: return fl ? b_.CreateFSub(a, b) : b_.CreateSub(a, b, "", false, !uns);
      case BinaryOp::kMul: return fl ? b_.CreateFMul(a, b) : b_.CreateMul(a, b, "", false, !uns);
      case BinaryOp::kDiv: return fl ? b_.CreateFDiv(a, b) : (uns ? b_.CreateUDiv(a, b) : b_.CreateSDiv(a, b));
      case BinaryOp::kMod: return fl ? Libdevice("fmod", {a, b}) : (uns ? b_.CreateURem(a, b) : b_.CreateSRem(a, b));
      case BinaryOp::kMin:
        return b_.CreateSelect(fl ? b_.CreateFCmpOLT(a, b) : (uns ? b_.CreateICmpULT(a, b) : b_.CreateICmpSLT(a, b)), a, b);
      case BinaryOp::kMax:
        return b_.CreateSelect(fl ? b_.CreateFCmpOGT(a, b) : (uns ? b_.CreateICmpUGT(a, b) : b_.CreateICmpSGT(a, b)), a, b);
      case BinaryOp::kPow:
        if (!fl) { (void)Fail("integer pow"); return nullptr; }
        return Libdevice("pow", {a, b});
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

  const KernelFunc& k_;
  const GpuMapping& map_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  bool grid_dependency_ = false;
  llvm::Function* fn_ = nullptr;
  std::vector<llvm::Value*> ptrs_;
  llvm::Value *tid_ = nullptr, *ntid_ = nullptr, *ctaid_ = nullptr, *nctaid_ = nullptr;
  llvm::Value *gid_ = nullptr, *gsize_ = nullptr;
  llvm::GlobalVariable* shared_ = nullptr;
  std::map<int, llvm::Value*> locals_;
  std::map<int64_t, llvm::Value*> vars_;
  std::map<int, llvm::Constant*> constants_;
  std::map<const ExprNode*, llvm::Value*> memo_;  // lookup only; cleared per statement
  Status status_;
};

}  // namespace

Status EmitNvptxKernel(const KernelFunc& kernel, const GpuMapping& mapping, llvm::Module& module,
                       bool grid_dependency) {
  KEEL_RETURN_IF_ERROR(kernel.Verify());
  if (mapping.phases.empty()) return Internal("NVPTX codegen: kernel " + kernel.name() + " has an empty GPU mapping");
  return NvptxKernelEmitter(kernel, mapping, module, grid_dependency).Emit();
}

}  // namespace keel::codegen
