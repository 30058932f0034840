// compiler/codegen/gpu_mapping.h — how a kernel-IR KernelFunc is spread over a
// CUDA grid: which loops become threads, blocks or stay serial, and the launch
// configuration. Pure analysis of the (device-neutral) kernel IR; the NVPTX
// emitter (llvm_nvptx_kernel.h) follows the plan.
//
// The kernel body is split into top-level phases (its statements after
// flattening blocks). Each phase must be a parallel loop, or a serial loop of
// one iteration (trivially parallel), for the grid mappings:
//   * kFlat — `parallel t { for j (constant bounds) {...} }` whose inner loop
//     is independent across j (vectorize annotation, or stores indexed by j that
//     never read what they write) and whose locals are re-initialized per j:
//     (t, j) is collapsed into one flat index, one (or `vector_width`
//     contiguous) element(s) per thread, grid-stride. Coalesced elementwise code.
//     An item keeps at most 64 loads of one buffer (the load/store vectorizer's
//     chunk), so that each of its loads becomes one vector access.
//   * kBlockPerRow — a row reduction (Softmax, LayerNorm, Reduce*, global pools):
//     the parallel body is a sequence of uniform scalar statements, reduction
//     loops `acc[c] = acc[c] op f(l)` (op add/max/min on f32) and independent
//     loops. `row_threads` threads take one row (grid-stride over rows):
//     rows of up to 1024 elements get one warp each (several rows per block,
//     reductions by warp shuffles alone, warp-level barriers), longer rows the
//     whole block (shuffles plus shared memory across warps, block barriers).
//     Reduction loops are split over the row's threads, independent loops
//     too, scalar statements run redundantly (stores to memory by the row's
//     first thread). Where every row loop walks memory with unit stride and
//     splits evenly, a thread takes runs of `vector_width` contiguous elements
//     (128-bit accesses).
//   * kThreadPerIter — anything else: one parallel iteration per thread.
// Several phases run in one launch (each grid-stride) when none reads or
// writes memory another phase writes (e.g. the outputs of a multi-output
// elementwise group). Otherwise, or when a phase is not a loop, the kernel
// runs as kSingleBlock: one block whose threads share each parallel loop, with
// a barrier after it; serial code runs redundantly on every thread and only
// thread 0 stores to memory outside parallel loops (followed by a barrier).
// Correct for any kernel IR, fast only for small kernels.
//
// Thread-safety: pure functions. Errors: none beyond kInternal for a body the
// kernel IR verifier would reject.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/kernel_ir.h"
#include "keel/status.h"

namespace keel::codegen {

enum class GpuPhaseKind : uint8_t { kFlat, kBlockPerRow, kThreadPerIter, kSingleBlock };

const char* GpuPhaseKindName(GpuPhaseKind kind);

struct GpuPhase {
  GpuPhaseKind kind = GpuPhaseKind::kThreadPerIter;
  // kFlat / kBlockPerRow / kThreadPerIter: the outer loop (parallel or 1-trip).
  // kSingleBlock: the whole kernel body. Points into the KernelFunc's body.
  const StmtNode* stmt = nullptr;
  int64_t rows = 0;          // iterations of the outer loop
  int64_t inner = 0;         // kFlat: inner trip count; kBlockPerRow: longest row loop
  int64_t vector_width = 1;  // kFlat: contiguous inner elements per thread item; kBlockPerRow:
                             // contiguous row elements per thread and step (every row loop's trip
                             // a multiple of row_threads * vector_width)
  int64_t row_threads = 0;   // kBlockPerRow: threads per row (32, or the block)
  int64_t Items() const;     // thread work items (kFlat: rows * inner / vector_width)
};

struct GpuLaunch {
  uint32_t grid = 1;
  uint32_t block = 1;
  uint32_t shared_bytes = 0;  // dynamic shared memory (the emitter uses static shared only)
};

struct GpuMapping {
  std::vector<GpuPhase> phases;
  GpuLaunch launch;
  std::string Describe() const;  // e.g. "flat(rows=64,inner=768,vec=4) grid=48 block=256"
};

struct GpuMappingOptions {
  int64_t num_sms = 132;          // H200
  int64_t threads_per_block = 256;
  int64_t blocks_per_sm = 8;      // grid-stride grids: at most num_sms * blocks_per_sm blocks
  int64_t max_threads_per_sm = 2048;
  int64_t min_row_for_block = 32; // shorter rows run one thread per row
  int64_t max_row_for_warp = 1024; // rows up to this long run one warp per row
};

Result<GpuMapping> MapKernelToGpu(const KernelFunc& kernel, const GpuMappingOptions& options = {});

// Helpers shared with the emitter.
// True when `s` is a `for` with integer-constant bounds; sets *trip.
bool ConstantTrip(const StmtNode& s, int64_t* trip);
// Statements of `s` with nested blocks flattened (a non-block is a list of one).
std::vector<const StmtNode*> FlattenBlock(const StmtNode& s);
// kBlockPerRow: a loop of the row body that reduces `acc[c] = acc[c] op f(l)`;
// on success sets the local buffer, its constant element index, op and f.
bool MatchRowReduction(const KernelFunc& k, const StmtNode& loop, int* buffer, std::vector<Expr>* index,
                       BinaryOp* op, Expr* f);

}  // namespace keel::codegen
