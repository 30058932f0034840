// vm/cuda/conv_kernel.h — "keel.conv2d" library kernels
// (serialization/library_ops.h): channels-last f16/bf16 convolutions with few
// channels, run by the VM's own tensor-core kernel (vm/cuda/conv_kernel.cuh).
//
// MakeKeelConv validates the attributes (cudnn.conv2d's, read by the one
// reader ReadConvAttrs) and the arguments (the geometry check the compiler
// and the host emitter share, common/conv_geometry.h), fills the kernel's
// argument block (vm/cuda/library_calls_conv.h) once, resolves the kernel for
// its type and channel class (keel_conv_nhwc_f16_c16_n2, ...) from the runtime
// module and raises its shared-memory limit; each invoke patches in the tensor
// addresses and launches it on the device's stream. No library is involved:
// builds without cuDNN run it too.
//
// Errors: kInvalidExecutable for bad attributes/arguments (naming the kernel
// and what is wrong), kUnsupported for what the kernel does not take (types
// other than f16/bf16, layout nchw, groups, channel counts, kernel windows
// beyond its shared memory: library_calls_conv.h ConvKernelRefusal), kDeviceError
// for CUDA failures. Thread-safety: as CudaDevice.
#pragma once

#include <memory>

#include "vm/cuda/cuda_device.h"
#include "vm/executable.h"

namespace keel::vm_internal {

Result<std::unique_ptr<CudaLaunchState>> MakeKeelConv(CudaDevice& dev, const KernelEntry& kernel);

}  // namespace keel::vm_internal
