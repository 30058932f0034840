// apps/keel-bench/keel_bench.cc — latency of a compiled model, for benchmark runners.
//
//   keel-bench model.keel [--device cpu|cuda] [--threads N] [--warmup N] [--iterations N]
//              [--min-seconds S] [--input name=file.bin ...] [--no-cuda-graph] [--allow-tf32]
//              [--tuning-file PATH]
//              [--name NAME] [--json] [--profile] [--profile-all]
//
// Loads once, creates one VM, runs `warmup` times, then times each Run() with a
// steady clock (Run returns when the outputs are ready, on every device) until
// both `iterations` runs and `min-seconds` have passed. Prints median, p10, p90,
// min and mean in milliseconds (one table row, or one JSON object with --json),
// and the process's CPU time per timed run (getrusage RUSAGE_SELF around the
// timed loop: user + system time of every thread, the pool's spinning
// included, divided by the number of runs), which unlike wall time does not
// grow when other processes take the cores.
// Also prints the set-up: `load` is Executable::LoadFile plus
// VirtualMachine::Create (on CUDA: the module load, the weights' upload, the
// library plans, and any timed algorithm or engine choice), `first` the first
// Run (on CUDA: the graph's capture and instantiation).
// Inputs not given get a deterministic pattern. Uses only the public API.
// --profile: after the timing, runs `iterations` more times with a trace observer
// and prints each invoke's median wall time (sorted, with its share of the run):
// where a model's time goes, without the first run's cold caches. It leaves out
// instructions under 0.2% of the run; --profile-all prints every one (the tools
// that sum them, scripts/profile_vs_ort.py: ConvNeXt-T's 14x14 depthwise layers
// and LayerNorms are each under 0.2%, together 7% of its run).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "apps/common/vm_env.h"
#include "keel/vm.h"

namespace {

constexpr const char* kUsage =
    "usage: keel-bench model.keel [--device cpu|cuda] [--threads N] [--warmup N] [--iterations N]\n"
    "                  [--min-seconds S] [--input name=file.bin ...] [--no-cuda-graph] [--allow-tf32]\n"
    "                  [--tuning-file PATH] [--name NAME] [--json] [--profile] [--profile-all]\n"
    "  --warmup       untimed runs first (default 5; the first CUDA run captures the graph)\n"
    "  --iterations   at least N timed runs (default 50)\n"
    "  --min-seconds  and at least S seconds of timed runs (default 0.5)\n"
    "  --json         print one JSON object instead of a table row\n"
    "  --profile      then print each instruction's median time over `iterations` traced runs\n"
    "                 (those of at least 0.2% of the run; --profile-all: every one)\n"
    "  --tuning-file  cuda: reuse the cuDNN/cuBLASLt choices recorded in PATH, add new ones\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "keel-bench: error: %s\n", message.c_str());
  return 1;
}

// Per-instruction wall times of the traced runs (the observer runs on Run()'s thread).
class ProfileObserver : public keel::TraceObserver {
 public:
  struct Row {
    std::string name, op;
    std::vector<double> ns;
  };
  void OnInstruction(const keel::TraceEvent& e) override {
    Row& r = rows_[e.instruction_index];
    if (r.ns.empty()) {
      r.op = keel::OpCodeName(e.opcode);
      r.name = std::string(e.debug_name);
    }
    r.ns.push_back(static_cast<double>(e.duration_ns));
  }
  const std::map<uint32_t, Row>& rows() const { return rows_; }

 private:
  std::map<uint32_t, Row> rows_;
};

// User + system CPU time of this process (all threads) so far, in seconds.
double ProcessCpuSeconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
}

