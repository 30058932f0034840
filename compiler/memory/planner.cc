// compiler/memory/planner.cc — the strategy registry (CreatePlanner,
// PlannerNames) and Plan::TotalBytes.
#include "compiler/memory/planner.h"

#include "compiler/memory/auto_planner.h"
#include "compiler/memory/best_planner.h"
#include "compiler/memory/dynamic_planner.h"
#include "compiler/memory/exact_planner.h"
#include "compiler/memory/greedy_breadth_planner.h"
#include "compiler/memory/greedy_size_objects_planner.h"
#include "compiler/memory/greedy_size_planner.h"
#include "compiler/memory/lns_planner.h"
#include "compiler/memory/min_cost_flow_planner.h"
#include "compiler/memory/naive_planner.h"
#include "compiler/memory/offset_search_planner.h"
#include "compiler/memory/tvm_planner.h"

namespace keel::memory {

uint64_t Plan::TotalBytes() const {
  uint64_t total = 0;
  for (const Arena& a : arenas) total += a.size;
  for (const Storage& s : storages) {
    if (s.arena == -1) total += s.size;
  }
  return total;
}

std::vector<std::string> PlannerNames() {
  return {"naive",          "dynamic",        "tvm",
          "tvm-packed",     "greedy-size",    "greedy-size-first-fit",
          "greedy-size-search", "greedy-breadth", "greedy-size-objects", "min-cost-flow",
          "exact",          "lns",            "best",           "auto"};
}

Result<std::unique_ptr<Planner>> CreatePlanner(const std::string& name) {
  std::unique_ptr<Planner> p;
  if (name == "naive") p = std::make_unique<NaivePlanner>();
  else if (name == "dynamic") p = std::make_unique<DynamicPlanner>();
  else if (name == "tvm") p = std::make_unique<TvmPlanner>(false);
  else if (name == "tvm-packed") p = std::make_unique<TvmPlanner>(true);
  else if (name == "greedy-size") p = std::make_unique<GreedySizePlanner>(GapFit::kBestFit);
  else if (name == "greedy-size-first-fit") p = std::make_unique<GreedySizePlanner>(GapFit::kFirstFit);
  else if (name == "greedy-size-search") p = std::make_unique<OffsetSearchPlanner>();
  else if (name == "greedy-breadth") p = std::make_unique<GreedyBreadthPlanner>();
  else if (name == "greedy-size-objects") p = std::make_unique<GreedySizeObjectsPlanner>();
  else if (name == "min-cost-flow") p = std::make_unique<MinCostFlowPlanner>();
  else if (name == "exact") p = std::make_unique<ExactPlanner>();
  else if (name == "lns") p = std::make_unique<LnsPlanner>();
  else if (name == "best") p = std::make_unique<BestPlanner>();
  else if (name == "auto") p = std::make_unique<AutoPlanner>();
  if (!p) {
    std::string known;
    for (const std::string& n : PlannerNames()) known += (known.empty() ? "" : ", ") + n;
    return NotFound("no memory planner named '" + name + "' (known: " + known + ")");
  }
  return p;
}

}  // namespace keel::memory
