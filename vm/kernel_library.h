// vm/kernel_library.h — a loaded kernel library (model.keel.so).
//
// Opens the shared object with dlopen(RTLD_NOW | RTLD_LOCAL) so that two models'
// libraries never see each other's symbols, checks keel_kernel_abi_version and
// keel_kernel_library_id against what the executable expects, and looks kernels
// up by name.
//
// Ownership/lifetime: the KernelLibrary owns the dlopen handle and dlclose()s it
// when destroyed; every function pointer obtained from it is valid only while it
// lives (LoadedExecutable keeps it alive as long as any VM uses the executable).
// Thread-safety: FindKernel may be called concurrently (dlsym is thread-safe; the
// dlerror text is read under a process-wide lock).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "keel/kernel_abi.h"
#include "keel/status.h"

namespace keel::vm_internal {

class KernelLibrary {
 public:
  // Errors: kNotFound (no file at `path`), kInvalidExecutable (dlopen fails on an
  // existing file, missing or different keel_kernel_abi_version, missing or
  // different keel_kernel_library_id), each naming the path.
  static Result<std::unique_ptr<KernelLibrary>> Open(const std::string& path, std::string_view expected_id);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  // The exported CPU kernel `name`. kNotFound naming the kernel and the library path.
  Result<keel_cpu_kernel_fn> FindKernel(const std::string& name) const;
  // Any exported data symbol (e.g. keel_cuda_cubin); nullptr when absent.
  const void* FindData(const char* name) const;

  const std::string& path() const { return path_; }

 private:
  KernelLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
};

}  // namespace keel::vm_internal
