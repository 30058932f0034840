// bench/memory/perfect_packing.h — planning problems whose optimum is known by
// construction, for the benchmarks and the tests.
//
// Cut the rectangle [0, steps) × [0, capacity) (time × bytes) into `n` pieces by
// guillotine cuts: pick a piece at random and cut it at a random point, across
// time or across bytes (whichever the coin says and the piece allows). Every
// piece becomes a buffer live on its time range with its byte range's length as
// size, and the buffers are shuffled. The pieces tile the rectangle, so the
// buffers fit in exactly `capacity` bytes, and since every step is fully covered,
// the peak-live bound is `capacity` too: the optimum is `capacity`, proven.
//
// PerfectPackingWithLayout also returns the generator's own layout (each
// buffer's offset), against which a construction can be checked (block_quality.h).
//
// Deterministic: std::mt19937 (sequence fixed by the standard), integers by
// modulo only. Requires n <= steps * capacity / 4 or so (every cut needs room).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "compiler/memory/planner.h"

namespace keel::memory::bench {

struct PerfectPackingProblem {
  std::vector<TensorLifetime> tensors;
  std::vector<uint64_t> offsets;  // the generator's layout: tensors[i] at offsets[i], all within the capacity
};

inline PerfectPackingProblem PerfectPackingWithLayout(int n, uint32_t seed, uint64_t capacity = uint64_t{1} << 20,
                                                      int32_t steps = 100000) {
  struct Piece {
    int32_t t0, t1;
    uint64_t b0, b1;
  };
  std::mt19937 rng(seed);
  std::vector<Piece> pieces{{0, steps, 0, capacity}};
  int failures = 0;
  while (static_cast<int>(pieces.size()) < n && failures < 1000000) {
    Piece& p = pieces[rng() % pieces.size()];
    const bool across_time = rng() % 2 == 0;
    if (across_time && p.t1 - p.t0 >= 2) {
      const int32_t cut = p.t0 + 1 + static_cast<int32_t>(rng() % static_cast<uint32_t>(p.t1 - p.t0 - 1));
      Piece right{cut, p.t1, p.b0, p.b1};
      p.t1 = cut;
      pieces.push_back(right);
    } else if (!across_time && p.b1 - p.b0 >= 2) {
      const uint64_t cut = p.b0 + 1 + rng() % (p.b1 - p.b0 - 1);
      Piece upper{p.t0, p.t1, cut, p.b1};
      p.b1 = cut;
      pieces.push_back(upper);
    } else {
      ++failures;
    }
  }
  std::shuffle(pieces.begin(), pieces.end(), rng);
  PerfectPackingProblem problem;
  std::vector<TensorLifetime>& tensors = problem.tensors;
  tensors.reserve(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    problem.offsets.push_back(pieces[i].b0);
    TensorLifetime t;
    t.size = pieces[i].b1 - pieces[i].b0;
    t.alignment = 1;
    t.first_use = pieces[i].t0;
    t.last_use = pieces[i].t1 - 1;
    t.name = std::to_string(i);
    tensors.push_back(std::move(t));
  }
  return problem;
}

inline std::vector<TensorLifetime> PerfectPacking(int n, uint32_t seed, uint64_t capacity = uint64_t{1} << 20,
                                                  int32_t steps = 100000) {
  return PerfectPackingWithLayout(n, seed, capacity, steps).tensors;
}

}  // namespace keel::memory::bench
