// apps/common/pipeline_flags.h — the flags that shape the compile pipeline, read
// the same way by keelc and keel-plan (so a plan is made for the graph keelc
// compiles): --precision, --layout, --winograd, --conv-kernel.
//
// Header-only, like cli.h. Thread-safety: reentrant.
#pragma once

#include <string>

#include "apps/common/cli.h"
#include "compiler/driver/backend.h"
#include "compiler/passes/mixed_precision.h"

namespace keel::cli {

// When the current argument is one of the flags: stores its value in `options`
// (keel::driver::CompileOptions or LifetimeOptions: both hold `pipeline` and
// `backend`) and returns true; `error` is set when the value is invalid.
template <typename Options>
bool PipelineFlag(ArgScanner& args, Options& options, std::string& error) {
  std::string v;
  if (args.Value("--precision", v)) {
    auto p = passes::ParsePrecision(v);
    if (p.ok()) options.pipeline.mixed_precision.precision = *p;
    else error = "--precision: " + p.status().message();
    return true;
  }
  if (args.Value("--layout", v)) {
    auto l = driver::ParseLayout(v);
    if (l.ok()) options.backend.layout = *l;
    else error = "--layout: " + l.status().message();
    return true;
  }
  if (args.Value("--conv-kernel", v)) {
    auto k = driver::ParseConvKernelMode(v);
    if (k.ok()) options.backend.conv_kernel = *k;
    else error = "--conv-kernel: " + k.status().message();
    return true;
  }
  if (args.Value("--winograd", v)) {
    auto w = driver::ParseWinogradMode(v);
    if (w.ok()) options.backend.winograd = *w;
    else error = "--winograd: " + w.status().message();
    return true;
  }
  return false;
}

}  // namespace keel::cli
