// compiler/memory/exact_planner.cc — branch and bound over offsets (see header).
#include "compiler/memory/exact_planner.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "compiler/memory/greedy_size_planner.h"
#include "compiler/memory/planning_support.h"

namespace keel::memory {

namespace {

using Clock = internal::SearchClock;

// One device group's search over its non-empty tensors (local indices 0..m-1).
class OffsetSearch {
 public:
  OffsetSearch(const std::vector<TensorLifetime>& tensors, const std::vector<int32_t>& ids,
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

}  // namespace

Result<Plan> ExactPlanner::MakePlan(const std::vector<TensorLifetime>& tensors,
                                    const PlanOptions& options) const {
  KEEL_RETURN_IF_ERROR(internal::ValidateLifetimes(tensors));
  const Clock::time_point start = Clock::now();
  const std::vector<internal::DeviceGroup> groups = internal::GroupByDevice(tensors);
  std::vector<internal::OffsetAssignment> per_group;
  bool all_optimal = true;
  uint64_t bound_sum = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::vector<int32_t>& group = groups[g].tensors;
    const Clock::time_point deadline =
        internal::GroupDeadline(start, options.time_limit_seconds, g, groups.size());

    internal::OffsetAssignment greedy =
        GreedySizePlanner::AssignOffsets(tensors, group, GapFit::kBestFit);
    std::vector<int32_t> nonempty;  // positions in `group`
    std::vector<int32_t> ids;
    std::vector<uint64_t> incumbent;
    for (size_t i = 0; i < group.size(); ++i) {
      if (tensors[group[i]].size == 0) continue;
      nonempty.push_back(static_cast<int32_t>(i));
      ids.push_back(group[i]);
      incumbent.push_back(greedy.offsets[i]);
    }
    OffsetSearch search(tensors, ids, deadline);
    const bool done = search.Run(incumbent);
    all_optimal = all_optimal && done;
    bound_sum += done ? search.best() : search.root_bound();
    internal::OffsetAssignment result;
    result.offsets.assign(group.size(), 0);  // zero-size tensors at 0
    for (size_t k = 0; k < nonempty.size(); ++k) result.offsets[nonempty[k]] = search.best_offsets()[k];
    per_group.push_back(std::move(result));
    if (options.progress != nullptr) {
      options.progress(options.progress_user, static_cast<double>(g + 1) / groups.size());
    }
  }
  Plan plan = internal::BuildOffsetPlan(tensors, groups, per_group);
  plan.strategy = name();
  plan.optimal = all_optimal;
  plan.lower_bound = bound_sum;
  return plan;
}

}  // namespace keel::memory
