// compiler/memory/offset_search_planner.cc — order search around greedy-size's
// placement (see the header).
#include "compiler/memory/offset_search_planner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "compiler/memory/greedy_size_planner.h"
#include "compiler/memory/lower_bounds.h"
#include "compiler/memory/planning_support.h"

namespace keel::memory {

namespace {

using Clock = internal::SearchClock;

using AliasRule = GreedySizePlanner::AliasRule;

struct Candidate {
  std::vector<int32_t> order;
  AliasRule rule = AliasRule::kUnlessTopGrows;
  internal::OffsetAssignment assignment;
  uint64_t top = 0;
};

class OrderSearch {
 public:
  OrderSearch(const std::vector<TensorLifetime>& tensors, const std::vector<int32_t>& group)
      : tensors_(tensors), group_(group), n_(static_cast<int32_t>(group.size())) {}

  Candidate Evaluate(std::vector<int32_t> order, AliasRule rule) const {
    Candidate c;
    c.rule = rule;
    c.assignment = GreedySizePlanner::AssignOffsetsInOrder(tensors_, group_, GapFit::kBestFit, order, rule);
    c.top = GreedySizePlanner::Top(tensors_, group_, c.assignment);
    c.order = std::move(order);
    return c;
  }

  // The seed orders with their alias rules, in tie-break order (greedy-size's
  // two first, with greedy-size's rules).
  std::vector<std::pair<std::vector<int32_t>, AliasRule>> Seeds() const {
    using Order = GreedySizePlanner::PlacementOrder;
    std::vector<std::pair<std::vector<int32_t>, AliasRule>> seeds;
    seeds.emplace_back(GreedySizePlanner::OrderOf(tensors_, group_, Order::kSize), AliasRule::kUnlessTopGrows);
    seeds.emplace_back(GreedySizePlanner::OrderOf(tensors_, group_, Order::kFirstUse), AliasRule::kUnlessHigher);
    seeds.emplace_back(Sorted([&](int32_t a, int32_t b) { return Area(a) > Area(b); }), AliasRule::kUnlessTopGrows);
    seeds.emplace_back(Sorted([&](int32_t a, int32_t b) {
      if (Span(a) != Span(b)) return Span(a) > Span(b);
      return T(a).size > T(b).size;
    }), AliasRule::kUnlessTopGrows);
    seeds.emplace_back(Sorted([&](int32_t a, int32_t b) {
      if (T(a).last_use != T(b).last_use) return T(a).last_use > T(b).last_use;
      return T(a).size > T(b).size;
    }), AliasRule::kUnlessTopGrows);
    return seeds;
  }

  // (a) a tensor ending at the top moves to a random earlier position.
  std::vector<int32_t> CriticalMove(const Candidate& c, std::mt19937& rng) const {
    std::vector<int32_t> critical;  // positions in c.order
    for (int32_t p = 0; p < n_; ++p) {
      const int32_t x = c.order[p];
      if (T(x).size > 0 && c.assignment.offsets[x] + T(x).size == c.top) critical.push_back(p);
    }
    std::vector<int32_t> order = c.order;
    if (n_ < 2) return order;
    const int32_t p = critical.empty() ? 0 : critical[rng() % critical.size()];
    if (p == 0) {  // already first: shake the rest instead
      const int32_t a = static_cast<int32_t>(rng() % n_), b = static_cast<int32_t>(rng() % n_);
      std::swap(order[a], order[b]);
      return order;
    }
    const int32_t q = static_cast<int32_t>(rng() % static_cast<uint32_t>(p));
    const int32_t x = order[p];
    order.erase(order.begin() + p);
    order.insert(order.begin() + q, x);
    return order;
  }

  // (b) by size with noise: key = log2(size) + uniform(-1, 1).
  std::vector<int32_t> NoisyBySize(std::mt19937& rng) const {
    std::vector<double> key(n_);
    for (int32_t i = 0; i < n_; ++i) {
      const double noise = static_cast<double>(rng() % 2001) / 1000.0 - 1.0;
      key[i] = std::log2(static_cast<double>(T(i).size) + 1.0) + noise;
    }
    return Sorted([&](int32_t a, int32_t b) { return key[a] > key[b]; });
  }

 private:
  const TensorLifetime& T(int32_t local) const { return tensors_[group_[local]]; }
  uint64_t Span(int32_t local) const {
    return static_cast<uint64_t>(static_cast<int64_t>(T(local).last_use) - T(local).first_use) + 1;
  }
  // size × steps live; saturating (sizes are < 2^60, spans < 2^32).
  double Area(int32_t local) const { return static_cast<double>(T(local).size) * static_cast<double>(Span(local)); }
  template <typename Less>
  std::vector<int32_t> Sorted(Less less) const {
    std::vector<int32_t> order(n_);
    for (int32_t i = 0; i < n_; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), less);
    return order;
  }

  const std::vector<TensorLifetime>& tensors_;
  const std::vector<int32_t>& group_;
  int32_t n_;
};

}  // namespace

Result<Plan> OffsetSearchPlanner::MakePlan(const std::vector<TensorLifetime>& tensors,
                                           const PlanOptions& options) const {
  KEEL_RETURN_IF_ERROR(internal::ValidateLifetimes(tensors));
  const Clock::time_point start = Clock::now();
  const std::vector<internal::DeviceGroup> groups = internal::GroupByDevice(tensors);
  std::vector<internal::OffsetAssignment> per_group;
  bool all_at_bound = true;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::vector<int32_t>& group = groups[g].tensors;
    const Clock::time_point deadline =
        internal::GroupDeadline(start, options.time_limit_seconds, g, groups.size());
    const uint64_t bound = internal::GroupPeakLive(tensors, group);

    OrderSearch search(tensors, group);
    Candidate best;
    bool have = false;
    for (auto& [order, rule] : search.Seeds()) {
      Candidate c = search.Evaluate(std::move(order), rule);
      if (!have || c.top < best.top) {
        best = std::move(c);
        have = true;
      }
    }
    const uint64_t n = std::max<uint64_t>(1, group.size());
    const int32_t iterations = static_cast<int32_t>(
        std::clamp<uint64_t>(kPlacementBudget / n, kMinIterations, kMaxIterations));
    std::mt19937 rng(0x6b65656c);  // fixed seed: deterministic plans
    for (int32_t it = 0; it < iterations && best.top > bound; ++it) {
      if ((it & 15) == 15 && Clock::now() > deadline) break;
      const bool restart = (it & 1) == 1;
      Candidate c = restart ? search.Evaluate(search.NoisyBySize(rng), AliasRule::kUnlessTopGrows)
                            : search.Evaluate(search.CriticalMove(best, rng), best.rule);
      if (c.top < best.top || (!restart && c.top == best.top)) best = std::move(c);
    }
    all_at_bound = all_at_bound && best.top <= bound;
    per_group.push_back(std::move(best.assignment));
    if (options.progress != nullptr) {
      options.progress(options.progress_user, static_cast<double>(g + 1) / groups.size());
    }
  }
  Plan plan = internal::BuildOffsetPlan(tensors, groups, per_group);
  plan.strategy = name();
  plan.lower_bound = PeakLiveLowerBound(tensors);
  plan.optimal = all_at_bound;  // every device at its peak-live bound
  return plan;
}

}  // namespace keel::memory
