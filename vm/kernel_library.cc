// vm/kernel_library.cc — dlopen/dlsym wrapper; see kernel_library.h.
#include "vm/kernel_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "common/file_digest.h"
#include "common/regular_file.h"

namespace keel::vm_internal {
namespace {
// dlerror() keeps one message per thread, but glibc's dl* functions may run
// user constructors; a lock keeps open/lookup messages coherent.
std::mutex g_dl_mutex;

std::string DlErrorText() {
  const char* e = dlerror();
  return e != nullptr ? std::string(e) : std::string("unknown dlopen error");
}

// Refuses the file at `path` unless it is a regular file with the recorded size
// and SHA-256 (nothing of it is executed before this returns OK).
Status CheckRecordedDigest(const std::string& path, const KernelLibrary::Expected& expected) {
  KEEL_ASSIGN_OR_RETURN(common::RegularFile file, common::RegularFile::Open(path, "kernel library"));
  if (expected.sha256.empty()) return Status::Ok();
  if (file.size() != expected.size) {
    return InvalidExecutable("kernel library " + path + " has " + std::to_string(file.size()) +
                             " bytes but the executable records " + std::to_string(expected.size) +
                             " (truncated, damaged or from another build); not loading it");
  }
  KEEL_ASSIGN_OR_RETURN(common::FileDigest digest, common::DigestFile(file, "kernel library " + path));
  if (!std::equal(digest.sha256.begin(), digest.sha256.end(), expected.sha256.begin(), expected.sha256.end())) {
    common::Sha256::Digest want{};
    std::copy(expected.sha256.begin(), expected.sha256.end(), want.begin());
    return InvalidExecutable("kernel library " + path + " has SHA-256 " + common::Sha256::Hex(digest.sha256) +
                             " but the executable records " + common::Sha256::Hex(want) +
                             " (damaged or substituted); not loading it");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<KernelLibrary>> KernelLibrary::Open(const std::string& path, const Expected& expected) {
  const std::string_view expected_id = expected.id;
  KEEL_RETURN_IF_ERROR(CheckRecordedDigest(path, expected));
  // The owner exists before dlopen: nothing that may fail (an allocation) comes
  // between opening the library and handing the handle to the object that closes it.
  std::unique_ptr<KernelLibrary> lib(new KernelLibrary(nullptr, path));
  {
    std::lock_guard<std::mutex> lock(g_dl_mutex);
    // A name without a slash would send dlopen to the library search path, not
    // to the file whose digest was just checked in the working directory.
    const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
    lib->handle_ = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib->handle_ == nullptr) return InvalidExecutable("cannot load kernel library " + path + ": " + DlErrorText());
  }
  const auto* abi = static_cast<const uint32_t*>(lib->FindData("keel_kernel_abi_version"));
  if (abi == nullptr) {
    return InvalidExecutable("kernel library " + path + " does not export keel_kernel_abi_version");
  }
  if (*abi != KEEL_KERNEL_ABI_VERSION) {
    return InvalidExecutable("kernel library " + path + " has kernel ABI version " + std::to_string(*abi) +
                             ", this VM supports " + std::to_string(KEEL_KERNEL_ABI_VERSION));
  }
  const auto* id = static_cast<const char*>(lib->FindData("keel_kernel_library_id"));
  if (id == nullptr) {
    return InvalidExecutable("kernel library " + path + " does not export keel_kernel_library_id");
  }
  // The id is NUL-terminated by contract; bound the scan so a corrupt library cannot run us off.
  const size_t len = strnlen(id, 4096);
  if (std::string_view(id, len) != expected_id) {
    return InvalidExecutable("kernel library " + path + " has id \"" + std::string(id, len) +
                             "\" but the executable expects \"" + std::string(expected_id) +
                             "\" (library and executable come from different builds)");
  }
  return lib;
}

KernelLibrary::~KernelLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

Result<keel_cpu_kernel_fn> KernelLibrary::FindKernel(const std::string& name) const {
  void* sym = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_dl_mutex);
    dlerror();
    sym = dlsym(handle_, name.c_str());
  }
  if (sym == nullptr) return NotFound("kernel \"" + name + "\" not found in kernel library " + path_);
  return reinterpret_cast<keel_cpu_kernel_fn>(sym);
}

const void* KernelLibrary::FindData(const char* name) const {
  std::lock_guard<std::mutex> lock(g_dl_mutex);
  dlerror();
  return dlsym(handle_, name);
}

}  // namespace keel::vm_internal
