// compiler/memory/exact_planner.cc — `exact`: per device group, the packing
// searches (PackWithRestarts, skyline_search.h) driven over capacities between the proven lower bound and
// the best plan found; small groups with in-place pairs use the offset branch and
// bound below instead (see the header).
#include "compiler/memory/exact_planner.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "compiler/memory/block_merging.h"
#include "compiler/memory/greedy_size_planner.h"
#include "compiler/memory/large_neighbourhood_search.h"
#include "compiler/memory/lower_bounds.h"
#include "compiler/memory/overlap_search.h"
#include "compiler/memory/piece_search.h"
#include "compiler/memory/planning_support.h"
#include "compiler/memory/skyline_search.h"
#include "compiler/memory/time_segments.h"

namespace keel::memory {

namespace {

using Clock = internal::SearchClock;

// The small-group search with in-place pairs (the branch and bound of the header),
// over one device group's non-empty tensors (local indices 0..m-1).
class AliasOffsetSearch {
 public:
  AliasOffsetSearch(const std::vector<TensorLifetime>& tensors, const std::vector<int32_t>& ids,
               Clock::time_point deadline)
      : m_(static_cast<int32_t>(ids.size())), deadline_(deadline) {
    for (int32_t g : ids) {
      size_.push_back(tensors[g].size);
      align_.push_back(tensors[g].alignment);
      first_.push_back(tensors[g].first_use);
      last_.push_back(tensors[g].last_use);
    }
    meets_.assign(m_, std::vector<char>(m_, 0));
    partner_.assign(m_, std::vector<char>(m_, 0));
    for (int32_t a = 0; a < m_; ++a) {
      for (int32_t b = 0; b < m_; ++b) {
        meets_[a][b] = a != b && std::max(first_[a], first_[b]) <= std::min(last_[a], last_[b]);
      }
    }
    // Alias pairs (both ends in this search) and alias groups (connected components).
    std::vector<int32_t> comp(m_);
    std::iota(comp.begin(), comp.end(), 0);
    auto find = [&](int32_t v) {
      while (comp[v] != v) v = comp[v] = comp[comp[v]];
      return v;
    };
    for (int32_t a = 0; a < m_; ++a) {
      const int32_t target = tensors[ids[a]].may_alias_with;
      if (target < 0) continue;
      auto it = std::find(ids.begin(), ids.end(), target);
      if (it == ids.end()) continue;
      const int32_t b = static_cast<int32_t>(it - ids.begin());
      partner_[a][b] = partner_[b][a] = 1;
      pairs_.emplace_back(a, b);
      comp[find(a)] = find(b);
    }
    group_align_.assign(m_, 1);
    rest_on_.assign(m_, {});
    members_.assign(m_, {});
    for (int32_t a = 0; a < m_; ++a) {
      std::vector<char> rest(m_, 0);
      for (int32_t b = 0; b < m_; ++b) {
        if (find(a) != find(b)) continue;
        group_align_[a] = std::max(group_align_[a], align_[b]);
        if (b != a) members_[a].push_back(b);
        for (int32_t y = 0; y < m_; ++y) {
          if (meets_[b][y] && find(y) != find(a)) rest[y] = 1;
        }
      }
      for (int32_t y = 0; y < m_; ++y) {
        if (rest[y]) rest_on_[a].push_back(y);
      }
    }
    // Steps (first_use values) with their live tensors and alias savings.
    std::vector<int32_t> steps(first_);
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    live_.assign(steps.size(), {});
    alias_saving_.assign(steps.size(), 0);
    for (size_t k = 0; k < steps.size(); ++k) {
      for (int32_t a = 0; a < m_; ++a) {
        if (first_[a] <= steps[k] && steps[k] <= last_[a]) live_[k].push_back(a);
      }
      for (auto [a, b] : pairs_) {
        if (first_[a] == steps[k] && last_[b] == steps[k]) {
          alias_saving_[k] += std::min(size_[a], size_[b]);
        }
      }
    }
    order_.resize(m_);
    std::iota(order_.begin(), order_.end(), 0);
    std::stable_sort(order_.begin(), order_.end(),
                     [&](int32_t a, int32_t b) { return size_[a] > size_[b]; });
    placed_.assign(m_, 0);
    off_.assign(m_, 0);
  }

  // Runs the search from `incumbent` (a valid layout). Returns true when the search
  // finished (the result is optimal).
  bool Run(const std::vector<uint64_t>& incumbent) {
    best_off_ = incumbent;
    best_ = 0;
    for (int32_t a = 0; a < m_; ++a) best_ = std::max(best_, incumbent[a] + size_[a]);
    root_bound_ = Bound();
    if (best_ <= root_bound_) return true;
    Dfs(0);
    return !timed_out_;
  }
  uint64_t best() const { return best_; }
  uint64_t root_bound() const { return root_bound_; }
  const std::vector<uint64_t>& best_offsets() const { return best_off_; }

