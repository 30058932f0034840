// tests/common/constant_block_test.cc — the device constant block's layout
// (common/constant_block.h): one copy for adjacent constants, aligned runs
// otherwise, every constant inside the block at its file alignment.
#include "common/constant_block.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace keel::common {
namespace {

constexpr uint64_t A = kDeviceConstantAlignment;

TEST(ConstantBlock, AdjacentAlignedConstantsAreOneCopy) {
  // As the writer lays them out: each at the next 256-byte boundary after the previous.
  const std::vector<ConstantSpan> spans = {{4096, 100}, {4096 + 256, 256}, {4096 + 512, 1000}};
  const ConstantBlockLayout b = LayOutConstantBlock(spans);
  ASSERT_EQ(b.copies.size(), 1u);
  EXPECT_EQ(b.copies[0].src, 4096u);
  EXPECT_EQ(b.copies[0].dst, 0u);
  EXPECT_EQ(b.copies[0].bytes, 512u + 1000u);
  EXPECT_EQ(b.bytes, 512u + 1000u);
  EXPECT_EQ(b.offset, (std::vector<uint64_t>{0, 256, 512}));
}

TEST(ConstantBlock, InputOrderDoesNotMatter) {
  const std::vector<ConstantSpan> spans = {{4096 + 512, 8}, {4096, 8}, {4096 + 256, 8}};
  const ConstantBlockLayout b = LayOutConstantBlock(spans);
  ASSERT_EQ(b.copies.size(), 1u);
  EXPECT_EQ(b.offset, (std::vector<uint64_t>{512, 0, 256}));
}

TEST(ConstantBlock, DistantConstantsStartAlignedRuns) {
  // Something else (a CPU constant) lies between them: two copies, the second run
  // at the next aligned offset of the block, not at its file distance.
  const std::vector<ConstantSpan> spans = {{0, 300}, {100000, 64}};
  const ConstantBlockLayout b = LayOutConstantBlock(spans);
  ASSERT_EQ(b.copies.size(), 2u);
  EXPECT_EQ(b.offset[0], 0u);
  EXPECT_EQ(b.offset[1], 512u);
  EXPECT_EQ(b.copies[1].src, 100000u);
  EXPECT_EQ(b.copies[1].dst, 512u);
  EXPECT_EQ(b.bytes, 512u + 64u);
}

TEST(ConstantBlock, OlderFilesKeepEachConstantsAlignment) {
  // 64-byte aligned constants (format 1.2 and before). The second is 128-aligned in
  // the file but would be only 64-aligned joined to the first: it starts a run; the
  // third (64-aligned in the file) joins it.
  const std::vector<ConstantSpan> spans = {{4096 + 64, 64}, {4096 + 128, 64}, {4096 + 192, 64}};
  const ConstantBlockLayout b = LayOutConstantBlock(spans);
  EXPECT_EQ(b.offset, (std::vector<uint64_t>{0, 256, 320}));
  EXPECT_EQ(b.copies.size(), 2u);
  EXPECT_EQ(b.bytes, 384u);
}

TEST(ConstantBlock, SharedAndEmptySpans) {
  const std::vector<ConstantSpan> spans = {{0, 512}, {256, 128}, {512, 0}, {0, 0}};
  const ConstantBlockLayout b = LayOutConstantBlock(spans);
  EXPECT_EQ(b.offset[0], 0u);
  EXPECT_EQ(b.offset[1], 256u);  // overlapping bytes stay shared
  EXPECT_EQ(b.offset[3], 0u);
  EXPECT_EQ(b.bytes, 512u);
  for (const ConstantCopy& c : b.copies) EXPECT_GT(c.bytes, 0u);
  EXPECT_TRUE(LayOutConstantBlock({}).copies.empty());
  EXPECT_EQ(LayOutConstantBlock({}).bytes, 0u);
}

// Random layouts: every constant's bytes come from the right file bytes, inside
// the block, at an alignment no lower than min(its file alignment, 256), and no
// two copies write the same block bytes.
TEST(ConstantBlock, RandomLayoutsPlaceEveryByte) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 500; ++round) {
    std::vector<ConstantSpan> spans;
    uint64_t cursor = 0;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      cursor += 64 * (rng() % 10);
      const uint64_t size = rng() % 700;
      spans.push_back({cursor, size});
      cursor += size;
      cursor = (cursor + 63) / 64 * 64;
    }
    std::shuffle(spans.begin(), spans.end(), rng);
    const ConstantBlockLayout b = LayOutConstantBlock(spans);
    std::vector<int64_t> src_of(b.bytes, -1);  // block byte -> file byte
    for (const ConstantCopy& c : b.copies) {
      ASSERT_LE(c.dst + c.bytes, b.bytes);
      for (uint64_t k = 0; k < c.bytes; ++k) {
        ASSERT_EQ(src_of[c.dst + k], -1) << "two copies write block byte " << c.dst + k;
        src_of[c.dst + k] = static_cast<int64_t>(c.src + k);
      }
    }
    for (size_t i = 0; i < spans.size(); ++i) {
      const uint64_t file_align = spans[i].offset == 0 ? A : std::min<uint64_t>(A, spans[i].offset & (~spans[i].offset + 1));
      const uint64_t at = b.offset[i];
      EXPECT_EQ(at % std::min<uint64_t>(file_align, A), 0u);
      for (uint64_t k = 0; k < spans[i].size; ++k) {
        ASSERT_EQ(src_of[at + k], static_cast<int64_t>(spans[i].offset + k));
      }
    }
  }
}

}  // namespace
}  // namespace keel::common
