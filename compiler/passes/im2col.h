// compiler/passes/im2col.h — runs a convolution over few input channels as a
// GEMM over its column matrix:
//
//   Conv(X, W, B)  ->  Transpose(Reshape(Gemm(Reshape(keel.Im2Col(X)), W', B, transA=1)))
//
// keel.Im2Col (ops/im2col.cc) gathers each output pixel's window into one
// column of a [columns, pixels] matrix (tap-major rows; pixels innermost, so
// its reads coalesce), the GEMM takes it transposed; W' [columns, Co] is the
// weight rearranged at compile time to match (zero rows past C * taps), B the
// GEMM's row bias. The product is the output channels-last ([N, O..., Co], a
// view of the GEMM's rows) and a Transpose gives the convolution's
// [N, Co, O...] back (the channels-last pass cancels it against the next
// layer's). The result is the same function (the same products; only the
// summation order changes). Why: a library may have no fast kernel for a
// convolution over a handful of channels (cuDNN 9's bf16 stems, see
// driver/cuda_backend.cc), while a GEMM whose K is the whole window runs on the
// tensor cores at any channel count.
//
// Candidates: Conv with 1 to 3 spatial dims, group 1, a constant f32 weight, an
// f32 channels-first input, canonical window attributes. The target's
// predicate returns the column count (0: leave the node). Runs on the typed
// graph after BatchNormalization folding and space-to-depth (the weight is
// final) and before mixed precision and channels-last (the new nodes are
// converted and laid out like any other). Deterministic: the new nodes are
// named after the convolution, a rearranged weight after the weight (one per
// weight and column count, shared by the convolutions that read it). The
// output type is checked.
//
// Errors: Internal when the predicate asks for fewer columns than the window
// reads, or the rewritten output's type differs from the convolution's.
// Thread-safety: one graph at a time per pass object.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "compiler/passes/pass.h"

namespace keel::passes {

// The columns (at least C * prod(kernel_shape)) to run a candidate convolution
// with as a GEMM over its column matrix, or 0 to keep it.
using Im2ColPredicate = std::function<int64_t(const ir::Node& conv)>;

// Whether `conv` is a candidate (see the file comment).
bool Im2ColApplies(const ir::Node& conv);

class Im2ColPass : public Pass {
 public:
  explicit Im2ColPass(Im2ColPredicate columns) : columns_(std::move(columns)) {}
  std::string name() const override { return "im2col"; }
  std::string description() const override {
    return "convolutions over few channels as a GEMM over their column matrix, where the target prefers it";
  }
  Status Run(ir::Graph& graph) override;

 private:
  Im2ColPredicate columns_;
};

}  // namespace keel::passes