 private:
  uint64_t Bound() const {
    uint64_t bound = top_;
    for (size_t k = 0; k < live_.size(); ++k) {
      uint64_t sum = 0;
      for (int32_t a : live_[k]) {
        if (!placed_[a]) {
          sum += size_[a];
        } else if (off_[a] + size_[a] > cur_) {
          sum += off_[a] + size_[a] - cur_;
        }
      }
      sum = sum > alias_saving_[k] ? sum - alias_saving_[k] : 0;
      bound = std::max(bound, cur_ + sum);
    }
    return bound;
  }

  bool Feasible(int32_t x, uint64_t o) const {
    for (int32_t y = 0; y < m_; ++y) {
      if (!placed_[y] || !meets_[x][y]) continue;
      if (off_[y] < o + size_[x] && o < off_[y] + size_[y]) {
        if (!(partner_[x][y] && off_[y] == o)) return false;
      }
    }
    return true;
  }

  void Dfs(int32_t depth) {
    if (timed_out_) return;
    if ((++nodes_ & 255) == 0 && Clock::now() > deadline_) {
      timed_out_ = true;
      return;
    }
    if (depth == m_) {
      if (top_ < best_) {
        best_ = top_;
        best_off_ = off_;
      }
      return;
    }
    if (Bound() >= best_) return;
    std::vector<uint64_t> candidates;
    for (int32_t x : order_) {
      if (placed_[x]) continue;
      candidates.assign(1, 0);
      for (int32_t y : rest_on_[x]) {
        if (!placed_[y]) continue;
        candidates.push_back(internal::AlignUp(off_[y] + size_[y], align_[x]));
        candidates.push_back(internal::AlignUp(off_[y] + size_[y], group_align_[x]));
      }
      for (int32_t y : members_[x]) {
        if (placed_[y] && off_[y] % align_[x] == 0) candidates.push_back(off_[y]);
      }
      std::sort(candidates.begin(), candidates.end());
      candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
      for (uint64_t o : candidates) {
        if (o < cur_ || (o == cur_ && x < cur_idx_)) continue;  // (offset, index) order
        if (o + size_[x] >= best_) break;                       // cannot improve
        if (!Feasible(x, o)) continue;
        const uint64_t saved_cur = cur_, saved_top = top_;
        const int32_t saved_idx = cur_idx_;
        placed_[x] = 1;
        off_[x] = o;
        cur_ = o;
        cur_idx_ = x;
        top_ = std::max(top_, o + size_[x]);
        Dfs(depth + 1);
        placed_[x] = 0;
        cur_ = saved_cur;
        cur_idx_ = saved_idx;
        top_ = saved_top;
        if (timed_out_) return;
      }
    }
  }

