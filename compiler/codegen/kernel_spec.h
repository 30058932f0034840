// compiler/codegen/kernel_spec.h — what a lowered graph node becomes: a kernel
// with a unique deterministic name, its argument signature and its kernel IR.
//
// Argument order (the VM's `invoke` passes registers in this order):
//   1. the node's non-null inputs, in input order (constants included: the VM
//      binds them with load_const),
//   2. the node's outputs, in output order,
//   3. when workspace_bytes > 0: one extra u8[workspace_bytes] scratch tensor
//      (64-byte aligned) that the lowering plans like any other intermediate;
//      it is not listed in `args` and its contents need not survive the call.
//
// Ownership: a KernelSpec shares its immutable KernelFunc; copying is cheap.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/kernel_ir.h"

namespace keel::codegen {

struct KernelSpec {
  std::string name;               // exported symbol, e.g. "k12_conv_add_relu"
  std::vector<KernelArg> args;    // inputs then outputs (see above)
  int num_inputs = 0;             // args[0, num_inputs) are inputs, the rest outputs
  int64_t workspace_bytes = 0;    // > 0: one trailing scratch argument
  std::string source;             // op types, e.g. "Conv+Add+Relu" (debug info)
  std::shared_ptr<const KernelFunc> kernel;
};

}  // namespace keel::codegen