double Percentile(std::vector<double> sorted, double p) {
  const double pos = p * (sorted.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, name;
  keel::VmOptions vm_options;
  int warmup = 5, iterations = 50;
  double min_seconds = 0.5;
  bool json = false, profile = false, profile_all = false;
  std::vector<std::pair<std::string, std::string>> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--profile" || arg == "--profile-all") {
      profile = true;
      profile_all = profile_all || arg == "--profile-all";
    } else if (arg == "--no-cuda-graph") {
      vm_options.cuda_graph = false;
    } else if (arg == "--allow-tf32") {
      vm_options.allow_tf32 = true;
    } else if ((arg == "--device" || arg == "--name" || arg == "--threads" || arg == "--warmup" ||
                arg == "--iterations" || arg == "--min-seconds" || arg == "--input" || arg == "--tuning-file") &&
               (v = next()) != nullptr) {
      if (arg == "--device") vm_options.device = v;
      if (arg == "--name") name = v;
      if (arg == "--tuning-file") vm_options.tuning_file = v;
      if (arg == "--threads") vm_options.num_threads = std::atoi(v);
      if (arg == "--warmup") warmup = std::max(0, std::atoi(v));
      if (arg == "--iterations") iterations = std::max(1, std::atoi(v));
      if (arg == "--min-seconds") min_seconds = std::max(0.0, std::atof(v));
      if (arg == "--input") {
        const std::string s = v;
        const size_t eq = s.find('=');
        if (eq == std::string::npos) return Fail("--input expects name=file.bin, got '" + s + "'");
        inputs.emplace_back(s.substr(0, eq), s.substr(eq + 1));
      }
    } else if (!arg.empty() && arg[0] != '-' && model.empty()) {
      model = arg;
    } else {
      std::fprintf(stderr, "keel-bench: bad argument '%s'\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }
  if (model.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (name.empty()) name = model;

  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  const auto load_start = Clock::now();
  auto exe = keel::Executable::LoadFile(model);
  if (!exe.ok()) return Fail(exe.status().ToString());
  keel::tools::ApplyEnvironmentOverrides(vm_options);  // KEEL_CUDA_AUTOTUNE, ... (apps/common/vm_env.h)
  auto vm = keel::VirtualMachine::Create(*exe, vm_options);
  if (!vm.ok()) return Fail(vm.status().ToString());
  const double load_ms = ms_since(load_start);

  for (size_t i = 0; i < (*exe)->num_inputs(); ++i) {
    const keel::TensorInfo& info = (*exe)->input(i);
    std::vector<uint8_t> bytes(info.byte_size);
    std::string file;
    for (const auto& [n, f] : inputs) file = n == info.name ? f : file;
    if (!file.empty()) {
      std::ifstream in(file, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (!in.eof() && !in) return Fail("cannot read " + file);
    } else {
      for (size_t b = 0; b < bytes.size(); ++b) bytes[b] = static_cast<uint8_t>((b * 131 + 7) % 61);
      if (info.dtype == keel::DataType::kF32) {
        for (size_t e = 0; e < bytes.size() / 4; ++e) {
          const float x = std::sin(static_cast<float>(e) * 0.001f);
          std::memcpy(&bytes[e * 4], &x, 4);
        }
      }
    }
    keel::Status st = (*vm)->SetInput(i, bytes.data(), bytes.size(), info.shape, info.dtype);
    if (!st.ok()) return Fail(st.ToString());
  }

  double first_ms = -1;
  for (int i = 0; i < warmup; ++i) {
    const auto t0 = Clock::now();
    keel::Status st = (*vm)->Run();
    if (!st.ok()) return Fail(st.ToString());
    if (i == 0) first_ms = ms_since(t0);
  }
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(iterations) * 4);
  const double cpu_start = ProcessCpuSeconds();
  const auto start = Clock::now();
  while (static_cast<int>(ms.size()) < iterations ||
         std::chrono::duration<double>(Clock::now() - start).count() < min_seconds) {
    const auto t0 = Clock::now();
    keel::Status st = (*vm)->Run();
    const auto t1 = Clock::now();
    if (!st.ok()) return Fail(st.ToString());
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (first_ms < 0) first_ms = ms.back();  // --warmup 0: the first timed run is the first
  }
  const double cpu_ms = (ProcessCpuSeconds() - cpu_start) * 1e3 / static_cast<double>(ms.size());
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double v : ms) mean += v / ms.size();
  const double median = Percentile(sorted, 0.5), p10 = Percentile(sorted, 0.1), p90 = Percentile(sorted, 0.9);
  if (json) {
    std::printf("{\"name\": \"%s\", \"device\": \"%s\", \"threads\": %d, \"plan\": \"%.*s\", \"runs\": %zu, "
                "\"median_ms\": %.4f, \"p10_ms\": %.4f, \"p90_ms\": %.4f, \"min_ms\": %.4f, \"mean_ms\": %.4f, \"cpu_ms\": %.4f, \"load_ms\": %.1f, \"first_run_ms\": %.1f}\n",
                name.c_str(), vm_options.device.c_str(), (*vm)->num_threads(),
                static_cast<int>((*exe)->plan_strategy().size()), (*exe)->plan_strategy().data(), ms.size(), median,
                p10, p90, sorted.front(), mean, cpu_ms, load_ms, first_ms);
  } else {
    std::printf("%-28s %-6s threads=%-2d runs=%-5zu median %.3f ms  p10 %.3f  p90 %.3f  min %.3f  mean %.3f  cpu %.3f"
                "  load %.1f ms  first %.1f ms\n",
                name.c_str(), vm_options.device.c_str(), (*vm)->num_threads(), ms.size(), median, p10, p90,
                sorted.front(), mean, cpu_ms, load_ms, first_ms);
  }
  if (profile) {
    ProfileObserver observer;
    (*vm)->SetTraceObserver(&observer);
    for (int i = 0; i < iterations; ++i) {
      keel::Status st = (*vm)->Run();
      if (!st.ok()) return Fail(st.ToString());
    }
    (*vm)->SetTraceObserver(nullptr);
    struct Line {
      double ms;
      uint32_t index;
      const ProfileObserver::Row* row;
    };
    std::vector<Line> lines;
    double total = 0;
    for (const auto& [index, row] : observer.rows()) {
      std::vector<double> s = row.ns;
      std::sort(s.begin(), s.end());
      lines.push_back({Percentile(s, 0.5) / 1e6, index, &row});
      total += lines.back().ms;
    }
    std::sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.ms > b.ms; });
    std::printf("profile: %d traced runs, sum of instruction medians %.3f ms\n", iterations, total);
    for (const Line& l : lines) {
      if (!profile_all && l.ms < total * 0.002) break;  // the rest is noise-sized
      std::printf("  %9.4f ms %5.1f%%  #%-4u %-7s %s\n", l.ms, 100 * l.ms / total, l.index, l.row->op.c_str(),
                  l.row->name.c_str());
    }
  }
  return 0;
}
