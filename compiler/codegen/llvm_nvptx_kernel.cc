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
//   block_per_row   grid-stride over rows, a row per warp (rows up to 1024
//                   elements) or per block; inside a row, reduction loops are
//                   split over the row's threads and combined by a butterfly
//                   warp shuffle (plus a shared-memory step across warps for
//                   block rows), other loops are split over the row's threads,
//                   scalar code runs on every thread (stores to memory by the
//                   row's first thread, then a warp or block barrier);
//   single_block    one block; parallel loops split over its threads with a
//                   barrier after each, serial memory stores by thread 0 with a
//                   barrier after each.
// Locals are allocas in the entry block (SROA turns them into registers).
// Target-independent expression/statement emission lives in
// llvm_kernel_builder.h; math functions lower to libdevice here.
#include "compiler/codegen/llvm_nvptx_kernel.h"

#include "compiler/codegen/llvm_kernel_builder.h"
#include "compiler/codegen/llvm_math.h"

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

class NvptxKernelEmitter : public LlvmKernelBuilder {
 public:
  NvptxKernelEmitter(const KernelFunc& k, const GpuMapping& mapping, llvm::Module& m, int sm_version)
      : LlvmKernelBuilder(k, m, "NVPTX", /*fuse_div_mod=*/false),
        map_(mapping),
        grid_dependency_(sm_version >= 90),
        bf16_convert_(sm_version >= 80),
        relaxed_division_(HalfResultsOnly(k)) {}

