// compiler/lower/concat_in_place.h — which Concat steps need no kernel: their
// inputs are written straight into the concat's output buffer.
//
// When every dimension before the concat axis has extent 1 (a batch-1 NCHW
// channel concat, say), the output is the inputs' bytes one after the other:
// input i is the contiguous byte range [offset_i, offset_i + bytes_i) of the
// output, offset_i the bytes of inputs 0..i-1. If each input's producer writes
// into that range directly, the concat moves no byte. Buffer assignment then
// makes the concat's output a root buffer and each input a view of it at its
// offset (buffer_assignment.h); lowering emits only the output's alloc_tensor.
//
// A concat step is in place when all of these hold (else it runs its kernel):
//   - the node is a Concat, or a keel.Fused whose body is one Concat of the
//     body's inputs in order (nothing fused before or after the copy);
//   - the output and every input have static types of the same dtype (no
//     cast), and every output dimension before the axis is 1 in the stored
//     layout. The channels-last pass (GPU fp16/bf16) rewrites shapes to NHWC and
//     the axis to 3, so a channel concat there has H, W before the axis and is
//     not in place: only layouts where the parts really are contiguous qualify;
//   - every input offset is a multiple of `alignment` (the buffers' alignment:
//     the NVPTX kernels declare 16-byte aligned arguments, cuDNN and the CPU
//     GEMMs want aligned rows), i.e. every input but the last has a byte size
//     that is a multiple of it;
//   - every input is a value a kernel writes into its own planned buffer: it has
//     a producer node that is neither a view op (keel.Reshape: its output
//     already aliases another buffer) nor itself an in-place concat (nested
//     concats are left out: the inner one is in place, the outer one copies);
//     not a graph input, constant or graph output;
//   - every input feeds exactly one concat slot in the whole graph: it appears
//     once in this concat and in no other Concat step (one place for its bytes).
// Why the producers may write into the output: every kernel writes exactly the
// elements of its output's logical shape and nothing past them — generated
// kernels store through the kernel IR's in-bounds indices (edge tiles of the
// GEMM and Winograd guard every store: compiler/codegen/lower_gemm.cc,
// lower_winograd.cc), library kernels (cuDNN, cuBLASLt) write their output
// descriptor's extent — so a part never clobbers its neighbour. Other readers
// of an input read the view like any tensor.
// In-place reuse (buffer_assignment.h) never pairs an output with a part that
// does not start at its root's offset, and a part's producer never reuses an
// input's bytes (its output is a view, not a buffer of its own).
// keelc --emit=cuda-host mirrors the finished executable, so its program makes
// the same alloc_tensor offsets as the VM.
//
// Kernel selection (driver SelectStepKernels) and buffer assignment both call
// InPlaceConcatOffsets with the same alignment, and LowerProgram checks that they
// agree: an in-place concat is a view step (no kernel is generated for it).
// Deterministic; thread-safety: pure function of the graph.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"

namespace keel::lower {

// Per step of graph.nodes(): the byte offset of each input within the output
// when the step is an in-place concat (see above), else empty.
std::vector<std::vector<uint64_t>> InPlaceConcatOffsets(const ir::Graph& graph, uint32_t alignment);

}  // namespace keel::lower
