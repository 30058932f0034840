// compiler/memory/block_merging.cc — buffers merged into rectangular blocks
// (see the header for the rules and why they help).
//
// The merges form a forest: leaves are the input items, an inner node a block
// with its parts at fixed offsets inside it. Each round stacks every group of
// same-lifetime roots, then chains same-size roots that meet in time (or, with
// MergeRules::chains_first, chains until nothing chains, then stacks); rounds
// repeat until one changes nothing.
#include "compiler/memory/block_merging.h"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

#include "compiler/memory/planning_support.h"

namespace keel::memory::internal {

namespace {

struct Node {
  PackingItem item;
  std::vector<std::pair<int32_t, uint64_t>> parts;  // (node, offset inside this one)
};

class Merger {
 public:
  Merger(const std::vector<PackingItem>& items, const MergeRules& rules)
      : n_(static_cast<int32_t>(items.size())), max_stack_(std::max<size_t>(rules.max_stack, 1)),
        chains_first_(rules.chains_first) {
    for (int32_t i = 0; i < n_; ++i) {
      nodes_.push_back({items[i], {}});
      roots_.push_back(i);
    }
  }

  BlockProblem Run() {
    if (chains_first_) {
      do {
        while (ChainSameSizes()) {
        }
      } while (StackSameLifetimes());
    } else {
      while (StackSameLifetimes() | ChainSameSizes()) {
      }
    }
    BlockProblem out;
    out.block_of.assign(n_, -1);
    out.offset_in_block.assign(n_, 0);
    std::vector<std::pair<int32_t, uint64_t>> stack;
    for (size_t b = 0; b < roots_.size(); ++b) {
      out.blocks.push_back(nodes_[roots_[b]].item);
      stack.assign(1, {roots_[b], 0});
      while (!stack.empty()) {
        const auto [node, offset] = stack.back();
        stack.pop_back();
        if (node < n_) {
          out.block_of[node] = static_cast<int32_t>(b);
          out.offset_in_block[node] = offset;
          continue;
        }
        for (const auto& [part, inside] : nodes_[node].parts) stack.emplace_back(part, offset + inside);
      }
    }
    return out;
  }

 private:
  const PackingItem& ItemAt(int32_t node) const { return nodes_[node].item; }

  int32_t NewBlock(PackingItem item, std::vector<std::pair<int32_t, uint64_t>> parts) {
    nodes_.push_back({item, std::move(parts)});
    return static_cast<int32_t>(nodes_.size()) - 1;
  }

  // Every group of roots with one lifetime (at most max_stack_ of them; 1: no
  // stacking) becomes one block: larger
  // alignment, then larger size, lower (each part aligned for itself; the
  // block is aligned for all of them).
  bool StackSameLifetimes() {
    std::sort(roots_.begin(), roots_.end(), [&](int32_t x, int32_t y) {
      const PackingItem &a = ItemAt(x), &b = ItemAt(y);
      return std::make_tuple(a.begin, a.end, b.alignment, b.size, x) <
             std::make_tuple(b.begin, b.end, a.alignment, a.size, y);
    });
    std::vector<int32_t> next;
    bool changed = false;
    for (size_t k = 0; k < roots_.size();) {
      size_t last = k + 1;
      while (last < roots_.size() && ItemAt(roots_[last]).begin == ItemAt(roots_[k]).begin &&
             ItemAt(roots_[last]).end == ItemAt(roots_[k]).end) {
        ++last;
      }
      if (last - k == 1 || last - k > max_stack_) {
        for (size_t j = k; j < last; ++j) next.push_back(roots_[j]);
      } else {
        PackingItem block = ItemAt(roots_[k]);
        std::vector<std::pair<int32_t, uint64_t>> parts;
        uint64_t height = 0;
        for (size_t j = k; j < last; ++j) {
          const PackingItem& part = ItemAt(roots_[j]);
          height = AlignUp(height, part.alignment);
          parts.emplace_back(roots_[j], height);
          height += part.size;
          block.alignment = std::max(block.alignment, part.alignment);
        }
        block.size = height;
        next.push_back(NewBlock(block, std::move(parts)));
        changed = true;
      }
      k = last;
    }
    roots_ = std::move(next);
    return changed;
  }

  // Roots of one size that meet in time (one ends where the next begins) become
  // one block at one offset, left to right; where several could follow, the
  // one ending first does.
  bool ChainSameSizes() {
    auto key = [&](int32_t x) { return std::make_tuple(ItemAt(x).size, ItemAt(x).begin, ItemAt(x).end, x); };
    std::sort(roots_.begin(), roots_.end(), [&](int32_t x, int32_t y) { return key(x) < key(y); });
    std::vector<char> used(roots_.size(), 0);
    std::vector<int32_t> next;
    bool changed = false;
    for (size_t k = 0; k < roots_.size(); ++k) {
      if (used[k]) continue;
      used[k] = 1;
      std::vector<std::pair<int32_t, uint64_t>> parts{{roots_[k], 0}};
      PackingItem block = ItemAt(roots_[k]);
      while (true) {
        // The first unused root of this size beginning where the chain ends.
        const auto probe = std::make_tuple(block.size, block.end, INT64_MIN, INT32_MIN);
        size_t j = static_cast<size_t>(
            std::lower_bound(roots_.begin(), roots_.end(), probe,
                             [&](int32_t x, const auto& p) { return key(x) < p; }) -
            roots_.begin());
        while (j < roots_.size() && used[j] && ItemAt(roots_[j]).size == block.size &&
               ItemAt(roots_[j]).begin == block.end) {
          ++j;
        }
        if (j >= roots_.size() || ItemAt(roots_[j]).size != block.size || ItemAt(roots_[j]).begin != block.end) break;
        used[j] = 1;
        parts.emplace_back(roots_[j], 0);
        block.end = ItemAt(roots_[j]).end;
        block.alignment = std::max(block.alignment, ItemAt(roots_[j]).alignment);
      }
      if (parts.size() == 1) {
        next.push_back(roots_[k]);
      } else {
        next.push_back(NewBlock(block, std::move(parts)));
        changed = true;
      }
    }
    roots_ = std::move(next);
    return changed;
  }

  int32_t n_;
  size_t max_stack_;  // larger same-lifetime groups stay apart
  bool chains_first_;
  std::vector<Node> nodes_;
  std::vector<int32_t> roots_;
};

}  // namespace

BlockProblem MergeIntoBlocks(const std::vector<PackingItem>& items, const MergeRules& rules) {
  return Merger(items, rules).Run();
}

std::vector<uint64_t> ExpandBlockLayout(const BlockProblem& problem, const std::vector<uint64_t>& block_offsets) {
  std::vector<uint64_t> offsets(problem.block_of.size(), 0);
  for (size_t i = 0; i < offsets.size(); ++i) {
    offsets[i] = block_offsets[problem.block_of[i]] + problem.offset_in_block[i];
  }
  return offsets;
}

}  // namespace keel::memory::internal
