// compiler/memory/tiling_sweep.cc — the time sweep over a PQ-tree of the live
// buffers (see the header for the method and why).
//
// The PQ-tree: a leaf is a live buffer; a P-node's children may stand in any
// order, a Q-node's in the listed order or its reverse; the frontier (the
// leaves in listing order) is one byte order the tree allows. Reduce makes a
// set of leaves consecutive in every order the tree still allows, by Booth
// and Lueker's templates applied bottom up over the nodes holding the set's
// leaves (here without their linear-time bookkeeping: live buffers are few
// hundred at a time).
#include "compiler/memory/tiling_sweep.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <utility>

namespace keel::memory::internal {

namespace {

// Where the enders cannot be made consecutive at once, they are split in
// two runs (and the second again, up to kMaxRuns runs) by subsets of equal
// sums: all subsets of lists of at most kAllSubsets items, else those whose
// smaller side has at most kSplitSide items; at most kMaxSplitTries splits
// per event, fewest items on the smaller side first.
size_t EnvOr(const char* name, size_t value) {
  const char* v = std::getenv(name);
  return v ? static_cast<size_t>(std::atoll(v)) : value;
}
const size_t kSplitSide = EnvOr("KS_SIDE", 3);
const size_t kAllSubsets = EnvOr("KS_ALL", 14);
const int kMaxSplitTries = static_cast<int>(EnvOr("KS_TRIES", 64));
const int kMaxRuns = static_cast<int>(EnvOr("KS_RUNS", 4));
// Backtracking: over at most this many recent events with options left, and
// at most kWorkPerEvent options tried per event on average.
const size_t kMaxChoicePoints = EnvOr("KS_POINTS", 64);
const uint64_t kWorkPerEvent = EnvOr("KS_WORK", 32);

enum Kind : uint8_t { kLeaf, kP, kQ };
enum Label : uint8_t { kEmpty, kPartial, kFull };

struct Node {
  Kind kind = kLeaf;
  int32_t item = -1;
  int32_t parent = -1;
  std::vector<int32_t> children;
};

// A run of enders frozen at its time point: its items in the tree's order
// then, the starters that took its place, and the live items next to it.
struct Frozen {
  std::vector<int32_t> run;
  std::vector<int32_t> starters;
  // A live item under the Q-node sibling next to the run (-1: the run was a
  // whole node, free to turn), and whether that sibling was listed below it.
  int32_t witness = -1;
  bool witness_below = false;
};

class PqTree {
 public:
  explicit PqTree(size_t items) : leaf_of_(items, -1) {}

  bool empty() const { return root_ < 0; }

  // A tree of one P-node over `items` (the first time point).
  void Start(const std::vector<int32_t>& items) {
    root_ = Block(items);
    live_ = items.size();
  }

  // Makes `enders` consecutive and puts one node of `starters` in their
  // place; records the frozen run. False (the tree then undefined: the
  // caller keeps a copy) when the tree allows no order with them together.
  bool Replace(const std::vector<int32_t>& enders, const std::vector<int32_t>& starters, std::vector<Frozen>* out) {
    int32_t at = -1, begin = -1, end = -1;
    if (!Reduce(enders, &at, &begin, &end)) return false;
    const std::vector<int32_t> order = Frontier();
    size_t first = order.size(), last = 0, found = 0;
    for (size_t k = 0; k < order.size(); ++k) {
      if (!in_set_[order[k]]) continue;
      first = std::min(first, k);
      last = k;
      ++found;
    }
    ClearSet(enders);
    if (found != enders.size() || last + 1 - first != found) return false;
    Frozen frozen;
    frozen.run.assign(order.begin() + static_cast<std::ptrdiff_t>(first),
                      order.begin() + static_cast<std::ptrdiff_t>(last) + 1);
    frozen.starters = starters;
    if (begin >= 0) {
      // The run is part of a Q-node's children: it keeps its side towards
      // the siblings next to it, however the Q-node is turned later.
      const std::vector<int32_t>& kids = nodes_[at].children;
      frozen.witness_below = begin > 0;
      int32_t x = frozen.witness_below ? kids[begin - 1] : kids[end];
      while (nodes_[x].kind != kLeaf) x = nodes_[x].children[0];
      frozen.witness = nodes_[x].item;
    }
    out->push_back(std::move(frozen));
    for (int32_t i : enders) leaf_of_[i] = -1;
    const int32_t block = starters.empty() ? -1 : Block(starters);
    if (begin < 0) {
      Substitute(at, block);
    } else {
      std::vector<int32_t> kids = nodes_[at].children;
      kids.erase(kids.begin() + begin, kids.begin() + end);
      if (block >= 0) kids.insert(kids.begin() + begin, block);
      SetChildren(at, std::move(kids));
      Tidy(at);
    }
    live_ = live_ + starters.size() - enders.size();
    if (nodes_.size() > 8 * live_ + 4096) Compact();
    return true;
  }