  int32_t m_;
  Clock::time_point deadline_;
  std::vector<uint64_t> size_;
  std::vector<uint32_t> align_, group_align_;
  std::vector<int32_t> first_, last_;
  std::vector<std::vector<char>> meets_, partner_;
  std::vector<std::pair<int32_t, int32_t>> pairs_;
  std::vector<std::vector<int32_t>> rest_on_, members_, live_;
  std::vector<uint64_t> alias_saving_;
  std::vector<int32_t> order_;
  std::vector<char> placed_;
  std::vector<uint64_t> off_, best_off_;
  uint64_t cur_ = 0, top_ = 0, best_ = 0, root_bound_ = 0;
  int32_t cur_idx_ = -1;
  uint64_t nodes_ = 0;
  bool timed_out_ = false;
};


// One device group's result.
struct GroupOutcome {
  std::vector<uint64_t> offsets;  // parallel to the group's non-empty tensors
  uint64_t top = 0;
  uint64_t proven_bound = 0;      // a lower bound valid for every plan of the group
  bool optimal = false;
};

uint64_t TopOf(const std::vector<internal::PackingItem>& items, const std::vector<uint64_t>& offsets) {
  uint64_t top = 0;
  for (size_t i = 0; i < items.size(); ++i) top = std::max(top, offsets[i] + items[i].size);
  return top;
}

// A search's share of the time left before `deadline`: 1/divisor of it, or,
// under a node budget (`nodes_decide`), all of it — there each search stops
// at its share of the nodes, so that the plan depends on the nodes only and
// the deadline (keelc: AutoPlanner::kSafetySeconds) is an outer stop that a
// loaded or slow machine does not reach (time shares made keelc's plan of
// MiniMalloc's instance J change from run to run on a loaded machine).
Clock::time_point TimeShare(Clock::time_point deadline, int divisor, bool nodes_decide) {
  if (nodes_decide) return deadline;
  const Clock::time_point now = Clock::now();
  return now >= deadline ? deadline : now + (deadline - now) / divisor;
}

// Drives the packing searches over capacities. `proofs_hold`: an infeasible answer
// is a lower bound for every plan (false when the group has in-place pairs, which
// the search does not use: a plan with sharing could still be smaller).
GroupOutcome SearchCapacities(const std::vector<internal::PackingItem>& items, GroupOutcome incumbent,
                              uint64_t capacity_target, bool proofs_hold, Clock::time_point deadline,
                              uint64_t* nodes_left, const PlanOptions& options) {
  GroupOutcome best = std::move(incumbent);
  uint64_t search_floor = best.proven_bound;  // capacities below it are not worth probing
  const Clock::time_point start = Clock::now();
  auto report = [&] {
    if (options.progress == nullptr) return;
    const double total = std::chrono::duration<double>(deadline - start).count();
    const double used = std::chrono::duration<double>(Clock::now() - start).count();
    options.progress(options.progress_user, total > 0 ? std::min(1.0, used / total) : 1.0);
  };
  auto probe = [&](uint64_t capacity, Clock::time_point probe_deadline, uint64_t probe_nodes) {
    internal::PackingResult r = internal::PackWithRestarts(items, capacity, probe_deadline, probe_nodes);
    *nodes_left -= std::min(*nodes_left, r.nodes);
    if (r.outcome == internal::PackingOutcome::kFound) {
      const uint64_t top = TopOf(items, r.offsets);
      if (top < best.top) {
        best.top = top;
        best.offsets = std::move(r.offsets);
      }
    } else {
      if (r.outcome == internal::PackingOutcome::kInfeasible && proofs_hold) {
        best.proven_bound = std::max(best.proven_bound, capacity + 1);
      }
      search_floor = std::max(search_floor, capacity + 1);
    }
    report();
  };
  if (capacity_target != 0) {
    // Decision form: is there a plan within the target?
    if (best.top > capacity_target && best.proven_bound <= capacity_target) probe(capacity_target, deadline, *nodes_left);
  } else {
    // Optimization: the bound first (often reached), then bisection.
    bool first = true;
    while (best.top > search_floor && Clock::now() < deadline && *nodes_left > 0) {
      const uint64_t capacity = first ? search_floor : search_floor + (best.top - 1 - search_floor) / 2;
      probe(capacity, TimeShare(deadline, 2, *nodes_left != UINT64_MAX),
            *nodes_left == UINT64_MAX ? UINT64_MAX : (*nodes_left + 1) / 2);
      first = false;
    }
  }
  best.optimal = best.top <= best.proven_bound;
  if (best.optimal) best.proven_bound = best.top;
  return best;
}

// The block construction (block_merging.h) for one group. Its nodes are its
// own, kBlockNodesPerSearchNode times the items' search's budget (not charged
// to it, so that search is the one it was without this construction, and
// keelc's budgeted plans can only improve).
//   Probe    each way of merging (MergeRules: stack then chain; chains first;
//            pairs only; chains only) whose blocks differ: the blocks searched
//            at `target` (the bound, or the decision form's capacity) within a
//            node budget and a share of the time (ProbeBudget); blocks proven
//            not to fit are not searched again; a layout there is the answer.
//            A quick pass (kQuickProbe) comes first; the patient one
//            (kPatientProbe) before the items' search in the optimization
//            form, after it (with half the time left) in the decision form,
//            where the items' search decides MiniMalloc's instances that the
//            blocks do not (E, F, H) sooner than the patient pass would.
//   Improve  otherwise (optimization form: with a third of the time left,
//            before the items' search; decision form: after it, until the
//            capacity): the blocks whose greedy construction (ConstructLayout)
//            is lowest, among the merges with at most twice the fewest blocks,
//            improved by the large-neighbourhood search (`lns`'s engine) —
//            fewer, larger pieces let its repairs reach further than on the
//            buffers (10,000-buffer perfect packings: 1.02-1.05x the optimum,
//            against 1.2-1.4x from the buffers) — then (optimization form
//            without a node budget) by overlap minimization on the blocks,
//            then by bisection of the block search between the target and
//            that top.
//   Refine   (optimization form without a node budget) the improvement's
//            layout, expanded, by overlap minimization on the items
//            (overlap_search.h): its moves lower the top where the exact
//            repairs find none (10,000-buffer perfect packings), and the
//            blocks' parts can move apart there (RefineItems). Not under a
//            node budget (keelc's `auto`): on the blocks there, the nodes it
//            took from the repairs left MiniMalloc's G 6% higher (J 2% lower).
// Under a node budget (keelc's `auto`) all of it runs after the items' search
// (MakePlan says why). Layouts are of `items` (empty: no merge helped).
struct ProbeBudget {
  uint64_t nodes_per_block;
  uint64_t min_nodes, max_nodes;
  int time_divisor;  // each probe: at most this fraction of the group's time
  size_t merges;     // the first this many distinct merges are probed
};
// Every probe that decided MiniMalloc's challenging instances or the 300- and
// 1,000-buffer perfect packings took 2,000 nodes or fewer, and was of one of
// the first two merges, except three: 15,000-40,000 nodes (the patient pass).
// The quick pass is that small because on the instances the blocks do not
// decide (E-H, J, K) each of its probes adds to the items' search's time.
// Larger block problems (10,000 buffers: 600-1,200 blocks) are not decided by
// probes and their nodes cost more, so a patient probe stops at 65,536 nodes.
constexpr ProbeBudget kQuickProbe{16, 2048, 2048, 16, 2};
constexpr ProbeBudget kPatientProbe{256, 16384, 65536, 8, SIZE_MAX};
// The construction's node budget, per node of the items' search's (keelc's
// `auto` gives 20,000): MiniMalloc's instance K is placed by a probe of 16,518
// nodes after the quick pass's 8,192.
constexpr uint64_t kBlockNodesPerSearchNode = 4;
// The large-neighbourhood search on the blocks made of packed pieces (see
// PlanItems) stops after this many nodes per block, not at half its time: its
// result then does not depend on the machine's load (on 10,000-buffer seed 2,
// cut by the time at load 5 it ended at 1,072,588 B and the plan at 1.0131x
// the optimum; with the nodes, 1.0038 at loads 2.5-5).
constexpr uint64_t kPieceLnsNodesPerBlock = 4096;
// Under a node budget, one probe takes at most this fraction of the
// construction's nodes, so that probes that end unknown leave nodes to the
// improvement (as the time shares do without a budget): keelc's `auto`
// (80,000 nodes) gives a probe up to 20,000, enough for K's 16,518.
constexpr uint64_t kProbeNodeShare = 8;

class BlockConstruction {
 public:
  // `max_nodes`: for all its searches together (UINT64_MAX: no budget).
  BlockConstruction(const std::vector<internal::PackingItem>& items, uint64_t target, uint64_t max_nodes)
      : items_(items), target_(target), max_nodes_(max_nodes), nodes_left_(max_nodes) {}

