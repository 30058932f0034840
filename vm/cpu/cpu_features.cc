// vm/cpu/cpu_features.cc — see the header.
#include "vm/cpu/cpu_features.h"

#include <string>

namespace keel::vm_internal {
namespace {

// Returns 1 (present), 0 (absent) or -1 (not a feature this runtime checks).
int HostHas(std::string_view feature) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // __builtin_cpu_supports needs string literals, hence the table of cases.
#define KEEL_FEATURE(name) \
  if (feature == name) return __builtin_cpu_supports(name) ? 1 : 0;
  KEEL_FEATURE("sse4.2")
  KEEL_FEATURE("avx")
  KEEL_FEATURE("avx2")
  KEEL_FEATURE("fma")
  KEEL_FEATURE("bmi")
  KEEL_FEATURE("bmi2")
  KEEL_FEATURE("avx512f")
  KEEL_FEATURE("avx512bw")
  KEEL_FEATURE("avx512dq")
  KEEL_FEATURE("avx512vl")
  KEEL_FEATURE("avx512cd")
#undef KEEL_FEATURE
#else
  (void)feature;
#endif
  return -1;
}

}  // namespace

Status CheckHostCpuFeatures(std::string_view features) { return CheckCpuFeatures(features, HostHas); }

Status CheckCpuFeatures(std::string_view features, int (*has)(std::string_view feature)) {
  std::string missing;
  while (!features.empty()) {
    const size_t comma = features.find(',');
    std::string_view item = features.substr(0, comma);
    features = comma == std::string_view::npos ? std::string_view() : features.substr(comma + 1);
    if (item.size() < 2 || item[0] != '+') continue;
    item.remove_prefix(1);
    if (has(item) == 0) missing += (missing.empty() ? "" : ", ") + std::string(item);
  }
  if (missing.empty()) return Status::Ok();
  return Unsupported("the kernel library was compiled for CPU extensions this CPU lacks: " + missing +
                     " (recompile with keelc --cpu x86-64-v3 or --cpu native on this machine)");
}

}  // namespace keel::vm_internal