 private:
  int32_t NewNode(Kind kind, int32_t item) {
    nodes_.push_back({kind, item, -1, {}});
    count_.push_back(0);
    label_.push_back(kEmpty);
    pertinent_kids_.push_back(0);
    done_kids_.push_back(0);
    return static_cast<int32_t>(nodes_.size()) - 1;
  }
  void SetChildren(int32_t x, std::vector<int32_t> kids) {
    for (int32_t c : kids) nodes_[c].parent = x;
    nodes_[x].children = std::move(kids);
  }
  // One leaf, or a P-node of leaves.
  int32_t Block(const std::vector<int32_t>& items) {
    std::vector<int32_t> leaves;
    for (int32_t i : items) {
      const int32_t leaf = NewNode(kLeaf, i);
      leaf_of_[i] = leaf;
      leaves.push_back(leaf);
    }
    if (leaves.size() == 1) return leaves[0];
    const int32_t p = NewNode(kP, -1);
    SetChildren(p, std::move(leaves));
    return p;
  }
  // `x` replaced by `y` (-1: removed) in x's parent.
  void Substitute(int32_t x, int32_t y) {
    const int32_t parent = nodes_[x].parent;
    if (parent < 0) {
      root_ = y;
      if (y >= 0) nodes_[y].parent = -1;
      return;
    }
    std::vector<int32_t> kids = nodes_[parent].children;
    auto it = std::find(kids.begin(), kids.end(), x);
    if (y >= 0) {
      *it = y;
    } else {
      kids.erase(it);
    }
    SetChildren(parent, std::move(kids));
    if (y < 0) Tidy(parent);
  }
  // An inner node with no child goes; with one, the child takes its place.
  void Tidy(int32_t x) {
    if (nodes_[x].kind == kLeaf) return;
    if (nodes_[x].children.empty()) {
      Substitute(x, -1);
    } else if (nodes_[x].children.size() == 1) {
      Substitute(x, nodes_[x].children[0]);
    }
  }

