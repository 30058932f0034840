// tests/conformance/conformance_unit_test.cc — the runner's own pieces: the
// ONNX-style comparison, the manifest reader, result lines, the baseline check.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "tests/conformance/case_runner.h"
#include "tests/conformance/compare.h"
#include "tests/conformance/manifest.h"
#include "tests/conformance/report.h"

namespace keel::conformance {
namespace {

std::string TempFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/keel_conformance_" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(CompareTest, FloatsUseAtolPlusRtolTimesExpected) {
  const float expected[3] = {1000.0f, 0.0f, -2.0f};
  const float close[3] = {1000.9f, 0.0f, -2.0019f};  // 0.9 <= 1e-7 + 1e-3 * 1000
  EXPECT_TRUE(CompareTensors(DataType::kF32, close, expected, 3, 1e-3, 1e-7).ok);
  const float off[3] = {1001.5f, 0.0f, -2.0f};
  Comparison c = CompareTensors(DataType::kF32, off, expected, 3, 1e-3, 1e-7);
  EXPECT_FALSE(c.ok);
  EXPECT_NEAR(c.max_abs_error, 1.5, 1e-3);
  EXPECT_NE(c.message.find("1 of 3 elements differ"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("flat index 0"), std::string::npos) << c.message;
}

TEST(CompareTest, NanMatchesNanAndInfinitiesMatchThemselves) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const double expected[3] = {nan, inf, -inf};
  EXPECT_TRUE(CompareTensors(DataType::kF64, expected, expected, 3, 1e-3, 1e-7).ok);
  const double wrong[3] = {0.0, inf, inf};
  EXPECT_FALSE(CompareTensors(DataType::kF64, wrong, expected, 3, 1e-3, 1e-7).ok);
  const double finite[3] = {nan, 1e308, -inf};
  EXPECT_FALSE(CompareTensors(DataType::kF64, finite, expected, 3, 1e-3, 1e-7).ok);
}

TEST(CompareTest, IntegersAndBoolAreExact) {
  const int64_t a[2] = {1000, 7}, b[2] = {1001, 7};
  EXPECT_FALSE(CompareTensors(DataType::kI64, a, b, 2, 1e-3, 1e-7).ok);  // ONNX's rtol would accept it
  EXPECT_TRUE(CompareTensors(DataType::kI64, a, a, 2, 1e-3, 1e-7).ok);
  const uint8_t t[2] = {1, 0}, t2[2] = {2, 0}, f[2] = {0, 0};
  EXPECT_TRUE(CompareTensors(DataType::kBool, t, t2, 2, 0, 0).ok);  // any non-zero byte is true
  EXPECT_FALSE(CompareTensors(DataType::kBool, t, f, 2, 0, 0).ok);
}

TEST(CompareTest, HalfTypesDecode) {
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7c00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));
  EXPECT_EQ(BFloat16ToFloat(0x3f80), 1.0f);
  // bf16 gets rtol >= 2^-6 (two bf16 ulps), as ONNX's runner does.
  const uint16_t one = 0x3f80, one_plus = 0x3f81;  // 1 and 1 + 2^-7
  EXPECT_TRUE(CompareTensors(DataType::kBF16, &one_plus, &one, 1, 1e-3, 1e-7).ok);
  const uint16_t h_one = 0x3c00, h_ulp = 0x3c01, h_two_ulps = 0x3c02;  // 1, 1 + 2^-10, 1 + 2^-9
  EXPECT_TRUE(CompareTensors(DataType::kF16, &h_ulp, &h_one, 1, 1e-3, 1e-7).ok);
  EXPECT_FALSE(CompareTensors(DataType::kF16, &h_two_ulps, &h_one, 1, 1e-3, 1e-7).ok);
}

