// compiler/codegen/llvm_nvptx_emitter.cc — device module assembly, libdevice
// linking, optimization, PTX emission, ptxas and the host-side library that
// embeds the result (see llvm_nvptx_emitter.h).
#include "compiler/codegen/llvm_nvptx_emitter.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <memory>
#include <optional>
#include <set>

#include "compiler/codegen/llvm_nvptx_kernel.h"
#include "compiler/codegen/llvm_target_setup.h"
#include "compiler/codegen/tool_process.h"
#include "keel/kernel_abi.h"

namespace keel::codegen {
namespace {

constexpr const char* kNvptxTriple = "nvptx64-nvidia-cuda";
constexpr const char* kHostTriple = "x86_64-unknown-linux-gnu";

// The device code and the host object that embeds it.
void InitTargets() {
  InitLlvmNvptxTarget();
  InitLlvmX86Target();
}

Result<std::unique_ptr<llvm::TargetMachine>> MakeMachine(const std::string& triple, const std::string& cpu,
                                                         const std::string& features, int opt,
                                                         std::optional<llvm::Reloc::Model> reloc) {
  InitTargets();
  return CreateTargetMachine(triple, cpu, features, opt, reloc);
}

Result<std::unique_ptr<llvm::TargetMachine>> DeviceMachine(const NvptxTargetOptions& o) {
  if (o.arch.rfind("sm_", 0) != 0) return Unsupported("CUDA arch '" + o.arch + "' is not of the form sm_XY");
  return MakeMachine(kNvptxTriple, o.arch, "+" + o.ptx_version, o.opt_level, std::nullopt);
}

// The device module: kernels, libdevice, internalized helpers; unoptimized.
Result<std::unique_ptr<llvm::Module>> BuildDeviceModule(llvm::LLVMContext& ctx, const std::vector<KernelSpec>& kernels,
                                                        const NvptxTargetOptions& o, const llvm::TargetMachine& tm) {
  auto m = std::make_unique<llvm::Module>("keel_cuda_kernels", ctx);
  m->setSourceFileName("keel_cuda_kernels");
  m->setTargetTriple(kNvptxTriple);
  m->setDataLayout(tm.createDataLayout());
  // libdevice's __nvvm_reflect("__CUDA_FTZ") queries: IEEE denormals.
  m->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", static_cast<uint32_t>(0));

  std::set<std::string> names;
  for (const KernelSpec& spec : kernels) {
    KEEL_RETURN_IF_ERROR(CheckKernelName(spec, {"__nv"}, names));  // __nv*: libdevice
    KEEL_ASSIGN_OR_RETURN(GpuMapping mapping, MapKernelToGpu(*spec.kernel, o.mapping));
    KEEL_RETURN_IF_ERROR(EmitNvptxKernel(*spec.kernel, mapping, *m, NvptxSmVersion(o.arch)));
  }

  bool needs_libdevice = false;
  for (const llvm::Function& f : *m)
    if (f.isDeclaration() && f.getName().startswith("__nv_")) needs_libdevice = true;
  if (needs_libdevice) {
    llvm::SMDiagnostic diag;
    std::unique_ptr<llvm::Module> lib = llvm::parseIRFile(o.libdevice, diag, ctx);
    if (!lib) return NotFound("cannot load libdevice " + o.libdevice + ": " + diag.getMessage().str());
    lib->setTargetTriple(kNvptxTriple);
    lib->setDataLayout(m->getDataLayout());
    if (llvm::Linker::linkModules(*m, std::move(lib), llvm::Linker::Flags::LinkOnlyNeeded))
      return Internal("linking libdevice failed");
  }
  // Only the kernels are entry points; everything else may be inlined and dropped.
  for (llvm::Function& f : *m) {
    if (f.isDeclaration() || names.count(f.getName().str())) continue;
    f.setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  for (llvm::GlobalVariable& g : m->globals())
    if (!g.isDeclaration()) g.setLinkage(llvm::GlobalValue::InternalLinkage);

  std::string verr;
  llvm::raw_string_ostream vs(verr);
  if (llvm::verifyModule(*m, &vs)) return Internal("LLVM NVPTX module verification failed: " + vs.str());
  return m;
}

void Optimize(llvm::Module& m, llvm::TargetMachine& tm, int opt_level) {
  if (opt_level <= 0) return;
  llvm::PipelineTuningOptions pto;
  pto.LoopUnrolling = true;
  pto.SLPVectorization = false;  // GPU: the load/store vectorizer in the back end does the useful part
  pto.LoopVectorization = false;
  llvm::TargetLibraryInfoImpl tlii{llvm::Triple(m.getTargetTriple())};
  tlii.disableAllFunctions();  // no host libm on the device
  // The NVPTX target machine registers NVVMReflect at the pipeline start.
  RunModulePipeline(m, tm, pto, tlii, opt_level);
}

// LLVM 16's NVPTX back end miscompiles `select (X & 2^k) == 0, 0, M` (how
// InstCombine writes `((i >> k) & 1) * M`, common in index arithmetic): the DAG
// turns it into `and (sra (shl X, W-1-k), W-1), M`, which instruction selection
// makes an unsigned bit-field extract `bfe.u64 .., W-1, popcount(M)` whose field
// runs past the top bit, where PTX fills zeros but sra replicates the sign:
// wrong indices (DepthToSpace and Einsum read the wrong elements). The same
// value as `((X >> k) & 1) * M` selects correctly, so rewrite it before codegen.
void AvoidBitSelectMiscompile(llvm::Module& m) {
  std::vector<llvm::SelectInst*> selects;
  for (llvm::Function& f : m) {
    for (llvm::BasicBlock& bb : f) {
      for (llvm::Instruction& i : bb) {
        if (auto* sel = llvm::dyn_cast<llvm::SelectInst>(&i)) selects.push_back(sel);
      }
    }
  }
  for (llvm::SelectInst* sel : selects) {
    auto* t = llvm::dyn_cast<llvm::ConstantInt>(sel->getTrueValue());
    auto* f = llvm::dyn_cast<llvm::ConstantInt>(sel->getFalseValue());
    auto* cmp = llvm::dyn_cast<llvm::ICmpInst>(sel->getCondition());
    if (!t || !f || !cmp || !cmp->isEquality() || !(t->isZero() || f->isZero())) continue;
    auto* zero = llvm::dyn_cast<llvm::ConstantInt>(cmp->getOperand(1));
    auto* masked = llvm::dyn_cast<llvm::BinaryOperator>(cmp->getOperand(0));
    if (!zero || !zero->isZero() || !masked || masked->getOpcode() != llvm::Instruction::And) continue;
    auto* bitmask = llvm::dyn_cast<llvm::ConstantInt>(masked->getOperand(1));
    if (!bitmask || !bitmask->getValue().isPowerOf2() || masked->getType() != sel->getType()) continue;
    // The value when the bit is set: M where (bit == 0) selects 0, and vice versa.
    const bool eq = cmp->getPredicate() == llvm::ICmpInst::ICMP_EQ;
    llvm::ConstantInt* when_set = eq ? f : t;
    llvm::ConstantInt* when_clear = eq ? t : f;
    if (!when_clear->isZero()) continue;
    llvm::IRBuilder<> b(sel);
    llvm::Value* bit = b.CreateLShr(masked, bitmask->getValue().logBase2());
    sel->replaceAllUsesWith(b.CreateMul(bit, when_set));
  }
}

// LLVM 16's NVPTX back end also cannot select a one-bit multiply, and makes one
// itself: for `X & 1` the DAG narrows X's arithmetic to the one demanded bit, and
// i1 is a legal (predicate) type there, so `(a * b) & 1` becomes `mul i1`, for
// which there is no instruction ("LLVM ERROR: Cannot select: i1 = mul", which
// aborts the compiler). `it % 2` is `it & 1`: a grid-stride loop over two output
// channels hit it (a segmentation head's 16 -> 2 convolution in fp16). A freeze
// of X, which the DAG keeps for values not known to be well defined, stops the
// narrowing there; the value is the same.
void AvoidOneBitNarrowing(llvm::Module& m) {
  std::vector<llvm::BinaryOperator*> masks;
  for (llvm::Function& f : m) {
    for (llvm::BasicBlock& bb : f) {
      for (llvm::Instruction& i : bb) {
        auto* op = llvm::dyn_cast<llvm::BinaryOperator>(&i);
        if (!op || op->getOpcode() != llvm::Instruction::And || !op->getType()->isIntegerTy() ||
            op->getType()->getIntegerBitWidth() <= 1 || llvm::isa<llvm::Constant>(op->getOperand(0)))
          continue;
        auto* one = llvm::dyn_cast<llvm::ConstantInt>(op->getOperand(1));
        if (one && one->isOne()) masks.push_back(op);
      }
    }
  }
  for (llvm::BinaryOperator* op : masks) {
    llvm::IRBuilder<> b(op);
    op->setOperand(0, b.CreateFreeze(op->getOperand(0)));
  }
}

Result<std::string> ModuleToPtx(llvm::Module& m, llvm::TargetMachine& tm) {
  AvoidBitSelectMiscompile(m);
  AvoidOneBitNarrowing(m);
  llvm::SmallVector<char, 0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_AssemblyFile))
    return Unsupported("LLVM cannot emit PTX for this target");
  pm.run(m);
  return std::string(ptx.begin(), ptx.end());
}

// A host object exporting the ABI symbols and the embedded CUDA module.
using ObjectBytes = llvm::SmallVector<char, 0>;

Result<ObjectBytes> HostObject(const std::string& library_id, const std::string& ptx,
                                              const std::vector<uint8_t>& cubin, bool grid_dependency) {
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm,
                        MakeMachine(kHostTriple, "x86-64", "", 2, llvm::Reloc::PIC_));
  llvm::LLVMContext ctx;
  llvm::Module m("keel_cuda_library", ctx);
  m.setSourceFileName("keel_cuda_library");
  m.setTargetTriple(kHostTriple);
  m.setDataLayout(tm->createDataLayout());
  llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
  auto add = [&](llvm::Constant* init, const char* name, unsigned align) {
    auto* g = new llvm::GlobalVariable(m, init->getType(), true, llvm::GlobalValue::ExternalLinkage, init, name);
    g->setAlignment(llvm::Align(align));
  };
  add(llvm::ConstantInt::get(i32, KEEL_KERNEL_ABI_VERSION), "keel_kernel_abi_version", 4);
  add(llvm::ConstantDataArray::getString(ctx, library_id, true), "keel_kernel_library_id", 1);
  add(llvm::ConstantDataArray::getString(ctx, ptx, true), "keel_cuda_ptx", 64);
  add(llvm::ConstantInt::get(i64, ptx.size()), "keel_cuda_ptx_size", 8);
  static const uint8_t kEmpty[1] = {0};  // a zero-length array cannot be exported
  llvm::ArrayRef<uint8_t> cubin_bytes = cubin.empty() ? llvm::ArrayRef<uint8_t>(kEmpty, 1)
                                                      : llvm::ArrayRef<uint8_t>(cubin.data(), cubin.size());
  add(llvm::ConstantDataArray::get(ctx, cubin_bytes), "keel_cuda_cubin", 64);
  add(llvm::ConstantInt::get(i64, cubin.size()), "keel_cuda_cubin_size", 8);
  // 1: every kernel starts with griddepcontrol.wait, so the VM may launch them
  // as programmatic dependents of the previous kernel (llvm_nvptx_kernel.h).
  add(llvm::ConstantInt::get(i32, grid_dependency ? 1 : 0), "keel_cuda_grid_dependency", 4);
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile)) return Unsupported("LLVM cannot emit x86-64 objects");
  pm.run(m);
  return object;
}

}  // namespace

