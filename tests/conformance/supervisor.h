// tests/conformance/supervisor.h — runs cases in worker processes, so that a case
// that crashes (a kernel fault, an abort) or hangs costs one case, not the run.
//
// `jobs` workers are forked once (not one process per case); each compiles and
// runs the cases the parent hands it, one at a time, in-process (RunCase) and
// answers with one result line per case. A worker that dies is recorded as an
// error for its case ("crashed: signal 11 (Segmentation fault)") and replaced; a
// case running longer than `timeout_seconds` gets its worker killed (SIGKILL)
// and is recorded as "timed out after N s". Cases are handed out in order, so
// results do not depend on timing (only which worker ran what does).
//
// Call from a single-threaded process that has not initialized CUDA (fork).
// Thread-safety: not reentrant.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tests/conformance/case_runner.h"
#include "tests/conformance/manifest.h"

namespace keel::conformance {

struct SupervisorOptions {
  int jobs = 2;
  double timeout_seconds = 120;
};

// Results for cases[todo[i]] in the order of `todo`. `on_result` (may be empty)
// is called in the parent as each case finishes.
std::vector<CaseResult> RunCases(const std::vector<Case>& cases, const std::vector<size_t>& todo,
                                 const RunOptions& run, const SupervisorOptions& options,
                                 const std::function<void(size_t, const CaseResult&)>& on_result);

// Runs `fn` in a forked child and returns its exit status (-1 if it could not
// fork, 128+signal if it died); `output` receives what it wrote to the pipe fd
// passed to it. For probes that must not touch the parent (CUDA initialization).
int RunInChild(const std::function<int(int fd)>& fn, std::string* output);

}  // namespace keel::conformance
