// tests/hostile/last_resort_test.cc — the tools' last-resort handler
// (apps/common/cli.h RunGuarded): an escaping exception becomes one INTERNAL line
// naming the phase and exit status 1. (run_reproducers.sh checks that no
// reproducer of issue 13 reaches it.)
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "apps/common/cli.h"
#include "compiler/driver/phase.h"

namespace {

using keel::driver::CurrentPhase;
using keel::driver::SetPhase;

TEST(LastResortTest, PassesTheExitStatusThrough) {
  EXPECT_EQ(keel::cli::RunGuarded("tool", CurrentPhase, [] { return 0; }), 0);
  EXPECT_EQ(keel::cli::RunGuarded("tool", CurrentPhase, [] { return 2; }), 2);
}

TEST(LastResortTest, ExceptionsBecomeOneInternalLineNamingThePhase) {
  ::testing::internal::CaptureStderr();
  const int rc = keel::cli::RunGuarded("tool", CurrentPhase, []() -> int {
    SetPhase("passes");
    std::vector<int> v;
    return v.at(3);  // std::out_of_range
  });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find("tool: error: INTERNAL: uncaught exception in phase 'passes'"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << err;

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(keel::cli::RunGuarded("tool", CurrentPhase, []() -> int {
              SetPhase("lowering");
              throw std::bad_alloc();
            }),
            1);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("phase 'lowering': std::bad_alloc"), std::string::npos);

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(keel::cli::RunGuarded("tool", CurrentPhase, []() -> int { throw 42; }), 1);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("unknown exception"), std::string::npos);
}

}  // namespace