  std::vector<int32_t> Frontier() const {
    std::vector<int32_t> order;
    if (root_ < 0) return order;
    std::vector<int32_t> stack{root_};
    while (!stack.empty()) {
      const int32_t x = stack.back();
      stack.pop_back();
      if (nodes_[x].kind == kLeaf) {
        order.push_back(nodes_[x].item);
        continue;
      }
      for (auto it = nodes_[x].children.rbegin(); it != nodes_[x].children.rend(); ++it) stack.push_back(*it);
    }
    return order;
  }

public:
  // The enders' maximal runs in one order the tree allows: the frontier with
  // every P-node's children that hold enders gathered (all-ender children
  // first, then those holding some). Each run is consecutive in that order,
  // so replacing the runs one by one succeeds.
  std::vector<std::vector<int32_t>> EnderRuns(const std::vector<int32_t>& enders) {
    std::vector<std::vector<int32_t>> runs;
    if (root_ < 0) return runs;
    if (in_set_.size() < leaf_of_.size()) in_set_.resize(leaf_of_.size(), 0);
    for (int32_t i : enders) in_set_[i] = 1;
    std::vector<int32_t> below(nodes_.size(), 0), leaves(nodes_.size(), 0);
    // Post-order counts of the set's leaves and of all leaves.
    std::vector<std::pair<int32_t, bool>> stack{{root_, false}};
    while (!stack.empty()) {
      auto [x, done] = stack.back();
      stack.pop_back();
      if (nodes_[x].kind == kLeaf) {
        below[x] = in_set_[nodes_[x].item];
        leaves[x] = 1;
        continue;
      }
      if (!done) {
        stack.push_back({x, true});
        for (int32_t c : nodes_[x].children) stack.push_back({c, false});
        continue;
      }
      for (int32_t c : nodes_[x].children) {
        below[x] += below[c];
        leaves[x] += leaves[c];
      }
    }
    std::vector<int32_t> order;
    std::vector<int32_t> todo{root_};
    while (!todo.empty()) {
      const int32_t x = todo.back();
      todo.pop_back();
      if (nodes_[x].kind == kLeaf) {
        order.push_back(nodes_[x].item);
        continue;
      }
      std::vector<int32_t> kids = nodes_[x].children;
      if (nodes_[x].kind == kP) {
        auto rank = [&](int32_t c) { return below[c] == leaves[c] ? 0 : below[c] > 0 ? 1 : 2; };
        std::stable_sort(kids.begin(), kids.end(), [&](int32_t a, int32_t b) { return rank(a) < rank(b); });
      }
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) todo.push_back(*it);
    }
    bool open = false;
    for (int32_t i : order) {
      if (!in_set_[i]) {
        open = false;
        continue;
      }
      if (!open) runs.emplace_back();
      runs.back().push_back(i);
      open = true;
    }
    ClearSet(enders);
    return runs;
  }

private:
  // Copies the reachable nodes into a fresh pool.
  void Compact() {
    std::vector<Node> old = std::move(nodes_);
    nodes_.clear();
    count_.clear();
    label_.clear();
    pertinent_kids_.clear();
    done_kids_.clear();
    if (root_ < 0) return;
    std::vector<std::pair<int32_t, int32_t>> stack{{root_, -1}};  // old id, new parent
    while (!stack.empty()) {
      const auto [x, parent] = stack.back();
      stack.pop_back();
      const int32_t y = NewNode(old[x].kind, old[x].item);
      nodes_[y].parent = parent;
      if (parent < 0) {
        root_ = y;
      } else {
        nodes_[parent].children.push_back(y);
      }
      if (old[x].kind == kLeaf) leaf_of_[old[x].item] = y;
      for (auto it = old[x].children.rbegin(); it != old[x].children.rend(); ++it) stack.push_back({*it, y});
    }
  }

  Label LabelOf(int32_t x) const { return count_[x] == 0 ? kEmpty : label_[x]; }

  // The children of `x` of one label, in order.
  std::vector<int32_t> KidsLabelled(int32_t x, Label label) const {
    std::vector<int32_t> kids;
    for (int32_t c : nodes_[x].children) {
      if (LabelOf(c) == label) kids.push_back(c);
    }
    return kids;
  }
  // One node over `kids` (a P-node when several), labelled.
  int32_t Group(std::vector<int32_t> kids, Label label) {
    if (kids.size() == 1) return kids[0];
    const int32_t g = NewNode(kP, -1);
    SetChildren(g, std::move(kids));
    if (label == kFull) {
      count_[g] = 1;
      label_[g] = kFull;
      touched_.push_back(g);
    }
    return g;
  }
  // The children of a partial node, which is then dropped.
  std::vector<int32_t> Splice(int32_t partial, bool reversed) {
    std::vector<int32_t> kids = nodes_[partial].children;
    if (reversed) std::reverse(kids.begin(), kids.end());
    nodes_[partial].children.clear();
    return kids;
  }

  // Non-root templates (P1, P3, P5; Q1, Q2): a partial node becomes a Q-node
  // listing its empty children first and its full ones last.
  bool Template(int32_t x) {
    const std::vector<int32_t> full = KidsLabelled(x, kFull), partial = KidsLabelled(x, kPartial),
                               empty = KidsLabelled(x, kEmpty);
    if (full.size() == nodes_[x].children.size()) {
      label_[x] = kFull;
      return true;
    }
    label_[x] = kPartial;
    if (nodes_[x].kind == kP) {
      if (partial.size() > 1) return false;
      std::vector<int32_t> kids;
      if (!empty.empty()) kids.push_back(Group(empty, kEmpty));
      if (!partial.empty()) {
        for (int32_t c : Splice(partial[0], false)) kids.push_back(c);
      }
      if (!full.empty()) kids.push_back(Group(full, kFull));
      nodes_[x].kind = kQ;
      SetChildren(x, std::move(kids));
      return true;
    }
    // Q-node: empty*, at most one partial, full* — as listed or reversed.
    std::vector<int32_t> kids = nodes_[x].children;
    auto fits = [&](const std::vector<int32_t>& k) {
      size_t i = 0;
      while (i < k.size() && LabelOf(k[i]) == kEmpty) ++i;
      if (i < k.size() && LabelOf(k[i]) == kPartial) ++i;
      while (i < k.size() && LabelOf(k[i]) == kFull) ++i;
      return i == k.size();
    };
    if (!fits(kids)) {
      std::reverse(kids.begin(), kids.end());
      if (!fits(kids)) return false;
    }
    std::vector<int32_t> flat;
    for (int32_t c : kids) {
      if (LabelOf(c) == kPartial) {
        for (int32_t g : Splice(c, false)) flat.push_back(g);
      } else {
        flat.push_back(c);
      }
    }
    SetChildren(x, std::move(flat));
    return true;
  }

