// tests/compiler/memory/piece_search_test.cc — pieces of constant live bytes
// (piece_search.h): a hand-made piece found with its window and height, one
// closure followed by hand, every piece found on generated problems keeping
// its live bytes constant, and the pieces' blocks expanding into valid layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "bench/memory/perfect_packing.h"
#include "compiler/memory/piece_search.h"
#include "compiler/memory/planner.h"

namespace keel::memory {
namespace {

using internal::ConstantPiece;
using internal::PackingItem;

std::vector<PackingItem> ItemsOf(const std::vector<TensorLifetime>& tensors) {
  std::vector<PackingItem> items;
  for (const TensorLifetime& t : tensors) items.push_back(internal::ItemOf(t));
  return items;
}

// The piece's live bytes at every step where they can change, all equal to
// its height; every member inside its window.
bool ConstantOverWindow(const std::vector<PackingItem>& items, const ConstantPiece& piece) {
  std::map<int64_t, int64_t> delta;
  for (int32_t i : piece.members) {
    if (items[i].begin < piece.begin || items[i].end > piece.end) return false;
    delta[items[i].begin] += static_cast<int64_t>(items[i].size);
    delta[items[i].end] -= static_cast<int64_t>(items[i].size);
  }
  int64_t live = 0;
  for (const auto& [t, d] : delta) {
    live += d;
    if (t < piece.end && live != static_cast<int64_t>(piece.height)) return false;
  }
  return live == 0;
}

bool ValidLayout(const std::vector<PackingItem>& items, const std::vector<uint64_t>& off) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (off[i] % items[i].alignment != 0) return false;
    for (size_t j = i + 1; j < items.size(); ++j) {
      const bool meet = std::max(items[i].begin, items[j].begin) < std::min(items[i].end, items[j].end);
      if (meet && off[i] < off[j] + items[j].size && off[j] < off[i] + items[i].size) return false;
    }
  }
  return true;
}

TEST(PieceSearch, FindsAPieceThroughATimePointWhereItsBytesChangeHands) {
  // 0 and 1 start at 0 (8 bytes); 1's 3 bytes pass to 2 at time 2; at 4, 0
  // and 2 pass their 8 bytes to 3, which ends at 6 with 4 (not a member: it
  // lives from 0 to 6 beside the piece, and 5 starts where it ends).
  const std::vector<PackingItem> items = {{5, 1, 0, 4}, {3, 1, 0, 2}, {3, 1, 2, 4},
                                          {8, 1, 4, 6}, {2, 1, 0, 6}, {2, 1, 6, 7}};
  const std::vector<ConstantPiece> pieces = internal::FindConstantPieces(items);
  bool whole = false, pair = false;
  for (const ConstantPiece& p : pieces) {
    EXPECT_TRUE(ConstantOverWindow(items, p));
    if (p.members == std::vector<int32_t>{0, 1, 2, 3}) {
      whole = true;
      EXPECT_EQ(p.begin, 0);
      EXPECT_EQ(p.end, 6);
      EXPECT_EQ(p.height, 8u);
    }
    pair = pair || p.members == std::vector<int32_t>{1, 2};
    EXPECT_EQ(std::count(p.members.begin(), p.members.end(), 4), 0);  // 4 never matches: nothing ends at 0
  }
  EXPECT_TRUE(whole);
  EXPECT_TRUE(pair);
}

TEST(PieceSearch, ClosureFromOneSeedFollowsTheBytesUntilOthersEndToo) {
  // The items of the test above: from 0 and 1 the closure takes 2 at time 2
  // and 3 at 4, and closes at 6, where 4 ends too; from 1 alone it closes at
  // 4 (0 ends there too); from 5 it cannot: only 5 ends at 7, and nothing
  // starts there to take its bytes.
  const std::vector<PackingItem> items = {{5, 1, 0, 4}, {3, 1, 0, 2}, {3, 1, 2, 4},
                                          {8, 1, 4, 6}, {2, 1, 0, 6}, {2, 1, 6, 7}};
  EXPECT_EQ(internal::ClosureFrom(items, {1, 0}), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(internal::ClosureFrom(items, {1}), (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(internal::ClosureFrom(items, {5}).empty());
}

TEST(PieceSearch, BuffersOfLargerAlignmentAreNeverMembers) {
  const std::vector<PackingItem> items = {{64, 64, 0, 2}, {64, 1, 2, 4}, {64, 1, 0, 2}, {32, 1, 2, 4}, {32, 1, 2, 4}};
  for (const ConstantPiece& p : internal::FindConstantPieces(items)) {
    EXPECT_EQ(std::count(p.members.begin(), p.members.end(), 0), 0);
    EXPECT_TRUE(ConstantOverWindow(items, p));
  }
}

TEST(PieceSearch, PiecesOfGeneratedProblemsKeepTheirBytesAndTheirBlocksExpandToValidLayouts) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const std::vector<PackingItem> items = ItemsOf(bench::PerfectPacking(1000, seed));
    const std::vector<ConstantPiece> pieces = internal::FindConstantPieces(items);
    EXPECT_FALSE(pieces.empty());
    for (const ConstantPiece& p : pieces) ASSERT_TRUE(ConstantOverWindow(items, p)) << "seed " << seed;

    size_t tiled = 0;
    const internal::BlockProblem blocks =
        internal::TilePieces(items, internal::SearchClock::time_point::max(), {}, &tiled);
    EXPECT_GT(tiled, 0u) << "seed " << seed;
    EXPECT_LT(blocks.blocks.size(), items.size());
    // Any layout of the blocks expands into a valid one: the blocks stacked.
    std::vector<uint64_t> stacked;
    uint64_t top = 0;
    for (const PackingItem& b : blocks.blocks) {
      stacked.push_back(top);
      top += b.size;
    }
    const std::vector<uint64_t> offsets = internal::ExpandBlockLayout(blocks, stacked);
    EXPECT_TRUE(ValidLayout(items, offsets)) << "seed " << seed;
    for (size_t i = 0; i < items.size(); ++i) {
      const PackingItem& b = blocks.blocks[blocks.block_of[i]];
      EXPECT_LE(blocks.offset_in_block[i] + items[i].size, b.size);
      EXPECT_LE(b.begin, items[i].begin);
      EXPECT_GE(b.end, items[i].end);
    }
  }
}

}  // namespace
}  // namespace keel::memory
