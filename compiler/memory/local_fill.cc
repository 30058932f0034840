// compiler/memory/local_fill.cc — subset sums and the assignment of a section's
// one-section buffers to its gaps (see the header).
#include "compiler/memory/local_fill.h"

#include <algorithm>

namespace keel::memory::internal {

void SubsetSums::Build(const std::vector<uint64_t>& sizes) {
  total_ = 0;
  for (uint64_t s : sizes) total_ += s;
  const size_t words = static_cast<size_t>(total_ / 64 + 1);
  bits_.assign(words, 0);
  bits_[0] = 1;
  uint64_t reach = 0;  // the largest sum so far
  for (uint64_t s : sizes) {
    // bits |= bits << s, from the top word down (in place).
    const size_t shift_words = static_cast<size_t>(s / 64);
    const unsigned shift_bits = static_cast<unsigned>(s % 64);
    reach += s;
    const size_t top = static_cast<size_t>(reach / 64);
    for (size_t w = top + 1; w-- > shift_words;) {
      const size_t src = w - shift_words;
      uint64_t v = bits_[src] << shift_bits;
      if (shift_bits != 0 && src > 0) v |= bits_[src - 1] >> (64 - shift_bits);
      bits_[w] |= v;
    }
  }
}

uint64_t SubsetSums::NextAbove(uint64_t v) const {
  if (v >= total_) return UINT64_MAX;
  uint64_t from = v + 1;
  size_t w = static_cast<size_t>(from >> 6);
  uint64_t word = bits_[w] & (~uint64_t{0} << (from & 63));
  while (word == 0) {
    if (++w >= bits_.size()) return UINT64_MAX;
    word = bits_[w];
  }
  return w * 64 + static_cast<uint64_t>(__builtin_ctzll(word));
}

namespace {

struct BinSearch {
  const std::vector<uint64_t>& items;
  std::vector<uint64_t> room;
  std::vector<int32_t> bin_of;
  uint64_t slack = 0;
  uint64_t nodes = 0;
  uint64_t max_nodes = 0;
  bool aborted = false;

  // Room that no item still to place (the smallest is the last) can use.
  uint64_t DeadRoom() const {
    const uint64_t smallest = items.back();
    uint64_t dead = 0;
    for (uint64_t r : room) {
      if (r < smallest) dead += r;
    }
    return dead;
  }

  bool Place(size_t k) {
    if (k == items.size()) return true;
    if (++nodes > max_nodes) {
      aborted = true;
      return false;
    }
    if (DeadRoom() > slack) return false;
    const uint64_t size = items[k];
    // An exact fit first (with no slack every bin must close exactly), then the
    // bins in order; bins of equal room are interchangeable, tried once.
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t b = 0; b < room.size(); ++b) {
        const uint64_t r = room[b];
        if (r < size || (pass == 0) != (r == size)) continue;
        bool seen = false;
        for (size_t c = 0; c < b && !seen; ++c) seen = room[c] == r;
        if (seen) continue;
        room[b] -= size;
        bin_of[k] = static_cast<int32_t>(b);
        if (Place(k + 1)) return true;
        room[b] += size;
        if (aborted) return false;
      }
    }
    return false;
  }
};

}  // namespace

FillAnswer AssignToBins(const std::vector<uint64_t>& items, const std::vector<uint64_t>& bins,
                        uint64_t max_nodes, std::vector<int32_t>* bin_of_item) {
  uint64_t need = 0, have = 0;
  for (uint64_t s : items) need += s;
  for (uint64_t b : bins) have += b;
  if (need > have) return FillAnswer::kNo;
  if (items.empty()) {
    if (bin_of_item != nullptr) bin_of_item->clear();
    return FillAnswer::kYes;
  }
  BinSearch search{items, bins, std::vector<int32_t>(items.size(), -1), have - need, 0, max_nodes, false};
  if (search.Place(0)) {
    if (bin_of_item != nullptr) *bin_of_item = std::move(search.bin_of);
    return FillAnswer::kYes;
  }
  return search.aborted ? FillAnswer::kUnknown : FillAnswer::kNo;
}

}  // namespace keel::memory::internal