  // The first and one past the last full child of x (a Q-node).
  void FullRange(int32_t x, int32_t* begin, int32_t* end) const {
    const std::vector<int32_t>& kids = nodes_[x].children;
    *begin = -1;
    for (size_t k = 0; k < kids.size(); ++k) {
      if (LabelOf(kids[k]) != kFull) continue;
      if (*begin < 0) *begin = static_cast<int32_t>(k);
      *end = static_cast<int32_t>(k) + 1;
    }
  }

  // Root templates (P2, P4, P6; Q3): the set's leaves become one run, the
  // children [begin, end) of *at, or all of *at (begin -1).
  bool RootTemplate(int32_t x, int32_t* at, int32_t* begin, int32_t* end) {
    *at = x;
    *begin = *end = -1;
    if (nodes_[x].kind == kLeaf) return true;
    const std::vector<int32_t> full = KidsLabelled(x, kFull), partial = KidsLabelled(x, kPartial),
                               empty = KidsLabelled(x, kEmpty);
    if (full.size() == nodes_[x].children.size()) return true;
    if (nodes_[x].kind == kP) {
      if (partial.size() > 2) return false;
      std::vector<int32_t> kids = empty;
      if (partial.empty()) {
        const int32_t g = Group(full, kFull);
        kids.push_back(g);
        SetChildren(x, std::move(kids));
        *at = g;
        return true;
      }
      std::vector<int32_t> q = Splice(partial[0], false);
      if (!full.empty()) q.push_back(Group(full, kFull));
      if (partial.size() == 2) {
        for (int32_t c : Splice(partial[1], true)) q.push_back(c);
      }
      const int32_t z = NewNode(kQ, -1);
      count_[z] = 1;
      label_[z] = kPartial;
      touched_.push_back(z);
      SetChildren(z, std::move(q));
      kids.push_back(z);
      SetChildren(x, std::move(kids));
      *at = z;
      FullRange(z, begin, end);
      return true;
    }
    // Q-node: empty*, partial?, full*, partial?, empty*.
    const std::vector<int32_t> kids = nodes_[x].children;
    size_t i = 0;
    while (i < kids.size() && LabelOf(kids[i]) == kEmpty) ++i;
    const size_t p1 = i < kids.size() && LabelOf(kids[i]) == kPartial ? i++ : SIZE_MAX;
    while (i < kids.size() && LabelOf(kids[i]) == kFull) ++i;
    const size_t p2 = i < kids.size() && LabelOf(kids[i]) == kPartial ? i++ : SIZE_MAX;
    while (i < kids.size() && LabelOf(kids[i]) == kEmpty) ++i;
    if (i != kids.size()) return false;
    std::vector<int32_t> flat;
    for (size_t k = 0; k < kids.size(); ++k) {
      if (k == p1 || k == p2) {
        for (int32_t g : Splice(kids[k], k == p2)) flat.push_back(g);
      } else {
        flat.push_back(kids[k]);
      }
    }
    SetChildren(x, std::move(flat));
    FullRange(x, begin, end);
    return true;
  }

