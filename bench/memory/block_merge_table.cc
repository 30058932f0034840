// bench/memory/block_merge_table.cc — the block construction of `exact`
// (compiler/memory/block_merging.h) against the generator's own optimal layout
// on generated problems (perfect_packing.h): per way of merging, how many blocks
// it leaves and how many of them are not rectangles of that layout
// (block_quality.h), with their share of the area. Where every block is a
// rectangle of it, the blocks still fit in the optimum; each wrong block can
// push the blocks' optimum above it.
//
//   keel_block_merge_table [--sizes 1000,3000,10000] [--seeds 3]
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench/memory/block_quality.h"
#include "bench/memory/perfect_packing.h"

namespace {

const char* RulesName(const keel::memory::internal::MergeRules& rules) {
  if (rules.max_stack == 1) return "chains only";
  if (rules.max_stack == 2) return "pairs only";
  return rules.chains_first ? "chains first" : "stack then chain";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes{1000, 3000, 10000};
  int seeds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--sizes") {
      sizes.clear();
      std::stringstream in(value);
      for (std::string p; std::getline(in, p, ',');) sizes.push_back(std::atoi(p.c_str()));
    } else if (flag == "--seeds") {
      seeds = std::atoi(value.c_str());
    } else {
      std::fprintf(stderr, "usage: %s [--sizes N,..] [--seeds K]\n", argv[0]);
      return 2;
    }
  }
  std::printf("%-8s %-5s %-17s %8s %14s %10s\n", "buffers", "seed", "merge", "blocks", "not_rectangles", "their_area");
  for (int n : sizes) {
    for (int seed = 1; seed <= seeds; ++seed) {
      const keel::memory::bench::PerfectPackingProblem problem =
          keel::memory::bench::PerfectPackingWithLayout(n, static_cast<uint32_t>(seed));
      std::vector<keel::memory::internal::PackingItem> items;
      for (const keel::memory::TensorLifetime& t : problem.tensors) items.push_back(keel::memory::internal::ItemOf(t));
      for (const keel::memory::internal::MergeRules& rules : keel::memory::internal::kMergeVariants) {
        const keel::memory::bench::BlockQuality q = keel::memory::bench::MeasureBlocks(
            items, problem.offsets, keel::memory::internal::MergeIntoBlocks(items, rules));
        std::printf("%-8d %-5d %-17s %8zu %14zu %9.1f%%\n", n, seed, RulesName(rules), q.blocks, q.not_rectangles,
                    100.0 * q.not_rectangle_area);
      }
    }
  }
  return 0;
}
