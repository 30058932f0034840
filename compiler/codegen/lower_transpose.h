// compiler/codegen/lower_transpose.h — a transpose that moves the innermost
// axis (NCHW <-> NHWC, any rank) as a copy of square tiles (internal to
// compiler/codegen).
//
// The generic loop nest (lower_context.h LoopNest) stores along the output's
// innermost axis and reads each lane's element from far apart: a T-lane gather
// per T outputs. TransposeInTiles instead walks T x T tiles of the two axes
// that trade places: `for j (kUnroll, T): for i (kLanes, T): out[.., j, .., i] =
// in[.., i, .., j]`, whose loads are contiguous in j and whose stores are
// contiguous in i, which the CPU back end emits as T vector loads, an
// in-register transpose and T vector stores (llvm_cpu_kernel.cc
// TryTransposeTile). Any other back end runs the same loops as written.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "compiler/codegen/lower_context.h"

namespace keel::codegen {

// The statement copying kernel argument `in_arg` (shape `in_shape`) into
// argument `out_arg` permuted by `perm` (ONNX Transpose: output axis k is input
// axis perm[k]) in tiles of ctx.options().transpose_tile; nullopt where the
// innermost axis stays innermost (the generic loop nest's loads are contiguous
// then), where either axis that trades places is shorter than a tile, or where
// tiles are off (transpose_tile 0).
//
// With `epilogue` (a transpose followed by elementwise ops of the same output
// shape, e.g. ConvNeXt's NHWC -> NCHW transpose, layer scale and residual
// add), each element stored is epilogue(full output index) instead of the
// copied input element: the tiles run over the same collapsed axes, the
// index is expanded to the output's own axes, and out_arg is written through
// them. The expression reads in_arg once, transposed (through the transpose's
// reader), which the CPU back end recognizes in the tile (TryTransposeTile)
// while its other operands load along the output's innermost axis.
using TransposeEpilogue = std::function<Expr(const std::vector<Expr>& out_index)>;
std::optional<Stmt> TransposeInTiles(LowerContext& ctx, int in_arg, int out_arg, const std::vector<int64_t>& in_shape,
                                     const std::vector<int64_t>& perm, const TransposeEpilogue& epilogue = nullptr);

}  // namespace keel::codegen
