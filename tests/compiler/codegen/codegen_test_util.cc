// tests/compiler/codegen/codegen_test_util.cc — see codegen_test_util.h.
#include "tests/compiler/codegen/codegen_test_util.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "compiler/codegen/llvm_cpu_emitter.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"
#include "compiler/ops/semantics.h"

namespace keel::codegen::testing {
namespace {

void SerialParallelFor(void*, int64_t n, keel_parallel_body_fn body, void* closure) { body(closure, 0, n); }

// Splits [0, n) into small uneven chunks over 3 threads (exercises chunk boundaries).
void ThreadedParallelFor(void*, int64_t n, keel_parallel_body_fn body, void* closure) {
  const int kThreads = 3;
  int64_t chunk = std::max<int64_t>(1, n / 7);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([=] {
      for (int64_t begin = t * chunk; begin < n; begin += kThreads * chunk) body(closure, begin, std::min(n, begin + chunk));
    });
  }
  for (auto& th : threads) th.join();
}

}  // namespace

ir::Value* GraphBuilder::Input(const std::string& name, std::vector<int64_t> shape, ir::DType dtype) {
  return graph().AddInput(name, ir::TensorType{dtype, std::move(shape)});
}

ir::Value* GraphBuilder::ConstF32(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& values) {
  return graph().AddConstant(name, ops::MakeTensorF32(std::move(shape), values));
}

ir::Value* GraphBuilder::ConstI64(const std::string& name, std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  return graph().AddConstant(name, ops::MakeTensorI64(std::move(shape), values));
}

ir::Node* GraphBuilder::Op(const std::string& op, std::vector<ir::Value*> inputs, const ir::Attributes& attrs,
                           size_t num_outputs) {
  ir::Node* n = graph().AddNode(op, op + "_" + std::to_string(graph().num_nodes()), std::move(inputs), num_outputs);
  for (const auto& [k, v] : attrs.all()) n->attrs().Set(k, v);
  Status s = ops::CanonicalizeNode(*n);
  if (!s.ok()) { ADD_FAILURE() << s.ToString(); return nullptr; }
  auto types = ops::InferNodeTypes(*n);
  if (!types.ok()) { ADD_FAILURE() << types.status().ToString(); return nullptr; }
  for (size_t i = 0; i < types->size() && i < n->outputs().size(); ++i) n->output(i)->set_type((*types)[i]);
  return n;
}

ir::Node* MakeFused(ir::Graph& outer, const std::vector<ir::Value*>& outer_inputs,
                    const std::function<std::vector<ir::Value*>(GraphBuilder&, const std::vector<ir::Value*>&)>& build) {
  auto body = std::make_unique<ir::Graph>();
  GraphBuilder bb(body.get());
  std::vector<ir::Value*> body_inputs;
  for (size_t i = 0; i < outer_inputs.size(); ++i)
    body_inputs.push_back(body->AddInput("b" + std::to_string(i), outer_inputs[i]->type()));
  std::vector<ir::Value*> outs = build(bb, body_inputs);
  for (ir::Value* o : outs) body->AddOutput(o);
  ir::Node* fused = outer.AddNode("keel.Fused", "fused_" + std::to_string(outer.num_nodes()), outer_inputs, outs.size());
  for (size_t i = 0; i < outs.size(); ++i) fused->output(i)->set_type(outs[i]->type());
  fused->set_body(std::move(body));
  return fused;
}

ir::Node* FuseResidualRelu(GraphBuilder& b, const ir::Node& conv) {
  std::vector<ir::Value*> ins = {conv.input(0), conv.input(1), conv.input(2),
                                 b.Input("res", conv.output(0)->type().shape)};
  const ir::Attributes attrs = conv.attrs();
  return MakeFused(b.graph(), ins, [&attrs](GraphBuilder& g, const std::vector<ir::Value*>& v) {
    ir::Node* c = g.Op("Conv", {v[0], v[1], v[2]}, attrs);
    ir::Node* add = g.Op("Add", {c->output(0), v[3]});
    return std::vector<ir::Value*>{g.Op("Relu", {add->output(0)})->output(0)};
  });
}

LoadedLibrary::~LoadedLibrary() {
  if (handle) dlclose(handle);
  if (!path.empty()) std::remove(path.c_str());
  if (!dir.empty()) rmdir(dir.c_str());
}

keel_cpu_kernel_fn LoadedLibrary::Kernel(const std::string& name) const {
  return reinterpret_cast<keel_cpu_kernel_fn>(dlsym(handle, name.c_str()));
}

std::unique_ptr<LoadedLibrary> CompileAndLoad(const std::vector<KernelSpec>& specs, const std::string& library_id,
                                              const std::string& cpu) {
  auto lib = std::make_unique<LoadedLibrary>();
  char tmpl[] = "/tmp/keel-cgtest-XXXXXX";
  if (!mkdtemp(tmpl)) { ADD_FAILURE() << "mkdtemp"; return nullptr; }
  lib->dir = tmpl;
  lib->path = lib->dir + "/model.keel.so";
  CpuTargetOptions options;
  options.cpu = cpu;
  Status s = EmitCpuKernelLibrary(specs, library_id, lib->path, options);
  if (!s.ok()) { ADD_FAILURE() << s.ToString(); return nullptr; }
  lib->handle = dlopen(lib->path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle) { ADD_FAILURE() << dlerror(); return nullptr; }
  return lib;
}

