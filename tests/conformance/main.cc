// keel_conformance — ONNX's node test cases through Keel's compiler and VM.
//
//   dump_cases.py --out DIR                      (writes DIR/manifest.tsv, DIR/cases/)
//   keel_conformance --cases DIR [--out REPORT_DIR] [--target cpu|cuda] [-j N]
//                    [--timeout SEC] [--filter REGEX] [--baseline FILE [--update-baseline]] [-v]
//                    [--phase all|compile|run --artifacts DIR]
//
// keel_conformance_run is the same program built without the compiler: it only
// runs what a "--phase compile" left in --artifacts (for machines without LLVM,
// like the GPU machine).
//
// Every tensor case is compiled and run in-process by a few long-lived worker
// processes (supervisor.h: a crash or hang costs one case), compared with the
// case's expected outputs at its tolerances, and reported per case and per op
// (report.h). With --baseline, exits 1 when a case the baseline lists stops
// passing or the pass count drops; --update-baseline rewrites the file instead.
//
// Exit status: 0 success; 1 baseline regression or I/O error; 2 usage;
// 77 skipped (--target cuda without a usable GPU).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "apps/common/cli.h"
#include "tests/conformance/case_runner.h"
#include "tests/conformance/manifest.h"
#include "tests/conformance/report.h"
#include "tests/conformance/supervisor.h"
#ifdef KEEL_CONFORMANCE_WITH_COMPILER
#include "tests/conformance/compile_case.h"
#endif

