// compiler/codegen/lower_conv_implicit.h — the implicit-GEMM convolution over an "image", shared
// by the convolution lowering (lower_conv.cc) and the transposed convolution's
// (lower_conv_transpose.cc), which runs as a stride-1 convolution over its scattered input.
// Internal to compiler/codegen.
#pragma once

#include <functional>
#include <vector>

#include "compiler/codegen/lower_conv_direct.h"
#include "compiler/codegen/lower_ops.h"

namespace keel::codegen {

// The implicit GEMM of a convolution over an "image": per (image bi, group
// gi), C[m, n] = sum_kk A(m, kk) * B(kk, n) with B read from the group's image
// at window (n) + tap (kk). `c` is the convolution over the image (c.in is
// unused: `P` gives the image's extent, `c.pb` is already part of it).
//   fill: fills the workspace image `src` (extent `P` per spatial dim, `lead`
//         elements of slack first); null when the image is X itself (`direct`).
//         With `bands`, `row_off` (else 0) is the image row of dim 0 that `P`'s
//         first row stands for (a band of output rows reads only its rows).
//         With `phases` > 1 (only where `phased`), each image row of P.back()
//         columns is stored as `phases` column phases of ColumnPhase(...) each:
//         column x at (x % phases) * that + x / phases.
struct ImageConv {
  ConvGeom c;
  std::vector<int64_t> P;
  bool direct = false;  // B read straight from X (no padding, P == in)
  std::function<Expr(Expr m, Expr kk, Expr gi)> a;
  // > 0: the weight is in the row-panel layout (gemm_panels.h), each group's
  // [Mg, K] matrix packed with this many rows per panel; a_panel(offset, gi)
  // reads element `offset` of group gi's packed matrix (a is then unused).
  int64_t a_panel_rows = 0;
  std::function<Expr(Expr offset, Expr gi)> a_panel;
  std::function<Stmt(int src, int64_t lead, Expr bi, Expr gi, const std::vector<int64_t>& P, Expr row_off,
                     int64_t phases)>
      fill;
  bool bands = false;   // fill reads any band of rows (row_off)
  bool phased = false;  // fill writes column phases
};

// The kernel of `ic` over input X (+ bias), stored through `store`.
Result<Stmt> ImplicitGemmConv(LowerContext& ctx, const ImageConv& ic, const TensorFn& X, const TensorFn* bias,
                              const StoreFn& store);

// A convolution node's input, weight and optional bias, with their ranks and types checked, and its
// window attributes (ReadWindow: strides, dilations, groups, pads); `op` names the node's kind in
// errors.
struct ConvOperands {
  TensorFn x, w;
  const TensorFn* bias = nullptr;
  ConvGeom window;  // the node's own attributes only (no shapes)
  std::vector<int64_t> pads;
};
Result<ConvOperands> ReadConvOperands(LowerContext& ctx, const ir::Node& node, const char* op);

}  // namespace keel::codegen
