// tests/serialization/status_test.cc — keel/status.h: names, formatting, context, Result and macros.
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "keel/status.h"

namespace keel {
namespace {

TEST(Status, CodeNamesAreDistinctAndStable) {
  EXPECT_STREQ(StatusCodeName(StatusCode::kOk), "OK");
  EXPECT_STREQ(StatusCodeName(StatusCode::kInvalidExecutable), "INVALID_EXECUTABLE");
  EXPECT_STREQ(StatusCodeName(StatusCode::kFailedPrecondition), "FAILED_PRECONDITION");
  std::set<std::string> names;
  for (int c = 0; c <= 9; ++c) names.insert(StatusCodeName(static_cast<StatusCode>(c)));
  EXPECT_EQ(names.size(), 10u);
  EXPECT_STREQ(StatusCodeName(static_cast<StatusCode>(1234)), "UNKNOWN");
}

TEST(Status, ToStringAndContext) {
  EXPECT_EQ(Status::Ok().ToString(), "OK");
  Status s = InvalidExecutable("register 7 out of range (function main has 5)");
  EXPECT_EQ(s.ToString(), "INVALID_EXECUTABLE: register 7 out of range (function main has 5)");
  Status c = s.WithContext("model.keel");
  EXPECT_EQ(c.code(), StatusCode::kInvalidExecutable);
  EXPECT_EQ(c.message(), "model.keel: register 7 out of range (function main has 5)");
  EXPECT_EQ(s.message(), "register 7 out of range (function main has 5)");  // original unchanged
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
  EXPECT_EQ(Status::Ok().WithContext("x").message(), "");
}

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}
Result<int> Quarter(int x) {
  KEEL_ASSIGN_OR_RETURN(int h, Half(x));
  KEEL_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}
Status CheckEven(int x) {
  KEEL_RETURN_IF_ERROR(Half(x).status());
  return Status::Ok();
}

TEST(Status, ResultAndMacros) {
  auto r = Quarter(12);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 3);
  auto bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "odd: 3");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(5).code(), StatusCode::kInvalidArgument);
  Result<std::string> from_ok = Status::Ok();  // misuse becomes an internal error, not a crash
  EXPECT_FALSE(from_ok.ok());
  EXPECT_EQ(from_ok.status().code(), StatusCode::kInternal);
}

// value() on an error is the caller's bug: a checked failure that names the
// error, never a read of uninitialised storage (issue 12).
TEST(StatusDeathTest, ValueOfAnErrorAbortsWithTheStatus) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Result<std::string> bad = NotFound("no such input \"x\"");
  EXPECT_DEATH((void)bad.value(), "Result::value\\(\\) called on an error: NOT_FOUND: no such input \"x\"");
  EXPECT_DEATH((void)*bad, "NOT_FOUND");
  EXPECT_DEATH((void)bad->size(), "NOT_FOUND");
  const Result<int> cbad = Half(3);
  EXPECT_DEATH((void)cbad.value(), "INVALID_ARGUMENT: odd: 3");
  EXPECT_DEATH((void)std::move(bad).value(), "NOT_FOUND");
  Result<std::string> good = std::string("fine");
  EXPECT_EQ(good.value(), "fine");  // the check costs nothing visible on success
}

}  // namespace
}  // namespace keel
