// compiler/driver/cuda_backend_conv.h — which kernel runs a convolution on the
// CUDA target (compiler/driver/cuda_backend.cc): a generated kernel, Keel's own
// tensor-core kernel ("keel.conv2d", serialization/library_ops.h) or cuDNN
// ("cudnn.conv2d"), and which convolutions stay channels-first. Each rule is
// a measurement on an H100/H200, given with the rule.
//
// Thread-safety: pure functions.
#pragma once

#include "common/conv_geometry.h"
#include "compiler/ir/graph.h"

namespace keel::driver {

// Depthwise convolutions and dense ones to few output channels
// (codegen::GpuDirectDenseConv) are generated kernels, never cuDNN
// (`transposed`: a ConvTranspose, whose weight is [C_in, C_out / group, k...]).
bool GeneratedConv(const ir::Node& conv, bool transposed);

// Grouped convolutions cuDNN runs slower channels-last than channels-first.
bool SlowChannelsLast(const ir::Node& conv);

// Whether a forward convolution that cuDNN would run (its geometry checked:
// common/conv_geometry.h), channels-last when `nhwc`, with every tensor of type
// `t`, runs as keel.conv2d instead: 2-D, channels-last, f16 or bf16, one group,
// few channels, many output pixels (always within the kernel's limits,
// library_calls_conv.h).
bool UsesKeelConv(const common::CudnnConvGeometry& g, bool nhwc, ir::DType t);

}  // namespace keel::driver
