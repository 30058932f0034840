// apps/keel-run/verify.cc — see verify.h. Reads the executable with the
// serialization reader (no VM, no dlopen) so that nothing from the library runs.
#include "apps/keel-run/verify.h"

#include <cstdio>
#include <vector>

#include "common/file_digest.h"
#include "common/regular_file.h"
#include "serialization/executable_reader.h"

namespace keel::run {
namespace {

int Error(const std::string& message) {
  std::fprintf(stderr, "keel-run: error: %s\n", message.c_str());
  return 1;
}

}  // namespace

int VerifyPair(const std::string& model, const std::string& library_arg) {
  auto file = common::RegularFile::Open(model, "executable");
  if (!file.ok()) return Error(file.status().ToString());
  auto bytes = file->ReadAll("executable '" + model + "'");
  if (!bytes.ok()) return Error(bytes.status().ToString());
  auto view = ser::ReadExecutable(*bytes);
  if (!view.ok()) return Error(view.status().WithContext(model).ToString());
  const auto* root = view->root;
  std::printf("executable %s: format %u.%u, producer %s\n", model.c_str(), view->version_major, view->version_minor,
              root->producer() ? root->producer()->c_str() : "?");
  if (root->kernel_library_id() == nullptr || root->kernel_library_id()->size() == 0) {
    std::printf("no kernel library needed\n");
    return 0;
  }
  const std::string library = library_arg.empty() ? model + ".so" : library_arg;
  std::printf("kernel library id %s\n", root->kernel_library_id()->c_str());
  const auto* sha = root->kernel_library_sha256();
  if (sha == nullptr) {
    return Error(model + " records no kernel library digest (format " + std::to_string(view->version_major) + "." +
                 std::to_string(view->version_minor) + "); recompile it with this keelc");
  }
  common::Sha256::Digest want{};
  std::copy(sha->begin(), sha->end(), want.begin());  // 32 bytes: checked by ReadExecutable
  std::printf("recorded    %llu bytes sha256 %s\n", static_cast<unsigned long long>(root->kernel_library_size()),
              common::Sha256::Hex(want).c_str());
  auto digest = common::DigestPath(library, "kernel library");
  if (!digest.ok()) return Error(digest.status().ToString());
  std::printf("library     %llu bytes sha256 %s (%s)\n", static_cast<unsigned long long>(digest->size),
              common::Sha256::Hex(digest->sha256).c_str(), library.c_str());
  if (digest->size != root->kernel_library_size() || digest->sha256 != want) {
    return Error("kernel library " + library + " does not match " + model + " (damaged, substituted or from another build)");
  }
  std::printf("OK: %s matches %s\n", library.c_str(), model.c_str());
  return 0;
}

}  // namespace keel::run
