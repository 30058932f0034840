// compiler/memory/planner.h — the memory-planner interface and the plan it produces.
//
// Input: one TensorLifetime per intermediate tensor, with lifetimes measured in
// "steps" (the index of the instruction/op in execution order). A tensor is live
// on the closed interval [first_use, last_use]. Two tensors whose intervals
// intersect must not share bytes (unless `may_alias_with` allows in-place reuse).
//
// Output: a Plan in one uniform form that every strategy writes:
//
//   arenas[a]   ─ one device allocation each, made at load time (static plans)
//   storages[s] ─ a contiguous block: either a slice of arena `arena` at `offset`,
//                 or (arena == -1) allocated and freed at run time (`dynamic`)
//   placements[t] ─ tensor t lives in storage `storage` at byte `offset`
//
//   offset strategies (greedy-size):   1 arena, 1 storage, many tensor offsets
//   shared-object strategies (tvm, greedy-breadth, min-cost-flow):
//                                      storages = shared objects, tensor offset 0
//   naive:                             1 storage (and 1 arena) per tensor
//   dynamic:                           1 storage per tensor, arena == -1
//
// Every strategy's plan must pass CheckPlan before it is used.
// Thread-safety: planners are stateless; Plan() may be called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "keel/status.h"

namespace keel::memory {

enum class Device : uint8_t { kCpu = 0, kCuda = 1 };

struct TensorLifetime {
  uint64_t size = 0;        // bytes
  uint32_t alignment = 64;  // required byte alignment of the tensor's address
  int32_t first_use = 0;    // step that writes it
  int32_t last_use = 0;     // last step that reads it (>= first_use)
  Device device = Device::kCpu;
  std::string name;         // for reports and errors
  // Index of a tensor whose last_use == this tensor's first_use and whose bytes
  // this tensor may overwrite in place (an elementwise op); -1 when none.
  int32_t may_alias_with = -1;
};

struct Placement {
  int32_t storage = -1;
  uint64_t offset = 0;  // within the storage
};

struct Storage {
  uint64_t size = 0;
  uint32_t alignment = 64;
  Device device = Device::kCpu;
  int32_t arena = -1;   // -1: allocated at run time (dynamic)
  uint64_t offset = 0;  // within the arena
};

struct Arena {
  Device device = Device::kCpu;
  uint64_t size = 0;
  uint32_t alignment = 256;
};

struct Plan {
  std::string strategy;
  std::vector<Placement> placements;  // one per input tensor, same order
  std::vector<Storage> storages;
  std::vector<Arena> arenas;
  bool optimal = false;            // `exact` proved optimality
  // A proven lower bound on TotalBytes() for plans of this strategy's form, in
  // bytes (0 when the strategy does not compute one). `exact` sets its search
  // bound; the other planners set PeakLiveLowerBound (offset form) or
  // PositionalMaxLowerBound (shared-object form).
  uint64_t lower_bound = 0;
  // `lns`: the time limit, not the node budget or convergence, ended the search
  // (the plan then depends on the machine's speed).
  bool stopped_by_time_limit = false;
  uint64_t TotalBytes() const;     // sum of arena sizes + dynamic storages' sizes
};

struct PlanOptions {
  double time_limit_seconds = 10.0;  // for search strategies (`exact`)
  // Non-zero: the question is "is there a plan within this many bytes?" — `exact`
  // (on inputs with one device) stops at the first plan within it or proves that
  // none exists (Plan::lower_bound > capacity). Other strategies ignore it.
  uint64_t capacity = 0;
  // Non-zero: `exact` (and `lns`) also stop after this many search nodes (all probes and
  // devices together). A node budget, unlike a time limit, gives the same plan on
  // every machine: keelc's default plan (`auto`) relies on it.
  uint64_t node_budget = 0;
  // Called now and then by slow strategies with progress in [0, 1]; may be empty.
  void (*progress)(void* user, double fraction) = nullptr;
  void* progress_user = nullptr;
};

class Planner {
 public:
  virtual ~Planner() = default;
  virtual std::string name() const = 0;
  virtual Result<Plan> MakePlan(const std::vector<TensorLifetime>& tensors,
                                const PlanOptions& options) const = 0;
};

// Strategies by name ("naive", "dynamic", "greedy-size", ...); NotFound for others.
Result<std::unique_ptr<Planner>> CreatePlanner(const std::string& name);
std::vector<std::string> PlannerNames();

// Verifies a plan: every tensor placed inside its storage, aligned, storages
// inside their arenas, and no two tensors with intersecting lifetimes (on one
// device) overlapping in memory (unless allowed by may_alias_with).
// Errors name both tensors.
Status CheckPlan(const std::vector<TensorLifetime>& tensors, const Plan& plan);

// Lower bounds (bytes): max over steps of the live bytes (offset form), and the
// positional-maximum bound for shared objects.
uint64_t PeakLiveLowerBound(const std::vector<TensorLifetime>& tensors);
uint64_t PositionalMaxLowerBound(const std::vector<TensorLifetime>& tensors);

}  // namespace keel::memory
