// bench/codegen/codegen_bench.cc — GFLOP/s of generated kernels: square GEMMs
// (MatMul 256..1024), a classifier GEMV, ResNet-like convolutions and
// MobileNet-like depthwise convolutions, on 1 and 2 threads. Kernels are
// lowered with the host target's options (KEEL_BENCH_TILE=MRxNR overrides the
// GEMM register tile, KEEL_BENCH_L2=bytes the cache budget of GEMM blocking,
// KEEL_BENCH_DW_ROWS the output rows per iteration of depthwise kernels).
//
// All kernels are lowered and linked into one kernel library in a temp dir at
// start-up (that compile time is not measured), then each benchmark calls the
// kernel through the ABI with the VM's own thread pool as parallel_for (so the
// 2-thread numbers include the runtime's real dispatch cost).
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "compiler/codegen/gemm_panels.h"
#include "compiler/codegen/llvm_cpu_emitter.h"
#include "compiler/codegen/lower.h"
#include "compiler/ir/graph.h"
#include "keel/kernel_abi.h"
#include "vm/cpu/thread_pool.h"

namespace keel::codegen {
namespace {

struct Case {
  std::string label;
  KernelSpec spec;
  double flops;
};

struct Library {
  std::vector<Case> cases;
  void* handle = nullptr;
  std::vector<std::unique_ptr<ir::Graph>> graphs;
};

ir::Node* AddOp(ir::Graph& g, const std::string& op, std::vector<ir::Value*> in, ir::TensorType out) {
  ir::Node* n = g.AddNode(op, op, std::move(in), 1);
  n->output(0)->set_type(std::move(out));
  return n;
}

// Lowering options for the host's resolved target; KEEL_BENCH_TILE=MRxNR
// overrides the GEMM register tile (for tile-size experiments).
LowerOptions BenchLowerOptions() {
  auto target = ResolveCpuTarget({});
  LowerOptions o = LowerOptionsForCpuFeatures(target.ok() ? target->features : "");
  if (const char* t = std::getenv("KEEL_BENCH_TILE")) {
    long mr = 0, nr = 0;
    if (std::sscanf(t, "%ldx%ld", &mr, &nr) == 2 && mr > 0 && nr > 0) {
      o.gemm_mr = mr;
      o.gemm_mr_alt = 0;
      o.gemm_nr = nr;
    }
  }
  if (const char* l2 = std::getenv("KEEL_BENCH_L2")) o.l2_bytes = std::atol(l2);
  if (const char* rows = std::getenv("KEEL_BENCH_DW_ROWS")) o.depthwise_rows = std::atol(rows);
  fprintf(stderr, "GEMM register tile %ldx%ld\n", static_cast<long>(o.gemm_mr), static_cast<long>(o.gemm_nr));
  return o;
}

Library& Lib() {
  static Library* lib = [] {
    auto* l = new Library;
    const LowerOptions options = BenchLowerOptions();
    int64_t index = 0;
    for (int64_t s : {256, 512, 1024}) {
      auto g = std::make_unique<ir::Graph>();
      ir::Value* a = g->AddInput("a", {ir::DType::kF32, {s, s}});
      ir::Value* b = g->AddInput("b", {ir::DType::kF32, {s, s}});
      ir::Node* n = AddOp(*g, "MatMul", {a, b}, {ir::DType::kF32, {s, s}});
      auto spec = LowerNodeToKernel(*n, index++, options);
      if (!spec.ok()) { fprintf(stderr, "%s\n", spec.status().ToString().c_str()); std::exit(1); }
      l->cases.push_back({"gemm" + std::to_string(s), *spec, 2.0 * s * s * s});
      l->graphs.push_back(std::move(g));
    }
    {
      // Classifier: M = 1 against transposed weights (dot products).
      auto g = std::make_unique<ir::Graph>();
      ir::Value* x = g->AddInput("x", {ir::DType::kF32, {1, 1280}});
      ir::Value* w = g->AddInput("w", {ir::DType::kF32, {1000, 1280}});
      ir::Node* n = AddOp(*g, "Gemm", {x, w}, {ir::DType::kF32, {1, 1000}});
      n->attrs().Set("transA", int64_t{0});
      n->attrs().Set("transB", int64_t{1});
      n->attrs().Set("alpha", 1.0);
      n->attrs().Set("beta", 1.0);
      auto spec = LowerNodeToKernel(*n, index++, options);
      if (!spec.ok()) { fprintf(stderr, "%s\n", spec.status().ToString().c_str()); std::exit(1); }
      l->cases.push_back({"gemv_1x1000x1280_t", *spec, 2.0 * 1000 * 1280});
      l->graphs.push_back(std::move(g));
    }
    {
      // ResNet's stem max pool (memory-bound; flops = window compares).
      auto g = std::make_unique<ir::Graph>();
      ir::Value* x = g->AddInput("x", {ir::DType::kF32, {1, 64, 112, 112}});
      ir::Node* n = AddOp(*g, "MaxPool", {x}, {ir::DType::kF32, {1, 64, 56, 56}});
      n->attrs().Set("kernel_shape", std::vector<int64_t>{3, 3});
      n->attrs().Set("strides", std::vector<int64_t>{2, 2});
      n->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
      n->attrs().Set("dilations", std::vector<int64_t>{1, 1});
      n->attrs().Set("ceil_mode", int64_t{0});
      n->attrs().Set("count_include_pad", int64_t{0});
      auto spec = LowerNodeToKernel(*n, index++, options);
      if (!spec.ok()) { fprintf(stderr, "%s\n", spec.status().ToString().c_str()); std::exit(1); }
      l->cases.push_back({"maxpool_64x112_3x3s2", *spec, 9.0 * 64 * 56 * 56});
      l->graphs.push_back(std::move(g));
    }
    struct ConvShape { const char* name; int64_t c, h, co, k, stride, pad, group; };
    for (ConvShape c : {ConvShape{"conv_stem_3x224_64_7x7s2", 3, 224, 64, 7, 2, 3, 1},
                        ConvShape{"conv_l1_64x56_64_3x3", 64, 56, 64, 3, 1, 1, 1},
                        ConvShape{"conv_l3_256x14_256_3x3", 256, 14, 256, 3, 1, 1, 1},
                        ConvShape{"conv_l4_512x7_512_3x3", 512, 7, 512, 3, 1, 1, 1},
                        ConvShape{"dwconv_96x112_3x3s2", 96, 112, 96, 3, 2, 1, 96},
                        ConvShape{"dwconv_144x56_3x3", 144, 56, 144, 3, 1, 1, 144}}) {
      auto g = std::make_unique<ir::Graph>();
      int64_t oh = (c.h + 2 * c.pad - c.k) / c.stride + 1;
      ir::Value* x = g->AddInput("x", {ir::DType::kF32, {1, c.c, c.h, c.h}});
      ir::Value* w = g->AddInput("w", {ir::DType::kF32, {c.co, c.c / c.group, c.k, c.k}});
      ir::Node* n = AddOp(*g, "Conv", {x, w}, {ir::DType::kF32, {1, c.co, oh, oh}});
      n->attrs().Set("strides", std::vector<int64_t>{c.stride, c.stride});
      n->attrs().Set("pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad});
      n->attrs().Set("dilations", std::vector<int64_t>{1, 1});
      n->attrs().Set("group", c.group);
      auto spec = LowerNodeToKernel(*n, index++, options);
      if (!spec.ok()) { fprintf(stderr, "%s\n", spec.status().ToString().c_str()); std::exit(1); }
      l->cases.push_back({c.name, *spec, 2.0 * c.co * oh * oh * (c.c / c.group) * c.k * c.k});
      l->graphs.push_back(std::move(g));
    }
    // 3x3 stride-1 convolutions of ResNet-18 and SqueezeNet 1.1: the implicit
    // GEMM ("_plain") beside Winograd F(4,3) and F(2,3) (compiler/ops/winograd.h;
    // the transformed weight is an input here, its values do not matter for
    // time); GFLOP/s counts the direct convolution's flops for all three, so
    // they compare as speed. This is what the CPU back end's Winograd rule is
    // measured with (docs/MEASUREMENTS.md, issue 11). Each also with its weight in
    // the GEMM's row panels ("_panels"), as keelc stores constant weights.
    struct Conv3 { const char* name; int64_t c, h, co; };
    for (Conv3 c : {Conv3{"r18_l1_64x56_64", 64, 56, 64}, Conv3{"r18_l2_128x28_128", 128, 28, 128},
                    Conv3{"r18_l3_256x14_256", 256, 14, 256}, Conv3{"r18_l4_512x7_512", 512, 7, 512},
                    Conv3{"sq_fire2_16x55_64", 16, 55, 64}, Conv3{"sq_fire4_32x27_128", 32, 27, 128},
                    Conv3{"sq_fire6_48x13_192", 48, 13, 192}, Conv3{"sq_fire8_64x13_256", 64, 13, 256}}) {
      for (int64_t variant = 0; variant < 6; ++variant) {
        // 0, 1, 2: the weight row-major; 3, 4, 5: in the micro-kernel's row panels
        // (ops/packed_weight.h, as keelc stores constant weights).
        const int64_t m = variant % 3 == 0 ? 0 : variant % 3 == 1 ? 4 : 2;
        const bool panels = variant >= 3;
        auto g = std::make_unique<ir::Graph>();
        ir::Value* x = g->AddInput("x", {ir::DType::kF32, {1, c.c, c.h, c.h}});
        std::vector<int64_t> ws = m == 0 ? std::vector<int64_t>{c.co, c.c, 3, 3}
                                         : std::vector<int64_t>{(m + 2) * (m + 2), c.co, c.c};
        ir::Value* w = g->AddInput("w", {ir::DType::kF32, ws});
        ir::Node* n = AddOp(*g, "Conv", {x, w}, {ir::DType::kF32, {1, c.co, c.h, c.h}});
        n->attrs().Set("strides", std::vector<int64_t>{1, 1});
        n->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
        n->attrs().Set("dilations", std::vector<int64_t>{1, 1});
        n->attrs().Set("group", int64_t{1});
        if (m != 0) n->attrs().Set("keel.winograd", m);
        if (panels) n->attrs().Set("keel.packed_rows", GemmRowTile(options, c.co));
        auto spec = LowerNodeToKernel(*n, index++, options);
        if (!spec.ok()) { fprintf(stderr, "%s\n", spec.status().ToString().c_str()); std::exit(1); }
        const std::string suffix = std::string(m == 0 ? "_plain" : m == 4 ? "_wino4" : "_wino2") + (panels ? "_panels" : "");
        l->cases.push_back({c.name + suffix, *spec, 2.0 * c.co * c.h * c.h * c.c * 9});
        l->graphs.push_back(std::move(g));
      }
    }
    std::vector<KernelSpec> specs;
    for (const Case& c : l->cases) specs.push_back(c.spec);
    char tmpl[] = "/tmp/keel-cgbench-XXXXXX";
    if (!mkdtemp(tmpl)) std::exit(1);
    std::string path = std::string(tmpl) + "/bench.keel.so";
    CpuTargetInfo info;
    Status s = EmitCpuKernelLibrary(specs, "bench", path, {}, &info);
    if (!s.ok()) { fprintf(stderr, "%s\n", s.ToString().c_str()); std::exit(1); }
    fprintf(stderr, "kernels compiled for %s (%s)\n", info.cpu.c_str(), info.features.c_str());
    l->handle = dlopen(path.c_str(), RTLD_NOW);
    if (!l->handle) { fprintf(stderr, "%s\n", dlerror()); std::exit(1); }
    std::remove(path.c_str());
    rmdir(tmpl);
    return l;
  }();
  return *lib;
}

void BM_Kernel(benchmark::State& state, size_t case_index) {
  const Case& c = Lib().cases[case_index];
  auto fn = reinterpret_cast<keel_cpu_kernel_fn>(dlsym(Lib().handle, c.spec.name.c_str()));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<std::vector<float>> bufs;
  std::vector<void*> args;
  for (const KernelArg& a : c.spec.args) {
    int64_t n = 1;
    for (int64_t d : a.shape) n *= d;
    bufs.emplace_back(static_cast<size_t>(n));
    for (float& x : bufs.back()) x = u(rng);
  }
  for (auto& b : bufs) args.push_back(b.data());
  void* ws = c.spec.workspace_bytes ? std::aligned_alloc(64, static_cast<size_t>((c.spec.workspace_bytes + 63) / 64 * 64)) : nullptr;
  if (ws) args.push_back(ws);
  vm_internal::ThreadPool pool(static_cast<int>(state.range(0)));
  keel_cpu_kernel_ctx ctx{vm_internal::ThreadPool::ParallelForThunk, &pool};
  for (auto _ : state) {
    fn(args.data(), &ctx);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(c.flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  std::free(ws);
}

int Register() {
  Library& l = Lib();
  for (size_t i = 0; i < l.cases.size(); ++i) {
    benchmark::RegisterBenchmark(l.cases[i].label.c_str(), BM_Kernel, i)
        ->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
  }
  return 0;
}

}  // namespace
}  // namespace keel::codegen

int main(int argc, char** argv) {
  keel::codegen::Register();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
