// compiler/codegen/llvm_cpu_emitter.cc — module assembly, optimization, object
// emission and linking of the CPU kernel library (see llvm_cpu_emitter.h).
#include "compiler/codegen/llvm_cpu_emitter.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>

#include <memory>
#include <optional>
#include <set>

#include "compiler/codegen/llvm_cpu_kernel.h"
#include "compiler/codegen/llvm_target_setup.h"
#include "compiler/codegen/tool_process.h"
#include "keel/kernel_abi.h"

namespace keel::codegen {
namespace {

constexpr const char* kTriple = "x86_64-unknown-linux-gnu";

bool HostHas(const llvm::StringMap<bool>& f, const char* name) {
  auto it = f.find(name);
  return it != f.end() && it->second;
}

Result<std::unique_ptr<llvm::TargetMachine>> MakeTargetMachine(const CpuTargetInfo& t, int opt_level) {
  InitLlvmX86Target();
  return CreateTargetMachine(t.triple, t.cpu, t.features, opt_level, llvm::Reloc::PIC_);
}

// Builds the module (unoptimized) for all kernels plus the ABI symbols.
Result<std::unique_ptr<llvm::Module>> BuildModule(llvm::LLVMContext& ctx, const std::vector<KernelSpec>& kernels,
                                                  const std::string& library_id, const CpuTargetInfo& target,
                                                  const llvm::TargetMachine& tm, bool vector_math) {
  auto m = std::make_unique<llvm::Module>("keel_kernels", ctx);
  m->setSourceFileName("keel_kernels");
  m->setTargetTriple(target.triple);
  m->setDataLayout(tm.createDataLayout());

  llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
  auto* ver = new llvm::GlobalVariable(*m, i32, true, llvm::GlobalValue::ExternalLinkage,
                                       llvm::ConstantInt::get(i32, KEEL_KERNEL_ABI_VERSION), "keel_kernel_abi_version");
  ver->setAlignment(llvm::Align(4));
  llvm::Constant* id = llvm::ConstantDataArray::getString(ctx, library_id, true);
  new llvm::GlobalVariable(*m, id->getType(), true, llvm::GlobalValue::ExternalLinkage, id, "keel_kernel_library_id");

  std::set<std::string> names;
  CpuFunctionAttrs attrs{target.cpu, target.features, vector_math};
  for (const KernelSpec& spec : kernels) {
    KEEL_RETURN_IF_ERROR(CheckKernelName(spec, {}, names));
    KEEL_RETURN_IF_ERROR(EmitCpuKernel(*spec.kernel, attrs, *m));
  }
  std::string verr;
  llvm::raw_string_ostream vs(verr);
  if (llvm::verifyModule(*m, &vs)) return Internal("LLVM module verification failed: " + vs.str());
  return m;
}

void Optimize(llvm::Module& m, llvm::TargetMachine& tm, const CpuTargetOptions& options) {
  if (options.opt_level <= 0) return;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  pto.LoopUnrolling = true;
  pto.LoopInterleaving = true;
  llvm::TargetLibraryInfoImpl tlii{llvm::Triple(m.getTargetTriple())};
  if (options.vector_math_library) tlii.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86,
                                                                            llvm::Triple(m.getTargetTriple()));
  RunModulePipeline(m, tm, pto, tlii, options.opt_level);
}

// Every function starts on a 64-byte line. LLVM's x86 default is 16 bytes, so
// one kernel growing moved every later function's loops across cache lines and
// decode windows, which measured up to 15% on kernels whose code was identical
// (docs/MEASUREMENTS.md, cpu26 and cpu28). With each function on its own line, a
// kernel's code placement no longer depends on the size of the kernels before it.
void AlignFunctions(llvm::Module& m) {
  for (llvm::Function& f : m)
    if (!f.isDeclaration()) f.setAlignment(llvm::Align(64));
}

// The linker through RunTool. llvm_cpu_emitter.h promises kIoError for every
// linker failure; RunTool reports a tool it cannot start as kNotFound (the
// NVPTX path falls back on that), so that code is mapped here.
Status RunLinker(const std::string& linker, const std::vector<std::string>& args, const std::string& log_path) {
  Status s = RunTool(linker, args, log_path, "linker");
  if (s.code() == StatusCode::kNotFound) return IoError(s.message());
  return s;
}

}  // namespace

