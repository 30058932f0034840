// keel-plan — compare memory-planning strategies on one model or one buffer list.
//
//   keel-plan model.onnx [--target cpu|cuda] [--precision P] [--strategies all|naive,greedy-size,...]
//             [--time-limit SEC] [--json out.json] [--html out.html] [--batch N] [--no-timings]
//             [--export-buffers OUT.csv] [--capacity BYTES] [--solution OUT.csv]
//   keel-plan --buffers problem.csv [same options]
//
// Computes the model's buffer lifetimes exactly as keelc would plan them for the
// target (compiler/driver/model_lifetimes.h) — or reads an arbitrary problem in
// MiniMalloc's CSV format (compiler/memory/buffer_csv.h) — runs every requested
// strategy, checks every plan with CheckPlan, and prints a table (bytes, ratio to
// the lower bounds, device allocations, planning time) plus both lower bounds.
// --json/--html write the reports of compiler/memory/plan_report.h. Slow
// strategies (exact, best) show their progress on stderr. --export-buffers writes
// the problem as CSV (for other allocators); --solution writes the offsets of the
// smallest valid one-arena plan in MiniMalloc's output format.
//
// Exit status: 0 when every plan is valid; 1 with a one-line reason on stderr for
// an error (model, CSV, target, file) or when any strategy failed or its plan
// failed CheckPlan (the reports are still written, with the failure in them); 2
// for bad command-line usage (unknown option or strategy). With --capacity: 0 a
// plan within the capacity was found, 3 proven impossible (a lower bound exceeds
// it), 4 unknown within the time limit.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "apps/common/cli.h"
#include "apps/common/pipeline_flags.h"
#include "compiler/driver/phase.h"
#include "compiler/driver/model_lifetimes.h"
#include "compiler/memory/buffer_csv.h"
#include "compiler/memory/plan_report.h"
#include "compiler/memory/planner.h"
#include "compiler/passes/mixed_precision.h"

namespace {

const char kUsage[] = R"(usage: keel-plan MODEL.onnx [options]
       keel-plan --buffers PROBLEM.csv [options]

Compares memory-planning strategies on the buffers keelc would plan for MODEL, or
on a buffer list in MiniMalloc's CSV format (id,lower,upper,size[,alignment]:
SIZE bytes live on the half-open interval [lower, upper); alignment 1 if absent).

options:
  --buffers PATH           plan the problem in this CSV file instead of a model
  --export-buffers PATH    write the problem as CSV (the same format)
  --capacity BYTES         ask whether a plan within BYTES exists (see exit status)
  --solution PATH          write the smallest valid one-arena plan's offsets (CSV
                           with an offset column, MiniMalloc's output format)
  --target cpu|cuda        target whose buffers are planned (default: cpu)
  --precision P            plan keelc --precision P's buffers: fp32 (default), tf32,
                           fp16, bf16 (half buffers take half the bytes)
  --layout L               plan keelc --layout L's buffers: auto (default), nchw, nhwc
  --winograd W             plan keelc --winograd W's buffers: auto (default), off, f2, f4
  --strategies LIST        all (default) or a comma-separated list of:
                           %s
  --time-limit SEC         time limit of search strategies (exact, best; default 10)
  --json PATH              write the JSON report (bounds, plans, every tensor)
  --html PATH              write the HTML report (one picture per plan)
  --batch N                value for every dynamic dimension of the inputs
  --no-timings             leave planning times out (byte-identical reruns)
  -q, --quiet              no table on stdout
  -h, --help               this text

exit status: 0 all plans valid; 1 error or a failed plan; 2 bad usage;
with --capacity: 0 found a plan within it, 3 proven impossible, 4 unknown
within the time limit
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

// The smallest valid plan whose buffers all live in one arena (ties: the
// earlier strategy), or null.
const keel::memory::StrategyResult* SmallestOneArenaPlan(const keel::memory::PlanReport& report) {
  const keel::memory::StrategyResult* best = nullptr;
  for (const keel::memory::StrategyResult& r : report.results) {
    if (!r.ok() || !keel::memory::SingleArenaAddresses(r.plan).ok()) continue;
    if (best == nullptr || r.total_bytes < best->total_bytes) best = &r;
  }
  return best;
}

// Exit status with --capacity.
constexpr int kCapacityImpossible = 3;
constexpr int kCapacityUnknown = 4;

}  // namespace

