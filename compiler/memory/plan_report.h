// compiler/memory/plan_report.h — run several memory planners on one set of
// lifetimes and report the plans side by side (table, JSON, HTML).
//
// This is the engine of `keel-plan`. It knows nothing about models: callers pass
// TensorLifetime vectors (from compiler/driver/model_lifetimes.h, or hand-made).
//
//   RunStrategy ─ plan with one strategy, time it, CheckPlan it
//   MakeReport  ─ the lifetimes, both lower bounds, and the strategy results
//   FormatTable / ToJson / ToHtml ─ three views of one PlanReport
//
// A plan is only reported as a plan when CheckPlan accepted it: a failing
// strategy (planner error or check failure) is kept as a result with ok == false
// and its status, shown loudly in every view, and its placements are not shown.
//
// Plan "forms" (how the ratio columns are read):
//   offsets  ─ tensors at offsets inside arenas (greedy-size, exact): compare with
//              the peak-live bound;
//   objects  ─ every tensor at offset 0 of a storage (tvm, greedy-breadth,
//              min-cost-flow, naive): also compared with the positional-max bound,
//              which holds for that form only;
//   dynamic  ─ storages allocated at run time (arena == -1); bytes = Σ sizes.
//
// Addresses: a tensor's "address" is its byte offset within its arena
// (storage.offset + placement.offset), or within its dynamic storage. Pictures
// stack the arenas (then the dynamic storages) in index order on one axis.
//
// Determinism: every output depends only on the inputs; numbers are printed with
// fixed formats. Timing fields (seconds) are the only run-dependent values and are
// left out when ReportFormat::timings is false.
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/memory/planner.h"
#include "keel/status.h"

namespace keel::memory {

enum class PlanForm : uint8_t { kOffsets, kObjects, kDynamic };
const char* PlanFormName(PlanForm form);

struct StrategyResult {
  std::string name;      // the strategy asked for ("best")
  Status status;         // planner error or CheckPlan failure; OK when the plan is valid
  Plan plan;             // meaningful only when status.ok()
  double seconds = 0;    // wall time of MakePlan (CheckPlan not included)
  uint64_t total_bytes = 0;
  size_t allocations = 0;  // arenas + dynamic storages (device allocations)
  PlanForm form = PlanForm::kOffsets;
  bool ok() const { return status.ok(); }
};

struct PlanReport {
  std::string model;   // for display only
  std::string target;  // for display only
  std::vector<TensorLifetime> tensors;
  std::vector<std::string> step_names;  // optional, one per step (HTML hover)
  std::string note;                     // optional remark shown in every view
  uint64_t peak_live_bound = 0;
  uint64_t positional_max_bound = 0;
  int32_t num_steps = 0;                // max(last_use) + 1 when not given
  std::vector<StrategyResult> results;
  bool AllOk() const;
};

struct ReportFormat {
  bool timings = true;  // false: no seconds anywhere (byte-identical reruns)
};

// "all" → PlannerNames(); else a comma-separated list of known names, in the
// order given, duplicates dropped. NotFound names the unknown strategy;
// InvalidArgument for an empty list.
Result<std::vector<std::string>> ParseStrategies(const std::string& text);

// Plans `tensors` with strategy `name`. Returns an error only when `name` is
// unknown; planner errors and CheckPlan failures are recorded in the result.
Result<StrategyResult> RunStrategy(const std::string& name, const std::vector<TensorLifetime>& tensors,
                                   const PlanOptions& options);

// Fills bounds and num_steps (num_steps: the larger of `num_steps` and
// max(last_use) + 1). Takes ownership of its arguments.
PlanReport MakeReport(std::string model, std::string target, std::vector<TensorLifetime> tensors,
                      int32_t num_steps, std::vector<StrategyResult> results);

// Fixed-width text table: strategy, form, total bytes, ratio to the peak-live
// bound, ratio to the positional bound (objects form), allocations, time, then
// both bounds; failed strategies are listed with "CHECK FAILED"/"FAILED" and the
// reason.
std::string FormatTable(const PlanReport& report, const ReportFormat& format);

// JSON document (UTF-8, stable key order): model, target, num_tensors, num_steps,
// bounds, and per strategy: name, plan_strategy, ok, error, form, total_bytes,
// ratios, allocations, optimal, plan_lower_bound, seconds (with timings),
// arenas, storages, tensors[name, size, alignment, first_use, last_use, may_alias_with, device,
// storage, offset, arena, address].
std::string ToJson(const PlanReport& report, const ReportFormat& format);

// Self-contained HTML page (inline SVG + a small script, nothing fetched): a
// table, a plan selector (one plan, or all stacked), a shared/own scale toggle,
// and per plan one SVG with address (y) against step (x), one
// <rect class="t"> per tensor with a <title> tooltip naming it, and the lower
// bound(s) drawn as horizontal lines.
std::string ToHtml(const PlanReport& report, const ReportFormat& format);

// Escapes for the two output languages (exposed for tests and other reports).
std::string JsonEscape(const std::string& text);
std::string HtmlEscape(const std::string& text);

// "512 B", "1.5 KiB", "2.25 MiB": byte counts for people (the table, keelc's summary).
std::string HumanBytes(uint64_t bytes);

}  // namespace keel::memory
