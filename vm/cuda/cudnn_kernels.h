// vm/cuda/cudnn_kernels.h — "cudnn.conv2d", "cudnn.conv_transpose" and
// "cudnn.pool2d" library kernels (serialization/library_ops.h).
//
// At VM creation each kernel's attributes and argument shapes are validated and
// the cuDNN tensor/filter/convolution/activation/pooling descriptors are built.
// cudnn.conv2d takes 1, 2 or 3 spatial dims (X of rank 3, 4 or 5): N-d
// descriptors of rank 4 or 5, a 1-D problem lifted to 2-D with a unit height
// (common/conv_geometry.h, the check the compiler and the host emitter share).
// Data types: every tensor of a kernel (X, W, bias, residual, Y) is f32, f16 or
// bf16 alike, from the arguments' serialized dtypes (vm/cuda/library_dtypes.h).
// Convolutions compute in f32 (convolution compute type CUDNN_DATA_FLOAT); half
// data uses tensor-op math, f32 data FMA math unless TF32 is allowed. The
// epilogue kernel is keel_bias_act_<dtype>. Pooling takes f32, f16 or bf16 alike.
// The convolution is then planned by measurement (vm/cuda/autotune.h): every
// algorithm cudnnGetConvolutionForwardAlgorithm_v7 offers (FMA math unless
// DeviceOptions::allow_tf32; workspace <= 256 MiB) is timed on scratch buffers
// in each applicable mode, and the fastest is kept (cached per VM by problem):
//   * fused: one cudnnConvolutionBiasActivationForward (relu with any
//     algorithm; identity with bias/residual only with IMPLICIT_PRECOMP_GEMM;
//     a zero bias is supplied when the kernel has none);
//   * conv+epilogue: cudnnConvolutionForward (beta 1 when the residual is Y
//     itself) then, if there is a bias, residual or activation, one pass of the
//     VM's keel_bias_act kernel (vm/cuda/runtime_kernels.cu) in place on Y.
//     Clipped ReLU always takes this mode (cuDNN cannot fuse it).
// VmOptions::cuda_autotune = false keeps the heuristics' first algorithm instead.
// Where VmOptions::cudnn_engines says so (library_calls_cudnn_engine.h
// EnginesConsidered; by default grouped half or channels-last convolutions), the
// backend-API engines (cudnn_engine_conv.h) compete with that choice; the
// verdict, an engine configuration's identity or "legacy", joins the choice in
// the tuning entry, which keelc --emit=cuda-host programs follow. The chosen
// workspace is reserved in the device's workspace buffer.
// Each invoke then only queues work on the device's stream. Pooling:
// cudnnPoolingForward. If cuDNN refuses the fused call at run time
// (NOT_SUPPORTED), the kernel switches to conv+epilogue for good.
// cudnn.conv_transpose is the same kernel planned as its forward problem's data
// gradient (library_calls_cudnn.h): cudnnConvolutionBackwardData's algorithms,
// always conv+epilogue, no backend-API engines.
//
// Builds without cuDNN (KEEL_HAVE_CUDNN undefined) return kUnsupported here.
// Errors: kInvalidExecutable (attributes/shapes), kUnsupported (asymmetric pads,
// tensors of 2^31 elements or more, clip_min != 0, no cuDNN), kDeviceError (cuDNN
// calls, named).
// Thread-safety: as CudaDevice.
#pragma once

#include <memory>

#include "vm/cuda/cuda_device.h"
#include "vm/executable.h"

namespace keel::vm_internal {

// cudnn.conv2d and cudnn.conv_transpose (the kernel's library_op says which).
Result<std::unique_ptr<CudaLaunchState>> MakeCudnnConv2d(CudaDevice& dev, const KernelEntry& kernel);
Result<std::unique_ptr<CudaLaunchState>> MakeCudnnPool2d(CudaDevice& dev, const KernelEntry& kernel);

}  // namespace keel::vm_internal