  std::vector<uint64_t> Probe(Clock::time_point start, Clock::time_point deadline, ProbeBudget budget) {
    if (Clock::now() >= deadline) return {};  // (the four merges take 0.03 s on 10,000 buffers)
    if (!merged_) {
      merged_ = true;
      std::vector<size_t> seen;
      for (const internal::MergeRules& r : internal::kMergeVariants) {
        internal::BlockProblem problem = internal::MergeIntoBlocks(items_, r);
        if (problem.blocks.size() >= items_.size() ||
            std::find(seen.begin(), seen.end(), problem.blocks.size()) != seen.end()) {
          continue;
        }
        seen.push_back(problem.blocks.size());
        problems_.push_back(std::move(problem));
      }
      refuted_.assign(problems_.size(), 0);
    }
    for (size_t p = 0; p < problems_.size() && p < budget.merges; ++p) {
      if (refuted_[p]) continue;  // these blocks cannot be packed within the target
      if (nodes_left_ == 0 || Clock::now() >= deadline) break;
      const internal::BlockProblem& problem = problems_[p];
      uint64_t nodes = std::min({nodes_left_, budget.max_nodes,
                                 std::max(budget.min_nodes, budget.nodes_per_block * problem.blocks.size())});
      if (max_nodes_ != UINT64_MAX) nodes = std::min(nodes, std::max<uint64_t>(1, max_nodes_ / kProbeNodeShare));
      const Clock::time_point probe_deadline =
          nodes_left_ != UINT64_MAX ? deadline : std::min(deadline, Clock::now() + (deadline - start) / budget.time_divisor);
      internal::PackingResult found = internal::PackWithRestarts(problem.blocks, target_, probe_deadline, nodes);
      Spend(found.nodes);
      if (found.outcome == internal::PackingOutcome::kFound) return internal::ExpandBlockLayout(problem, found.offsets);
      refuted_[p] = found.outcome == internal::PackingOutcome::kInfeasible;
    }
    return {};
  }

  // Overlap minimization on the items themselves, from `layout` (a layout of
  // the items, e.g. Improve's): the blocks' relative offsets, fixed above,
  // can move apart here. Returns the lower of the two layouts.
  std::vector<uint64_t> RefineItems(std::vector<uint64_t> layout, Clock::time_point deadline) {
    if (layout.empty() || nodes_left_ == 0 || TopOf(items_, layout) <= target_ || Clock::now() >= deadline) {
      return layout;
    }
    internal::OverlapGraph graph;
    if (!internal::BuildOverlapGraph(items_, &graph)) return layout;
    internal::RefineLimits refine;
    refine.deadline = deadline;
    refine.max_moves = nodes_left_;
    internal::RefineResult refined = internal::MinimizeOverlap(items_, graph, std::move(layout), target_, refine);
    Spend(refined.moves);
    return std::move(refined.offsets);
  }

