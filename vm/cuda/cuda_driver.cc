// vm/cuda/cuda_driver.cc — see cuda_driver.h.
#include "vm/cuda/cuda_driver.h"

#include <cuda_runtime.h>

#include <mutex>
#include <string>

namespace keel::vm_internal {
namespace {

template <typename Fn>
Status Resolve(const char* symbol, Fn* out) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  // 12000: the ABI of each call as of CUDA 12.0 (matches the prototypes in cuda.h
  // for everything used here).
  const cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || fn == nullptr) {
    (void)cudaGetLastError();
    return DeviceError(std::string("cannot resolve the CUDA driver function ") + symbol + " (" +
                       (e != cudaSuccess ? cudaGetErrorString(e) : "symbol not found") + ")");
  }
  *out = reinterpret_cast<Fn>(fn);
  return Status::Ok();
}

Status ResolveAll(DriverApi& d) {
  KEEL_RETURN_IF_ERROR(Resolve("cuInit", &d.Init));
  KEEL_RETURN_IF_ERROR(Resolve("cuDeviceGet", &d.DeviceGet));
  KEEL_RETURN_IF_ERROR(Resolve("cuDevicePrimaryCtxRetain", &d.PrimaryCtxRetain));
  KEEL_RETURN_IF_ERROR(Resolve("cuDevicePrimaryCtxRelease", &d.PrimaryCtxRelease));
  KEEL_RETURN_IF_ERROR(Resolve("cuCtxSetCurrent", &d.CtxSetCurrent));
  KEEL_RETURN_IF_ERROR(Resolve("cuModuleLoadData", &d.ModuleLoadData));
  KEEL_RETURN_IF_ERROR(Resolve("cuModuleUnload", &d.ModuleUnload));
  KEEL_RETURN_IF_ERROR(Resolve("cuModuleGetFunction", &d.ModuleGetFunction));
  KEEL_RETURN_IF_ERROR(Resolve("cuFuncSetAttribute", &d.FuncSetAttribute));
  KEEL_RETURN_IF_ERROR(Resolve("cuLaunchKernel", &d.LaunchKernel));
  KEEL_RETURN_IF_ERROR(Resolve("cuGetErrorString", &d.GetErrorString));
  KEEL_RETURN_IF_ERROR(Resolve("cuGetErrorName", &d.GetErrorName));
  if (!Resolve("cuLaunchKernelEx", &d.LaunchKernelEx).ok()) d.LaunchKernelEx = nullptr;
  if (!Resolve("cuGraphAddKernelNode", &d.GraphAddKernelNode).ok()) d.GraphAddKernelNode = nullptr;
  return Status::Ok();
}

}  // namespace

const DriverApi& Driver() {
  static DriverApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    // The runtime initializes the driver on its first call; make sure it has.
    int count = 0;
    (void)cudaGetDeviceCount(&count);
    (void)cudaGetLastError();
    api.status = ResolveAll(api);
  });
  return api;
}

}  // namespace keel::vm_internal
