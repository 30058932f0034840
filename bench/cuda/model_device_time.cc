// bench/cuda/model_device_time.cc — keel-cuda-time: where a compiled model's
// CUDA time goes, like for like with a framework's CUDA-graph replay.
//
//   keel-cuda-time model.keel [--input name=file.bin ...] [--warmup N] [--iterations N]
//                  [--name NAME] [--kernels] [--allow-tf32] [--tuning-file PATH] [--load-twice] [--first-runs N] [--first-plain]
//
// Prints one JSON object:
//   e2e_ms        median wall time of VirtualMachine::Run with CUDA-graph replay:
//                 what an application sees (host->device input copy, all
//                 kernels, device->host output copy, synchronization);
//   graph_ms      median device time of the replayed graph alone (cudaEvents
//                 around cudaGraphLaunch; from the VM's trace hook);
//   copies_ms     device time of the program's own host<->device copies, from
//                 one traced run without a graph (each operation timed alone);
//   compute_ms    graph_ms - copies_ms: the device time of the model's kernels
//                 inside the graph, the like-for-like number against a
//                 framework's graph replay whose inputs already sit on the GPU;
//   kernels_ms    sum of the traced kernels' device times (no launch gaps).
// --kernels also prints one line per traced instruction with its device time,
// sorted by time (the heaviest first). --tuning-file: VmOptions::tuning_file
// (records the timed cuDNN/cuBLASLt choices, or reuses them: a profiler that
// slows every kernel would otherwise distort the timing). --load-twice creates
// and destroys one VM before the timed one: with a --tuning-file that does not
// exist yet, the first times the library choices and records them, and the
// second, in the same process, reads them (does timing at load leave the
// process's replays slower, or only the VM that timed?). --first-runs N
// (implies --load-twice) runs that first VM N times before it goes;
// --first-plain makes it a VM without CUDA graphs (its launches go straight to
// the stream). Uses only the
// public API.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "apps/common/vm_env.h"
#include "keel/vm.h"

namespace {

int Fail(const std::string& m) {
  std::fprintf(stderr, "keel-cuda-time: error: %s\n", m.c_str());
  return 1;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Device time of each cudaGraphLaunch (replays report one event per Run).
class GraphTimes final : public keel::TraceObserver {
 public:
  void OnInstruction(const keel::TraceEvent& e) override {
    if (e.op.kind == keel::DeviceOpKind::kLaunch && e.op.device_ns > 0) ms.push_back(e.op.device_ns * 1e-6);
  }
  std::vector<double> ms;
};

struct Op {
  std::string what;
  double us;
};

// One traced run without a graph: every copy and launch with its device time.
class OpTimes final : public keel::TraceObserver {
 public:
  void OnInstruction(const keel::TraceEvent& e) override {
    const double us = e.op.device_ns * 1e-3;
    if (e.op.kind == keel::DeviceOpKind::kCopy) copies_us += us;
    if (e.op.kind == keel::DeviceOpKind::kLaunch) kernels_us += us;
    if (e.op.kind == keel::DeviceOpKind::kCopy || e.op.kind == keel::DeviceOpKind::kLaunch) {
      ops.push_back({std::string(e.debug_name) + " | " + std::string(e.op.kernel) + " | " + std::string(e.op.call) +
                         (e.op.kind == keel::DeviceOpKind::kCopy ? " " + std::to_string(e.op.bytes) + " B" : ""),
                     us});
    }
  }
  double copies_us = 0, kernels_us = 0;
  std::vector<Op> ops;
};

}  // namespace

int main(int argc, char** argv) {
  std::string model, name, tuning_file;
  int warmup = 10, iterations = 200, first_runs = 0;
  bool kernels = false, tf32 = false, load_twice = false, first_plain = false;
  std::vector<std::pair<std::string, std::string>> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--kernels") kernels = true;
    else if (a == "--allow-tf32") tf32 = true;
    else if (a == "--load-twice") load_twice = true;
    else if (a == "--first-plain") first_plain = load_twice = true;
    else if ((a == "--warmup" || a == "--iterations" || a == "--name" || a == "--input" || a == "--tuning-file" ||
              a == "--first-runs") &&
             (v = next())) {
      if (a == "--tuning-file") tuning_file = v;
      if (a == "--first-runs") first_runs = std::max(0, std::atoi(v)), load_twice = true;
      if (a == "--warmup") warmup = std::max(0, std::atoi(v));
      if (a == "--iterations") iterations = std::max(1, std::atoi(v));
      if (a == "--name") name = v;
      if (a == "--input") {
        const std::string s = v;
        const size_t eq = s.find('=');
        if (eq == std::string::npos) return Fail("--input expects name=file.bin");
        inputs.emplace_back(s.substr(0, eq), s.substr(eq + 1));
      }
    } else if (!a.empty() && a[0] != '-' && model.empty()) {
      model = a;
    } else {
      return Fail("bad argument '" + a + "'");
    }
  }
  if (model.empty()) return Fail("usage: keel-cuda-time model.keel [--input name=file.bin] [--kernels]");
  if (name.empty()) name = model;
  auto exe = keel::Executable::LoadFile(model);
  if (!exe.ok()) return Fail(exe.status().ToString());

