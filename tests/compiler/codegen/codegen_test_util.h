// tests/compiler/codegen/codegen_test_util.h — helpers for codegen tests: build
// small canonical graphs (single ops and keel.Fused groups), compile lowered
// kernels into a kernel library in a temp dir, dlopen it, run a kernel with a
// serial and a threaded parallel_for, and compare with the reference evaluator
// (keel_reference) by relative L2 error.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/kernel_spec.h"
#include "compiler/codegen/lower.h"
#include "compiler/ir/graph.h"
#include "keel/kernel_abi.h"

namespace keel::codegen::testing {

// Builds nodes with canonical attributes and inferred output types.
class GraphBuilder {
 public:
  GraphBuilder() : graph_(std::make_unique<ir::Graph>()) {}
  explicit GraphBuilder(ir::Graph* graph) : graph_ptr_(graph) {}

  ir::Graph& graph() { return graph_ptr_ ? *graph_ptr_ : *graph_; }
  ir::Value* Input(const std::string& name, std::vector<int64_t> shape, ir::DType dtype = ir::DType::kF32);
  ir::Value* ConstF32(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& values);
  ir::Value* ConstI64(const std::string& name, std::vector<int64_t> shape, const std::vector<int64_t>& values);
  // Adds op(inputs) with attributes, canonicalizes it and types its outputs.
  // Fails the current test (ADD_FAILURE) and returns nullptr on error.
  ir::Node* Op(const std::string& op, std::vector<ir::Value*> inputs, const ir::Attributes& attrs = {},
               size_t num_outputs = 1);

 private:
  std::unique_ptr<ir::Graph> graph_;
  ir::Graph* graph_ptr_ = nullptr;
};

// A keel.Fused node in `outer` whose body is built by `build(body_builder, body_inputs)`
// returning the body outputs. Outer inputs map 1:1 to body inputs.
ir::Node* MakeFused(ir::Graph& outer, const std::vector<ir::Value*>& outer_inputs,
                    const std::function<std::vector<ir::Value*>(GraphBuilder&, const std::vector<ir::Value*>&)>& build);

// `conv` (a Conv node of `b`) with a residual input "res" of its output's shape added and a
// Relu behind, as one keel.Fused node of b's graph (a ResNet block's tail).
ir::Node* FuseResidualRelu(GraphBuilder& b, const ir::Node& conv);

// A dlopened kernel library, removed with its directory on destruction.
class LoadedLibrary {
 public:
  ~LoadedLibrary();
  void* handle = nullptr;
  std::string dir, path;
  keel_cpu_kernel_fn Kernel(const std::string& name) const;
};

// The spec of a hand-written kernel: its name and arguments, the first
// `num_inputs` of them inputs.
inline KernelSpec SpecOf(std::shared_ptr<const KernelFunc> k, int num_inputs) {
  KernelSpec spec;
  spec.name = k->name();
  spec.args = k->args();
  spec.num_inputs = num_inputs;
  spec.kernel = std::move(k);
  return spec;
}

// Emits `specs` into a fresh temp dir for LLVM CPU `cpu` ("auto": the host's
// widest ISA; "x86-64", "x86-64-v3" and "x86-64-v4" pick SSE2, AVX2 or
// AVX-512, which the host must support to run them) and dlopens the result;
// nullptr + test failure on error.
std::unique_ptr<LoadedLibrary> CompileAndLoad(const std::vector<KernelSpec>& specs, const std::string& library_id,
                                              const std::string& cpu = "auto");

// Runs `kernel` on `inputs` (one per spec input arg) with either a serial or a
// threaded parallel_for; returns the outputs (one per spec output arg).
std::vector<std::vector<uint8_t>> RunKernel(keel_cpu_kernel_fn kernel, const KernelSpec& spec,
                                            const std::vector<ir::TensorDataPtr>& inputs, bool threaded);

// The whole check: lower `node`, compile, run with random inputs (constants keep
// their data; integer inputs draw from [0, int_range)), serial and threaded, and
// compare every output against ops::EvaluateNode. Returns the lowered spec.
KernelSpec CheckNodeAgainstReference(const ir::Node& node, uint32_t seed, double tolerance = 1e-5,
                                     int64_t int_range = 4, const LowerOptions& options = {});

// CheckNodeAgainstReference on b.Op(op, inputs, attrs): the one-op test. A test
// failure (and an empty spec) when the op cannot be built.
KernelSpec CheckOp(GraphBuilder& b, const std::string& op, std::vector<ir::Value*> inputs,
                   const ir::Attributes& attrs, uint32_t seed, double tolerance = 1e-5, int64_t int_range = 4);

// Attributes from a list: Attrs({{"axis", int64_t{1}}, {"perm", std::vector<int64_t>{1, 0}}}).
ir::Attributes Attrs(std::initializer_list<std::pair<std::string, ir::AttrValue>> values);

double RelativeL2(const std::vector<double>& got, const std::vector<double>& want);

// `count` values uniform in [-1, 1), the same for the same seed.
inline std::vector<float> RandomFloats(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace keel::codegen::testing
