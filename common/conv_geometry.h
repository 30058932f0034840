// common/conv_geometry.h — the geometry of a "cudnn.conv2d" library kernel
// (serialization/library_ops.h) checked against its shapes, and the view cuDNN
// gets of it.
//
// A cudnn.conv2d kernel has 1, 2 or 3 spatial dimensions (X of rank 3, 4 or 5;
// the op keeps its historical name so that older executables still load). Three
// parties must agree on what a kernel's shapes and attributes mean: the CUDA
// back end (compiler/driver/cuda_backend.cc picks the library kernel only when
// this check passes), the VM (vm/cuda/cudnn_kernels.cc refuses what it does not
// pass at load) and the host-program emitter (compiler/driver/cuda_host_emitter*,
// which restates the VM's descriptors). This file is that one check.
//
// cuDNN convolves 2-D and 3-D problems only: a 1-D problem is lifted to 2-D with
// a unit height (X [N,C,L] -> [N,C,1,L], W [K,C/g,R] -> [K,C/g,1,R], height pad 0,
// stride 1, dilation 1), which computes exactly the same values.
//
// Thread-safety: pure functions. Errors: Status values without a kernel name (the
// caller adds it with WithContext).
#pragma once

#include <cstdint>
#include <vector>

#include "keel/status.h"

namespace keel::common {

// The cuDNN view of one convolution: dense NC[D]HW tensors of rank 4 or 5.
struct CudnnConvGeometry {
  size_t spatial = 0;                  // the kernel's own spatial dims: 1, 2 or 3
  std::vector<int64_t> x, w, y;        // rank 4 (1-D lifted, 2-D) or 5 (3-D)
  std::vector<int64_t> pads;           // one per cuDNN spatial axis (pads are symmetric)
  std::vector<int64_t> strides, dilations;  // one per cuDNN spatial axis
  int64_t group = 1;

  int rank() const { return static_cast<int>(x.size()); }
  int64_t channels() const { return y[1]; }  // K: the bias length
  // Elements of Y per (n, k): the product of Y's spatial dims.
  int64_t spatial_size() const;
  int64_t y_elements() const { return y[0] * y[1] * spatial_size(); }
};

// Spatial dims of a convolution whose X has rank `x_rank`: x_rank - 2 when that is
// 1, 2 or 3, else 0 (not a cudnn.conv2d shape).
size_t ConvSpatialDims(size_t x_rank);

// Checks a cudnn.conv2d kernel's shapes and attributes (pads in ONNX order: every
// axis' begin, then every axis' end; strides and dilations one per axis) and
// returns cuDNN's view of it. Errors: kInvalidExecutable naming what does not
// match (ranks, attribute lengths or values, channels and groups, Y's shape vs
// the formula, dimensions beyond int32, which cuDNN's descriptors take);
// kUnsupported for asymmetric pads (cuDNN pads both ends alike) and tensors of
// 2^31 elements or more (cuDNN's N-d strides are int32).
Result<CudnnConvGeometry> MakeCudnnConvGeometry(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                                const std::vector<int64_t>& y, const std::vector<int64_t>& pads,
                                                const std::vector<int64_t>& strides,
                                                const std::vector<int64_t>& dilations, int64_t group);

// The same for a "cudnn.conv_transpose" kernel (ONNX ConvTranspose: X [N,C,...],
// W [C,K/group,...], Y [N,K,...]): the view of its forward convolution from a
// Y-shaped input to an X-shaped output, whose data gradient the kernel computes;
// the output_padding Y implies must be below the stride. Errors as above, about
// that forward problem (the message says so).
Result<CudnnConvGeometry> MakeCudnnConvTransposeGeometry(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                                         const std::vector<int64_t>& y, const std::vector<int64_t>& pads,
                                                         const std::vector<int64_t>& strides,
                                                         const std::vector<int64_t>& dilations, int64_t group);

// The channels-first shape of a channels-last tensor (library attribute layout
// "nhwc": X/Y [N,H,W,C] -> [N,C,H,W], W [K,R,S,C/g] -> [K,C/g,R,S]): axis
// rank-1 moved to 1. The checks above take channels-first shapes.
std::vector<int64_t> ChannelsFirstShape(const std::vector<int64_t>& channels_last);

}  // namespace keel::common
