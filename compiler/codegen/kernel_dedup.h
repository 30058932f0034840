// compiler/codegen/kernel_dedup.h — sharing identical generated kernels.
//
// Models repeat themselves: every layer of a transformer, every block of a
// ResNet stage, every link of a long elementwise chain lowers to the same
// kernel IR under another name. A back end asks KernelDedup before emitting a
// kernel; when an identical one (same arguments, workspace and body) was
// already emitted, it reuses that kernel's name instead of compiling a copy, so
// compile time and library size grow with the number of *distinct* kernels.
//
// Lowering itself costs time too, so LoweringKey lets a back end recognize a
// node it already lowered before lowering it again.
//
// Thread-safety: none (one compilation, one thread). Deterministic: the first
// kernel of each kind keeps its name, in graph order.
#pragma once

#include <string>
#include <unordered_map>

#include "compiler/codegen/kernel_spec.h"
#include "compiler/ir/graph.h"

namespace keel::codegen {

class KernelDedup {
 public:
  // The name of an already recorded kernel identical to `spec`, or "" (then
  // `spec` is recorded under its own name).
  std::string FindOrAdd(const KernelSpec& spec);

 private:
  std::unordered_map<std::string, std::string> by_body_;
};

// A key equal for two nodes that lower to the same kernel: op types,
// attributes, types and the dataflow of a fused body, without value names.
// Constants are identified by their data object: a constant shared by many
// layers matches, equal bytes in different objects just do not (the kernel
// deduplication above still merges those after lowering).
std::string LoweringKey(const ir::Node& node);

}  // namespace keel::codegen
