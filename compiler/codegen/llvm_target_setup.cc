// compiler/codegen/llvm_target_setup.cc — LLVM target machines, diagnostics,
// kernel name checks, the optimization pipeline and IR printing shared by the
// CPU and NVPTX kernel library emitters (see llvm_target_setup.h).
#include "compiler/codegen/llvm_target_setup.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <llvm/Support/TargetSelect.h>

#include <cctype>
#include <mutex>

namespace keel::codegen {

void InitLlvmX86Target() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
  });
}

void InitLlvmNvptxTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

llvm::CodeGenOpt::Level CodeGenLevel(int opt_level) {
  return opt_level >= 3   ? llvm::CodeGenOpt::Aggressive
         : opt_level == 2 ? llvm::CodeGenOpt::Default
         : opt_level == 1 ? llvm::CodeGenOpt::Less
                          : llvm::CodeGenOpt::None;
}

Result<std::unique_ptr<llvm::TargetMachine>> CreateTargetMachine(const std::string& triple, const std::string& cpu,
                                                                 const std::string& features, int opt_level,
                                                                 std::optional<llvm::Reloc::Model> reloc) {
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) return Unsupported("LLVM has no target for " + triple + ": " + err);
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(triple, cpu, features, llvm::TargetOptions(),
                                                                      reloc, std::nullopt, CodeGenLevel(opt_level)));
  if (!tm) return Unsupported("LLVM cannot create a target machine for " + triple + " cpu " + cpu);
  return tm;
}

void QuietDiagnostics(llvm::LLVMContext& ctx) {
  ctx.setDiagnosticHandlerCallBack([](const llvm::DiagnosticInfo&, void*) {}, nullptr);
}

Status CheckKernelName(const KernelSpec& spec, const std::vector<std::string>& reserved_prefixes,
                       std::set<std::string>& names) {
  if (!spec.kernel) return InvalidArgument("kernel spec " + spec.name + " has no kernel IR");
  bool reserved = spec.name.rfind("keel_", 0) == 0;
  for (const std::string& p : reserved_prefixes) reserved = reserved || spec.name.rfind(p, 0) == 0;
  if (spec.name.empty() || reserved || spec.name != spec.kernel->name())
    return InvalidArgument("invalid kernel name '" + spec.name + "'");
  for (char c : spec.name)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return InvalidArgument("kernel name '" + spec.name + "' is not a C identifier");
  if (!names.insert(spec.name).second) return InvalidArgument("duplicate kernel name " + spec.name);
  return Status::Ok();
}

void RunModulePipeline(llvm::Module& m, llvm::TargetMachine& tm, const llvm::PipelineTuningOptions& pto,
                       const llvm::TargetLibraryInfoImpl& tlii, int opt_level) {
  if (opt_level <= 0) return;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // Targets register their own passes here (NVPTX: NVVMReflect at the pipeline start).
  llvm::PassBuilder pb(&tm, pto);
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = opt_level >= 3   ? llvm::OptimizationLevel::O3
                                  : opt_level == 2 ? llvm::OptimizationLevel::O2
                                                   : llvm::OptimizationLevel::O1;
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
  mpm.run(m, mam);
}

std::string PrintModule(const llvm::Module& m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  m.print(os, nullptr);
  return os.str();
}

}  // namespace keel::codegen
