// vm/cuda/attention_kernel.h — "keel.attention" library kernels
// (serialization/library_ops.h): scaled dot-product attention over strided
// views, run by the VM's own kernel (vm/cuda/attention_kernel.cuh) or, where
// timing at load (or the tuning file) says it is faster, by one of cuDNN's
// fused attention engines (vm/cuda/library_calls_cudnn_attention.h).
//
// MakeKeelAttention validates the attributes and arguments (types, every view
// inside its argument), fills the kernel's argument block
// (vm/cuda/library_calls_attention.h) once, resolves the kernel for its type
// and head widths (keel_attention_f16_d64, ...)
// from the runtime module and raises its shared-memory limit; each invoke
// patches in the five tensor addresses and launches it on the device's stream.
//
// Errors: kInvalidExecutable for bad attributes/arguments (naming the kernel
// and the key), kUnsupported for types other than f16/bf16 (mask: f32 or the
// data type), kDeviceError for CUDA failures. Thread-safety: as CudaDevice.
#pragma once

#include <memory>

#include "vm/cuda/cuda_device.h"
#include "vm/executable.h"

namespace keel::vm_internal {

Result<std::unique_ptr<CudaLaunchState>> MakeKeelAttention(CudaDevice& dev, const KernelEntry& kernel);

}  // namespace keel::vm_internal