  // `refine_blocks` (the optimization form without a node budget): overlap
  // minimization on the blocks after the large-neighbourhood search.
  // `lns_nodes_per_block` (0: half the time, as usual) caps the
  // large-neighbourhood search by nodes instead, with all the time to spend
  // them in (the pieces' blocks below, see PlanItems).
  std::vector<uint64_t> Improve(Clock::time_point deadline, bool refine_blocks, uint64_t lns_nodes_per_block = 0) {
    if (nodes_left_ == 0) return {};
    // The blocks whose greedy construction is lowest, among those with at
    // most twice the fewest blocks (a construction costs O(overlaps log): on
    // 10,000 buffers, the cautious merges' thousands of long blocks took
    // seconds to construct and were never the lowest), fewest first.
    std::vector<const internal::BlockProblem*> order;
    for (const internal::BlockProblem& problem : problems_) order.push_back(&problem);
    std::stable_sort(order.begin(), order.end(), [](const auto* x, const auto* y) {
      return x->blocks.size() < y->blocks.size();
    });
    const internal::BlockProblem* best = nullptr;
    internal::OverlapGraph best_graph;
    std::vector<uint64_t> best_layout;
    uint64_t best_top = UINT64_MAX;
    for (const internal::BlockProblem* candidate : order) {
      const internal::BlockProblem& problem = *candidate;
      // (Past the deadline not even the first: on 10,000 buffers the eight
      // greedy passes and the overlap graph take 0.05-0.3 s.)
      if (Clock::now() >= deadline || (best != nullptr && problem.blocks.size() > 2 * order[0]->blocks.size())) break;
      internal::OverlapGraph graph;
      if (!internal::BuildOverlapGraph(problem.blocks, &graph)) continue;
      std::vector<uint64_t> layout = internal::ConstructLayout(problem.blocks, graph);
      const uint64_t top = TopOf(problem.blocks, layout);
      if (top < best_top) {
        best_top = top;
        best = &problem;
        best_graph = std::move(graph);
        best_layout = std::move(layout);
      }
    }
    if (best == nullptr) return {};
    // The large-neighbourhood search with half the time and nodes, then
    // bisection between the target and its top by the block search.
    internal::LnsLimits limits;
    limits.deadline = TimeShare(deadline, 2, nodes_left_ != UINT64_MAX);
    limits.max_nodes = nodes_left_ == UINT64_MAX ? UINT64_MAX : (nodes_left_ + 1) / 2;
    if (lns_nodes_per_block != 0 && nodes_left_ == UINT64_MAX) {
      limits.deadline = deadline;
      limits.max_nodes = lns_nodes_per_block * best->blocks.size();
    }
    internal::LnsResult improved =
        internal::ImproveLayout(best->blocks, best_graph, std::move(best_layout), target_, limits);
    Spend(improved.nodes);
    if (refine_blocks && improved.top > target_ && Clock::now() < deadline) {
      // Its moves lower the blocks' layout where the repairs find none
      // (10,000-buffer perfect packing of seed 1: 1.0158 -> 1.0075x the
      // optimum, 10 s run), and one move carries all of a block's buffers.
      internal::RefineLimits refine;
      refine.deadline = deadline;
      refine.max_moves = nodes_left_;
      internal::RefineResult r =
          internal::MinimizeOverlap(best->blocks, best_graph, std::move(improved.offsets), target_, refine);
      Spend(r.moves);
      improved.offsets = std::move(r.offsets);
      improved.top = r.top;
    }
    uint64_t floor = target_;
    while (improved.top > floor && Clock::now() < deadline && nodes_left_ > 0) {
      const uint64_t capacity = floor + (improved.top - 1 - floor) / 2;
      internal::PackingResult r =
          internal::PackWithRestarts(best->blocks, capacity, TimeShare(deadline, 2, nodes_left_ != UINT64_MAX),
                                     nodes_left_ == UINT64_MAX ? UINT64_MAX : (nodes_left_ + 1) / 2);
      Spend(r.nodes);
      if (r.outcome == internal::PackingOutcome::kFound) {
        improved.top = TopOf(best->blocks, r.offsets);
        improved.offsets = std::move(r.offsets);
      } else {
        floor = capacity + 1;  // for these blocks only
      }
    }
    return internal::ExpandBlockLayout(*best, improved.offsets);
  }

 private:
  void Spend(uint64_t nodes) {
    if (nodes_left_ != UINT64_MAX) nodes_left_ -= std::min(nodes_left_, nodes);
  }

