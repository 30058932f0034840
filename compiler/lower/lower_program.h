// compiler/lower/lower_program.h — fused graph → VM bytecode (the `main` function).
//
// Lowering is the last compiler step before serialization. Given the fused graph
// and, for every node ("step"), the kernel it runs, it
//   1. assigns buffers and lifetimes (buffer_assignment.h), including in-place
//      reuse for elementwise steps whose kernel allows it (InPlaceCapableSteps)
//      and in-place concats (concat_in_place.h: view steps whose parts are
//      written into the output by their producers, at byte offsets),
//   2. runs the chosen memory planner and checks its plan (compiler/memory),
//   3. writes straight-line bytecode into an ExecutableWriter:
//
//        alloc_storage  s_k, slot k        static plans: all at entry (O(1) arena slices);
//                                          arena == -1 (dynamic): just before first use
//        load_const     c, idx             once, before the first step that reads it
//        alloc_tensor   t, s_k, off, shape the view of each output (and workspace) at its step
//        copy           dev, param         CUDA target: host inputs to device buffers
//        invoke         kernel, in…, out…, [workspace]
//        free_storage   s_k                dynamic plans: right after the last use
//        copy           host, dev          CUDA target: results back to host buffers
//        ret            results…
//
// On the CUDA target params and results live on the host (TensorSig device = cpu),
// every intermediate on the device; the copies are explicit instructions so a
// trace shows every byte that crosses PCIe.
//
// Determinism: register numbers, instruction order and plan depend only on the
// graph order and the kernels given.
// Thread-safety: pure function of its arguments (the writer is mutated).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/memory/planner.h"
#include "keel/status.h"
#include "serialization/executable_writer.h"

namespace keel::lower {

// An operand of a step, naming a kernel argument explicitly (StepKernel::args).
struct StepArg {
  enum class Kind : uint8_t { kInput, kOutput, kWorkspace };
  Kind kind = Kind::kInput;
  uint32_t index = 0;  // kInput: among the node's non-null inputs; kOutput: output index
};

// A further kernel a step runs (StepKernel::then).
struct StepInvocation {
  ser::KernelDesc kernel;
  std::vector<StepArg> args;  // one per kernel argument, in order
};

// What step i of the graph runs.
struct StepKernel {
  bool is_view = false;      // no kernel: a view op (outputs view the first input) or an in-place concat
  ser::KernelDesc kernel;    // when !is_view; added to the writer (identical ones shared)
  uint64_t workspace_bytes = 0;  // > 0: one trailing scratch argument, planned like a tensor
  // Empty (the default): `kernel` takes the node's non-null inputs, its outputs,
  // then the workspace when workspace_bytes > 0. Otherwise its arguments, in
  // order (library kernels with a fixed argument order, inputs folded into
  // attributes and left out).
  std::vector<StepArg> args;
  // Kernels run after `kernel`, in order, within the same step (e.g. a generated
  // epilogue applied in place to the output a library kernel wrote: the output
  // passed as both its read input and its written output).
  std::vector<StepInvocation> then;
};

struct ProgramOptions {
  std::string memory_plan = "greedy-size";
  ser::DeviceKind device = ser::DeviceKind::kCpu;
  uint32_t alignment = 64;  // every planned buffer (CUDA: 256)
  double planner_time_limit_seconds = 10.0;
};

struct ProgramStats {
  memory::Plan plan;                          // the checked plan that was written
  std::vector<memory::TensorLifetime> lifetimes;
  uint64_t constant_bytes = 0;
  size_t num_instructions = 0;
  size_t num_kernels = 0;                     // distinct kernels in the writer
  size_t num_invokes = 0;
};

ser::DType ToSerDType(ir::DType dtype);

// Per step, 1 where the step's kernel may write its output over a dying input
// (BufferAssignmentOptions::in_place_steps): a generated kernel (CPU or CUDA, not
// a library kernel) taking the node's inputs then its outputs (StepKernel::args
// empty), with no follow-up invocations. 0 for views and everything else.
std::vector<uint8_t> InPlaceCapableSteps(const std::vector<StepKernel>& kernels);

// Writes the whole program (constants, kernels, plan, `main`) into `writer`.
// `kernels` has one entry per node of graph.nodes(). The graph must outlive
// writer.Finish() (constant bytes are referenced, not copied).
Result<ProgramStats> LowerProgram(const ir::Graph& graph, const std::vector<StepKernel>& kernels,
                                  const ProgramOptions& options, ser::ExecutableWriter& writer);

}  // namespace keel::lower
