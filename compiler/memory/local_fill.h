// compiler/memory/local_fill.h — buffers that live in one section only, kept out
// of the skyline search's placement and fitted into the gaps it leaves.
//
// Where short lifetimes crowd (dozens of buffers of one or two steps live at
// every step), a search that places every buffer in turn also chooses an order
// among the one-section buffers of each section ("locals": they meet nothing
// outside it), and a wrong subset under a longer buffer is refuted only many
// placements later. Locals are interchangeable within a section except for
// their sizes, so the skyline search's "local" mode (PackingLimits::
// local_fill) places only the other buffers and treats each section's locals
// as a multiset that must fill the section's gaps: every gap closed under a
// placed buffer and the open space at the top are bins, the locals items, and
// the section stays feasible while the items can be assigned to the bins
// (a multiple subset sum; with no slack every bin is filled exactly). The
// achievable sums of a section's locals (SubsetSums) also say at which heights
// a longer buffer can rest on them, so the search's floors rise only to those.
//
// Cost: SubsetSums is a bitset of (sum of sizes + 1) bits built in
// O(items x bits / 64); AssignToBins is a depth-first search, largest item
// first, with a node limit (kUnknown beyond it).
// Thread-safety: no shared state. Errors: none.
#pragma once

#include <cstdint>
#include <vector>

namespace keel::memory::internal {

// The sums of all sub-multisets of `sizes` (0 included).
class SubsetSums {
 public:
  void Build(const std::vector<uint64_t>& sizes);
  bool Contains(uint64_t v) const { return v <= total_ && ((bits_[v >> 6] >> (v & 63)) & 1) != 0; }
  // The smallest achievable sum greater than v, or UINT64_MAX.
  uint64_t NextAbove(uint64_t v) const;
  uint64_t total() const { return total_; }

 private:
  uint64_t total_ = 0;
  std::vector<uint64_t> bits_;
};

enum class FillAnswer : uint8_t { kYes, kNo, kUnknown };

// Can `items` (sizes, in non-increasing order) all be put into `bins` (each
// bin's items summing to at most its capacity)? With `bin_of_item`, a yes also
// says which bin takes each item. Depth-first over items, bins of equal room
// tried once; a node fails when the room left in bins smaller than every item
// still to place exceeds the total slack (room minus items).
FillAnswer AssignToBins(const std::vector<uint64_t>& items, const std::vector<uint64_t>& bins,
                        uint64_t max_nodes, std::vector<int32_t>* bin_of_item);

}  // namespace keel::memory::internal
