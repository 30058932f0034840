// compiler/codegen/llvm_target_setup.h — LLVM module/target plumbing shared by
// the CPU (llvm_cpu_emitter.cc) and NVPTX (llvm_nvptx_emitter.cc) kernel
// library emitters: target machines, silenced diagnostics, kernel name
// checks, the new-pass-manager optimization pipeline and IR printing.
//
// Each back end keeps what is its own: which LLVM targets it initializes
// (callers initialize them, Init*Target, before CreateTargetMachine), the pipeline tuning
// options and library info it optimizes with, and how it emits code.
//
// Thread-safety: functions are reentrant; a module/context is used by one
// thread at a time (LLVM's rule).
// Errors: kUnsupported when LLVM lacks the target or cannot build a machine;
// kInvalidArgument for bad kernel names.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <llvm/Support/CodeGen.h>

#include "compiler/codegen/kernel_spec.h"
#include "keel/status.h"

namespace llvm {
class LLVMContext;
class Module;
class PipelineTuningOptions;
class TargetLibraryInfoImpl;
class TargetMachine;
}  // namespace llvm

namespace keel::codegen {

// Register the LLVM x86-64 / NVPTX targets (info, target, MC, asm printer)
// once per process; thread-safe.
void InitLlvmX86Target();
void InitLlvmNvptxTarget();

// -O level (0..3) → LLVM code generation level.
llvm::CodeGenOpt::Level CodeGenLevel(int opt_level);

// A target machine for `triple` (whose LLVM target the caller initialized).
Result<std::unique_ptr<llvm::TargetMachine>> CreateTargetMachine(const std::string& triple, const std::string& cpu,
                                                                 const std::string& features, int opt_level,
                                                                 std::optional<llvm::Reloc::Model> reloc);

// Optimization remarks and warnings (e.g. "loop not vectorized") are expected
// for some kernels; a compiler library must not print them to stderr.
void QuietDiagnostics(llvm::LLVMContext& ctx);

// A kernel spec's name must be a C identifier, equal to its kernel's name,
// not start with "keel_" or any of `reserved_prefixes`, and be new in `names`
// (where it is then recorded).
Status CheckKernelName(const KernelSpec& spec, const std::vector<std::string>& reserved_prefixes,
                       std::set<std::string>& names);

// Runs LLVM's default per-module pipeline at -O<opt_level> (1..3; nothing at 0)
// with the given tuning options and target library info.
void RunModulePipeline(llvm::Module& m, llvm::TargetMachine& tm, const llvm::PipelineTuningOptions& pto,
                       const llvm::TargetLibraryInfoImpl& tlii, int opt_level);

// The module as LLVM assembly text.
std::string PrintModule(const llvm::Module& m);

}  // namespace keel::codegen
