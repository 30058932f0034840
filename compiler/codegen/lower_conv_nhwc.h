// compiler/codegen/lower_conv_nhwc.h — the CPU kernels of the channels-last
// (NHWC) convolutions the CPU back end runs in that layout: 2-D pointwise ones
// (1x1, strides 1, no pads, one group) as one GEMM with the pixels as rows,
// and 2-D depthwise ones (one input channel per group, multiplier 1, at most
// 16 border rows and columns whose window leaves the input) with the channels
// as vector lanes (lower_conv_nhwc.cc says why and how).
//
// LowerConv (lower_conv.cc) takes them for the channels-first twin of a
// channels-last Conv (ops/channels_last.h) whose input is a plain buffer
// (TensorFn::channels_last_buffer); any other channels-last convolution keeps
// the generic lowering through index functions. The weight may be in its
// packed form (ops/packed_weight.h), whose rows per panel NhwcPackedRows gives.
//
// Thread-safety: pure functions of their arguments (the kernel being built
// belongs to the caller).
#pragma once

#include <cstdint>

#include "compiler/codegen/lower_conv_direct.h"

namespace keel::codegen {

enum class NhwcConv { kNone, kPointwise, kDepthwise };

// The NHWC kernel a convolution of geometry `c` (channels-first terms) takes.
NhwcConv NhwcConvForm(const ConvGeom& c);
// The same for a typed Conv node in either layout (kNone for anything else,
// and for operands other than f32).
NhwcConv NhwcConvFormOf(const ir::Node& conv);

// The rows per panel of the packed weight these kernels read in place, 0 for
// a weight read as it is: a pointwise convolution's [Co, C] weight in panels
// of the GEMM's panel width NR (W^T's column panels; the last Co % NR rows a
// narrow panel of their own, GemmOperands::b_packed_narrow_tail) when Co % NR
// is a multiple of NR / 4 (whole vectors, or AVX-512's ymm half); a
// depthwise one's [C, KH*KW] weight in one panel of C rows ([KH*KW][C]).
int64_t NhwcPackedRows(const LowerOptions& options, NhwcConv form, int64_t co);

// The kernel for NhwcConvForm(c) != kNone; X (and a packed Wt) must be f32
// channels-last buffers (InvalidArgument otherwise); packed_rows as above.
Result<Stmt> LowerConvNhwc(LowerContext& ctx, const ConvGeom& c, const TensorFn& X, const TensorFn& Wt,
                           const TensorFn* bias, int64_t packed_rows, const StoreFn& store);

}  // namespace keel::codegen
