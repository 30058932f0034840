// vm/kernel_library.h — a loaded kernel library (model.keel.so).
//
// Opens the shared object with dlopen(RTLD_NOW | RTLD_LOCAL) so that two models'
// libraries never see each other's symbols, checks keel_kernel_abi_version and
// keel_kernel_library_id against what the executable expects, and looks kernels
// up by name.
//
// dlopen runs the library's code (constructors, then kernels), so a damaged or
// substituted file must be refused before it: when the executable records the
// library's size and SHA-256 (format 1.1, written by keelc), Open checks the file
// is a regular file of that size and hashes it first. This guards against
// corruption and mix-ups, not against a process that can rewrite the file between
// the check and dlopen (that process can already run code as this user).
//
// Ownership/lifetime: the KernelLibrary owns the dlopen handle and dlclose()s it
// when destroyed; every function pointer obtained from it is valid only while it
// lives (LoadedExecutable keeps it alive as long as any VM uses the executable).
// Thread-safety: FindKernel may be called concurrently (dlsym is thread-safe; the
// dlerror text is read under a process-wide lock).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "keel/kernel_abi.h"
#include "keel/status.h"

namespace keel::vm_internal {

class KernelLibrary {
 public:
  // What the executable says about its library: the id, and (format 1.1) the
  // size and SHA-256; an empty `sha256` means none was recorded (not checked).
  struct Expected {
    std::string_view id;
    uint64_t size = 0;
    std::span<const uint8_t> sha256;
  };
  // Errors: kNotFound (no file at `path`), kInvalidArgument (not a regular file),
  // kInvalidExecutable (size or SHA-256 differ — checked before dlopen —, dlopen
  // fails, missing or different keel_kernel_abi_version or keel_kernel_library_id),
  // each one line naming the path.
  static Result<std::unique_ptr<KernelLibrary>> Open(const std::string& path, const Expected& expected);
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