std::vector<std::vector<uint8_t>> RunKernel(keel_cpu_kernel_fn kernel, const KernelSpec& spec,
                                            const std::vector<ir::TensorDataPtr>& inputs, bool threaded) {
  std::vector<void*> args;
  std::vector<std::vector<uint8_t>> outs;
  for (size_t i = static_cast<size_t>(spec.num_inputs); i < spec.args.size(); ++i) {
    const KernelArg& a = spec.args[i];
    int64_t n = 1;
    for (int64_t d : a.shape) n *= d;
    outs.emplace_back(static_cast<size_t>(n) * ir::DTypeSize(a.dtype), 0xFF);  // NaN pattern: unwritten shows up
  }
  for (const auto& in : inputs) args.push_back(const_cast<uint8_t*>(in->bytes.data()));
  for (auto& o : outs) args.push_back(o.data());
  void* ws = nullptr;
  if (spec.workspace_bytes > 0) {
    ws = std::aligned_alloc(64, static_cast<size_t>((spec.workspace_bytes + 63) / 64 * 64));
    std::memset(ws, 0x7F, static_cast<size_t>(spec.workspace_bytes));  // garbage: kernels must not rely on zeroes
    args.push_back(ws);
  }
  keel_cpu_kernel_ctx ctx{threaded ? ThreadedParallelFor : SerialParallelFor, nullptr};
  EXPECT_EQ(kernel(args.data(), &ctx), 0);
  std::free(ws);
  return outs;
}

double RelativeL2(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double d = got[i] - want[i];
    if (std::isnan(got[i]) != std::isnan(want[i])) return INFINITY;
    if (std::isnan(got[i])) continue;
    if (std::isinf(want[i]) || std::isinf(got[i])) {
      if (got[i] != want[i]) return INFINITY;
      continue;
    }
    num += d * d;
    den += want[i] * want[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

KernelSpec CheckNodeAgainstReference(const ir::Node& node, uint32_t seed, double tolerance, int64_t int_range,
                                     const LowerOptions& options) {
  auto spec = LowerNodeToKernel(node, 0, options);
  if (!spec.ok()) { ADD_FAILURE() << spec.status().ToString(); return {}; }
  auto lib = CompileAndLoad({*spec}, "test");
  if (!lib) return *spec;
  keel_cpu_kernel_fn fn = lib->Kernel(spec->name);
  if (!fn) { ADD_FAILURE() << "symbol " << spec->name << " not exported"; return *spec; }

  std::mt19937 rng(seed);
  std::vector<ir::TensorDataPtr> args;      // per spec input
  std::vector<ir::TensorDataPtr> ref_in;    // per node input (nullptr kept)
  for (const ir::Value* v : node.inputs()) {
    if (!v) { ref_in.push_back(nullptr); continue; }
    ir::TensorDataPtr t;
    if (v->is_constant()) {
      t = v->constant();
    } else {
      std::vector<double> vals(static_cast<size_t>(v->type().NumElements()));
      std::uniform_real_distribution<double> uf(-1.0, 1.0);
      std::uniform_int_distribution<int64_t> ui(0, int_range - 1);
      for (double& x : vals) x = IsFloat(v->type().dtype) ? uf(rng) : static_cast<double>(ui(rng));
      auto r = ops::TensorFromDoubles(v->type(), vals);
      if (!r.ok()) { ADD_FAILURE() << r.status().ToString(); return *spec; }
      t = *r;
    }
    ref_in.push_back(t);
    args.push_back(t);
  }
  auto ref = ops::EvaluateNode(node, ref_in);
  if (!ref.ok()) { ADD_FAILURE() << "reference: " << ref.status().ToString(); return *spec; }
  for (bool threaded : {false, true}) {
    auto outs = RunKernel(fn, *spec, args, threaded);
    for (size_t i = 0; i < outs.size(); ++i) {
      const KernelArg& a = spec->args[static_cast<size_t>(spec->num_inputs) + i];
      ir::TensorData got{ir::TensorType{a.dtype, a.shape}, outs[i]};
      const double err = RelativeL2(ops::TensorToDoubles(got), ops::TensorToDoubles(*(*ref)[i]));
      EXPECT_LE(err, IsFloat(a.dtype) ? tolerance : 0.0)
          << spec->name << " output " << i << (threaded ? " (threaded)" : " (serial)") << "\n"
          << spec->kernel->ToString();
    }
  }
  return *spec;
}

KernelSpec CheckOp(GraphBuilder& b, const std::string& op, std::vector<ir::Value*> inputs,
                   const ir::Attributes& attrs, uint32_t seed, double tolerance, int64_t int_range) {
  ir::Node* n = b.Op(op, std::move(inputs), attrs);
  if (n == nullptr) {
    ADD_FAILURE() << op << " could not be built";
    return {};
  }
  return CheckNodeAgainstReference(*n, seed, tolerance, int_range);
}

ir::Attributes Attrs(std::initializer_list<std::pair<std::string, ir::AttrValue>> values) {
  ir::Attributes a;
  for (const auto& [name, value] : values) a.Set(name, value);
  return a;
}

}  // namespace keel::codegen::testing
