// keel-plan — compare memory-planning strategies on one model.
//
//   keel-plan model.onnx [--target cpu|cuda] [--strategies all|naive,greedy-size,...]
//             [--time-limit SEC] [--json out.json] [--html out.html] [--batch N] [--no-timings]
//
// Computes the model's buffer lifetimes exactly as keelc would plan them for the
// target (compiler/driver/model_lifetimes.h), runs every requested strategy, checks
// every plan with CheckPlan, and prints a table (bytes, ratio to the lower bounds,
// device allocations, planning time) plus both lower bounds. --json/--html write the
// reports of compiler/memory/plan_report.h. Slow strategies (exact, best) show
// their progress on stderr.
//
// Exit status: 0 when every plan is valid; 1 with a one-line reason on stderr for
// an error (model, target, file) or when any strategy failed or its plan failed
// CheckPlan (the reports are still written, with the failure in them); 2 for bad
// command-line usage (unknown option or strategy).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "apps/common/cli.h"
#include "compiler/driver/phase.h"
#include "compiler/driver/model_lifetimes.h"
#include "compiler/memory/plan_report.h"
#include "compiler/memory/planner.h"

namespace {

const char kUsage[] = R"(usage: keel-plan MODEL.onnx [options]

Compares memory-planning strategies on the buffers keelc would plan for MODEL.

options:
  --target cpu|cuda        target whose buffers are planned (default: cpu)
  --strategies LIST        all (default) or a comma-separated list of:
                           %s
  --time-limit SEC         time limit of search strategies (exact, best; default 10)
  --json PATH              write the JSON report (bounds, plans, every tensor)
  --html PATH              write the HTML report (one picture per plan)
  --batch N                value for every dynamic dimension of the inputs
  --no-timings             leave planning times out (byte-identical reruns)
  -q, --quiet              no table on stdout
  -h, --help               this text

exit status: 0 all plans valid; 1 error or a failed plan; 2 bad usage
)";

void PrintUsage(FILE* out) { std::fprintf(out, kUsage, keel::cli::Join(keel::memory::PlannerNames(), ", ").c_str()); }

int UsageError(const std::string& message) { return keel::cli::UsageError("keel-plan", message); }

int Error(const std::string& message) {
  std::fprintf(stderr, "keel-plan: error: %s\n", message.c_str());
  return 1;
}

// Progress of one slow strategy on stderr, redrawn when the percentage grows.
// Only increases are shown: `best` hands its options (and so this callback) to
// the candidates it runs, whose own fractions restart from 0.
struct Progress {
  std::string name;
  int last_percent = -1;
};

void OnProgress(void* user, double fraction) {
  auto* p = static_cast<Progress*>(user);
  const int percent = static_cast<int>(fraction * 100.0 + 0.5);
  if (percent <= p->last_percent) return;
  p->last_percent = percent;
  std::fprintf(stderr, "\rkeel-plan: %s %3d%%", p->name.c_str(), percent);
  std::fflush(stderr);
}

bool WriteText(const std::string& path, const std::string& text, std::string* error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) {
    *error = "cannot write '" + path + "'";
    return false;
  }
  return true;
}

}  // namespace

static int RunMain(int argc, char** argv) {
  keel::driver::LifetimeOptions options;
  std::string strategies_text = "all";
  std::string json_path;
  std::string html_path;
  double time_limit = 10.0;
  bool quiet = false;
  keel::memory::ReportFormat format;
  for (keel::cli::ArgScanner args(argc, argv); args.Next();) {
    const std::string& arg = args.arg();
    std::string v;
    if (arg == "-h" || arg == "--help") {
      PrintUsage(stdout);
      return 0;
    } else if (arg == "-q" || arg == "--quiet") {
      quiet = true;
    } else if (arg == "--no-timings") {
      format.timings = false;
    } else if (args.Value("--target", v)) {
      if (v != "cpu" && v != "cuda") return UsageError("--target expects cpu or cuda (got '" + v + "')");
      options.target = v;
    } else if (args.Value("--strategies", v)) {
      strategies_text = v;
    } else if (args.Value("--json", v)) {
      json_path = v;
    } else if (args.Value("--html", v)) {
      html_path = v;
    } else if (args.Value("--time-limit", v)) {
      char* end = nullptr;
      time_limit = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(time_limit > 0)) return UsageError("--time-limit expects seconds > 0");
    } else if (args.Value("--batch", v)) {
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 1) return UsageError("--batch expects a positive integer");
      options.import.default_dynamic_dim = n;
    } else if (args.missing_value()) {
      return UsageError(arg + " needs a value");
    } else if (!arg.empty() && arg[0] == '-') {
      return UsageError("unknown option '" + arg + "'");
    } else if (options.model_path.empty()) {
      options.model_path = arg;
    } else {
      return UsageError("more than one model given ('" + options.model_path + "', '" + arg + "')");
    }
  }
  if (options.model_path.empty()) return UsageError("no model given");

  // Strategies first: a typo should not cost an import.
  auto strategies = keel::memory::ParseStrategies(strategies_text);
  if (!strategies.ok()) return UsageError(strategies.status().message());

  auto lifetimes = keel::driver::ComputeModelLifetimes(options);
  keel::driver::SetPhase("memory planning strategies");
  if (!lifetimes.ok()) return Error(lifetimes.status().ToString());
  if (!lifetimes->workspace_note.empty()) std::fprintf(stderr, "keel-plan: note: %s\n", lifetimes->workspace_note.c_str());

  std::vector<keel::memory::StrategyResult> results;
  for (const std::string& name : *strategies) {
    keel::memory::PlanOptions plan_options;
    plan_options.time_limit_seconds = time_limit;
    Progress progress{name, -1};
    const bool slow = name == "exact" || name == "best";
    if (slow) {
      plan_options.progress = &OnProgress;
      plan_options.progress_user = &progress;
      std::fprintf(stderr, "keel-plan: %s (time limit %g s)...\n", name.c_str(), time_limit);
    }
    auto result = keel::memory::RunStrategy(name, lifetimes->tensors, plan_options);
    if (slow && progress.last_percent >= 0) std::fprintf(stderr, "\n");
    if (!result.ok()) return Error(result.status().ToString());  // unknown name: cannot happen after parsing
    if (!result->ok()) std::fprintf(stderr, "keel-plan: FAILED: %s\n", result->status.ToString().c_str());
    results.push_back(std::move(result).value());
  }

  const std::string model_name = std::filesystem::path(options.model_path).filename().string();
  keel::memory::PlanReport report = keel::memory::MakeReport(model_name, options.target, lifetimes->tensors,
                                                             lifetimes->num_steps, std::move(results));
  report.step_names = lifetimes->step_names;
  report.note = lifetimes->workspace_note;

  if (!quiet) std::fputs(keel::memory::FormatTable(report, format).c_str(), stdout);
  std::string error;
  if (!json_path.empty() && !WriteText(json_path, keel::memory::ToJson(report, format), &error)) return Error(error);
  if (!html_path.empty() && !WriteText(html_path, keel::memory::ToHtml(report, format), &error)) return Error(error);
  if (!report.AllOk()) return Error("at least one strategy failed or produced a plan that failed CheckPlan (see above)");
  return 0;
}

int main(int argc, char** argv) {
  return keel::cli::RunGuarded("keel-plan", keel::driver::CurrentPhase, [&] { return RunMain(argc, argv); });
}
