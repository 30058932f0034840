// compiler/memory/settle_layout.cc — every item falls onto the items below it
// in the layout's own vertical order (see the header).
#include "compiler/memory/settle_layout.h"

#include <algorithm>
#include <numeric>

#include "compiler/memory/planning_support.h"

namespace keel::memory::internal {

std::vector<uint64_t> SettleLayout(const std::vector<PackingItem>& items, const OverlapGraph& graph,
                                   const std::vector<uint64_t>& heights) {
  const int32_t n = static_cast<int32_t>(items.size());
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return heights[a] != heights[b] ? heights[a] < heights[b] : a < b;
  });
  std::vector<int32_t> rank(n);
  for (int32_t r = 0; r < n; ++r) rank[order[r]] = r;
  std::vector<uint64_t> settled(n, 0);
  for (int32_t x : order) {
    uint64_t rest = 0;
    for (int64_t k = graph.start[x]; k < graph.start[x + 1]; ++k) {
      const int32_t y = graph.neighbours[k];
      if (rank[y] < rank[x]) rest = std::max(rest, settled[y] + items[y].size);
    }
    settled[x] = AlignUp(rest, items[x].alignment);
  }
  return settled;
}

}  // namespace keel::memory::internal
