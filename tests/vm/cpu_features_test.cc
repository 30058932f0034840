// The load-time check that the host CPU has the ISA extensions the kernels need.
#include <gtest/gtest.h>

#include "vm/cpu/cpu_features.h"

namespace keel::vm_internal {
namespace {

TEST(CpuFeatures, EmptyUnknownAndDisabledFeaturesPass) {
  EXPECT_TRUE(CheckHostCpuFeatures("").ok());
  EXPECT_TRUE(CheckHostCpuFeatures("+some-future-extension").ok());
  EXPECT_TRUE(CheckHostCpuFeatures("-avx512f,-avx2").ok());
  EXPECT_TRUE(CheckHostCpuFeatures(",,+").ok());
}

TEST(CpuFeatures, BaselineIsAlwaysPresentOnX86_64) {
  // x86-64 requires SSE2; sse4.2 is present on every machine Keel targets, but
  // the check must agree with the CPU either way.
  __builtin_cpu_init();
  const bool has = __builtin_cpu_supports("sse4.2");
  EXPECT_EQ(CheckHostCpuFeatures("+sse4.2").ok(), has);
}

TEST(CpuFeatures, MissingExtensionsAreNamed) {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  Status st = CheckHostCpuFeatures("+avx2,+avx512f,+avx512bw");
  if (avx512 && __builtin_cpu_supports("avx2")) {
    EXPECT_TRUE(st.ok()) << st.ToString();
  } else {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kUnsupported);
    EXPECT_NE(st.message().find("avx512"), std::string::npos) << st.ToString();
  }
}

// The runtime reads CPUID itself: it must agree with the compiler's
// __builtin_cpu_supports on every extension it checks, on this machine.
TEST(CpuFeatures, AgreesWithTheCompilersCpuModel) {
  __builtin_cpu_init();
#define KEEL_EXPECT_AGREES(name) EXPECT_EQ(CheckHostCpuFeatures("+" name).ok(), __builtin_cpu_supports(name) != 0) << name;
  KEEL_EXPECT_AGREES("sse4.2")
  KEEL_EXPECT_AGREES("avx")
  KEEL_EXPECT_AGREES("fma")
  KEEL_EXPECT_AGREES("avx2")
  KEEL_EXPECT_AGREES("bmi")
  KEEL_EXPECT_AGREES("bmi2")
  KEEL_EXPECT_AGREES("avx512f")
  KEEL_EXPECT_AGREES("avx512dq")
  KEEL_EXPECT_AGREES("avx512cd")
  KEEL_EXPECT_AGREES("avx512bw")
  KEEL_EXPECT_AGREES("avx512vl")
#undef KEEL_EXPECT_AGREES
}

// A fake CPU with AVX2 only: the error path, independent of the test machine.
int Avx2Only(std::string_view f) {
  if (f == "avx" || f == "avx2" || f == "fma" || f == "sse4.2") return 1;
  if (f.rfind("avx512", 0) == 0) return 0;
  return -1;
}

TEST(CpuFeatures, ErrorListsEveryMissingExtensionAndOnlyThose) {
  Status st = CheckCpuFeatures("+sse4.2,+avx2,+fma,+avx512f,+avx512bw,+unknown-ext", Avx2Only);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("avx512f, avx512bw"), std::string::npos) << st.ToString();
  EXPECT_EQ(st.message().find("avx2,"), std::string::npos) << st.ToString();
  EXPECT_EQ(st.message().find("unknown-ext"), std::string::npos) << st.ToString();
  EXPECT_TRUE(CheckCpuFeatures("+avx2,+fma", Avx2Only).ok());
}

}  // namespace
}  // namespace keel::vm_internal
