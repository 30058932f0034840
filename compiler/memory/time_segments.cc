// compiler/memory/time_segments.cc — the independent parts of a packing
// problem (see the header).
#include "compiler/memory/time_segments.h"

#include <algorithm>
#include <numeric>

namespace keel::memory::internal {

std::vector<std::vector<int32_t>> SplitAtIdleTimes(const std::vector<PackingItem>& items) {
  const int32_t n = static_cast<int32_t>(items.size());
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return items[a].begin < items[b].begin; });
  // Sweep by start: a new part begins where an item starts at or after the
  // latest end so far (nothing live across its start).
  std::vector<int32_t> part_of(n, 0);
  int32_t parts = 0;
  int64_t reach = 0;
  for (int32_t k = 0; k < n; ++k) {
    const PackingItem& it = items[order[k]];
    if (k == 0 || it.begin >= reach) ++parts;
    reach = k == 0 ? it.end : std::max(reach, it.end);
    part_of[order[k]] = parts - 1;
  }
  std::vector<std::vector<int32_t>> result(parts);
  for (int32_t i = 0; i < n; ++i) result[part_of[i]].push_back(i);
  return result;
}

}  // namespace keel::memory::internal