  const std::vector<internal::PackingItem>& items_;
  uint64_t target_;
  uint64_t max_nodes_;  // the construction's budget (UINT64_MAX: none)
  uint64_t nodes_left_;
  std::vector<internal::BlockProblem> problems_;  // the distinct merges
  std::vector<char> refuted_;                    // per problem: proven not to fit the target
  bool merged_ = false;
};

// One group's items (no in-place pairs used) from `incumbent` (a valid
// layout; its proven_bound the goal of the optimization form): `target` 0
// minimizes, else decides whether a plan within it exists. `proofs_hold` as
// in SearchCapacities.
GroupOutcome PlanItems(const std::vector<internal::PackingItem>& items, GroupOutcome incumbent, uint64_t target,
                       bool proofs_hold, Clock::time_point deadline, uint64_t* nodes_left, const PlanOptions& options) {
  GroupOutcome outcome;
  // The block construction (see BlockConstruction) and the searches as
  // they were without it, each with its own nodes; the lowest top wins.
  //   optimization form: quick probes, patient probes, the improvement
  //     with a third of the time left, the items' overlap minimization, then
  //     the searches — but under a
  //     node budget (keelc's `auto`) the searches first, with all the time,
  //     so that their result never depends on how long the blocks took
  //     (the time limit is only an outer stop there), then the blocks;
  //   decision form: quick probes, the searches with half the time left,
  //     then patient probes and the improvement (until the capacity).
  const uint64_t block_target = target != 0 ? target : incumbent.proven_bound;
  const bool try_blocks = incumbent.top > block_target && incumbent.proven_bound <= block_target;
  const bool search_first = target == 0 && options.node_budget != 0;
  BlockConstruction blocks(items, block_target,
                           *nodes_left == UINT64_MAX ? UINT64_MAX : *nodes_left * kBlockNodesPerSearchNode);
  const Clock::time_point group_start = Clock::now();
  std::vector<uint64_t> block_layout;
  auto half_left = [&] { return Clock::now() + (deadline - Clock::now()) / 2; };
  if (try_blocks && !search_first) {
    block_layout = blocks.Probe(group_start, deadline, kQuickProbe);
    if (block_layout.empty() && target == 0 && Clock::now() < deadline) {
      // Pieces of constant live bytes (piece_search.h), packed at their
      // heights, as blocks: a quick probe of them first (it decides parts
      // of the 10,000-buffer perfect packings that the buffers' patient
      // probes do not, and those took 0.5 s of a 0.6 s share on seed 9's
      // 1,549-buffer part under load), then the buffers' patient probes
      // only where no piece was packed: after the pieces' probe they
      // decided no part of the 10,000-buffer perfect packings (seeds
      // 1-10) and took 1-3 s of the 10 under load (an eighth of the part's
      // time per merge), which the improvement lacked (3,000 buffers and
      // fewer: the same results without them). TilePieces is bounded by
      // its nodes; half the time left is only an outer stop (an eighth cut
      // it on a loaded machine: no piece packed, the plain path instead,
      // 1.0383x where the pieces reach 1.0029x).
      size_t tiled = 0;
      const internal::BlockProblem pieces =
          internal::TilePieces(items, Clock::now() + (deadline - Clock::now()) / 2, {}, &tiled);
      BlockConstruction on_pieces(pieces.blocks, block_target, UINT64_MAX);
      std::vector<uint64_t> piece_layout;
      if (tiled > 0) piece_layout = on_pieces.Probe(Clock::now(), deadline, kQuickProbe);
      if (!piece_layout.empty()) {
        block_layout = internal::ExpandBlockLayout(pieces, piece_layout);
      } else if (tiled == 0) {
        block_layout = blocks.Probe(group_start, deadline, kPatientProbe);
      }
      if (block_layout.empty()) {
        // A third of the time left to the blocks' improvement, nine tenths
        // of the rest to the items' overlap minimization, the rest to the
        // items' search (which has not decided a problem that the blocks
        // did not reach). (Half and three quarters until the overlap
        // search's window repairs: on the 10,000-buffer perfect packings
        // its moves, not the blocks' repairs, lower the top.)
        // The packed pieces' blocks, with the other buffers, replace the
        // buffers in the improvement and its overlap minimization, and the
        // items' overlap minimization refines the expanded layout after
        // them. Where no piece is packed, or no merge of the pieces' blocks
        // leaves fewer blocks (Improve has nothing to work on), as before.
        if (tiled > 0) {
          piece_layout =
              on_pieces.Improve(Clock::now() + (deadline - Clock::now()) / 3, true, kPieceLnsNodesPerBlock);
          piece_layout =
              on_pieces.RefineItems(std::move(piece_layout), Clock::now() + (deadline - Clock::now()) * 9 / 10);
          if (!piece_layout.empty()) block_layout = internal::ExpandBlockLayout(pieces, piece_layout);
        }
        if (block_layout.empty()) {
          block_layout = blocks.Improve(Clock::now() + (deadline - Clock::now()) / 3, true);
        }
        block_layout = blocks.RefineItems(std::move(block_layout), Clock::now() + (deadline - Clock::now()) * 9 / 10);
      }
    }
  }
  const uint64_t block_top = block_layout.empty() ? UINT64_MAX : TopOf(items, block_layout);
  if (block_top <= block_target) {
    outcome = std::move(incumbent);
  } else {
    const Clock::time_point search_deadline = try_blocks && target != 0 ? half_left() : deadline;
    outcome = SearchCapacities(items, std::move(incumbent), target, proofs_hold, search_deadline, nodes_left,
                               options);
    const uint64_t goal = target != 0 ? target : outcome.proven_bound;
    if (try_blocks && (target != 0 || search_first) && outcome.top > goal && outcome.proven_bound <= goal) {
      if (search_first) block_layout = blocks.Probe(Clock::now(), deadline, kQuickProbe);
      if (block_layout.empty()) block_layout = blocks.Probe(Clock::now(), deadline, kPatientProbe);
      if (block_layout.empty()) block_layout = blocks.Improve(deadline, false);
    }
  }
  if (!block_layout.empty() && TopOf(items, block_layout) < outcome.top) {
    outcome.top = TopOf(items, block_layout);
    outcome.offsets = std::move(block_layout);
  }
  outcome.optimal = outcome.top <= outcome.proven_bound;
  if (outcome.optimal) outcome.proven_bound = outcome.top;
  return outcome;
}

// The optimization form without a node budget, part by part where the items
// split at idle times (time_segments.h): each part is an independent
// problem, the plan's top the highest part's. A part whose incumbent already
// ends within the group's bound is left as it is; the others go through
// PlanItems, fewest items first, each with a share of the time left
// proportional to its items among those still to do (time a part does not
// use passes on).
// Each part's goal is the group's bound (a part need not go below the
// highest part's optimum); a bound a part's search proves is valid for the
// group too. Why: the block construction and the overlap minimization work
// on the whole layout, and a part of fewer items is decided where the whole
// is not (10,000-buffer perfect packing of seed 3: parts of 6,157 and 2,915
// buffers).
GroupOutcome PlanItemsByParts(const std::vector<internal::PackingItem>& items, GroupOutcome incumbent,
                              bool proofs_hold, Clock::time_point deadline, const PlanOptions& options) {
  const std::vector<std::vector<int32_t>> parts = internal::SplitAtIdleTimes(items);
  uint64_t nodes_left = UINT64_MAX;
  if (parts.size() < 2) return PlanItems(items, std::move(incumbent), 0, proofs_hold, deadline, &nodes_left, options);
  const uint64_t goal = incumbent.proven_bound;
  GroupOutcome result = std::move(incumbent);
  auto part_top = [&](const std::vector<int32_t>& part) {
    uint64_t top = 0;
    for (int32_t i : part) top = std::max(top, result.offsets[i] + items[i].size);
    return top;
  };
  // The parts above the goal, fewest items first (ties in time order): the
  // small ones usually finish early, and the time they leave passes to the
  // large ones.
  std::vector<size_t> order;
  size_t items_to_do = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    if (part_top(parts[p]) <= goal) continue;
    order.push_back(p);
    items_to_do += parts[p].size();
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return parts[a].size() < parts[b].size(); });
  auto plan_part = [&](size_t p, Clock::time_point part_deadline) {
    const std::vector<int32_t>& part = parts[p];
    GroupOutcome start;
    std::vector<internal::PackingItem> part_items;
    for (int32_t i : part) {
      part_items.push_back(items[i]);
      start.offsets.push_back(result.offsets[i]);
    }
    start.top = part_top(part);
    start.proven_bound = goal;
    GroupOutcome solved = PlanItems(part_items, std::move(start), 0, proofs_hold, part_deadline, &nodes_left, options);
    for (size_t k = 0; k < part.size(); ++k) result.offsets[part[k]] = solved.offsets[k];
    result.proven_bound = std::max(result.proven_bound, solved.proven_bound);
  };
  for (size_t p : order) {
    const Clock::time_point now = Clock::now();
    if (now >= deadline) break;  // the parts left keep their greedy layouts
    const Clock::time_point part_deadline =
        now + std::chrono::duration_cast<Clock::duration>((deadline - now) * static_cast<double>(parts[p].size()) /
                                                          static_cast<double>(items_to_do));
    items_to_do -= parts[p].size();
    plan_part(p, part_deadline);
  }
  // The time the parts left (most of them are decided in a fraction of
  // their share) goes to the part that decides the plan's top: planned
  // again from its layout with all of that time, once each, highest first,
  // until the highest part has had its second try. Its result is never
  // worse than its layout (PlanItems keeps the lower). Why: time shares
  // follow item counts, not difficulty: on the 10,000-buffer perfect
  // packing of seed 9 (eleven parts) the 1,156-buffer part has 1.7 s of
  // the 10 and the plan ended at 3 s; with 3 s in all (a loaded machine)
  // the 1,549-buffer part's share was spent before its pieces were packed
  // (1.0383x), and its second try ends at the optimum. (Where a part's
  // first try was not cut by its share, the second, deterministic from the
  // same start, ends where it did.)
  std::vector<char> retried(parts.size(), 0);
  while (Clock::now() < deadline) {
    size_t highest = 0;
    for (size_t p = 1; p < parts.size(); ++p) {
      if (part_top(parts[p]) > part_top(parts[highest])) highest = p;
    }
    if (part_top(parts[highest]) <= result.proven_bound || retried[highest]) break;
    retried[highest] = 1;
    plan_part(highest, deadline);
  }
  result.top = TopOf(items, result.offsets);
  result.optimal = result.top <= result.proven_bound;
  if (result.optimal) result.proven_bound = result.top;
  return result;
}

}  // namespace