  auto set_inputs = [&](keel::VirtualMachine& vm) -> keel::Status {
    for (size_t i = 0; i < (*exe)->num_inputs(); ++i) {
      const keel::TensorInfo& info = (*exe)->input(i);
      std::vector<uint8_t> bytes(info.byte_size);
      std::string file;
      for (const auto& [n, f] : inputs) file = n == info.name ? f : file;
      if (!file.empty()) {
        std::ifstream in(file, std::ios::binary);
        std::vector<uint8_t> got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::memcpy(bytes.data(), got.data(), std::min(got.size(), bytes.size()));
      } else if (info.dtype == keel::DataType::kF32) {
        for (size_t e = 0; e < bytes.size() / 4; ++e) {
          const float x = std::sin(static_cast<float>(e) * 0.001f);
          std::memcpy(&bytes[e * 4], &x, 4);
        }
      }
      KEEL_RETURN_IF_ERROR(vm.SetInput(i, bytes.data(), bytes.size(), info.shape, info.dtype));
    }
    return keel::Status::Ok();
  };

  keel::VmOptions opt;
  opt.device = "cuda";
  opt.allow_tf32 = tf32;
  opt.tuning_file = tuning_file;
  keel::tools::ApplyEnvironmentOverrides(opt);  // KEEL_CUDA_AUTOTUNE(_LOG), ... (apps/common/vm_env.h)
  if (load_twice) {
    keel::VmOptions first_opt = opt;
    first_opt.cuda_graph = !first_plain;
    auto first = keel::VirtualMachine::Create(*exe, first_opt);
    if (!first.ok()) return Fail(first.status().ToString());
    if (first_runs > 0) {
      if (keel::Status s = set_inputs(**first); !s.ok()) return Fail(s.ToString());
      for (int i = 0; i < first_runs; ++i)
        if (keel::Status s = (*first)->Run(); !s.ok()) return Fail(s.ToString());
    }
  }
  auto vm = keel::VirtualMachine::Create(*exe, opt);
  if (!vm.ok()) return Fail(vm.status().ToString());
  if (keel::Status s = set_inputs(**vm); !s.ok()) return Fail(s.ToString());
  for (int i = 0; i < warmup; ++i)
    if (keel::Status s = (*vm)->Run(); !s.ok()) return Fail(s.ToString());
  std::vector<double> wall;
  for (int i = 0; i < iterations; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (keel::Status s = (*vm)->Run(); !s.ok()) return Fail(s.ToString());
    wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  GraphTimes graph;
  (*vm)->SetTraceObserver(&graph);
  for (int i = 0; i < iterations; ++i)
    if (keel::Status s = (*vm)->Run(); !s.ok()) return Fail(s.ToString());
  (*vm)->SetTraceObserver(nullptr);
  vm->reset();

  opt.cuda_graph = false;
  auto plain = keel::VirtualMachine::Create(*exe, opt);
  if (!plain.ok()) return Fail(plain.status().ToString());
  if (keel::Status s = set_inputs(**plain); !s.ok()) return Fail(s.ToString());
  for (int i = 0; i < 3; ++i)
    if (keel::Status s = (*plain)->Run(); !s.ok()) return Fail(s.ToString());
  OpTimes ops;
  (*plain)->SetTraceObserver(&ops);
  if (keel::Status s = (*plain)->Run(); !s.ok()) return Fail(s.ToString());
  (*plain)->SetTraceObserver(nullptr);

  const double graph_ms = Median(graph.ms);
  const double copies_ms = ops.copies_us * 1e-3;
  std::printf("{\"name\": \"%s\", \"e2e_ms\": %.4f, \"graph_ms\": %.4f, \"copies_ms\": %.4f, \"compute_ms\": %.4f, "
              "\"kernels_ms\": %.4f, \"launches\": %zu}\n",
              name.c_str(), Median(wall), graph_ms, copies_ms, graph_ms - copies_ms, ops.kernels_us * 1e-3,
              ops.ops.size());
  if (kernels) {
    std::stable_sort(ops.ops.begin(), ops.ops.end(), [](const Op& a, const Op& b) { return a.us > b.us; });
    for (const Op& o : ops.ops) std::printf("  %9.2f us  %s\n", o.us, o.what.c_str());
  }
  return 0;
}