namespace {

const char kUsage[] = R"(usage: keel_conformance --cases DIR [options]

Runs the ONNX node test cases that tests/conformance/dump_cases.py wrote to DIR
through keel's compiler and VM, and writes conformance_report.json and .md.

options:
  --cases DIR          dump_cases.py's output folder (manifest.tsv, cases/)
  --out DIR            where the reports go (default: DIR of --cases)
  --target cpu|cuda    compile target and VM device (default: cpu); cuda exits 77
                       when no GPU is usable
  -j N                 worker processes (default: 2)
  --timeout SEC        per-case limit; a case over it is an error (default: 120)
  --filter REGEX       only cases whose name matches (ECMAScript regex, search)
  --baseline FILE      fail (exit 1) when a case FILE lists stops passing, or the
                       pass count drops below FILE's
  --update-baseline    rewrite --baseline FILE with the cases passing now
  --write-baseline F   also write the cases passing now to F, in the baseline format
                       (the GPU machine's run returns its baseline this way)
  --phase all|compile|run  all (default): compile and run each case; compile: only
                       compile, into --artifacts DIR (+ DIR/compiled.tsv); run: only run
                       what a compile phase left in --artifacts DIR (keel_conformance_run,
                       built without the compiler, does only this)
  --artifacts DIR      the compiled cases of the compile/run phases
  --all-ops            print every op in the summary (default: ops not all passing)
  -v, --verbose        one line per case
  -h, --help           this text
)";

int Usage(const std::string& m) { return keel::cli::UsageError("keel_conformance", m); }

// The compile phase's record: "target <t>" then "<case>\t<SerializeResult>" lines.
bool WriteCompiled(const std::string& path, const std::string& target, const std::vector<keel::conformance::Case>& cases,
                   const std::vector<size_t>& todo, const std::vector<keel::conformance::CaseResult>& results) {
  std::ofstream f(path, std::ios::trunc);
  f << "target\t" << target << "\n";
  for (size_t k = 0; k < todo.size(); ++k) {
    f << cases[todo[k]].name << "\t" << keel::conformance::SerializeResult(results[k]) << "\n";
  }
  return static_cast<bool>(f);
}

keel::Status ReadCompiled(const std::string& path, const std::string& target,
                          std::map<std::string, keel::conformance::CaseResult>& out) {
  std::ifstream f(path);
  if (!f) return keel::NotFound("cannot open '" + path + "' (run --phase compile first)");
  std::string line;
  if (!std::getline(f, line) || line != "target\t" + target) {
    return keel::InvalidArgument("'" + path + "' was not compiled for target " + target + " (first line '" + line + "')");
  }
  while (std::getline(f, line)) {
    const size_t tab = line.find('\t');
    keel::conformance::CaseResult r;
    if (tab == std::string::npos || !keel::conformance::ParseResult(line.substr(tab + 1), r)) {
      return keel::InvalidArgument("'" + path + "': malformed line '" + line + "'");
    }
    out[line.substr(0, tab)] = r;
  }
  return keel::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace keel::conformance;
  std::string cases_dir, out_dir, filter, baseline, write_baseline;
  RunOptions run;
  SupervisorOptions sup;
  bool update = false, verbose = false, all_ops = false;
  for (keel::cli::ArgScanner args(argc, argv); args.Next();) {
    const std::string& a = args.arg();
    std::string v;
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--update-baseline") {
      update = true;
    } else if (a == "-v" || a == "--verbose") {
      verbose = true;
    } else if (a == "--all-ops") {
      all_ops = true;
    } else if (args.Value("--cases", v)) {
      cases_dir = v;
    } else if (args.Value("--out", v)) {
      out_dir = v;
    } else if (args.Value("--target", v)) {
      if (v != "cpu" && v != "cuda") return Usage("--target expects cpu or cuda (got '" + v + "')");
      run.target = v;
    } else if (args.Value("-j", v) || args.Value("--jobs", v)) {
      sup.jobs = std::atoi(v.c_str());
      if (sup.jobs < 1) return Usage("-j needs a positive integer");
    } else if (args.Value("--timeout", v)) {
      sup.timeout_seconds = std::atof(v.c_str());
      if (sup.timeout_seconds <= 0) return Usage("--timeout needs a positive number of seconds");
    } else if (args.Value("--phase", v)) {
      if (v != "all" && v != "compile" && v != "run") return Usage("--phase expects all, compile or run");
      run.phase = v;
    } else if (args.Value("--artifacts", v)) {
      run.artifacts_dir = v;
    } else if (args.Value("--filter", v)) {
      filter = v;
    } else if (args.Value("--write-baseline", v)) {
      write_baseline = v;
    } else if (args.Value("--baseline", v)) {
      baseline = v;
    } else if (args.missing_value()) {
      return Usage("option '" + a + "' needs a value");
    } else {
      return Usage("unknown argument '" + a + "'");
    }
  }
  if (cases_dir.empty()) return Usage("no --cases DIR given");
  if (update && baseline.empty()) return Usage("--update-baseline needs --baseline FILE");
  if (out_dir.empty()) out_dir = cases_dir;
  if (run.phase != "all" && run.artifacts_dir.empty()) return Usage("--phase " + run.phase + " needs --artifacts DIR");
#ifdef KEEL_CONFORMANCE_WITH_COMPILER
  run.compile = CompileCase;
#else
  if (run.phase != "run") return Usage("this runner is built without the compiler: use --phase run --artifacts DIR");
#endif
  std::regex rx;
  try {
    rx = std::regex(filter);
  } catch (const std::regex_error& e) {
    return Usage("bad --filter regex: " + std::string(e.what()));
  }

  auto manifest = LoadManifest(cases_dir + "/manifest.tsv");
  if (!manifest.ok()) {
    std::fprintf(stderr, "keel_conformance: %s\n", manifest.status().ToString().c_str());
    return 1;
  }
  const std::vector<Case>& cases = manifest->cases;