Result<Plan> ExactPlanner::MakePlan(const std::vector<TensorLifetime>& tensors,
                                    const PlanOptions& options) const {
  KEEL_RETURN_IF_ERROR(internal::ValidateLifetimes(tensors));
  const Clock::time_point start = Clock::now();
  const std::vector<internal::DeviceGroup> groups = internal::GroupByDevice(tensors);
  std::vector<internal::OffsetAssignment> per_group;
  uint64_t nodes_left = options.node_budget != 0 ? options.node_budget : UINT64_MAX;
  bool all_optimal = true;
  uint64_t bound_sum = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::vector<int32_t>& group = groups[g].tensors;
    const Clock::time_point deadline =
        internal::GroupDeadline(start, options.time_limit_seconds, g, groups.size());

    // Incumbent: the better of greedy-size's two gap rules.
    // (First fit only while time is left: on 10,000 buffers each rule's two
    // passes take 0.1-0.3 s, and past the deadline the plan is the
    // incumbent. keelc's models take milliseconds: their plans never
    // depend on this.)
    internal::OffsetAssignment greedy = GreedySizePlanner::AssignOffsets(tensors, group, GapFit::kBestFit);
    if (Clock::now() < deadline) {
      internal::OffsetAssignment first_fit = GreedySizePlanner::AssignOffsets(tensors, group, GapFit::kFirstFit);
      if (GreedySizePlanner::Top(tensors, group, first_fit) < GreedySizePlanner::Top(tensors, group, greedy)) {
        greedy = std::move(first_fit);
      }
    }
    std::vector<int32_t> nonempty;  // positions in `group`
    std::vector<int32_t> ids;
    GroupOutcome incumbent;
    for (size_t i = 0; i < group.size(); ++i) {
      if (tensors[group[i]].size == 0) continue;
      nonempty.push_back(static_cast<int32_t>(i));
      ids.push_back(group[i]);
      incumbent.offsets.push_back(greedy.offsets[i]);
      incumbent.top = std::max(incumbent.top, greedy.offsets[i] + tensors[group[i]].size);
    }
    incumbent.proven_bound = internal::GroupPeakLive(tensors, group);
    bool has_alias_pairs = false;
    for (int32_t id : ids) {
      const int32_t a = tensors[id].may_alias_with;
      has_alias_pairs = has_alias_pairs || (a >= 0 && tensors[a].size > 0 && tensors[a].device == tensors[id].device);
    }

    GroupOutcome outcome;
    if (has_alias_pairs && ids.size() <= kAliasSearchMaxTensors) {
      AliasOffsetSearch search(tensors, ids, deadline);
      const bool done = search.Run(incumbent.offsets);
      outcome.offsets = search.best_offsets();
      outcome.top = search.best();
      outcome.optimal = done;
      outcome.proven_bound = done ? search.best() : search.root_bound();
    } else {
      std::vector<internal::PackingItem> items;
      items.reserve(ids.size());
      for (int32_t id : ids) items.push_back(internal::ItemOf(tensors[id]));
      const uint64_t target = groups.size() == 1 ? options.capacity : 0;
      outcome = target == 0 && options.node_budget == 0
                    ? PlanItemsByParts(items, std::move(incumbent), !has_alias_pairs, deadline, options)
                    : PlanItems(items, std::move(incumbent), target, !has_alias_pairs, deadline, &nodes_left, options);
    }
    all_optimal = all_optimal && outcome.optimal;
    bound_sum += outcome.proven_bound;
    internal::OffsetAssignment result;
    result.offsets.assign(group.size(), 0);  // zero-size tensors at 0
    for (size_t k = 0; k < nonempty.size(); ++k) result.offsets[nonempty[k]] = outcome.offsets[k];
    per_group.push_back(std::move(result));
  }
  Plan plan = internal::BuildOffsetPlan(tensors, groups, per_group);
  plan.strategy = name();
  plan.optimal = all_optimal;
  plan.lower_bound = bound_sum;
  return plan;
}

}  // namespace keel::memory
