// vm/cpu/cpu_features.cc — see the header.
#include "vm/cpu/cpu_features.h"

#include <cstdint>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace keel::vm_internal {
namespace {

// Returns 1 (present), 0 (absent) or -1 (not a feature this runtime checks).
// Reads CPUID and XCR0 directly (an 11-entry table) rather than through
// __builtin_cpu_supports, whose libgcc support code is 5 KB of the runtime: the
// answers are the same (tests/vm/cpu_features_test.cc compares them), including
// the OS-support condition (the AVX and AVX-512 register state enabled in XCR0).
int HostHas(std::string_view feature) {
#if defined(__x86_64__) || defined(__i386__)
  struct Feature {
    char name[9];
    uint8_t leaf;      // 1 or 7 (subleaf 0)
    uint8_t reg;       // 1: ebx, 2: ecx
    uint8_t bit;
    uint8_t xcr0;      // XCR0 bits the OS must enable: 0, kAvxState or kAvx512State
  };
  constexpr uint8_t kAvxState = 0x06;     // SSE + AVX registers
  constexpr uint8_t kAvx512State = 0xe6;  // + opmask, ZMM0-15 upper halves, ZMM16-31
  static constexpr Feature kFeatures[] = {
      {"sse4.2", 1, 2, 20, 0},            {"avx", 1, 2, 28, kAvxState},
      {"fma", 1, 2, 12, kAvxState},       {"avx2", 7, 1, 5, kAvxState},
      {"bmi", 7, 1, 3, 0},                {"bmi2", 7, 1, 8, 0},
      {"avx512f", 7, 1, 16, kAvx512State}, {"avx512dq", 7, 1, 17, kAvx512State},
      {"avx512cd", 7, 1, 28, kAvx512State}, {"avx512bw", 7, 1, 30, kAvx512State},
      {"avx512vl", 7, 1, 31, kAvx512State},
  };
  for (const Feature& f : kFeatures) {
    if (feature != f.name) continue;
    unsigned regs[4] = {0, 0, 0, 0};  // eax, ebx, ecx, edx
    if (__get_cpuid_count(f.leaf, 0, &regs[0], &regs[1], &regs[2], &regs[3]) == 0) return 0;
    if (((regs[f.reg] >> f.bit) & 1u) == 0) return 0;
    if (f.xcr0 != 0) {
      unsigned a = 0, b = 0, c = 0, d = 0;
      if (__get_cpuid(1, &a, &b, &c, &d) == 0 || ((c >> 27) & 1u) == 0) return 0;  // OSXSAVE
      uint32_t lo = 0, hi = 0;
      __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
      if ((lo & f.xcr0) != f.xcr0) return 0;
    }
    return 1;
  }
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
