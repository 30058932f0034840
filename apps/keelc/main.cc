// keelc — the Keel compiler: ONNX model → model.keel (bytecode) + model.keel.so (kernels).
//
//   keelc model.onnx -o model.keel [--target cpu|cuda] [--memory-plan S] [--dump-ir=after-PASS]
//   keelc --emit=cuda-host model.onnx -o model_host.cu   (also writes model_host.keel + .keel.so)
//
// Exit status: 0 on success; 1 with a one-line reason on stderr for any error;
// 2 for bad command-line usage.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "apps/common/cli.h"
#include "apps/common/pipeline_flags.h"
#include "compiler/driver/phase.h"
#include "compiler/driver/compile.h"
#include "compiler/driver/cuda_host_emitter.h"
#include "compiler/memory/planner.h"
#include "compiler/ops/registry.h"
#include "compiler/passes/pass_manager.h"

namespace {

const char kUsage[] = R"(usage: keelc MODEL.onnx -o OUT.keel [options]

Compiles an ONNX model into a Keel executable (OUT.keel) and its kernel library
(OUT.keel.so). Both files are needed at run time (keel-run, the C/C++ APIs).

options:
  -o, --output PATH        executable to write (the library goes to PATH.so)
  --target cpu|cuda        device to compile for (default: cpu)
  --memory-plan S          memory planner (default: auto = greedy-size, then a
                           bounded search when it is above the peak-live bound); one of:
                           %s
  --input-shape NAME=D,D,..  static shape for a graph input (dynamic dims)
  --batch N                value for every remaining dynamic dimension
  --freeze-input NAME=FILE replace graph input NAME by a constant: FILE holds its raw
                           bytes (the input's element type and shape, little-endian,
                           row-major); the compiled model no longer has that input.
                           For inputs that must be compile-time constants (shapes, k).
  --precision P            fp32 (default), tf32 (f32 storage; library GEMM/conv may use
                           TF32 on the GPU), fp16 or bf16: weights and activations
                           stored in half where the ops allow it, f32 kept for
                           softmax, normalizations, sums, exp/log (the summary lists
                           them); weights converted at compile time
  --precision-io f32|half  model inputs and outputs of fp16/bf16 builds: f32 (default,
                           casts at the edges) or the half type itself
  --layout L               image layout of convolutions and pools: auto (default:
                           channels-last on CUDA at fp16/bf16, where cuDNN's tensor
                           cores want it, and on the CPU at fp32 for the pointwise
                           and depthwise convolutions of MobileNet-like chains;
                           channels-first otherwise), nchw, or nhwc (channels-last
                           wherever the target has a faster kernel for it);
                           transposes only where NCHW data enters or leaves
  --winograd W             3x3 stride-1 convolutions on the CPU as Winograd F(m,3)
                           with weights transformed at compile time: auto (default:
                           per convolution, F(4,3), F(2,3) or none by estimated cost),
                           off, f2 or f4 (every such convolution with that tile)
  --conv-kernel K          CUDA convolutions in half precision: auto (default: Keel's
                           own tensor-core kernel for channels-last ones with few
                           channels, cuDNN for the rest) or cudnn (cuDNN for all)
  --cpu NAME               LLVM CPU for CPU kernels: auto (x86-64-v4 when the build
                           host has AVX-512, x86-64-v3 with AVX2+FMA, else x86-64),
                           native, x86-64, x86-64-v3, ... The VM refuses to load
                           kernels for extensions its CPU lacks.
  --ops                    list the ONNX ops Keel compiles (versions, kind) and exit
  --passes                 list the graph passes and exit
  --disable-pass NAME      skip a pass (repeatable)
  --dump-ir=after-PASS     print the graph IR after PASS ("after-all": every pass)
  --plan-time-limit SEC    time limit of search planners (default 10)
  --emit=cuda-host         -o names a .cu file: a standalone C++/CUDA host program making
                           the VM's calls for the compiled model (implies --target cuda);
                           the executable and library go beside it (X.cu -> X.keel, X.keel.so)
  -q, --quiet              no summary
  -h, --help               this text
)";

void PrintUsage(FILE* out) { std::fprintf(out, kUsage, keel::cli::Join(keel::memory::PlannerNames(), ", ").c_str()); }

int UsageError(const std::string& message) { return keel::cli::UsageError("keelc", message); }

bool ParseShape(const std::string& text, std::vector<int64_t>& shape) {
  std::stringstream in(text);
  std::string dim;
  while (std::getline(in, dim, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(dim.c_str(), &end, 10);
    if (dim.empty() || *end != '\0' || v < 0) return false;
    shape.push_back(v);
  }
  return !shape.empty();
}

// One line per ONNX op of the registry: its since-versions Keel implements and
// how it is compiled (the fusion class, "composite" for ops expanded into
// others, "refused" for ops Keel knows and declines with a reason).
void PrintOps() {
  for (const keel::ops::OpDef* def : keel::ops::Registry::Get().All()) {
    if (!def->domain.empty()) continue;
    std::string versions;
    for (int v : def->supported.empty() ? def->versions : def->supported) {
      versions += (versions.empty() ? "" : ",") + std::to_string(v);
    }
    const char* kind = !def->infer   ? "refused"
                       : def->expand ? "composite"
                                     : keel::ops::FusionClassName(def->fusion);
    std::printf("%-28s %-12s %s\n", def->name.c_str(), kind, versions.c_str());
  }
}

}  // namespace

