// tests/conformance/case_runner.h — one conformance case through the compiler and
// the VM, in this process.
//
//   model.onnx --CompileCase (compile_case.h)--> <work>/<case>.keel + .keel.so
//   --Executable::LoadFile / VirtualMachine::Create--> SetInput, Run
//   --> every output against the case's expected value (compare.h)
//
// Phases: "all" does both in one process; "compile" only compiles, keeping the
// files in RunOptions::artifacts_dir (status "compiled" on success); "run" loads
// what a compile phase left there (RunOptions::compiled holds its records) and
// runs it. The split exists for machines that run kernels but cannot compile
// them (the GPU machine has no LLVM): compile here, run there, with the runner
// built without the compiler (keel_conformance_run).
//
// Status of a case:
//   pass      every output matches
//   refused   the compiler declined the model (unsupported op, dtype, attribute,
//             non-constant shape input...): reason = its one-line message
//   mismatch  it ran, but an output differs (dtype, shape or values)
//   error     it compiled but failed to load or run, or the compiler failed
//             internally (kInternal, linker...); crashes and timeouts are also
//             errors (recorded by the supervisor, which runs this in a worker)
//
// Thread-safety: RunCase may run concurrently for distinct cases (distinct
// output files); the runner uses one case at a time per worker process.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "keel/status.h"
#include "tests/conformance/manifest.h"

namespace keel::conformance {

struct CaseResult {
  std::string status;  // pass | refused | mismatch | error | compiled (compile phase)
  std::string reason;  // one line; empty on pass
  std::vector<std::string> frozen;  // graph inputs frozen to compile
  double compile_seconds = 0;
  double run_seconds = 0;  // load + VM creation + run
  double max_abs_error = 0;
};

struct RunOptions;

// Compiles `model_path` to `out_path` (+ ".so"); on failure fills r.status and
// r.reason and returns false. Provided by compile_case.cc (needs the compiler).
using CompileFn = std::function<bool(const Case& c, const RunOptions& options, const std::string& model_path,
                                     const std::string& out_path, CaseResult& r)>;

struct RunOptions {
  std::string cases_dir;       // <dump>/cases
  std::string work_dir;        // scratch for compiled files (phase "all"; created if missing)
  std::string artifacts_dir;   // phases "compile" (written) and "run" (read)
  std::string target = "cpu";  // cpu | cuda (compile target and VM device)
  std::string phase = "all";   // all | compile | run
  CompileFn compile;           // phases "all" and "compile"
  std::map<std::string, CaseResult> compiled;  // phase "run": the compile phase's record per case
};

CaseResult RunCase(const Case& c, const RunOptions& options);

// Whether `target`'s VM device can be created here (a CUDA GPU for "cuda").
// CUDA must not be initialized in a process that forks workers afterwards:
// call this in a child process. `why` receives the reason when not.
bool DeviceAvailable(const std::string& target, std::string* why);

// The result as one line (no tabs or newlines inside fields) and back.
std::string SerializeResult(const CaseResult& r);
bool ParseResult(const std::string& line, CaseResult& r);

// Helpers shared with compile_case.cc.
Result<std::vector<uint8_t>> ReadWholeFile(const std::string& path);
// A message on one line without the (machine-specific) `path` it mentions.
std::string OneLine(std::string message, const std::string& path);

}  // namespace keel::conformance
