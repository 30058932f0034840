// compiler/codegen/lower_conv_direct.h — the direct (non-GEMM) convolution
// forms of lower_conv.cc (internal to compiler/codegen): the CPU's depthwise
// row kernel, the GPU's depthwise/grouped run-of-outputs kernel and the GPU's
// transposed-convolution gather, with the window geometry they share (and
// its reader, which lower_conv.cc and lower_deform_conv.cc use too).
//
// Thread-safety: pure functions building kernel IR into `ctx`'s kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/codegen/lower_ops.h"

namespace keel::codegen {

// Null stands for "true" so that 1-D windows need no leading-dim guards.
inline Expr And(const Expr& a, const Expr& b) { return a.is_null() ? b : b.is_null() ? a : a && b; }

// A convolution's geometry. Spatial vectors have one entry per spatial dim;
// `in` is the input's extent, `pb` the begin pads.
struct ConvGeom {
  int64_t B = 1, C = 1, Co = 1, groups = 1, Cg = 1, Mg = 1;
  std::vector<int64_t> in, out, k, s, pb, d;
  size_t sp() const { return in.size(); }
};

// The window attributes of a canonical Conv/ConvTranspose/DeformConv node (strides,
// pads, dilations, group) into `c` (its strides, dilations, groups and begin pads)
// and all 2 * sp pads into `pads`; kInvalidArgument naming the node when malformed.
Status ReadWindow(const ir::Node& node, size_t sp, ConvGeom& c, std::vector<int64_t>& pads);

// One output row (b, co, leading output coords) per parallel iteration (a
// 2-D convolution with vector chunks: a block of LowerOptions::depthwise_rows
// rows, whose chunks share each loaded input row). Columns
// (last spatial dim) whose whole window is inside the input (for every kw) run
// as L-lane vector chunks (the last chunk overlaps the previous one rather
// than leaving a scalar tail): per leading window position (positions outside
// the input skipped as a whole), one vector FMA per kw with unit- or
// small-stride loads, then the epilogue as vector stores. The few border
// columns run as unrolled scalar code (border_col), wide borders as a scalar
// loop with guarded (clamped + selected) reads.
// The overlapping last chunk stores some columns twice, so the output must not
// alias an input (in-place buffer reuse is only granted to elementwise groups).
Stmt DirectConv(LowerContext& ctx, const ConvGeom& c, const TensorFn& X, const TensorFn& Wt, const TensorFn* bias,
                const StoreFn& store);

// The GPU form (LowerOptions::gpu_direct_conv) of depthwise and grouped
// convolutions, and of dense ones to few channels (GpuDirectDenseConv; a serial
// loop over the group's input channels): each parallel
// iteration computes a run of V neighbouring outputs along the last dim for one
// (image, channel, leading output coords), so each input row it reads is loaded once into
// registers (V * stride + taps - 1 values) and feeds V * taps FMAs (one output
// per thread would spend most of its instructions on addressing). The flat
// iteration index follows the output's memory order: run-of-columns innermost
// for NCHW (a warp's threads read neighbouring columns), channels innermost
// for a channels-last node (neighbouring channels). The window's leading dims
// are serial loops skipped as a whole outside the input; columns outside the
// input read clamped and select zero; the last run stores only columns < OW.
Stmt GpuDirectConv(LowerContext& ctx, const ConvGeom& c, const TensorFn& X, const TensorFn& Wt, const TensorFn* bias,
                   const StoreFn& store);

// Dense (one group) convolutions to at most this many output channels take the
// GPU direct form too: a network's head (a 1x1 convolution to two classes, a
// depth or saliency map). Tensor-core GEMMs tile at least 8 output channels, so
// cuDNN's kernels for them are slow: a UNet's 16 -> 2 head at batch 32 (128x128)
// took 44.5 us in bf16 (plus a 6.4 us bias pass) and 16.5 us in f16 on an H100,
// where the direct form reads the 16.8 MB input once. The CUDA back end leaves
// these to code generation (cuda_backend.cc), and LowerConv takes this form.
inline constexpr int64_t kGpuDirectDenseConvMaxOutputs = 4;
inline bool GpuDirectDenseConv(int64_t groups, int64_t out_channels) {
  return groups == 1 && out_channels <= kGpuDirectDenseConvMaxOutputs;
}

// The channels-last form of those (GpuDirectDenseConv, input and output NHWC):
// one output pixel per parallel iteration, all its output channels in registers,
// the window's taps as loops and each tap's input channels (contiguous in NHWC)
// unrolled, so a warp reads whole pixels (the run-of-columns form above reads one
// channel of eight pixels per step, 32 bytes apart: the UNet's head took 38.6 us).
Stmt GpuPixelConv(LowerContext& ctx, const ConvGeom& c, const TensorFn& X, const TensorFn& Wt, const TensorFn* bias,
                  const StoreFn& store);

// The GPU form of ConvTranspose (LowerOptions::gpu_direct_conv): one output
// element per parallel iteration, in the output's memory order (channels
// innermost for a channels-last node), gathering its inputs directly: output
// position o takes input position i = (o + pad - k*dil) / stride for every tap
// k where that divides and falls inside the input, over the group's input
// channels. (The CPU's implicit GEMM, a fill of the scattered image and a
// blocked GEMM, has several dependent phases: on a grid it ran in one block,
// 20 ms for a UNet's 2x2 upsampling.) `c` is the equivalent stride-1
// convolution's geometry (channels, kernel, dilation), `stride` and
// `pads` (begin pads) the transposed convolution's own.
Stmt GpuDirectConvTranspose(LowerContext& ctx, const ConvGeom& c, const std::vector<int64_t>& stride,
                            const std::vector<int64_t>& pads, const TensorFn& X, const TensorFn& Wt,
                            const TensorFn* bias, const StoreFn& store);

}  // namespace keel::codegen
