// compiler/memory/best_planner.cc — runs every static strategy, keeps the smallest.
#include "compiler/memory/best_planner.h"

#include "compiler/memory/auto_planner.h"
#include "compiler/memory/exact_planner.h"
#include "compiler/memory/greedy_breadth_planner.h"
#include "compiler/memory/greedy_size_objects_planner.h"
#include "compiler/memory/greedy_size_planner.h"
#include "compiler/memory/lns_planner.h"
#include "compiler/memory/min_cost_flow_planner.h"
#include "compiler/memory/lower_bounds.h"
#include "compiler/memory/naive_planner.h"
#include "compiler/memory/offset_search_planner.h"
#include "compiler/memory/planning_support.h"
#include "compiler/memory/tvm_planner.h"

namespace keel::memory {

Result<Plan> BestPlanner::MakePlan(const std::vector<TensorLifetime>& tensors,
                                   const PlanOptions& options) const {
  KEEL_RETURN_IF_ERROR(internal::ValidateLifetimes(tensors));
  std::vector<std::unique_ptr<Planner>> candidates;
  candidates.push_back(std::make_unique<NaivePlanner>());
  candidates.push_back(std::make_unique<TvmPlanner>(false));
  candidates.push_back(std::make_unique<TvmPlanner>(true));
  candidates.push_back(std::make_unique<GreedySizePlanner>(GapFit::kBestFit));
  candidates.push_back(std::make_unique<GreedySizePlanner>(GapFit::kFirstFit));
  candidates.push_back(std::make_unique<OffsetSearchPlanner>());
  candidates.push_back(std::make_unique<GreedyBreadthPlanner>());
  candidates.push_back(std::make_unique<GreedySizeObjectsPlanner>());
  candidates.push_back(std::make_unique<MinCostFlowPlanner>());
  candidates.push_back(std::make_unique<ExactPlanner>());
  candidates.push_back(std::make_unique<LnsPlanner>());
  candidates.push_back(std::make_unique<AutoPlanner>());

  bool have = false;
  Plan best;
  Status last_error = Internal("best: no candidate strategy produced a plan");
  for (size_t c = 0; c < candidates.size(); ++c) {
    Result<Plan> plan = candidates[c]->MakePlan(tensors, options);
    if (!plan.ok()) {
      last_error = plan.status();
      continue;
    }
    if (Status s = CheckPlan(tensors, *plan); !s.ok()) {
      last_error = Internal(candidates[c]->name() + " produced an invalid plan: " + s.message());
      continue;
    }
    const bool better =
        !have || plan->TotalBytes() < best.TotalBytes() ||
        (plan->TotalBytes() == best.TotalBytes() &&
         internal::AllocationCount(*plan) < internal::AllocationCount(best));
    if (better) {
      best = std::move(plan).value();
      have = true;
    }
    if (options.progress != nullptr) {
      options.progress(options.progress_user, static_cast<double>(c + 1) / candidates.size());
    }
  }
  if (!have) return last_error;
  best.strategy = "best(" + best.strategy + ")";
  // The peak-live bound holds for every form: a plan that reaches it is optimal.
  const uint64_t peak = PeakLiveLowerBound(tensors);
  if (best.TotalBytes() <= peak) {
    best.optimal = true;
    best.lower_bound = best.TotalBytes();
  }
  return best;
}

}  // namespace keel::memory
