// compiler/driver/cuda_library_pick.h — which library kernel runs the head of a
// node's chain on the CUDA target, and the kernel descriptor it gets: cuBLASLt
// GEMMs with the epilogue they absorb, cuDNN (or Keel's own, cuda_backend_conv.h)
// convolutions, cuDNN's channels-first pools, the VM's attention kernel. The
// table of what each takes is cuda_backend.cc's header; CudaBackend runs
// whatever a pick leaves of the chain as a generated kernel.
//
// Each Pick* returns std::nullopt when the library cannot take the chain's first
// node (shapes, types, attributes); the node is then generated.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "compiler/driver/backend.h"
#include "compiler/ir/graph.h"
#include "compiler/lower/lower_program.h"
#include "serialization/executable_writer.h"

namespace keel::driver {

// The chain a node runs: body nodes (or the node itself) and the values it
// reads from outside, in the node's non-null input order.
struct Chain {
  std::vector<const ir::Node*> nodes;
  std::vector<const ir::Value*> inputs;  // body-side values
  std::vector<const ir::Value*> outer;   // the node's non-null inputs (same order)

  explicit Chain(const ir::Node& node) {
    for (const ir::Value* in : node.inputs())
      if (in) outer.push_back(in);
    if (node.op_type() == "keel.Fused" && node.body()) {
      for (const ir::Value* in : node.body()->inputs()) inputs.push_back(in);
      for (const ir::Node* n : node.body()->nodes()) nodes.push_back(n);
    } else {
      inputs = outer;
      nodes.push_back(&node);
    }
  }
  int InputIndex(const ir::Value* v) const {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] == v) return static_cast<int>(i);
    return -1;
  }
  // Constant data of a body value (a constant input or a body-internal constant).
  const ir::TensorData* ConstantOf(const ir::Value* v) const {
    if (v->is_constant()) return v->constant().get();
    int i = InputIndex(v);
    if (i >= 0 && i < static_cast<int>(outer.size()) && outer[static_cast<size_t>(i)]->is_constant())
      return outer[static_cast<size_t>(i)]->constant().get();
    return nullptr;
  }
};

// A library kernel for the first `consumed` nodes of a chain.
struct LibraryPick {
  ser::KernelDesc kernel;
  std::vector<lower::StepArg> args;
  size_t consumed = 0;
  const ir::Value* value = nullptr;  // the chain value the library kernel produces
};

inline lower::StepArg In(int i) { return {lower::StepArg::Kind::kInput, static_cast<uint32_t>(i)}; }
inline lower::StepArg Out() { return {lower::StepArg::Kind::kOutput, 0}; }

// All of `vs` in one type the CUDA libraries take (f32, f16, bf16: vm/cuda/library_dtypes.h).
bool SameLibraryDType(std::initializer_list<const ir::Value*> vs);

// Gemm (`is_gemm`) or MatMul as "cublas.gemm", with the epilogue it absorbs.
std::optional<LibraryPick> PickGemm(const Chain& c, int64_t index, bool is_gemm);
// Conv, or ConvTranspose (`transposed`: the data gradient of the forward
// convolution from Y's shape to X's, which the geometry check sees).
std::optional<LibraryPick> PickConv(const Chain& c, int64_t index, bool transposed, ConvKernelMode mode);
// MaxPool (`is_max`) or AveragePool as "cudnn.pool2d": channels-first 2-D only.
std::optional<LibraryPick> PickPool(const Chain& c, int64_t index, bool is_max);
// keel.Attention (ops/fused_attention.h) as the VM's "keel.attention" kernel:
// the node's attributes are the kernel's.
std::optional<LibraryPick> PickAttention(const Chain& c, int64_t index);

// A library kernel's descriptor as text (its part of the backend's fingerprint).
std::string DescribeLibrary(const ser::KernelDesc& k);

}  // namespace keel::driver