Result<CpuTargetInfo> ResolveCpuTarget(const CpuTargetOptions& options) {
  InitLlvmX86Target();
  CpuTargetInfo info;
  info.triple = kTriple;
  llvm::StringMap<bool> host;
  bool have_host = llvm::sys::getHostCPUFeatures(host);
  if (options.cpu == "auto") {
    // x86-64-v4 (AVX-512 F/BW/DQ/VL) where the build host has it: twice the
    // vector registers, which the wider GEMM register tiles need.
    if (have_host && HostHas(host, "avx512f") && HostHas(host, "avx512bw") && HostHas(host, "avx512dq") &&
        HostHas(host, "avx512vl") && HostHas(host, "avx2") && HostHas(host, "fma")) {
      info.cpu = "x86-64-v4";
    } else {
      info.cpu = (!have_host || (HostHas(host, "avx2") && HostHas(host, "fma"))) ? "x86-64-v3" : "x86-64";
    }
  } else if (options.cpu == "native") {
    info.cpu = llvm::sys::getHostCPUName().str();
  } else {
    info.cpu = options.cpu;
  }
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(info.triple, err);
  if (!target) return Unsupported("LLVM has no target for " + info.triple + ": " + err);
  // Validate the name first: LLVM prints a warning when given an unknown CPU.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(target->createMCSubtargetInfo(info.triple, "", ""));
  if (!generic || !generic->isCPUStringValid(info.cpu))
    return Unsupported("unknown CPU '" + info.cpu + "' for " + info.triple);
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(info.triple, info.cpu, options.extra_features));
  if (!sti) return Unsupported("LLVM cannot describe CPU '" + info.cpu + "'");
  // Record the ISA extensions the kernels may use (a fixed list: deterministic).
  std::string features;
  for (const char* f : {"sse4.2", "avx", "avx2", "fma", "f16c", "bmi", "bmi2", "avx512f", "avx512bw", "avx512dq",
                        "avx512vl"}) {
    if (sti->checkFeatures(std::string("+") + f)) features += std::string(features.empty() ? "" : ",") + "+" + f;
  }
  if (!options.extra_features.empty()) features += (features.empty() ? "" : ",") + options.extra_features;
  info.features = features;
  return info;
}

Result<std::string> EmitCpuKernelModuleIR(const std::vector<KernelSpec>& kernels, const std::string& library_id,
                                          const CpuTargetOptions& options, bool optimized) {
  KEEL_ASSIGN_OR_RETURN(CpuTargetInfo target, ResolveCpuTarget(options));
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, MakeTargetMachine(target, options.opt_level));
  llvm::LLVMContext ctx;
  QuietDiagnostics(ctx);
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> m, BuildModule(ctx, kernels, library_id, target, *tm,
                                                                               options.vector_math_library));
  if (optimized) Optimize(*m, *tm, options);
  AlignFunctions(*m);
  return PrintModule(*m);
}

Status EmitCpuKernelLibrary(const std::vector<KernelSpec>& kernels, const std::string& library_id,
                            const std::string& out_so_path, const CpuTargetOptions& options, CpuTargetInfo* info) {
  KEEL_ASSIGN_OR_RETURN(CpuTargetInfo target, ResolveCpuTarget(options));
  if (info) *info = target;
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, MakeTargetMachine(target, options.opt_level));
  llvm::SmallVector<char, 0> object;
  {
    llvm::LLVMContext ctx;
    QuietDiagnostics(ctx);
    KEEL_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> m, BuildModule(ctx, kernels, library_id, target, *tm,
                                                                               options.vector_math_library));
    Optimize(*m, *tm, options);
    AlignFunctions(*m);
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile))
      return Unsupported("LLVM cannot emit an object file for " + target.cpu);
    pm.run(*m);
  }

  ScratchDir dir;
  KEEL_RETURN_IF_ERROR(dir.Create("keel-codegen"));
  const std::string obj_path = dir.Path("kernels.o");
  const std::string so_path = dir.Path("model.keel.so");
  const std::string log_path = dir.Path("link.log");
  KEEL_RETURN_IF_ERROR(WriteBytes(obj_path, object.data(), object.size()));
  std::vector<std::string> args = {"-shared", "-o", so_path, obj_path, "-Wl,--build-id=none", "-Wl,-z,noexecstack"};
  if (options.vector_math_library) args.push_back("-lmvec");
  args.push_back("-lm");
  KEEL_RETURN_IF_ERROR(RunLinker(options.linker, args, log_path));
  // Written beside the destination and renamed: readers never see a partial library.
  KEEL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadBytes(so_path));
  return ReplaceFile(out_so_path, bytes);
}

}  // namespace keel::codegen
