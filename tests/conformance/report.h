// tests/conformance/report.h — the conformance report and the baseline.
//
// conformance_report.json: totals, per op, per case (status, reason, frozen
// inputs, times); conformance_report.md: the same as tables. Totals count
// pass / refused / mismatch / error over the tensor cases (the denominator) and
// excluded cases by reason. Output is deterministic apart from the times
// (cases in manifest order, ops sorted by name).
//
// Baseline (tests/conformance/baseline.txt): "pass N" and the passing case
// names, one a line ('#' comments). CheckBaseline fails when a case the
// baseline lists as passing no longer passes, or the pass count dropped.
#pragma once

#include <string>
#include <vector>

#include "keel/status.h"
#include "tests/conformance/case_runner.h"
#include "tests/conformance/manifest.h"

namespace keel::conformance {

struct ReportInput {
  std::string target;
  std::string onnx_version;  // informational ("" when unknown)
  const std::vector<Case>* cases = nullptr;
  // Per case (same order as *cases); only meaningful where ran[i].
  std::vector<CaseResult> results;
  std::vector<bool> ran;
  double wall_seconds = 0;
};

Status WriteReport(const ReportInput& in, const std::string& json_path, const std::string& md_path);

// The summary printed at the end of a run: totals, then the per-op table
// (`all_ops`: every op; otherwise the ops with at least one non-passing case).
std::string FormatSummary(const ReportInput& in, bool all_ops);

struct BaselineCheck {
  bool ok = true;
  std::string text;  // what to print
};

// `partial`: only some cases ran (a filter): compare only those, not the count.
BaselineCheck CheckBaseline(const ReportInput& in, const std::string& baseline_path, bool partial);
Status WriteBaseline(const ReportInput& in, const std::string& baseline_path);

}  // namespace keel::conformance