  Status Emit() {
    KEEL_RETURN_IF_ERROR(CheckArgDTypes());
    const size_t num_ptrs = k_.args().size() + (k_.workspace_bytes() > 0 ? 1 : 0);
    std::vector<llvm::Type*> params(num_ptrs, b_.getPtrTy());
    r_.fn = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false),
                                 llvm::GlobalValue::ExternalLinkage, k_.name(), m_);
    r_.fn->addFnAttr(llvm::Attribute::NoUnwind);
    for (size_t i = 0; i < num_ptrs; ++i) {
      unsigned a = static_cast<unsigned>(i);
      r_.fn->addParamAttr(a, llvm::Attribute::NoAlias);
      r_.fn->addParamAttr(a, llvm::Attribute::getWithAlignment(ctx_, llvm::Align(16)));
      if (i < k_.args().size() && k_.args()[i].access == ArgAccess::kRead)
        r_.fn->addParamAttr(a, llvm::Attribute::ReadOnly);
      r_.fn->getArg(a)->setName(i < k_.args().size() ? k_.args()[i].name : std::string("workspace"));
      r_.ptrs.push_back(r_.fn->getArg(a));
    }
    Annotate();

    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", r_.fn));
    std::set<int> locals;
    CollectLocalBuffers(k_, *k_.body(), /*stop_at_parallel=*/false, locals);
    for (int id : locals) {
      const Buffer& buf = k_.buffer(id);
      llvm::Type* t = llvm::ArrayType::get(MemType(buf.dtype), static_cast<uint64_t>(buf.NumElements()));
      llvm::AllocaInst* a = b_.CreateAlloca(t, nullptr, buf.name);
      a->setAlignment(llvm::Align(16));
      r_.locals[id] = a;
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
        case GpuPhaseKind::kBlockPerRow: KEEL_RETURN_IF_ERROR(EmitBlockPerRow(p)); break;
        case GpuPhaseKind::kSingleBlock: KEEL_RETURN_IF_ERROR(EmitSingleBlock(*p.stmt)); break;
      }
    }
    b_.CreateRetVoid();
    return status_;
  }

 private:
  void Annotate() {
    llvm::NamedMDNode* ann = m_.getOrInsertNamedMetadata("nvvm.annotations");
    llvm::Metadata* fn = llvm::ValueAsMetadata::get(r_.fn);
    ann->addOperand(llvm::MDNode::get(
        ctx_, {fn, llvm::MDString::get(ctx_, "kernel"), llvm::ConstantAsMetadata::get(b_.getInt32(1))}));
    ann->addOperand(llvm::MDNode::get(ctx_, {fn, llvm::MDString::get(ctx_, "maxntidx"),
                                             llvm::ConstantAsMetadata::get(b_.getInt32(map_.launch.block))}));
  }

  llvm::Value* Sreg(llvm::Intrinsic::ID id) {
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, id), {});
  }
  // The threads that share work: the block, or one warp while a row phase runs
  // a row per warp (bar.warp.sync also orders their memory accesses).
  void Barrier() {
    if (warp_rows_) {
      b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::nvvm_bar_warp_sync), {b_.getInt32(-1)});
      return;
    }
    b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::nvvm_barrier0), {});
  }

  // ---- loops -------------------------------------------------------------------

  // for (iv = begin; iv < end; iv += step) { body(iv) } — a canonical loop.
  Status Loop(llvm::Value* begin, llvm::Value* end, llvm::Value* step, const std::string& name,
              const std::function<Status(llvm::Value*)>& body, bool unroll_full = false) {
    llvm::BranchInst* latch = nullptr;
    KEEL_RETURN_IF_ERROR(
        CanonicalLoop(r_.fn, begin, end, step, name, {name + ".loop", name + ".body", name + ".exit"}, body, &latch));
    if (unroll_full) SetLoopProperty(latch, {llvm::MDString::get(ctx_, "llvm.loop.unroll.full")});
    return status_;
  }

  Status EmitBody(const StmtNode& s, Mode mode) {
    for (const Stmt& c : s.body) KEEL_RETURN_IF_ERROR(EmitStmt(*c, mode));
    return status_;
  }

  Status EmitThreadPerIter(const StmtNode& s) {
    return Loop(b_.CreateAdd(I64(s.begin.int_value()), gid_), I64(s.end.int_value()), gsize_, VarName(s),
                [&](llvm::Value* iv) {
                  r_.vars[s.var->int_value] = iv;
                  Status st = EmitBody(s, Mode::kThread);
                  r_.vars.erase(s.var->int_value);
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
      r_.vars[outer.var->int_value] = t;
      for (int64_t c = 0; c < V; ++c) {
        r_.vars[inner->var->int_value] = c == 0 ? j0 : b_.CreateAdd(j0, I64(c), "", true, true);
        KEEL_RETURN_IF_ERROR(EmitBody(*inner, Mode::kThread));
      }
      r_.vars.erase(inner->var->int_value);
      r_.vars.erase(outer.var->int_value);
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

  // Every thread of the row ends with the op-combination of all its threads' `v`.
  llvm::Value* RowAllReduce(BinaryOp op, llvm::Value* v) {
    llvm::Function* shfl = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::nvvm_shfl_sync_bfly_f32);
    for (int lane_mask = 16; lane_mask >= 1; lane_mask /= 2) {
      llvm::Value* other = b_.CreateCall(shfl, {b_.getInt32(0xffffffffu), v, b_.getInt32(lane_mask), b_.getInt32(0x1f)});
      v = Combine(op, v, other);
    }
    if (row_threads_ <= 32) return v;
    const uint32_t warps = map_.launch.block / 32;
    llvm::GlobalVariable* sh = SharedScratch();
    llvm::Type* arr = sh->getValueType();
    llvm::Value* lane = b_.CreateAnd(tid_, I64(31));
    llvm::Value* warp = b_.CreateLShr(tid_, I64(5));
    llvm::BasicBlock* write = llvm::BasicBlock::Create(ctx_, "red.write", r_.fn);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "red.written", r_.fn);
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

  // Rows stride over the grid's row slots: one per block, or one per warp.
  Status EmitBlockPerRow(const GpuPhase& p) {
    const StmtNode& outer = *p.stmt;
    row_threads_ = p.row_threads;
    row_vector_ = p.vector_width;
    const int64_t slots = map_.launch.block / row_threads_;
    if (row_threads_ != 32 && slots != 1) return Fail("a row phase splits rows over warps or over the whole block");
    warp_rows_ = row_threads_ == 32;
    row_tid_ = slots > 1 ? b_.CreateAnd(tid_, I64(31)) : tid_;
    llvm::Value* first = b_.CreateMul(ctaid_, I64(slots), "", true, true);
    if (slots > 1) first = b_.CreateAdd(first, b_.CreateLShr(tid_, I64(5)), "", true, true);
    Status st = Loop(b_.CreateAdd(I64(outer.begin.int_value()), first, "", true, true), I64(outer.end.int_value()),
                     b_.CreateMul(nctaid_, I64(slots), "", true, true), VarName(outer), [&](llvm::Value* row) {
                       r_.vars[outer.var->int_value] = row;
                       for (const Stmt& c : outer.body)
                         for (const StmtNode* s : FlattenBlock(*c)) KEEL_RETURN_IF_ERROR(EmitRowStatement(*s));
                       r_.vars.erase(outer.var->int_value);
                       return status_;
                     });
    warp_rows_ = false;
    row_tid_ = nullptr;
    return st;
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
        r_.vars[s.var->int_value] = l;
        memo_.clear();
        llvm::Value* x = EmitExpr(r_, f);
        memo_.clear();
        r_.vars.erase(s.var->int_value);
        if (!x) return Fail("bad reduction operand");
        b_.CreateStore(Combine(op, b_.CreateLoad(b_.getFloatTy(), partial), x), partial);
        return status_;
      }));
      llvm::Value* total = RowAllReduce(op, b_.CreateLoad(b_.getFloatTy(), partial));
      llvm::Value* addr = Address(r_, buffer, index);
      if (!addr) return Fail("bad reduction target");
      b_.CreateStore(Combine(op, b_.CreateLoad(b_.getFloatTy(), addr), total), addr);
      return status_;
    }
    KEEL_RETURN_IF_ERROR(RowLoop(s, [&](llvm::Value* l) {
      r_.vars[s.var->int_value] = l;
      Status st = EmitBody(s, Mode::kThread);
      r_.vars.erase(s.var->int_value);
      return st;
    }));
    Barrier();  // later statements of the row may read what this loop wrote
    return status_;
  }

  // A row loop split over the row's threads: thread r (its index in the row)
  // takes l = begin + r*V + c*T*V + v for c in [0, ceil(trip/(T*V))) and v in
  // [0, V), T the phase's row_threads and V its vector_width (compile-time
  // constants, see GpuMapping; V > 1 only where every trip is a multiple of
  // T*V, and the V contiguous elements become one 128-bit access). The
  // constant per-thread trip lets LLVM unroll short rows fully, keeping the
  // thread's elements in registers: the same loads in a later loop of the row
  // (softmax's max, sum and write passes, layer norm's mean, variance and
  // write passes) are then values already loaded, so the row is read from
  // memory once instead of once per pass.
  Status RowLoop(const StmtNode& s, const std::function<Status(llvm::Value*)>& body) {
    const int64_t T = row_threads_, V = row_vector_;
    const int64_t begin = s.begin.int_value(), end = s.end.int_value();
    const int64_t trip = std::max<int64_t>(0, end - begin);
    if (V > 1 && trip % (T * V) != 0) return Fail("a vectorized row loop whose trip is not whole runs");
    const int64_t per = (trip + T * V - 1) / (T * V);
    const bool exact = trip % (T * V) == 0;
    llvm::Value* base = b_.CreateAdd(I64(begin), V > 1 ? b_.CreateMul(row_tid_, I64(V), "", true, true) : row_tid_,
                                     "", true, true);
    auto run = [&](llvm::Value* first) -> Status {
      for (int64_t v = 0; v < V; ++v) KEEL_RETURN_IF_ERROR(body(v == 0 ? first : b_.CreateAdd(first, I64(v), "", true, true)));
      return status_;
    };
    if (exact && per * V <= kMaxUnrolledRowTrip) {
      // Straight-line code: the loads of later passes meet the earlier ones in
      // one block, where CSE/GVN reuse them without relying on loop unrolling.
      for (int64_t c = 0; c < per; ++c) KEEL_RETURN_IF_ERROR(run(b_.CreateAdd(base, I64(c * T * V), "", true, true)));
      return status_;
    }
    return Loop(I64(0), I64(per), I64(1), VarName(s) + ".c", [&](llvm::Value* c) {
      llvm::Value* l = b_.CreateAdd(base, b_.CreateMul(c, I64(T * V), "", true, true), "", true, true);
      if (exact) return run(l);
      llvm::BasicBlock* in = llvm::BasicBlock::Create(ctx_, "row.in", r_.fn);
      llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "row.done", r_.fn);
      b_.CreateCondBr(b_.CreateICmpSLT(l, I64(end)), in, done);
      b_.SetInsertPoint(in);
      KEEL_RETURN_IF_ERROR(body(l));
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
      return status_;
    }, per * V <= kMaxUnrolledRowTrip);
  }
  static constexpr int64_t kMaxUnrolledRowTrip = 32;

  llvm::AllocaInst* EntryAlloca(llvm::Type* t, const std::string& name) {
    llvm::IRBuilder<> eb(&r_.fn->getEntryBlock(), r_.fn->getEntryBlock().begin());
    return eb.CreateAlloca(t, nullptr, name);
  }

  // ---- single block -------------------------------------------------------------

  Status EmitSingleBlock(const StmtNode& body) {
    // Only block 0 runs the kernel (the launch has one block; be defensive).
    llvm::BasicBlock* run = llvm::BasicBlock::Create(ctx_, "block0", r_.fn);
    llvm::BasicBlock* skip = llvm::BasicBlock::Create(ctx_, "other_blocks", r_.fn);
    b_.CreateCondBr(b_.CreateICmpEQ(ctaid_, I64(0)), run, skip);
    b_.SetInsertPoint(run);
    KEEL_RETURN_IF_ERROR(EmitStmt(body, Mode::kUniform));
    b_.CreateBr(skip);
    b_.SetInsertPoint(skip);
    return status_;
  }

  // ---- statements -----------------------------------------------------------------

  Status EmitStmt(const StmtNode& s, Mode mode) {
    if (!status_.ok()) return status_;
    switch (s.kind) {
      case StmtKind::kBlock:
        return EmitBody(s, mode);
      case StmtKind::kPrefetch:
        return status_;  // a CPU cache hint
      case StmtKind::kStore: {
        llvm::Value *v = nullptr, *addr = nullptr;
        KEEL_RETURN_IF_ERROR(StoreOperands(r_, s, v, addr));
        bool guarded = mode == Mode::kUniform && k_.buffer(s.buffer).scope != BufferScope::kLocal;
        if (!guarded) {
          b_.CreateStore(v, addr);
          return status_;
        }
        llvm::BasicBlock* write = llvm::BasicBlock::Create(ctx_, "t0.store", r_.fn);
        llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "t0.done", r_.fn);
        b_.CreateCondBr(b_.CreateICmpEQ(row_tid_ ? row_tid_ : tid_, I64(0)), write, done);
        b_.SetInsertPoint(write);
        b_.CreateStore(v, addr);
        b_.CreateBr(done);
        b_.SetInsertPoint(done);
        Barrier();
        return status_;
      }
      case StmtKind::kIf:
        return EmitIf(r_, s, Child(mode));
      case StmtKind::kFor: {
        if (s.loop == LoopKind::kUnroll && s.begin.IsIntConst() && s.end.IsIntConst())
          return EmitUnrolled(r_, s, s.begin.int_value(), s.end.int_value(), Child(mode));
        llvm::Value *begin = nullptr, *end = nullptr;
        KEEL_RETURN_IF_ERROR(LoopBounds(r_, s, begin, end, "bad loop bounds"));
        // A parallel loop met in uniform (single-block) code: split over the block.
        bool split = s.loop == LoopKind::kParallel && mode == Mode::kUniform;
        if (split) begin = b_.CreateAdd(begin, tid_, "", true, true);
        KEEL_RETURN_IF_ERROR(Loop(begin, end, split ? ntid_ : I64(1), VarName(s), [&](llvm::Value* iv) {
          r_.vars[s.var->int_value] = iv;
          Status st = EmitBody(s, split ? Mode::kThread : mode);
          r_.vars.erase(s.var->int_value);
          return st;
        }));
        if (split) Barrier();
        return status_;
      }
    }
    return status_;
  }

  // ---- expressions -------------------------------------------------------------------

  // Baked constants live in the module's global (device) memory, addrspace(1).
  llvm::Constant* NewConstantGlobal(const Buffer& buf, llvm::Constant* init) override {
    auto* g = new llvm::GlobalVariable(m_, init->getType(), true, llvm::GlobalValue::InternalLinkage, init,
                                       k_.name() + "." + buf.name, nullptr, llvm::GlobalValue::NotThreadLocal, 1);
    g->setAlignment(llvm::Align(16));
    return llvm::ConstantExpr::getAddrSpaceCast(g, b_.getPtrTy());
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

  llvm::Value* EmitMath(UnaryOp op, llvm::Value* a) override {
    switch (op) {
      case UnaryOp::kExp: return Libdevice("exp", {a});
      case UnaryOp::kLog: return Libdevice("log", {a});
      case UnaryOp::kRsqrt: return Libdevice("rsqrt", {a});
      case UnaryOp::kErf:  // straight-line for f32 (llvm_math.h: libdevice's erff branches)
        if (!a->getType()->isFloatTy()) return Libdevice("erf", {a});
        return EmitErfF32(b_, m_, a, [this](llvm::Value* v) { return Libdevice("exp", {v}); });
      // Ties to even (cvt.rni): libdevice's rint came out as roundf (ties away).
      case UnaryOp::kRound: return Intrinsic1(llvm::Intrinsic::roundeven, a);
      default:
        if (const char* name = LibmName(op)) return Libdevice(name, {a});
        (void)Fail(std::string("no math lowering for ") + UnaryOpName(op));
        return nullptr;
    }
  }
  llvm::Value* EmitFloatRem(llvm::Value* a, llvm::Value* b) override { return Libdevice("fmod", {a, b}); }

  // True when every argument the kernel writes is f16/bf16: its f32
  // intermediates then need no more than div.full's 2 ulp.
  static bool HalfResultsOnly(const KernelFunc& k) {
    bool any = false;
    for (const KernelArg& a : k.args()) {
      if (a.access == ArgAccess::kRead) continue;
      if (a.dtype != DType::kF16 && a.dtype != DType::kBF16) return false;
      any = true;
    }
    return any;
  }

  llvm::Value* EmitFDiv(llvm::Value* a, llvm::Value* b) override {
    if (!relaxed_division_ || !a->getType()->isFloatTy()) return b_.CreateFDiv(a, b);
    auto* one = llvm::dyn_cast<llvm::ConstantFP>(a);
    if (one && one->isExactlyValue(1.0)) {
      return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::nvvm_rcp_approx_ftz_f), {b});
    }
    auto* fty = llvm::FunctionType::get(b_.getFloatTy(), {b_.getFloatTy(), b_.getFloatTy()}, false);
    llvm::CallInst* c = b_.CreateCall(llvm::InlineAsm::get(fty, "div.full.f32 $0, $1, $2;", "=f,f,f", false), {a, b});
    // Pure: else it would split the load/store vectorizer's runs.
    c->setDoesNotAccessMemory();
    c->setDoesNotThrow();
    c->addFnAttr(llvm::Attribute::WillReturn);
    return c;
  }

  // cvt.rn.bf16.f32 (sm_80+): one instruction instead of the integer rounding.
  llvm::Value* NarrowToBF16(llvm::Value* f) override {
    if (!bf16_convert_ || !f->getType()->isFloatTy()) return LlvmKernelBuilder::NarrowToBF16(f);
    llvm::Function* cvt = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::nvvm_f2bf16_rn);
    llvm::CallInst* c = b_.CreateCall(cvt, {f});
    // Pure, as the division above: a call that may touch memory splits the
    // load/store vectorizer's runs (bf16 kernels moved 2 bytes per access: a
    // SiLU over [32,64,56,56] took 2.5x its f16 time).
    c->setDoesNotAccessMemory();
    c->setDoesNotThrow();
    c->addFnAttr(llvm::Attribute::WillReturn);
    llvm::Value* v = c;
    return v->getType()->isIntegerTy(16) ? v : b_.CreateBitCast(v, b_.getInt16Ty());
  }
  llvm::Value* EmitPow(llvm::Value* a, llvm::Value* b) override { return Libdevice("pow", {a, b}); }

  EmitChild Child(Mode mode) {
    return [this, mode](const StmtNode& c) { return EmitStmt(c, mode); };
  }

  const GpuMapping& map_;
  const bool grid_dependency_;
  const bool bf16_convert_;
  const bool relaxed_division_;
  KernelRegion r_;  // the kernel function: one region (no outlining on the GPU)
  llvm::Value *tid_ = nullptr, *ntid_ = nullptr, *ctaid_ = nullptr, *nctaid_ = nullptr;
  llvm::Value *gid_ = nullptr, *gsize_ = nullptr;
  llvm::GlobalVariable* shared_ = nullptr;
  // Row phases: threads per row, this thread's index in its row, and whether
  // a row is one warp's (barriers then synchronize the warp only).
  int64_t row_threads_ = 0;
  int64_t row_vector_ = 1;  // kBlockPerRow: contiguous row elements per thread and step
  llvm::Value* row_tid_ = nullptr;
  bool warp_rows_ = false;
};

}  // namespace

Status EmitNvptxKernel(const KernelFunc& kernel, const GpuMapping& mapping, llvm::Module& module,
                       int sm_version) {
  KEEL_RETURN_IF_ERROR(kernel.Verify());
  if (mapping.phases.empty()) return Internal("NVPTX codegen: kernel " + kernel.name() + " has an empty GPU mapping");
  return NvptxKernelEmitter(kernel, mapping, module, sm_version).Emit();
}

}  // namespace keel::codegen
