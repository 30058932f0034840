// vm/cuda/graph_rewrite.h — changes to a captured CUDA graph before it is instantiated.
//
// Memset nodes as kernel nodes. Libraries record small memsets into the captured run (cuDNN's
// fused attention clears 4 bytes before each call). In the replayed graph a memset node between
// two kernels leaves the GPU idle for microseconds: on an H100, BERT-base's cuDNN attention started
// 2.8 us after its 4-byte memset, against 0.1-0.3 us after a kernel (CUPTI trace of the replay,
// docs/PRECISION.md). Each 1-D memset node is therefore replaced by a kernel node running
// `keel_fill` (runtime_kernels.cu) with the same destination, value and dependencies; 2-D
// memsets are left as they are.
//
// Clears in private workspace slices (cuda_lib::WorkspaceLayout) lifted to the head. Each of
// cuDNN's attention calls clears 4 bytes of its workspace first; in a chain of kernels every
// clear still costs ~0.8 us of the critical path (BERT-base: 12 of them, 1.3% of a replay on
// an H200). A slice is used by one call alone, so its clear may run at any time before that
// call: such clears (1-D, inside the slices, overlapped by no other memset, one value and
// element size) are replaced by one fill of the span they cover, before the graph's first
// nodes, and their predecessors are joined to their dependents. The fill may also clear
// bytes of the slices between them: scratch no call reads before writing, or clears first
// itself.
//
// When: once per recording, inside the Run that records (CudaDevice::EndRecording), before
// cudaGraphInstantiate, which allocates anyway; replays do none of this work.
// Thread-safety: the caller owns `graph` (not yet instantiated); nothing else may use it.
// Errors: a graph API failure is returned with the call's name; the graph may then be partly
// rewritten (every node still does its work), and the caller discards it.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include "keel/status.h"

namespace keel::vm_internal {

// Replaces the 1-D memset nodes of `graph` by launches of `fill` (keel_fill's signature).
// Memsets inside [private_begin, private_end) (the device's private workspace slices; null:
// none) are lifted as above. Returns how many were replaced in *replaced and how many of
// them were lifted in *lifted (either may be null).
Status MemsetNodesAsKernels(cudaGraph_t graph, CUfunction fill, const void* private_begin, const void* private_end,
                            int* replaced, int* lifted);

}  // namespace keel::vm_internal