  // Makes the leaves of `items` consecutive (see RootTemplate for the run).
  bool Reduce(const std::vector<int32_t>& items, int32_t* at, int32_t* begin, int32_t* end) {
    in_set_.resize(leaf_of_.size(), 0);
    touched_.clear();
    std::vector<int32_t> ready;
    for (int32_t i : items) {
      in_set_[i] = 1;
      const int32_t leaf = leaf_of_[i];
      count_[leaf] = 1;
      label_[leaf] = kFull;
      touched_.push_back(leaf);
      ready.push_back(leaf);
    }
    for (int32_t i : items) {
      int32_t x = leaf_of_[i];
      bool newly = true;
      while (nodes_[x].parent >= 0) {
        const int32_t p = nodes_[x].parent;
        if (newly) ++pertinent_kids_[p];
        newly = count_[p] == 0;
        if (newly) touched_.push_back(p);
        ++count_[p];
        x = p;
      }
    }
    int32_t root = leaf_of_[items[0]];
    while (count_[root] < static_cast<int32_t>(items.size())) root = nodes_[root].parent;
    bool ok = true;
    for (size_t k = 0; k < ready.size() && ok; ++k) {
      const int32_t x = ready[k];
      if (x == root) continue;
      if (nodes_[x].kind != kLeaf && !Template(x)) ok = false;
      const int32_t p = nodes_[x].parent;
      if (++done_kids_[p] == pertinent_kids_[p] && p != root) ready.push_back(p);
    }
    if (ok) ok = RootTemplate(root, at, begin, end);
    for (int32_t x : touched_) {
      if (static_cast<size_t>(x) >= count_.size()) continue;
      count_[x] = 0;
      label_[x] = kEmpty;
      pertinent_kids_[x] = 0;
      done_kids_[x] = 0;
    }
    if (!ok) ClearSet(items);
    return ok;
  }
  void ClearSet(const std::vector<int32_t>& items) {
    for (int32_t i : items) in_set_[i] = 0;
  }

