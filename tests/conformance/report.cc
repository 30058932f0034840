// tests/conformance/report.cc — see the header.
#include "tests/conformance/report.h"

#include <cstdio>
#include <fstream>
#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace keel::conformance {
namespace {

struct Counts {
  int pass = 0, refused = 0, mismatch = 0, error = 0;
  int total() const { return pass + refused + mismatch + error; }
  void Add(const std::string& s) {
    if (s == "pass") ++pass;
    else if (s == "refused") ++refused;
    else if (s == "mismatch") ++mismatch;
    else ++error;
  }
};

struct Tally {
  Counts totals;
  std::map<std::string, Counts> per_op;
  std::map<std::string, int> excluded;  // category without "excluded:" -> count
  int tensor_cases = 0;                 // in the manifest (ran or not)
  double compile_seconds = 0, run_seconds = 0;
};

// A refusal's reason with the case-specific parts (node names) elided, so that
// the same refusal in many cases groups together.
std::string ReasonGroup(const std::string& reason) {
  static const std::regex kNode(R"(node '[^']*' \(([^)]*)\))");
  static const std::regex kNamed(R"(([A-Za-z]+) '[^']*': )");
  std::string g = std::regex_replace(reason, kNode, "$1");
  g = std::regex_replace(g, kNamed, "$1: ");
  return g;
}

// (count, reason group), most frequent first, ties by text.
std::vector<std::pair<int, std::string>> RefusalGroups(const ReportInput& in) {
  std::map<std::string, int> groups;
  for (size_t i = 0; i < in.cases->size(); ++i) {
    if ((*in.cases)[i].is_tensor() && in.ran[i] && in.results[i].status == "refused") {
      ++groups[ReasonGroup(in.results[i].reason)];
    }
  }
  std::vector<std::pair<int, std::string>> out;
  for (const auto& [reason, n] : groups) out.emplace_back(n, reason);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

Tally Count(const ReportInput& in) {
  Tally t;
  const auto& cases = *in.cases;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    if (!c.is_tensor()) {
      ++t.excluded[c.category.substr(c.category.find(':') + 1)];
      continue;
    }
    ++t.tensor_cases;
    if (!in.ran[i]) continue;
    const CaseResult& r = in.results[i];
    t.totals.Add(r.status);
    t.per_op[c.op].Add(r.status);
    t.compile_seconds += r.compile_seconds;
    t.run_seconds += r.run_seconds;
  }
  return t;
}

std::string Json(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (ch < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", ch);
          out += buf;
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out + "\"";
}

std::string Fixed(double v, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Percent(int a, int b) { return b ? Fixed(100.0 * a / b, 1) + "%" : "-"; }

// Markdown table cells must not contain '|' or newlines.
std::string Cell(std::string s) {
  for (char& ch : s) {
    if (ch == '|') ch = '/';
    if (ch == '\n') ch = ' ';
  }
  return s;
}

Status WriteText(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return IoError("cannot write '" + tmp + "'");
    f << text;
    if (!f) return IoError("error writing '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return IoError("cannot rename '" + tmp + "' to '" + path + "'");
  return Status::Ok();
}

}  // namespace

Status WriteReport(const ReportInput& in, const std::string& json_path, const std::string& md_path) {
  const Tally t = Count(in);
  const auto& cases = *in.cases;
  std::ostringstream j;
  j << "{\n \"target\": " << Json(in.target) << ",\n \"onnx_version\": " << Json(in.onnx_version)
    << ",\n \"totals\": {\"tensor_cases\": " << t.tensor_cases << ", \"ran\": " << t.totals.total()
    << ", \"pass\": " << t.totals.pass << ", \"refused\": " << t.totals.refused
    << ", \"mismatch\": " << t.totals.mismatch << ", \"error\": " << t.totals.error << ", \"excluded\": {";
  bool first = true;
  for (const auto& [why, n] : t.excluded) {
    j << (first ? "" : ", ") << Json(why) << ": " << n;
    first = false;
  }
  j << "}},\n \"seconds\": {\"wall\": " << Fixed(in.wall_seconds) << ", \"compile\": " << Fixed(t.compile_seconds)
    << ", \"run\": " << Fixed(t.run_seconds) << "},\n \"ops\": {";
  first = true;
  for (const auto& [op, c] : t.per_op) {
    j << (first ? "\n  " : ",\n  ") << Json(op) << ": {\"pass\": " << c.pass << ", \"refused\": " << c.refused
      << ", \"mismatch\": " << c.mismatch << ", \"error\": " << c.error << ", \"total\": " << c.total() << "}";
    first = false;
  }
  j << "\n },\n \"refusal_reasons\": [";
  first = true;
  for (const auto& [n, reason] : RefusalGroups(in)) {
    j << (first ? "\n  " : ",\n  ") << "{\"count\": " << n << ", \"reason\": " << Json(reason) << "}";
    first = false;
  }
  j << "\n ],\n \"cases\": [";
  first = true;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    j << (first ? "\n  " : ",\n  ") << "{\"name\": " << Json(c.name) << ", \"op\": " << Json(c.op);
    first = false;
    if (!c.is_tensor()) {
      j << ", \"status\": \"excluded\", \"category\": " << Json(c.category) << ", \"reason\": " << Json(c.reason)
        << "}";
      continue;
    }
    if (!in.ran[i]) {
      j << ", \"status\": \"not-run\"}";
      continue;
    }
    const CaseResult& r = in.results[i];
    j << ", \"status\": " << Json(r.status) << ", \"reason\": " << Json(r.reason) << ", \"frozen\": [";
    for (size_t k = 0; k < r.frozen.size(); ++k) j << (k ? ", " : "") << Json(r.frozen[k]);
    j << "], \"compile_s\": " << Fixed(r.compile_seconds) << ", \"run_s\": " << Fixed(r.run_seconds) << "}";
  }
  j << "\n ]\n}\n";
  KEEL_RETURN_IF_ERROR(WriteText(json_path, j.str()));

  std::ostringstream m;
  m << "# Keel ONNX conformance (" << in.target << ")\n\n";
  if (!in.onnx_version.empty()) m << "ONNX " << in.onnx_version << " node test cases. ";
  m << "Status per tensor case: pass, refused (the compiler declined), mismatch (ran, wrong output), "
       "error (failed to load/run, crashed, timed out, or an internal compiler error).\n\n";
  m << FormatSummary(in, true);
  m << "\n## Cases\n\n| case | op | status | reason |\n|---|---|---|---|\n";
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    std::string status = c.is_tensor() ? (in.ran[i] ? in.results[i].status : "not-run") : c.category;
    std::string reason = c.is_tensor() ? (in.ran[i] ? in.results[i].reason : "") : c.reason;
    if (c.is_tensor() && in.ran[i] && !in.results[i].frozen.empty()) {
      std::string f;
      for (const std::string& x : in.results[i].frozen) f += (f.empty() ? "" : ", ") + x;
      reason = "(frozen: " + f + ") " + reason;
    }
    m << "| " << c.name << " | " << Cell(c.op) << " | " << status << " | " << Cell(reason) << " |\n";
  }
  return WriteText(md_path, m.str());
}

std::string FormatSummary(const ReportInput& in, bool all_ops) {
  const Tally t = Count(in);
  std::ostringstream s;
  int excluded = 0;
  for (const auto& [why, n] : t.excluded) excluded += n;
  s << "## Totals\n\n";
  s << "| | cases | of tensor cases |\n|---|---:|---:|\n";
  s << "| tensor cases | " << t.tensor_cases << " | |\n";
  if (t.totals.total() != t.tensor_cases) s << "| ran | " << t.totals.total() << " | |\n";
  s << "| pass | " << t.totals.pass << " | " << Percent(t.totals.pass, t.tensor_cases) << " |\n";
  s << "| refused | " << t.totals.refused << " | " << Percent(t.totals.refused, t.tensor_cases) << " |\n";
  s << "| mismatch | " << t.totals.mismatch << " | " << Percent(t.totals.mismatch, t.tensor_cases) << " |\n";
  s << "| error | " << t.totals.error << " | " << Percent(t.totals.error, t.tensor_cases) << " |\n";
  s << "| excluded | " << excluded << " | |\n";
  for (const auto& [why, n] : t.excluded) s << "| excluded: " << why << " | " << n << " | |\n";
  s << "\nWall time " << Fixed(in.wall_seconds, 1) << " s (summed over cases: compile " << Fixed(t.compile_seconds, 1)
    << " s, load+run " << Fixed(t.run_seconds, 1) << " s).\n";
  s << "\n## Per op" << (all_ops ? "" : " (ops with a non-passing case)") << "\n\n";
  s << "| op | pass | refused | mismatch | error | total |\n|---|---:|---:|---:|---:|---:|\n";
  for (const auto& [op, c] : t.per_op) {
    if (!all_ops && c.pass == c.total()) continue;
    s << "| " << Cell(op) << " | " << c.pass << " | " << c.refused << " | " << c.mismatch << " | " << c.error
      << " | " << c.total() << " |\n";
  }
  const auto groups = RefusalGroups(in);
  const size_t shown = all_ops ? groups.size() : std::min<size_t>(groups.size(), 15);
  if (shown) {
    s << "\n## Refusal reasons" << (shown < groups.size() ? " (most frequent)" : "") << "\n\n";
    s << "| cases | reason (node names elided) |\n|---:|---|\n";
    for (size_t i = 0; i < shown; ++i) s << "| " << groups[i].first << " | " << Cell(groups[i].second) << " |\n";
  }
  return s.str();
}

BaselineCheck CheckBaseline(const ReportInput& in, const std::string& baseline_path, bool partial) {
  BaselineCheck out;
  std::ifstream f(baseline_path);
  if (!f) {
    out.ok = false;
    out.text = "baseline '" + baseline_path + "' cannot be read (create it with --update-baseline)\n";
    return out;
  }
  int baseline_count = -1;
  std::set<std::string> passing;
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("pass ", 0) == 0) {
      baseline_count = std::atoi(line.c_str() + 5);
      continue;
    }
    passing.insert(line);
  }
  const auto& cases = *in.cases;
  std::vector<std::string> regressed, vanished, fixed;
  std::set<std::string> seen;
  int pass = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    seen.insert(c.name);
    const bool ran = c.is_tensor() && in.ran[i];
    const bool ok = ran && in.results[i].status == "pass";
    pass += ok;
    if (passing.count(c.name)) {
      if (ran && !ok) regressed.push_back(c.name + ": " + in.results[i].status + ": " + in.results[i].reason);
      if (c.is_tensor() && !ran && !partial) regressed.push_back(c.name + ": not run");
      if (!c.is_tensor()) regressed.push_back(c.name + ": now " + c.category);
    } else if (ok) {
      fixed.push_back(c.name);
    }
  }
  if (!partial) {
    for (const std::string& name : passing) {
      if (!seen.count(name)) vanished.push_back(name);
    }
  }
  std::ostringstream s;
  s << "baseline " << baseline_path << ": " << passing.size() << " passing cases";
  if (!partial) s << "; now " << pass << " pass";
  s << "\n";
  if (!regressed.empty()) {
    s << regressed.size() << " case(s) passed in the baseline and fail now:\n";
    for (const std::string& r : regressed) s << "  " << r << "\n";
  }
  if (!vanished.empty()) {
    s << vanished.size() << " case(s) of the baseline are not in the manifest (another onnx version?):\n";
    for (const std::string& r : vanished) s << "  " << r << "\n";
  }
  if (!partial && baseline_count >= 0 && pass < baseline_count) {
    s << "the pass count dropped: " << pass << " < baseline " << baseline_count << "\n";
    out.ok = false;
  }
  if (!fixed.empty()) {
    s << fixed.size() << " case(s) pass that the baseline does not list (record them with --update-baseline)";
    s << (fixed.size() <= 20 ? ":" : "") << "\n";
    if (fixed.size() <= 20) {
      for (const std::string& r : fixed) s << "  " << r << "\n";
    }
  }
  out.ok = out.ok && regressed.empty() && vanished.empty();
  s << (out.ok ? "baseline: OK\n" : "baseline: FAILED\n");
  out.text = s.str();
  return out;
}

Status WriteBaseline(const ReportInput& in, const std::string& baseline_path) {
  std::ostringstream s;
  std::vector<std::string> names;
  const auto& cases = *in.cases;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].is_tensor() && in.ran[i] && in.results[i].status == "pass") names.push_back(cases[i].name);
  }
  s << "# Keel ONNX conformance baseline (target " << in.target << (in.onnx_version.empty() ? "" : ", onnx ")
    << in.onnx_version << "): the node test cases that pass.\n";
  s << "# The conformance test fails when one of these stops passing or the count drops.\n";
  s << "# Regenerate after a build: scripts/conformance.sh --update-baseline\n";
  s << "pass " << names.size() << "\n";
  for (const std::string& n : names) s << n << "\n";
  return WriteText(baseline_path, s.str());
}

}  // namespace keel::conformance