static int RunMain(int argc, char** argv) {
  keel::driver::CompileOptions options;
  bool quiet = false;
  std::string emit;
  bool target_given = false;
  for (keel::cli::ArgScanner args(argc, argv); args.Next();) {
    const std::string& arg = args.arg();
    std::string v;
    if (arg == "-h" || arg == "--help") {
      PrintUsage(stdout);
      return 0;
    } else if (arg == "--ops") {
      PrintOps();
      return 0;
    } else if (arg == "--passes") {
      for (const auto& p : keel::passes::ListPasses()) std::printf("%-20s %s\n", p.name.c_str(), p.description.c_str());
      return 0;
    } else if (arg == "-q" || arg == "--quiet") {
      quiet = true;
    } else if (args.Value("-o", v) || args.Value("--output", v)) {
      options.output_path = v;
    } else if (args.Value("--target", v)) {
      options.target = v;
      target_given = true;
    } else if (args.Value("--emit", v)) {
      if (v != "cuda-host") return UsageError("--emit expects cuda-host (got '" + v + "')");
      emit = v;
    } else if (args.Value("--memory-plan", v)) {
      options.memory_plan = v;
    } else if (std::string error; keel::cli::PipelineFlag(args, options, error)) {
      if (!error.empty()) return UsageError(error);
    } else if (args.Value("--precision-io", v)) {
      if (v != "f32" && v != "half") return UsageError("--precision-io expects f32 or half (got '" + v + "')");
      options.pipeline.mixed_precision.half_io = v == "half";
    } else if (args.Value("--cpu", v)) {
      options.backend.cpu = v;
    } else if (args.Value("--disable-pass", v)) {
      options.pipeline.disabled.insert(v);
    } else if (args.Value("--plan-time-limit", v)) {
      options.planner_time_limit_seconds = std::atof(v.c_str());
    } else if (args.Value("--batch", v)) {
      options.import.default_dynamic_dim = std::atoll(v.c_str());
      if (options.import.default_dynamic_dim < 1) return UsageError("--batch needs a positive integer");
    } else if (args.Value("--input-shape", v)) {
      const size_t eq = v.find('=');
      std::vector<int64_t> shape;
      if (eq == std::string::npos || !ParseShape(v.substr(eq + 1), shape)) {
        return UsageError("--input-shape expects NAME=D,D,... (got '" + v + "')");
      }
      options.import.input_shapes[v.substr(0, eq)] = shape;
    } else if (args.Value("--freeze-input", v)) {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
        return UsageError("--freeze-input expects NAME=FILE (got '" + v + "')");
      }
      std::ifstream f(v.substr(eq + 1), std::ios::binary);
      if (!f) {
        std::fprintf(stderr, "keelc: error: --freeze-input: cannot open '%s'\n", v.substr(eq + 1).c_str());
        return 1;
      }
      options.import.frozen_inputs[v.substr(0, eq)] =
          std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    } else if (args.Value("--dump-ir", v)) {
      if (v.rfind("after-", 0) != 0) return UsageError("--dump-ir expects after-PASS or after-all");
      std::string pass = v.substr(6);
      options.pipeline.dump_ir_after.insert(pass == "all" ? "*" : pass);
    } else if (!arg.empty() && arg[0] == '-') {
      return UsageError("unknown option '" + arg + "'");
    } else if (options.model_path.empty()) {
      options.model_path = arg;
    } else {
      return UsageError("more than one model given ('" + options.model_path + "', '" + arg + "')");
    }
  }
  if (options.model_path.empty()) return UsageError("no model given");
  if (options.output_path.empty()) return UsageError("no output given (-o OUT.keel)");

  std::string host_path;
  if (!emit.empty()) {
    if (target_given && options.target != "cuda") return UsageError("--emit=cuda-host needs --target cuda");
    options.target = "cuda";
    host_path = options.output_path;
    const size_t dot = host_path.rfind('.');
    const size_t slash = host_path.rfind('/');
    const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
    options.output_path = (has_ext ? host_path.substr(0, dot) : host_path) + ".keel";
    if (options.output_path == host_path) return UsageError("-o must not end in .keel with --emit=cuda-host");
  }
  // -o DIR/name: make DIR (and its parents), as a user expects of a compiler.
  const std::filesystem::path out_dir = std::filesystem::path(options.output_path).parent_path();
  if (!out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) {
      std::fprintf(stderr, "keelc: error: cannot create the output folder '%s': %s\n", out_dir.c_str(),
                   ec.message().c_str());
      return 1;
    }
  }
  auto summary = keel::driver::CompileModel(options);
  if (!summary.ok()) {
    std::fprintf(stderr, "keelc: error: %s\n", summary.status().ToString().c_str());
    return 1;
  }
  if (!quiet) std::fputs(keel::driver::FormatSummary(*summary).c_str(), stdout);
  if (!host_path.empty()) {
    keel::driver::CudaHostOptions host;
    host.keel_path = options.output_path;
    host.library_path = options.output_path + ".so";
    host.source_name = options.model_path;
    keel::Status s = keel::driver::WriteCudaHostProgram(host, host_path);
    if (!s.ok()) {
      std::fprintf(stderr, "keelc: error: %s\n", s.ToString().c_str());
      return 1;
    }
    if (!quiet) std::printf("host program: %s (executable %s, library %s.so)\n", host_path.c_str(),
                            options.output_path.c_str(), options.output_path.c_str());
  }
  return 0;
}

int main(int argc, char** argv) {
  return keel::cli::RunGuarded("keelc", keel::driver::CurrentPhase, [&] { return RunMain(argc, argv); });
}