  std::vector<Node> nodes_;
  int32_t root_ = -1;
  std::vector<int32_t> leaf_of_;  // per item: its leaf while live, else -1
  size_t live_ = 0;               // live items (leaves)
  // Per node, during a reduction.
  std::vector<int32_t> count_;  // the set's leaves below
  std::vector<Label> label_;
  std::vector<int32_t> pertinent_kids_, done_kids_;
  std::vector<int32_t> touched_;
  std::vector<char> in_set_;  // per item
};

// A subset of an event's enders or starters (at most 64 of them).
using Mask = uint64_t;

// Subsets of `of` whose smaller side (the subset or its complement) has at
// most kSplitSide items, each with its sum; proper and non-empty.
std::vector<std::pair<uint64_t, Mask>> SmallSubsets(const std::vector<PackingItem>& items,
                                                    const std::vector<int32_t>& of) {
  std::vector<std::pair<uint64_t, Mask>> subsets;
  const size_t n = of.size();
  const Mask all = n == 64 ? ~Mask{0} : (Mask{1} << n) - 1;
  uint64_t total = 0;
  for (int32_t i : of) total += items[i].size;
  auto add = [&](Mask m, uint64_t sum) {
    if (m == 0 || m == all) return;
    subsets.push_back({sum, m});
    if (n > kAllSubsets) subsets.push_back({total - sum, all & ~m});  // else listed anyway
  };
  if (n <= kAllSubsets) {
    for (Mask m = 1; m < all; ++m) {
      uint64_t sum = 0;
      for (size_t k = 0; k < n; ++k) {
        if (m >> k & 1) sum += items[of[k]].size;
      }
      add(m, sum);
    }
    return subsets;
  }
  for (size_t a = 0; a < n; ++a) {
    add(Mask{1} << a, items[of[a]].size);
    for (size_t b = a + 1; b < n; ++b) {
      add(Mask{1} << a | Mask{1} << b, items[of[a]].size + items[of[b]].size);
      for (size_t c = b + 1; c < n && kSplitSide >= 3; ++c) {
        add(Mask{1} << a | Mask{1} << b | Mask{1} << c,
            items[of[a]].size + items[of[b]].size + items[of[c]].size);
      }
    }
  }
  return subsets;
}

// Splits of an event in two: (enders' subset, starters' subset) of equal
// sums, the enders' subset holding the first ender (the other run is the
// rest), fewest items on the smaller side first; at most kMaxSplitTries.
std::vector<std::pair<Mask, Mask>> Splits(const std::vector<PackingItem>& items, const std::vector<int32_t>& enders,
                                          const std::vector<int32_t>& starters) {
  std::vector<std::pair<Mask, Mask>> splits;
  if (enders.size() < 2 || starters.size() < 2 || enders.size() > 64 || starters.size() > 64) return splits;
  std::multimap<uint64_t, Mask> starter_sums;
  for (const auto& [sum, m] : SmallSubsets(items, starters)) starter_sums.insert({sum, m});
  const Mask all_e = enders.size() == 64 ? ~Mask{0} : (Mask{1} << enders.size()) - 1;
  const Mask all_s = starters.size() == 64 ? ~Mask{0} : (Mask{1} << starters.size()) - 1;
  std::vector<std::pair<int, std::pair<Mask, Mask>>> ranked;
  for (const auto& [sum, e] : SmallSubsets(items, enders)) {
    if (!(e & 1)) continue;
    auto [lo, hi] = starter_sums.equal_range(sum);
    for (auto it = lo; it != hi; ++it) {
      const Mask s = it->second;
      const int one = __builtin_popcountll(e) + __builtin_popcountll(s);
      const int other = __builtin_popcountll(all_e & ~e) + __builtin_popcountll(all_s & ~s);
      ranked.push_back({std::min(one, other), {e, s}});
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (size_t k = 0; k < ranked.size() && k < static_cast<size_t>(kMaxSplitTries); ++k) splits.push_back(ranked[k].second);
  return splits;
}

std::vector<int32_t> Pick(const std::vector<int32_t>& of, Mask mask, bool in) {
  std::vector<int32_t> picked;
  for (size_t k = 0; k < of.size(); ++k) {
    if ((mask >> k & 1) == (in ? 1u : 0u)) picked.push_back(of[k]);
  }
  return picked;
}

// An event's enders in runs (each run one gap) and its starters assigned to
// the runs with exact sums: a multiple subset sum (bin completion), runs of
// larger sums first, each run's subset searched over the starters larger
// first. Starters of one size and one end are interchangeable: of such a
// group only a prefix is taken (symmetry). At most `limit` assignments,
// within a node budget.
using Assignment = std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>>;
const size_t kMaxAssignments = EnvOr("KS_ASSIGN", 8);
const uint64_t kAssignNodes = EnvOr("KS_ASSIGN_NODES", 20000);

std::vector<Assignment> AssignStarters(const std::vector<PackingItem>& items,
                                       std::vector<std::vector<int32_t>> runs, std::vector<int32_t> starters) {
  std::vector<Assignment> found;
  auto sum_of = [&](const std::vector<int32_t>& v) {
    uint64_t t = 0;
    for (int32_t i : v) t += items[i].size;
    return t;
  };
  std::stable_sort(runs.begin(), runs.end(), [&](const auto& a, const auto& b) { return sum_of(a) > sum_of(b); });
  std::stable_sort(starters.begin(), starters.end(), [&](int32_t a, int32_t b) {
    return items[a].size != items[b].size ? items[a].size > items[b].size : items[a].end < items[b].end;
  });
  const size_t n = starters.size();
  std::vector<uint64_t> targets;
  for (const auto& r : runs) targets.push_back(sum_of(r));
  std::vector<int32_t> owner(n, -1);
  uint64_t nodes = 0;
  auto twin = [&](size_t k) {
    return k > 0 && items[starters[k]].size == items[starters[k - 1]].size &&
           items[starters[k]].end == items[starters[k - 1]].end;
  };
  // run r, next starter k, what run r still needs.
  std::function<void(size_t, size_t, uint64_t)> dfs = [&](size_t r, size_t k, uint64_t need) {
    if (found.size() >= kMaxAssignments || ++nodes > kAssignNodes) return;
    if (need == 0) {
      if (r + 1 == runs.size()) {
        Assignment a;
        for (size_t j = 0; j < runs.size(); ++j) {
          std::vector<int32_t> mine;
          for (size_t q = 0; q < n; ++q) {
            if (owner[q] == static_cast<int32_t>(j)) mine.push_back(starters[q]);
          }
          a.push_back({runs[j], std::move(mine)});
        }
        found.push_back(std::move(a));
        return;
      }
      dfs(r + 1, 0, targets[r + 1]);
      return;
    }
    uint64_t rest = 0;
    for (size_t q = k; q < n; ++q) {
      if (owner[q] < 0) rest += items[starters[q]].size;
    }
    if (rest < need) return;
    for (size_t q = k; q < n; ++q) {
      if (owner[q] >= 0 || items[starters[q]].size > need) continue;
      // Symmetry: a twin is taken only after the twin before it (in this run
      // or an earlier one).
      if (twin(q) && owner[q - 1] < 0) continue;
      owner[q] = static_cast<int32_t>(r);
      dfs(r, q + 1, need - items[starters[q]].size);
      owner[q] = -1;
      if (found.size() >= kMaxAssignments || nodes > kAssignNodes) return;
    }
  };
  if (!runs.empty() && n > 0) dfs(0, 0, targets[0]);
  return found;
}

// One event: the enders' run replaced by the starters, or, where the enders
// cannot be made consecutive, split in runs (at most kMaxRuns), each tried
// on a copy of the tree. False: the tree and `frozen` are as before.
bool ApplyEvent(const std::vector<PackingItem>& items, const std::vector<int32_t>& enders,
                const std::vector<int32_t>& starters, int runs_left, PqTree* tree, std::vector<Frozen>* frozen) {
  const PqTree copy = *tree;
  const size_t mark = frozen->size();
  if (tree->Replace(enders, starters, frozen)) return true;
  *tree = copy;
  frozen->resize(mark);
  if (runs_left < 2) return false;
  for (const auto& [e, s] : Splits(items, enders, starters)) {
    if (tree->Replace(Pick(enders, e, true), Pick(starters, s, true), frozen) &&
        ApplyEvent(items, Pick(enders, e, false), Pick(starters, s, false), runs_left - 1, tree, frozen)) {
      return true;
    }
    *tree = copy;
    frozen->resize(mark);
  }
  return false;
}

// Whether no two live-together items share a byte.
bool Valid(const std::vector<PackingItem>& items, const std::vector<uint64_t>& offsets) {
  std::vector<int32_t> order(items.size());
  for (size_t i = 0; i < items.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return items[a].begin < items[b].begin; });
  std::map<uint64_t, int32_t> live;  // offset -> item
  std::multimap<int64_t, int32_t> ends;
  for (int32_t i : order) {
    while (!ends.empty() && ends.begin()->first <= items[i].begin) {
      live.erase(offsets[ends.begin()->second]);
      ends.erase(ends.begin());
    }
    auto next = live.lower_bound(offsets[i]);
    if (next != live.end() && next->first < offsets[i] + items[i].size) return false;
    if (next != live.begin()) {
      auto prev = std::prev(next);
      if (prev->first + items[prev->second].size > offsets[i]) return false;
    }
    live[offsets[i]] = i;
    ends.insert({items[i].end, i});
  }
  return true;
}

}  // namespace

TilingResult TileWithoutSlack(const std::vector<PackingItem>& items) {
  TilingResult result;
  if (items.empty()) return result;
  // No slack: the live bytes are the same at every step of the span.
  std::map<int64_t, std::pair<std::vector<int32_t>, std::vector<int32_t>>> events;  // time -> enders, starters
  std::map<int64_t, int64_t> delta;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].alignment != 1) return result;
    events[items[i].end].first.push_back(static_cast<int32_t>(i));
    events[items[i].begin].second.push_back(static_cast<int32_t>(i));
    delta[items[i].begin] += static_cast<int64_t>(items[i].size);
    delta[items[i].end] -= static_cast<int64_t>(items[i].size);
  }
  int64_t live = 0, capacity = -1;
  for (auto it = delta.begin(); std::next(it) != delta.end(); ++it) {
    live += it->second;
    if (capacity < 0) capacity = live;
    if (live != capacity) return result;
  }
  struct Event {
    int64_t time;
    std::vector<int32_t> enders, starters;
  };
  std::vector<Event> order;
  for (auto& [time, event] : events) order.push_back({time, std::move(event.first), std::move(event.second)});
  if (!order[0].enders.empty()) return result;
  for (size_t k = 1; k < order.size(); ++k) {
    if (order[k].enders.empty()) return result;  // no slack: something ends wherever something starts
  }
  std::vector<size_t> start_event(items.size());
  for (size_t k = 0; k < order.size(); ++k) {
    for (int32_t i : order[k].starters) start_event[i] = k;
  }
  PqTree tree(items.size());
  tree.Start(order[0].starters);
  std::vector<Frozen> frozen;
  // Depth-first over the events' options (the enders as one run, or split
  // in two by each split in turn), chronological backtracking over the
  // last kMaxChoicePoints events that had options left.
  struct ChoicePoint {
    size_t event;
    PqTree before;
    size_t frozen_mark;
    std::vector<std::pair<Mask, Mask>> splits;
    std::vector<Assignment> assignments;  // the enders' runs in the tree's order, starters assigned
    size_t next = 0;  // the next option: 0 the whole run, then the assignments, then the splits
    bool exhausted() const { return next > assignments.size() + splits.size(); }
  };
  uint64_t work = 0;
  const uint64_t max_work = kWorkPerEvent * order.size();
  auto try_options = [&](ChoicePoint* c) {
    const Event& ev = order[c->event];
    while (!c->exhausted()) {
      const size_t option = c->next++;
      ++work;
      bool ok;
      if (option == 0) {
        ok = tree.Replace(ev.enders, ev.starters, &frozen);
      } else if (option <= c->assignments.size()) {
        ok = true;
        for (const auto& [run, fill] : c->assignments[option - 1]) {
          if (!(ok = tree.Replace(run, fill, &frozen))) break;
        }
      } else {
        const auto [e, s] = c->splits[option - 1 - c->assignments.size()];
        ok = tree.Replace(Pick(ev.enders, e, true), Pick(ev.starters, s, true), &frozen) &&
             ApplyEvent(items, Pick(ev.enders, e, false), Pick(ev.starters, s, false), kMaxRuns - 1, &tree, &frozen);
      }
      if (ok) return true;
      tree = c->before;
      frozen.resize(c->frozen_mark);
    }
    return false;
  };
  std::deque<ChoicePoint> points;
  size_t k = 1;
  while (k < order.size()) {
    if (work > max_work) {
      result.failed_at = order[k].time;
      return result;
    }
    ChoicePoint c{k, tree, frozen.size(), Splits(items, order[k].enders, order[k].starters), {}};
    if (kMaxAssignments > 0) {
      std::vector<std::vector<int32_t>> runs = tree.EnderRuns(order[k].enders);
      if (runs.size() > 1) c.assignments = AssignStarters(items, std::move(runs), order[k].starters);
    }
    if (std::getenv("KS_DEBUG")) {
      std::vector<std::vector<int32_t>> runs = tree.EnderRuns(order[k].enders);
      std::fprintf(stderr, "t=%lld enders=%zu starters=%zu runs=%zu assignments=%zu splits=%zu points=%zu work=%llu\n",
                   static_cast<long long>(order[k].time), order[k].enders.size(), order[k].starters.size(), runs.size(),
                   c.assignments.size(), c.splits.size(), points.size(), static_cast<unsigned long long>(work));
    }
    if (try_options(&c)) {
      if (!c.exhausted()) {
        points.push_back(std::move(c));
        if (points.size() > kMaxChoicePoints) points.pop_front();
      }
      ++k;
      continue;
    }
    // Backjumping: the events that started the items that could not be
    // made consecutive placed them; the choices in between are kept as they
    // are (chronological backtracking over them thrashed).
    std::vector<char> culprit(order.size(), 0);
    auto blame = [&](size_t event) {
      for (int32_t i : order[event].enders) culprit[start_event[i]] = 1;
    };
    blame(k);
    bool resumed = false;
    while (!points.empty() && !resumed) {
      ChoicePoint& back = points.back();
      if (!culprit[back.event]) {
        points.pop_back();
        continue;
      }
      tree = back.before;
      frozen.resize(back.frozen_mark);
      if (try_options(&back)) {
        k = back.event + 1;
        resumed = true;
      } else {
        blame(back.event);
      }
      if (back.exhausted()) points.pop_back();
    }
    if (!resumed) {
      result.failed_at = order[k].time;
      return result;
    }
  }
  // Offsets, latest run first: each run starts where its starters' lowest
  // buffer does (their offsets are known: they end later).
  std::vector<uint64_t> offsets(items.size(), UINT64_MAX);
  for (auto it = frozen.rbegin(); it != frozen.rend(); ++it) {
    uint64_t slot = it->starters.empty() ? 0 : UINT64_MAX;
    for (int32_t i : it->starters) slot = std::min(slot, offsets[i]);
    if (slot == UINT64_MAX) return result;
    bool reversed = false;
    if (it->witness >= 0) {
      if (offsets[it->witness] == UINT64_MAX) return result;
      reversed = it->witness_below ? offsets[it->witness] > slot : offsets[it->witness] < slot;
    }
    uint64_t at = slot;
    auto place = [&](int32_t i) {
      offsets[i] = at;
      at += items[i].size;
    };
    if (reversed) {
      std::for_each(it->run.rbegin(), it->run.rend(), place);
    } else {
      std::for_each(it->run.begin(), it->run.end(), place);
    }
  }
  for (uint64_t o : offsets) {
    if (o == UINT64_MAX) return result;
  }
  if (!Valid(items, offsets)) return result;
  result.offsets = std::move(offsets);
  return result;
}

}  // namespace keel::memory::internal
