// tests/compiler/memory/memory_test_util.h — helpers for the planner tests:
// lifetime builders, seeded random lifetime sets, and brute-force optima that are
// independent of the planners' own algorithms.
//
// Brute force, offset form: the minimum over all orders of "place each tensor at
// its lowest feasible aligned offset". This reaches the optimum: in an optimal
// layout ordered by offset, placing in that order puts every tensor at or below
// its optimal offset (the ones before it only moved down, so its optimal slot
// stays free), hence the top is at most the optimum. (Not valid with in-place
// aliasing; the brute-force sets have none.)
//
// Brute force, shared-object form: every partition of the tensors into objects
// whose members have pairwise disjoint lifetimes; cost Σ max size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "compiler/memory/planner.h"
#include "compiler/memory/skyline_search.h"

namespace keel::memory::testing {

inline TensorLifetime T(uint64_t size, int32_t first, int32_t last, uint32_t alignment = 1,
                        Device device = Device::kCpu) {
  TensorLifetime t;
  t.size = size;
  t.first_use = first;
  t.last_use = last;
  t.alignment = alignment;
  t.device = device;
  return t;
}

// The problem as the exact searches see it (one item per tensor).
inline std::vector<internal::PackingItem> ItemsOf(const std::vector<TensorLifetime>& ts) {
  std::vector<internal::PackingItem> items;
  for (const TensorLifetime& t : ts) items.push_back(internal::ItemOf(t));
  return items;
}

// The highest byte any item reaches (the packing's height).
inline uint64_t PackingTop(const std::vector<internal::PackingItem>& items, const std::vector<uint64_t>& offsets) {
  uint64_t top = 0;
  for (size_t i = 0; i < items.size(); ++i) top = std::max(top, offsets[i] + items[i].size);
  return top;
}

// No two live-together items share a byte; every offset aligned.
inline bool ValidPacking(const std::vector<internal::PackingItem>& items, const std::vector<uint64_t>& offsets) {
  for (size_t a = 0; a < items.size(); ++a) {
    if (offsets[a] % items[a].alignment != 0) return false;
    for (size_t b = a + 1; b < items.size(); ++b) {
      const bool live_together = items[a].begin < items[b].end && items[b].begin < items[a].end;
      const bool share = offsets[a] < offsets[b] + items[b].size && offsets[b] < offsets[a] + items[a].size;
      if (live_together && share) return false;
    }
  }
  return true;
}

inline bool Meets(const TensorLifetime& a, const TensorLifetime& b) {
  return std::max(a.first_use, b.first_use) <= std::min(a.last_use, b.last_use);
}

inline uint64_t AlignUpTest(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Optimal single-arena top for ≤ 8 tensors on one device, no aliasing.
inline uint64_t BruteForceOffsetOptimum(const std::vector<TensorLifetime>& ts) {
  std::vector<int> perm(ts.size());
  std::iota(perm.begin(), perm.end(), 0);
  uint64_t best = UINT64_MAX;
  do {
    std::vector<uint64_t> off(ts.size(), 0);
    std::vector<char> placed(ts.size(), 0);
    uint64_t top = 0;
    for (int x : perm) {
      std::vector<uint64_t> cand{0};
      for (size_t y = 0; y < ts.size(); ++y) {
        if (placed[y] && Meets(ts[x], ts[y])) cand.push_back(AlignUpTest(off[y] + ts[y].size, ts[x].alignment));
      }
      std::sort(cand.begin(), cand.end());
      for (uint64_t o : cand) {
        bool ok = true;
        for (size_t y = 0; y < ts.size() && ok; ++y) {
          if (!placed[y] || !Meets(ts[x], ts[y]) || ts[y].size == 0 || ts[x].size == 0) continue;
          ok = !(off[y] < o + ts[x].size && o < off[y] + ts[y].size);
        }
        if (ok) {
          off[x] = o;
          break;
        }
      }
      placed[x] = 1;
      top = std::max(top, off[x] + ts[x].size);
    }
    best = std::min(best, top);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

// Optimal Σ object sizes (shared-object form) for ≤ 9 tensors on one device.
inline uint64_t BruteForceSharedObjectOptimum(const std::vector<TensorLifetime>& ts) {
  uint64_t best = UINT64_MAX;
  std::vector<std::vector<int>> objects;
  auto rec = [&](auto&& self, size_t i) -> void {
    if (i == ts.size()) {
      uint64_t cost = 0;
      for (const auto& o : objects) {
        uint64_t m = 0;
        for (int k : o) m = std::max(m, ts[k].size);
        cost += m;
      }
      best = std::min(best, cost);
      return;
    }
    for (size_t o = 0; o < objects.size(); ++o) {  // by index: recursion grows `objects`
      bool ok = true;
      for (int k : objects[o]) ok = ok && !Meets(ts[k], ts[i]);
      if (!ok) continue;
      objects[o].push_back(static_cast<int>(i));
      self(self, i + 1);
      objects[o].pop_back();
    }
    objects.push_back({static_cast<int>(i)});
    self(self, i + 1);
    objects.pop_back();
  };
  rec(rec, 0);
  return best;
}

// Seeded random lifetimes: n tensors over about `steps` steps, sizes in
// [1, max_size], lifetimes mostly short (a few long ones), alignments from
// {1, 16, 64, 256} when `aligned`.
inline std::vector<TensorLifetime> RandomLifetimes(uint32_t seed, int n, int steps,
                                                   uint64_t max_size, bool aligned,
                                                   bool two_devices = false) {
  std::mt19937 rng(seed);
  std::vector<TensorLifetime> ts;
  const uint32_t aligns[] = {1, 16, 64, 256};
  for (int i = 0; i < n; ++i) {
    const int first = static_cast<int>(rng() % static_cast<uint32_t>(steps));
    const int len = (rng() % 8 == 0) ? static_cast<int>(rng() % static_cast<uint32_t>(steps))
                                      : static_cast<int>(rng() % 4);
    TensorLifetime t = T(1 + rng() % max_size, first, first + len,
                         aligned ? aligns[rng() % 4] : 1,
                         two_devices && rng() % 3 == 0 ? Device::kCuda : Device::kCpu);
    t.name = std::to_string(i);  // ("r" + to_string trips GCC 12 -Wrestrict)
    t.name.insert(0, 1, 'r');
    ts.push_back(t);
  }
  return ts;
}

// At most 8 tensors (brute-force size): one or two long buffers across steps
// [0, 11] and two short ones in each of three time blocks (steps 4k..4k+3).
// Until the long buffers are placed they hold the blocks together; then the
// blocks are independent parts, split in the middle of a search.
inline std::vector<TensorLifetime> BlocksHeldByLongBuffers(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<TensorLifetime> ts;
  const int longs = 1 + static_cast<int>(seed % 2);
  for (int i = 0; i < longs; ++i) ts.push_back(T(20 + rng() % 40, 0, 11));
  for (int block = 0; block < 3; ++block) {
    for (int k = 0; k < 2; ++k) {
      const int first = 4 * block + static_cast<int>(rng() % 3);
      ts.push_back(T(1 + rng() % 30, first, first + static_cast<int>(rng() % 2)));
    }
  }
  return ts;
}

// Planners whose plans are in shared-object form (tensors at offset 0 of objects).
inline bool IsSharedObjectStrategy(const std::string& name) {
  return name == "tvm" || name == "tvm-packed" || name == "greedy-breadth" ||
         name == "greedy-size-objects" || name == "min-cost-flow";
}

}  // namespace keel::memory::testing
