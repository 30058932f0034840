// bench/compiler/compile_scaling_bench.cc — keelc's compile time and memory as
// graphs grow: an elementwise chain of N ops and a residual stack of N
// MatMul+Relu+Add layers, compiled end to end (import, passes, kernel
// selection and lowering, planning, LLVM, files) for the CPU.
//
// Compile time must stay linear (or N log N) in graph size: the counters give
// microseconds per node, which should stay flat as N grows.
// Run: build/bin/keel_compile_bench [--benchmark_filter=Chain]
#include <benchmark/benchmark.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"

namespace {

namespace fs = std::filesystem;

void AddValueInfo(onnx::ValueInfoProto* vi, const std::string& name, std::vector<int64_t> dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in, const std::string& out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  for (const auto& i : in) n->add_input(i);
  n->add_output(out);
  return n;
}

// Writes the model to a temp dir and compiles it (counters: distinct kernels, microseconds per node).
void CompileModel(benchmark::State& state, const onnx::ModelProto& m, const std::string& tag) {
  const fs::path dir = fs::temp_directory_path() / ("keel_compile_bench_" + tag);
  fs::create_directories(dir);
  const std::string path = (dir / "m.onnx").string();
  {
    std::ofstream f(path, std::ios::binary);
    m.SerializeToOstream(&f);
  }
  keel::driver::CompileOptions options;
  options.model_path = path;
  options.output_path = (dir / "m.keel").string();
  double seconds = 0;
  for (auto _ : state) {
    auto summary = keel::driver::CompileModel(options);
    if (!summary.ok()) {
      state.SkipWithError(summary.status().ToString().c_str());
      break;
    }
    seconds += summary->seconds;
    state.counters["distinct_kernels"] = static_cast<double>(summary->num_kernels);
  }
  const double nodes = static_cast<double>(m.graph().node_size());
  state.counters["us_per_node"] = seconds * 1e6 / (nodes * static_cast<double>(std::max<int64_t>(state.iterations(), 1)));
  fs::remove_all(dir);
}

void BM_ElementwiseChain(benchmark::State& state) {
  const int64_t n = state.range(0);
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("chain");
  AddValueInfo(g->add_input(), "x", {1, 64});
  static const char* kOps[] = {"Relu", "Sigmoid", "Neg", "Abs"};
  std::string prev = "x";
  for (int64_t i = 0; i < n; ++i) {
    const std::string out = "t" + std::to_string(i);
    AddNode(g, kOps[i % 4], {prev}, out);
    prev = out;
  }
  g->add_output()->set_name(prev);
  CompileModel(state, m, "chain");
}

void BM_ResidualStack(benchmark::State& state) {
  const int64_t n = state.range(0);
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("residual");
  AddValueInfo(g->add_input(), "x", {1, 16});
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(16);
  w->add_dims(16);
  for (int i = 0; i < 256; ++i) w->add_float_data(0.01f * static_cast<float>((i * 7) % 13 - 6));
  std::string prev = "x";
  for (int64_t i = 0; i < n; ++i) {
    const std::string s = std::to_string(i);
    AddNode(g, "MatMul", {prev, "w"}, "m" + s);
    AddNode(g, "Relu", {"m" + s}, "r" + s);
    AddNode(g, "Add", {prev, "r" + s}, "a" + s);
    prev = "a" + s;
  }
  g->add_output()->set_name(prev);
  CompileModel(state, m, "residual");
}

BENCHMARK(BM_ElementwiseChain)->Arg(1000)->Arg(10000)->Arg(100000)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ResidualStack)->Arg(1000)->Arg(10000)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
