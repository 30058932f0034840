// compiler/memory/auto_planner.cc — greedy-size, then exact within a small budget
// when greedy-size is above the peak-live bound (see auto_planner.h).
#include "compiler/memory/auto_planner.h"

#include <algorithm>

#include "compiler/memory/exact_planner.h"
#include "compiler/memory/greedy_size_planner.h"

namespace keel::memory {

Result<Plan> AutoPlanner::MakePlan(const std::vector<TensorLifetime>& tensors, const PlanOptions& options) const {
  KEEL_ASSIGN_OR_RETURN(Plan greedy, GreedySizePlanner(GapFit::kBestFit).MakePlan(tensors, options));
  const uint64_t bound = PeakLiveLowerBound(tensors);
  if (greedy.TotalBytes() <= bound) {
    greedy.strategy = "auto(greedy-size)";
    greedy.optimal = true;
    greedy.lower_bound = greedy.TotalBytes();
    return greedy;
  }
  PlanOptions budgeted = options;
  budgeted.time_limit_seconds = std::min(options.time_limit_seconds, kSafetySeconds);
  budgeted.node_budget = kNodeBudget;
  KEEL_ASSIGN_OR_RETURN(Plan exact, ExactPlanner().MakePlan(tensors, budgeted));
  Plan& chosen = exact.TotalBytes() < greedy.TotalBytes() ? exact : greedy;
  chosen.strategy = "auto(" + chosen.strategy + ")";
  return std::move(chosen);
}

}  // namespace keel::memory
