// tests/conformance/compile_case.h — the compile step of a conformance case
// (the only part of the runner that needs the compiler; keel_conformance_run,
// the run-only runner for machines without LLVM, is built without it).
//
// Compiles with driver::CompileModel (what keelc does). A refusal with the fixed
// message "input <n> ('<name>') must be a compile-time constant" naming a graph
// input of the case is retried with that input frozen to the case's value
// (ImportOptions::frozen_inputs, keelc --freeze-input), once per input.
// Unsupported / InvalidArgument errors are refusals; any other code (an internal
// error, a failed linker) is an error.
#pragma once

#include <string>

#include "tests/conformance/case_runner.h"

namespace keel::conformance {

bool CompileCase(const Case& c, const RunOptions& options, const std::string& model_path,
                 const std::string& out_path, CaseResult& r);

}  // namespace keel::conformance