  if (run.phase == "run") {
    keel::Status s = ReadCompiled(run.artifacts_dir + "/compiled.tsv", run.target, run.compiled);
    if (!s.ok()) {
      std::fprintf(stderr, "keel_conformance: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  if (run.target != "cpu" && run.phase != "compile") {
    // In a child: CUDA must not be initialized in the process that forks the workers.
    std::string why;
    const int rc = RunInChild(
        [&](int fd) {
          std::string reason;
          if (DeviceAvailable(run.target, &reason)) return 0;
          (void)!write(fd, reason.data(), reason.size());
          return 1;
        },
        &why);
    if (rc != 0) {
      std::printf("keel_conformance: skipped: no usable %s device: %s\n", run.target.c_str(),
                  why.empty() ? ("probe exited with " + std::to_string(rc)).c_str() : why.c_str());
      return 77;
    }
  }

  std::vector<size_t> todo;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].is_tensor() && std::regex_search(cases[i].name, rx)) todo.push_back(i);
  }
  const bool partial = !filter.empty();
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  run.cases_dir = cases_dir + "/cases";
  run.work_dir = (std::filesystem::temp_directory_path(ec) / ("keel-conformance-" + std::to_string(getpid()))).string();

  std::printf("keel_conformance: %zu tensor cases to run (target %s, %d workers)\n", todo.size(), run.target.c_str(),
              sup.jobs);
  std::fflush(stdout);
  size_t finished = 0;
  const auto start = std::chrono::steady_clock::now();
  std::vector<CaseResult> results = RunCases(cases, todo, run, sup, [&](size_t index, const CaseResult& r) {
    ++finished;
    if (verbose) {
      std::printf("[%zu/%zu] %-8s %s %s\n", finished, todo.size(), r.status.c_str(), cases[index].name.c_str(),
                  r.reason.c_str());
    } else if (finished % 100 == 0 || finished == todo.size()) {
      std::printf("  %zu/%zu\n", finished, todo.size());
    }
    std::fflush(stdout);
  });
  std::filesystem::remove_all(run.work_dir, ec);
  if (run.phase == "compile") {
    std::map<std::string, int> counts;
    for (const CaseResult& r : results) ++counts[r.status];
    std::printf("compile phase (%s): ", run.target.c_str());
    for (const auto& [status, n] : counts) std::printf("%s %d  ", status.c_str(), n);
    const std::string record = run.artifacts_dir + "/compiled.tsv";
    if (!WriteCompiled(record, run.target, cases, todo, results)) {
      std::fprintf(stderr, "\nkeel_conformance: cannot write '%s'\n", record.c_str());
      return 1;
    }
    std::printf("\nartifacts: %s (record %s)\n", run.artifacts_dir.c_str(), record.c_str());
    return 0;
  }

  ReportInput report;
  report.target = run.target;
  report.onnx_version = manifest->onnx_version;
  report.cases = &cases;
  report.results.resize(cases.size());
  report.ran.assign(cases.size(), false);
  for (size_t k = 0; k < todo.size(); ++k) {
    report.results[todo[k]] = results[k];
    report.ran[todo[k]] = true;
  }
  report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string json = out_dir + "/conformance_report.json", md = out_dir + "/conformance_report.md";
  keel::Status s = WriteReport(report, json, md);
  if (!s.ok()) {
    std::fprintf(stderr, "keel_conformance: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("\n%s\nreports: %s, %s\n", FormatSummary(report, all_ops).c_str(), json.c_str(), md.c_str());
  if (!write_baseline.empty()) {
    if (partial) return Usage("--write-baseline runs every case (no --filter)");
    s = WriteBaseline(report, write_baseline);
    if (!s.ok()) {
      std::fprintf(stderr, "keel_conformance: %s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("baseline of this run written to %s\n", write_baseline.c_str());
  }
  if (baseline.empty()) return 0;
  if (update) {
    if (partial) return Usage("--update-baseline runs every case (no --filter)");
    s = WriteBaseline(report, baseline);
    if (!s.ok()) {
      std::fprintf(stderr, "keel_conformance: %s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("baseline %s rewritten\n", baseline.c_str());
    return 0;
  }
  BaselineCheck check = CheckBaseline(report, baseline, partial);
  std::fputs(check.text.c_str(), stdout);
  return check.ok ? 0 : 1;
}