int NvptxSmVersion(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return 0;
  int v = 0;
  for (size_t i = 3; i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i) v = v * 10 + (arch[i] - '0');
  return v;
}

bool NvptxGridDependency(const std::string& arch) { return NvptxSmVersion(arch) >= 90; }

Result<GpuMapping> CudaKernelMapping(const KernelSpec& spec, const NvptxTargetOptions& options) {
  if (!spec.kernel) return InvalidArgument("kernel spec " + spec.name + " has no kernel IR");
  return MapKernelToGpu(*spec.kernel, options.mapping);
}

Result<std::string> EmitNvptxModuleIR(const std::vector<KernelSpec>& kernels, const NvptxTargetOptions& options,
                                      bool optimized) {
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, DeviceMachine(options));
  llvm::LLVMContext ctx;
  QuietDiagnostics(ctx);
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> m, BuildDeviceModule(ctx, kernels, options, *tm));
  if (optimized) Optimize(*m, *tm, options.opt_level);
  return PrintModule(*m);
}

Result<std::string> EmitNvptxPtx(const std::vector<KernelSpec>& kernels, const NvptxTargetOptions& options) {
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, DeviceMachine(options));
  llvm::LLVMContext ctx;
  QuietDiagnostics(ctx);
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> m, BuildDeviceModule(ctx, kernels, options, *tm));
  Optimize(*m, *tm, options.opt_level);
  return ModuleToPtx(*m, *tm);
}

