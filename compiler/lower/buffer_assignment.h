// compiler/lower/buffer_assignment.h — which graph values need memory, and for how long.
//
// Lowering turns a fused graph into straight-line bytecode: node i of the graph's
// topological order is "step" i. This file decides, for every Value:
//
//   kind       memory                              example
//   ─────────  ──────────────────────────────────  ──────────────────────────────
//   kParam     the VM's input buffer (register i)  graph inputs
//   kConstant  the executable's data segment       weights, folded shapes
//   kBuffer    a planned intermediate buffer       every kernel output
//   kView      bytes of another value's buffer     keel.Reshape outputs (alloc_tensor),
//              at a byte offset                    parts of an in-place concat
//
// Views never own memory: a view is an alias of its root buffer, so the root's
// lifetime is stretched over every use of every alias. A keel.Reshape output
// aliases its source's bytes (offset 0, or its source's offset). In-place
// concats (concat_in_place.h: a batch-1 channel concat of kernel outputs, say):
// the concat's output is the root buffer, made when its first part is produced
// (first_use = that step), and each part is a view at its byte offset, which its
// producer's kernel writes directly; the concat step is a view step (no kernel).
// Graph outputs live until the end of the program (the step after the last node).
// Views of params (CPU target) or constants cannot be expressed as alloc_tensor
// over a storage, so such a view is materialized as its own buffer (lowering
// emits a copy).
//
// The result feeds the memory planners (compiler/memory/planner.h): one
// TensorLifetime per buffer, in a deterministic order (by producing step, then
// output index).
//
// In-place reuse (TensorLifetime::may_alias_with): the output buffer of step s
// may take the bytes of an input buffer B when all of these hold:
//   - the node is a keel.Fused group with "keel.pattern" == "elementwise" (and
//     the step is in-place capable, BufferAssignmentOptions::in_place_steps);
//   - the input value has exactly the output's shape and byte size (not
//     broadcast: it is read at the very index that is written);
//   - the input is at its buffer's start (offset 0: not a concat part, whose
//     bytes start elsewhere in B);
//   - B dies at s (last_use == s — so B is not a graph output, and no value
//     viewing B, the input itself included, is read after s), B is a planned
//     intermediate (not a param, a param's device copy, or a constant), and no
//     other input of the step reads B through another value (a view with another
//     shape would be read at other indices);
//   - the input is the first such input of the node (one partner per output).
// Why exact aliasing is safe there: a generated elementwise kernel (compiler/
// codegen/lower.cc LowerNodeToKernel → LoopNest) computes out[i] as one
// expression of loads at the broadcast indices of i and stores it to out[i]; for
// a same-shape input the load index is i itself, so every element of B is read
// (for out[i]'s value, which data-depends on it) before out[i] overwrites it, and
// no other element's computation reads B[i]. That holds for the CPU kernels
// (serial, parallel-over-rows and loop-vectorized inner loops: a vector of
// B[i..i+k] is loaded before the vector store to out[i..i+k], other vectors
// touch other elements) and the NVPTX kernels (flat grid-stride: each element
// owned by one thread, loads before its store; single-block fallback: only
// thread 0 stores, after its own loads). The kernel arguments are marked
// noalias, which exact aliasing formally breaks; the compiler can only exploit
// it by moving a B[i] load below the out[i] store, which the data dependence
// forbids (the same argument the CUDA backend's in-place epilogues rely on).
//
// Thread-safety: pure function of the graph.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/memory/planner.h"
#include "keel/status.h"

namespace keel::lower {

enum class ValueKind : uint8_t { kParam, kConstant, kBuffer, kView };

struct ValueInfo {
  ValueKind kind = ValueKind::kBuffer;
  int32_t buffer = -1;     // index into BufferAssignment::buffers (kBuffer, kView)
  int32_t step = -1;       // producing step (-1 for params/constants)
  bool materialize_copy = false;  // a view of a param/constant: lowering copies it into its buffer
  uint64_t offset = 0;     // kView: byte offset within the buffer (in-place concat parts)
};

struct BufferAssignment {
  std::unordered_map<const ir::Value*, ValueInfo> values;
  std::vector<memory::TensorLifetime> buffers;  // one per planned buffer
  std::vector<const ir::Value*> buffer_roots;   // the value that allocates each buffer
  // For graph outputs that are params or constants (nothing computes them): the
  // buffer lowering copies them into at the end, else -1. One entry per output.
  std::vector<int32_t> output_copy_buffer;
  std::vector<int32_t> host_output_buffer;      // host_io: per output, its host buffer
  std::vector<int32_t> workspace_of_step;       // buffer index of each step's workspace, or -1
  std::vector<uint8_t> in_place_concat;         // per step: 1 for an in-place concat (a view step)
  int32_t num_steps = 0;                        // graph nodes; outputs live until num_steps
};

struct BufferAssignmentOptions {
  memory::Device device = memory::Device::kCpu;
  uint32_t alignment = 64;  // byte alignment of every buffer (CPU: 64, CUDA: 256)
  // CUDA target: params and results live on the host. Each param gets a device
  // buffer (live from step 0; lowering copies the input in at entry, so views of
  // params are plain views), and each graph output a host buffer on the CPU
  // (live after the last step; lowering copies the result out).
  bool host_io = false;
  // Extra scratch bytes a step needs (e.g. a convolution's im2col workspace),
  // planned as a buffer live only during that step. Indexed by step; may be empty.
  std::vector<uint64_t> workspace_bytes;
  // In-place reuse (see the top of this file). Off: no may_alias_with is set.
  bool in_place = true;
  // Indexed by step: non-zero where the step's kernel is in-place capable (a
  // generated kernel taking the node's inputs then outputs, nothing else: see
  // lower::InPlaceCapableSteps). Empty: every step is.
  std::vector<uint8_t> in_place_steps;
};

// Ops whose output is a view of their first input (fusion class kView: keel.Reshape).
bool IsViewOp(const ir::Node& node);

Result<BufferAssignment> AssignBuffers(const ir::Graph& graph, const BufferAssignmentOptions& options);

}  // namespace keel::lower
