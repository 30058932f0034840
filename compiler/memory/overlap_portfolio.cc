// compiler/memory/overlap_portfolio.cc — two overlap minimizations in
// parallel on differently ordered copies of one problem (see the header).
#include "compiler/memory/overlap_portfolio.h"

#include <atomic>
#include <thread>
#include <utility>

#include "compiler/memory/large_neighbourhood_search.h"

namespace keel::memory::internal {

RefineResult MinimizeOverlapPortfolio(const std::vector<PackingItem>& items, const OverlapGraph& graph,
                                      std::vector<uint64_t> offsets, uint64_t lower_bound,
                                      const RefineLimits& limits) {
  const size_t n = items.size();
  OverlapGraph reversed_graph;
  std::vector<PackingItem> reversed_items(items.rbegin(), items.rend());
  if (std::thread::hardware_concurrency() < 2 || limits.max_moves != UINT64_MAX || n < 2 ||
      !BuildOverlapGraph(reversed_items, &reversed_graph)) {
    return MinimizeOverlap(items, graph, std::move(offsets), lower_bound, limits);
  }
  std::vector<uint64_t> reversed_offsets(offsets.rbegin(), offsets.rend());
  std::atomic<bool> stop{false};
  RefineLimits shared = limits;
  shared.stop = &stop;
  RefineResult second;
  std::thread worker([&] {
    second = MinimizeOverlap(reversed_items, reversed_graph, std::move(reversed_offsets), lower_bound, shared);
    if (second.top <= lower_bound) stop.store(true, std::memory_order_relaxed);
  });
  RefineResult first = MinimizeOverlap(items, graph, std::move(offsets), lower_bound, shared);
  if (first.top <= lower_bound) stop.store(true, std::memory_order_relaxed);
  worker.join();
  const uint64_t moves = first.moves + second.moves;
  const uint64_t improvements = first.improvements + second.improvements;
  if (second.top < first.top) {
    first.offsets.assign(second.offsets.rbegin(), second.offsets.rend());
    first.top = second.top;
    first.stopped_by_deadline = second.stopped_by_deadline;
  }
  first.moves = moves;
  first.improvements = improvements;
  return first;
}

}  // namespace keel::memory::internal
