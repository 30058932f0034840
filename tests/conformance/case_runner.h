// tests/conformance/case_runner.h — one conformance case through the compiler and
// the VM, in this process.
//
//   model.onnx --driver::CompileModel--> <work>/<case>.keel + .keel.so
//   --Executable::LoadFile / VirtualMachine::Create--> SetInput, Run
//   --> every output against the case's expected value (compare.h)
//
// A compile refused with the fixed message "input <n> ('<name>') must be a
// compile-time constant" (ops::NeedsConstant) naming a graph input is retried
// with that input frozen to the case's value (ImportOptions::frozen_inputs),
// as a user would with keelc --freeze-input.
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

#include <string>
#include <vector>

#include "tests/conformance/manifest.h"

namespace keel::conformance {

struct RunOptions {
  std::string cases_dir;   // <dump>/cases
  std::string work_dir;    // scratch for the compiled files (created if missing)
  std::string target = "cpu";  // cpu | cuda (compile target and VM device)
};

struct CaseResult {
  std::string status;  // pass | refused | mismatch | error
  std::string reason;  // one line; empty on pass
  std::vector<std::string> frozen;  // graph inputs frozen to compile
  double compile_seconds = 0;
  double run_seconds = 0;  // load + VM creation + run
  double max_abs_error = 0;
};

CaseResult RunCase(const Case& c, const RunOptions& options);

// Whether `target`'s VM device can be created here (a CUDA GPU for "cuda").
// CUDA must not be initialized in a process that forks workers afterwards:
// call this in a child process. `why` receives the reason when not.
bool DeviceAvailable(const std::string& target, std::string* why);

// The result as one line (no tabs or newlines inside fields) and back.
std::string SerializeResult(const CaseResult& r);
bool ParseResult(const std::string& line, CaseResult& r);

}  // namespace keel::conformance