Result<std::vector<uint8_t>> AssemblePtx(const std::string& ptx, const NvptxTargetOptions& options) {
  if (options.ptxas.empty()) return NotFound("no ptxas configured");
  ScratchDir dir;
  KEEL_RETURN_IF_ERROR(dir.Create());
  std::string in = dir.Path("kernels.ptx"), out = dir.Path("kernels.cubin"), log = dir.Path("ptxas.log");
  KEEL_RETURN_IF_ERROR(WriteBytes(in, ptx.data(), ptx.size()));
  KEEL_RETURN_IF_ERROR(RunTool(options.ptxas, {"-arch=" + options.arch, "-O3", "-o", out, in}, log));
  return ReadBytes(out);
}

Status EmitCudaKernelLibrary(const std::vector<KernelSpec>& kernels, const std::string& library_id,
                             const std::string& out_so_path, const NvptxTargetOptions& options,
                             NvptxLibraryInfo* info) {
  KEEL_ASSIGN_OR_RETURN(std::string ptx, EmitNvptxPtx(kernels, options));
  std::vector<uint8_t> cubin;
  std::string note;
  Result<std::vector<uint8_t>> assembled = AssemblePtx(ptx, options);
  if (assembled.ok()) {
    cubin = std::move(assembled).value();
  } else if (assembled.status().code() == StatusCode::kNotFound) {
    note = "ptxas not available (" + assembled.status().message() + "): PTX only";
  } else {
    return assembled.status().WithContext("assembling PTX for " + options.arch);
  }
  KEEL_ASSIGN_OR_RETURN(ObjectBytes object, HostObject(library_id, ptx, cubin, NvptxGridDependency(options.arch)));

  ScratchDir dir;
  KEEL_RETURN_IF_ERROR(dir.Create());
  std::string obj = dir.Path("library.o"), so = dir.Path("model.keel.so"), log = dir.Path("link.log");
  KEEL_RETURN_IF_ERROR(WriteBytes(obj, object.data(), object.size()));
  KEEL_RETURN_IF_ERROR(
      RunTool(options.linker, {"-shared", "-o", so, obj, "-Wl,--build-id=none", "-Wl,-z,noexecstack"}, log));
  KEEL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadBytes(so));
  KEEL_RETURN_IF_ERROR(ReplaceFile(out_so_path, bytes));
  if (info) {
    info->arch = options.arch;
    info->ptx_bytes = ptx.size();
    info->cubin_bytes = cubin.size();
    info->note = note;
  }
  return Status::Ok();
}

}  // namespace keel::codegen
