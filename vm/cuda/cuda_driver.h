// vm/cuda/cuda_driver.h — the CUDA driver API functions the VM uses, resolved at
// run time through the runtime (cudaGetDriverEntryPointByVersion).
//
// Why not link libcuda: libcuda.so.1 ships with the NVIDIA driver, not the
// toolkit. A binary linked against it does not even start on a machine without
// a driver (CI, build hosts), and every Keel binary links the runtime. Resolving
// the handful of driver calls we need (module loading, cuLaunchKernel, primary
// context) through libcudart, which loads the driver lazily, keeps the runtime
// startable everywhere; "no GPU" is then an ordinary error value.
//
// Thread-safety: Driver() resolves once (std::call_once) and is then read-only.
// Errors: Driver() returns null members when a symbol cannot be resolved;
// DriverStatus names the failure.
#pragma once

#include <cuda.h>

#include "keel/status.h"

namespace keel::vm_internal {

struct DriverApi {
  decltype(&::cuInit) Init = nullptr;
  decltype(&::cuDeviceGet) DeviceGet = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) PrimaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) PrimaryCtxRelease = nullptr;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&::cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::cuModuleUnload) ModuleUnload = nullptr;
  decltype(&::cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::cuFuncSetAttribute) FuncSetAttribute = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;
  // Optional (null when the driver lacks it): launches with attributes
  // (programmatic dependent launch of generated kernels).
  decltype(&::cuLaunchKernelEx) LaunchKernelEx = nullptr;
  // Optional: kernel nodes added to a captured graph (graph_rewrite.h).
  decltype(&::cuGraphAddKernelNode) GraphAddKernelNode = nullptr;
  decltype(&::cuGetErrorString) GetErrorString = nullptr;
  decltype(&::cuGetErrorName) GetErrorName = nullptr;
  Status status;  // OK when every required member above is set
};

// The process-wide table (resolved on first use).
const DriverApi& Driver();

}  // namespace keel::vm_internal