static int RunMain(int argc, char** argv) {
  keel::driver::LifetimeOptions options;
  std::string strategies_text = "all";
  std::string json_path;
  std::string html_path;
  std::string buffers_path, export_path, solution_path;
  uint64_t capacity = 0;
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
    } else if (std::string error; keel::cli::PipelineFlag(args, options, error)) {
      if (!error.empty()) return UsageError(error);
    } else if (args.Value("--strategies", v)) {
      strategies_text = v;
    } else if (args.Value("--buffers", v)) {
      buffers_path = v;
    } else if (args.Value("--export-buffers", v)) {
      export_path = v;
    } else if (args.Value("--solution", v)) {
      solution_path = v;
    } else if (args.Value("--capacity", v)) {
      char* end = nullptr;
      const unsigned long long c = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || v[0] == '-' || *end != '\0' || c == 0) return UsageError("--capacity expects a positive number of bytes");
      capacity = c;
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
  if (options.model_path.empty() && buffers_path.empty()) return UsageError("no model given (or --buffers FILE.csv)");
  if (!options.model_path.empty() && !buffers_path.empty()) {
    return UsageError("give a model or --buffers, not both ('" + options.model_path + "', '" + buffers_path + "')");
  }

  // Strategies first: a typo should not cost an import.
  auto strategies = keel::memory::ParseStrategies(strategies_text);
  if (!strategies.ok()) return UsageError(strategies.status().message());

  keel::driver::ModelLifetimes problem;
  std::string problem_name;
  if (!buffers_path.empty()) {
    keel::driver::SetPhase("reading the buffer list");
    auto tensors = keel::memory::ReadBufferCsv(buffers_path);
    if (!tensors.ok()) return Error(tensors.status().ToString());
    problem.tensors = std::move(tensors).value();
    options.target = "buffers";
    problem_name = std::filesystem::path(buffers_path).filename().string();
  } else {
    auto lifetimes = keel::driver::ComputeModelLifetimes(options);
    if (!lifetimes.ok()) return Error(lifetimes.status().ToString());
    problem = std::move(lifetimes).value();
    problem_name = std::filesystem::path(options.model_path).filename().string();
  }
  keel::driver::SetPhase("memory planning strategies");
  const keel::driver::ModelLifetimes* lifetimes = &problem;
  if (!lifetimes->workspace_note.empty()) std::fprintf(stderr, "keel-plan: note: %s\n", lifetimes->workspace_note.c_str());
  std::string error;
  if (!export_path.empty()) {
    auto csv = keel::memory::FormatBufferCsv(lifetimes->tensors, nullptr);
    if (!csv.ok()) return Error(csv.status().ToString());
    if (!WriteText(export_path, *csv, &error)) return Error(error);
  }

  std::vector<keel::memory::StrategyResult> results;
  for (const std::string& name : *strategies) {
    keel::memory::PlanOptions plan_options;
    plan_options.time_limit_seconds = time_limit;
    plan_options.capacity = capacity;
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

  keel::memory::PlanReport report = keel::memory::MakeReport(problem_name, options.target, lifetimes->tensors,
                                                             lifetimes->num_steps, std::move(results));
  report.step_names = lifetimes->step_names;
  report.note = lifetimes->workspace_note;

  if (!quiet) std::fputs(keel::memory::FormatTable(report, format).c_str(), stdout);
  if (!json_path.empty() && !WriteText(json_path, keel::memory::ToJson(report, format), &error)) return Error(error);
  if (!html_path.empty() && !WriteText(html_path, keel::memory::ToHtml(report, format), &error)) return Error(error);
  const keel::memory::StrategyResult* smallest = SmallestOneArenaPlan(report);
  if (!solution_path.empty()) {
    if (smallest == nullptr) return Error("--solution: no strategy produced a valid one-arena plan");
    auto csv = keel::memory::FormatBufferCsv(report.tensors, &*keel::memory::SingleArenaAddresses(smallest->plan));
    if (!csv.ok()) return Error(csv.status().ToString());
    if (!WriteText(solution_path, *csv, &error)) return Error(error);
  }
  if (!report.AllOk()) return Error("at least one strategy failed or produced a plan that failed CheckPlan (see above)");
  if (capacity != 0) {
    // Found: any valid plan within the capacity. Impossible: the peak-live bound or
    // exact's proven bound (it holds for every layout: any plan's arenas could be
    // laid end to end in one) above it.
    uint64_t proven = report.peak_live_bound;
    bool found = false;
    for (const keel::memory::StrategyResult& r : report.results) {
      found = found || r.total_bytes <= capacity;
      if (r.name == "exact") proven = std::max(proven, r.plan.lower_bound);
    }
    if (found) {
      std::fprintf(stderr, "keel-plan: capacity %llu: found (%s, %llu bytes)\n", static_cast<unsigned long long>(capacity),
                   smallest != nullptr ? smallest->name.c_str() : "?",
                   static_cast<unsigned long long>(smallest != nullptr ? smallest->total_bytes : 0));
      return 0;
    }
    if (proven > capacity) {
      std::fprintf(stderr, "keel-plan: capacity %llu: proven impossible (lower bound %llu bytes)\n",
                   static_cast<unsigned long long>(capacity), static_cast<unsigned long long>(proven));
      return kCapacityImpossible;
    }
    std::fprintf(stderr, "keel-plan: capacity %llu: unknown within the time limit\n", static_cast<unsigned long long>(capacity));
    return kCapacityUnknown;
  }
  return 0;
}

int main(int argc, char** argv) {
  return keel::cli::RunGuarded("keel-plan", keel::driver::CurrentPhase, [&] { return RunMain(argc, argv); });
}