TEST(ManifestTest, ReadsCasesAndRejectsMalformedLines) {
  const std::string good = TempFile("good.tsv",
                                    "onnx\t1.23.2\n"
                                    "case\ttest_a\ttensor\t\tAbs\tAbs\t0.001\t1e-07\n"
                                    "in\tx\tf32\t3,4\tin0.bin\n"
                                    "out\ty\tbool\t-\texp0.bin\n"
                                    "case\ttest_s\texcluded:string\tvalue 'x' is STRING\tStringSplit\tStringSplit\t0.001\t1e-07\n");
  auto m = LoadManifest(good);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->onnx_version, "1.23.2");
  ASSERT_EQ(m->cases.size(), 2u);
  const Case& a = m->cases[0];
  EXPECT_TRUE(a.is_tensor());
  ASSERT_EQ(a.inputs.size(), 1u);
  EXPECT_EQ(a.inputs[0].shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(a.inputs[0].ByteSize(), 48u);
  ASSERT_EQ(a.outputs.size(), 1u);
  EXPECT_TRUE(a.outputs[0].shape.empty());
  EXPECT_EQ(a.outputs[0].dtype, DataType::kBool);
  EXPECT_FALSE(m->cases[1].is_tensor());
  EXPECT_EQ(m->cases[1].reason, "value 'x' is STRING");

  auto bad = LoadManifest(TempFile("bad.tsv", "case\ttest_a\ttensor\t\tAbs\tAbs\t0.001\t1e-07\nin\tx\tf8\t3\tin0.bin\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":2: unknown dtype 'f8'"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(LoadManifest(::testing::TempDir() + "/no_such_manifest.tsv").ok());
}

TEST(ResultTest, SerializeRoundTrips) {
  CaseResult r;
  r.status = "refused";
  r.reason = "node 'n' (TopK):\tinput 1 ('k') must be\na compile-time constant";
  r.frozen = {"shape", "k"};
  r.compile_seconds = 0.25;
  CaseResult back;
  ASSERT_TRUE(ParseResult(SerializeResult(r), back));
  EXPECT_EQ(back.status, "refused");
  EXPECT_EQ(back.reason, "node 'n' (TopK): input 1 ('k') must be a compile-time constant");
  EXPECT_EQ(back.frozen, r.frozen);
  EXPECT_DOUBLE_EQ(back.compile_seconds, 0.25);
  EXPECT_FALSE(ParseResult("bogus\t0\t0\t0\t-\tx", back));
  EXPECT_FALSE(ParseResult("pass", back));
}

TEST(BaselineTest, FailsOnARegressionOrAFallingCount) {
  std::vector<Case> cases(3);
  cases[0].name = "test_a";
  cases[1].name = "test_b";
  cases[2].name = "test_c";
  for (Case& c : cases) c.category = "tensor";
  ReportInput in;
  in.target = "cpu";
  in.cases = &cases;
  in.ran.assign(3, true);
  in.results.resize(3);
  in.results[0].status = "pass";
  in.results[1].status = "pass";
  in.results[2].status = "refused";
  in.results[2].reason = "unsupported op 'C'";
  const std::string path = ::testing::TempDir() + "/keel_conformance_baseline.txt";
  ASSERT_TRUE(WriteBaseline(in, path).ok());
  EXPECT_TRUE(CheckBaseline(in, path, false).ok);

  in.results[1].status = "mismatch";
  in.results[1].reason = "output 'y': 1 of 4 elements differ";
  in.results[2].status = "pass";  // the count holds, but test_b regressed
  BaselineCheck check = CheckBaseline(in, path, false);
  EXPECT_FALSE(check.ok);
  EXPECT_NE(check.text.find("test_b: mismatch: output 'y'"), std::string::npos) << check.text;
  EXPECT_NE(check.text.find("test_c"), std::string::npos) << check.text;  // listed as newly passing

  // A filtered run compares only what ran.
  in.results[1].status = "pass";
  in.ran[0] = false;
  EXPECT_TRUE(CheckBaseline(in, path, true).ok);
  check = CheckBaseline(in, path, false);  // a full run: a baseline case must run
  EXPECT_FALSE(check.ok);
  EXPECT_NE(check.text.find("test_a: not run"), std::string::npos) << check.text;
}

}  // namespace
}  // namespace keel::conformance
