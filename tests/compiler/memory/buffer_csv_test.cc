// tests/compiler/memory/buffer_csv_test.cc — MiniMalloc-format CSV: parsing,
// one-line errors naming the line, and byte-identical round trips.
#include <gtest/gtest.h>

#include "compiler/memory/buffer_csv.h"
#include "compiler/memory/planner.h"

namespace keel::memory {
namespace {

TEST(BufferCsv, ParsesMiniMallocProblems) {
  auto ts = ParseBufferCsv("id,lower,upper,size\n0,0,3,4096\nb,2,5,1024\r\n\n", "p.csv");
  ASSERT_TRUE(ts.ok()) << ts.status().ToString();
  ASSERT_EQ(ts->size(), 2u);
  EXPECT_EQ((*ts)[0].name, "0");
  EXPECT_EQ((*ts)[0].first_use, 0);
  EXPECT_EQ((*ts)[0].last_use, 2);  // half-open [0, 3) = steps 0..2
  EXPECT_EQ((*ts)[0].size, 4096u);
  EXPECT_EQ((*ts)[0].alignment, 1u);
  EXPECT_EQ((*ts)[1].name, "b");
  EXPECT_EQ((*ts)[1].first_use, 2);
  EXPECT_EQ((*ts)[1].last_use, 4);
}

TEST(BufferCsv, AcceptsSynonymsOptionalColumnsAndUnknownOnes) {
  auto ts = ParseBufferCsv("buffer,start,end,size,alignment,note,offset,alias\nx,0,2,100,64,hi,0,\ny,2,4,50,1,,128,x\n",
                           "p.csv");
  ASSERT_TRUE(ts.ok()) << ts.status().ToString();
  EXPECT_EQ((*ts)[0].last_use, 2);  // `end` is inclusive
  EXPECT_EQ((*ts)[0].alignment, 64u);
  EXPECT_EQ((*ts)[1].may_alias_with, 0);  // y may overwrite x in place (x's upper 3 = y's lower 2 + 1)
}

void ExpectError(const std::string& text, const std::string& expected) {
  auto ts = ParseBufferCsv(text, "bad.csv");
  ASSERT_FALSE(ts.ok()) << text;
  const std::string m = ts.status().message();
  EXPECT_NE(m.find(expected), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(BufferCsv, BadInputGetsOneLineErrorsNamingTheLine) {
  ExpectError("", "bad.csv: empty file");
  ExpectError("id,lower,size\n0,0,1\n", "bad.csv:1: missing column(s): upper");
  ExpectError("id,lower,upper,size\n0,0,3,-5\n", "bad.csv:2: size -5 is outside");
  ExpectError("id,lower,upper,size\n0,0,3,10\n1,4,4,10\n", "bad.csv:3: upper 4 <= lower 4");
  ExpectError("id,lower,upper,size\n0,0,3,10\n1,5,2,10\n", "bad.csv:3: upper 2 <= lower 5");
  ExpectError("id,lower,upper,size\n0,0,x3,10\n", "bad.csv:2: upper 'x3' is not an integer");
  ExpectError("id,lower,upper,size\n0,0,3,1e3\n", "bad.csv:2: size '1e3' is not an integer");
  ExpectError("id,lower,upper,size\n0,0,3,99999999999999999999\n", "bad.csv:2: size '99999999999999999999' is out of range");
  ExpectError("id,lower,upper,size\n0,0,3\n", "bad.csv:2: 3 fields where the header has 4");
  ExpectError("id,lower,upper,size\n0,0,3,1\n0,1,3,1\n", "bad.csv:3: duplicate id '0'");
  ExpectError("id,lower,upper,size,alignment\n0,0,3,1,3\n", "bad.csv:2: alignment 3 is not a power of two");
  ExpectError("id,lower,upper,size,alias\n0,0,3,1,\n1,5,6,1,0\n", "bad.csv:3: alias '0' must name another buffer");
  ExpectError("id,lower,upper,size,alias\n0,0,3,1,zz\n", "bad.csv:2: alias 'zz' names no buffer");
  ExpectError("id,lower,upper,size\n0,0,3000000000,1\n", "bad.csv:2: upper 3000000000 is outside");
}

TEST(BufferCsv, RefusesMoreRowsThanTheLimit) {
  std::string text = "id,lower,upper,size\n";
  text.reserve(text.size() + (kMaxCsvBuffers + 1) * 12);
  for (size_t i = 0; i <= kMaxCsvBuffers; ++i) text += std::to_string(i) + ",0,1,1\n";
  ExpectError(text, "bad.csv:" + std::to_string(kMaxCsvBuffers + 2) + ": more than 1000000 buffers");
}

TEST(BufferCsv, RoundTripsByteForByte) {
  const std::string problem = "id,lower,upper,size,alignment,alias\na,0,3,4096,64,\nb,2,5,1024,64,a\nc,1,9,7,1,\n";
  auto ts = ParseBufferCsv(problem, "p.csv");
  ASSERT_TRUE(ts.ok()) << ts.status().ToString();
  auto again = FormatBufferCsv(*ts, nullptr);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, problem);
  // A solution is a problem too (the offset column is read and ignored).
  const std::vector<uint64_t> offsets = {0, 0, 4096};
  auto solution = FormatBufferCsv(*ts, &offsets);
  ASSERT_TRUE(solution.ok());
  EXPECT_EQ(*solution, "id,lower,upper,size,alignment,alias,offset\na,0,3,4096,64,,0\nb,2,5,1024,64,a,0\nc,1,9,7,1,,4096\n");
  auto reread = ParseBufferCsv(*solution, "s.csv");
  ASSERT_TRUE(reread.ok());
  EXPECT_EQ(*FormatBufferCsv(*reread, nullptr), problem);
}

TEST(BufferCsv, UsesIndicesWhenNamesCannotBeIds) {
  std::vector<TensorLifetime> ts(2);
  ts[0].name = "has,comma";
  ts[0].size = 8;
  ts[0].alignment = 1;
  ts[1].name = "ok";
  ts[1].size = 8;
  ts[1].alignment = 1;
  auto csv = FormatBufferCsv(ts, nullptr);
  ASSERT_TRUE(csv.ok());
  EXPECT_EQ(*csv, "id,lower,upper,size\n0,0,1,8\n1,0,1,8\n");
  ts[1].device = Device::kCuda;
  EXPECT_FALSE(FormatBufferCsv(ts, nullptr).ok());
}

TEST(BufferCsv, SolutionAddressesComeFromOneArenaPlans) {
  auto ts = ParseBufferCsv("id,lower,upper,size\n0,0,2,10\n1,1,3,20\n2,2,4,30\n", "p.csv");
  ASSERT_TRUE(ts.ok());
  Result<Plan> plan = (*CreatePlanner("greedy-size"))->MakePlan(*ts, PlanOptions{});
  ASSERT_TRUE(plan.ok());
  auto addresses = SingleArenaAddresses(*plan);
  ASSERT_TRUE(addresses.ok());
  EXPECT_EQ(addresses->size(), 3u);
  Result<Plan> naive = (*CreatePlanner("naive"))->MakePlan(*ts, PlanOptions{});
  ASSERT_TRUE(naive.ok());
  EXPECT_FALSE(SingleArenaAddresses(*naive).ok());  // one arena per tensor
}

}  // namespace
}  // namespace keel::memory
