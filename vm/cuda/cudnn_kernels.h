// vm/cuda/cudnn_kernels.h — "cudnn.conv2d" and "cudnn.pool2d" library kernels
// (serialization/library_ops.h).
//
// At VM creation each kernel's attributes and argument shapes are validated,
// the cuDNN tensor/filter/convolution/activation/pooling descriptors are built,
// the convolution algorithm is chosen once from cudnnGetConvolutionForwardAlgorithm_v7
// heuristics (FMA math unless DeviceOptions::allow_tf32) and its workspace is
// reserved in the device's workspace buffer. Each invoke then only queues cuDNN
// calls on the device's stream:
//   * relu (with or without bias/residual): one cudnnConvolutionBiasActivationForward
//     (a zero bias is supplied when the kernel has none);
//   * otherwise: [copy residual into Y] + cudnnConvolutionForward (beta 1 with a
//     residual) + cudnnAddTensor (bias) + cudnnActivationForward (clip), in place.
//   * pooling: cudnnPoolingForward.
// If cuDNN refuses the fused call at run time (NOT_SUPPORTED), the kernel switches
// to the unfused sequence for good.
//
// Builds without cuDNN (KEEL_HAVE_CUDNN undefined) return kUnsupported here.
// Errors: kInvalidExecutable (attributes/shapes), kUnsupported (asymmetric pads,
// clip_min != 0, no cuDNN), kDeviceError (cuDNN calls, named).
// Thread-safety: as CudaDevice.
#pragma once

#include <memory>

#include "vm/cuda/cuda_device.h"
#include "vm/executable.h"

namespace keel::vm_internal {

Result<std::unique_ptr<CudaLaunchState>> MakeCudnnConv2d(CudaDevice& dev, const KernelEntry& kernel);
Result<std::unique_ptr<CudaLaunchState>> MakeCudnnPool2d(CudaDevice& dev, const KernelEntry& kernel);

}  // namespace keel::vm_internal
