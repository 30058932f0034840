// vm/cpu/cpu_features.h — does this CPU have the ISA extensions the kernels were built for?
//
// keelc records, in the executable's CPU target, the instruction-set extensions
// its generated kernels may use ("+avx2,+fma,+avx512f,..."). Running such code on
// a CPU without them dies with SIGILL somewhere inside a kernel; checking at load
// turns that into an error naming the missing extension.
//
// Thread-safety: pure function. Errors: kUnsupported naming every missing
// extension. Extensions this runtime does not know are not checked (they are
// listed in no error; newer compilers may record more than older runtimes know).
#pragma once

#include <string_view>

#include "keel/status.h"

namespace keel::vm_internal {

// `features`: comma-separated LLVM feature names with a leading '+', e.g.
// "+avx,+avx2,+fma". Entries starting with '-' (disabled features) are ignored.
Status CheckHostCpuFeatures(std::string_view features);

// The same check against a given CPU: `has(feature)` returns 1 (present), 0
// (absent) or -1 (unknown: not checked). For tests.
Status CheckCpuFeatures(std::string_view features, int (*has)(std::string_view feature));

}  // namespace keel::vm_internal
