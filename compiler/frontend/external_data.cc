// compiler/frontend/external_data.cc — see external_data.h.
#include "compiler/frontend/external_data.h"

#include <filesystem>

#include "common/regular_file.h"

namespace keel::frontend {
namespace fs = std::filesystem;

namespace {

// True when `path` is `base` or below it, compared component by component (so
// "/m/dir2" is not inside "/m/dir"). Both must be canonical.
bool IsInside(const fs::path& path, const fs::path& base) {
  auto p = path.begin();
  for (auto b = base.begin(); b != base.end(); ++b, ++p) {
    if (b->empty()) continue;  // a trailing separator yields an empty last component
    if (p == path.end() || *p != *b) return false;
  }
  return true;
}

}  // namespace

Result<std::vector<uint8_t>> ReadExternalData(const std::string& model_dir, const ExternalDataRef& ref,
                                              const std::string& what, uint64_t expected) {
  const std::string where = what + ": external data '" + ref.location + "'";
  if (ref.location.empty()) return InvalidArgument(what + ": external data without a location");
  if (ref.location.find('\0') != std::string::npos) return InvalidArgument(where + " contains a NUL byte");
  const fs::path location(ref.location);
  if (location.is_absolute()) {
    return InvalidArgument(where + " is an absolute path; external data must be inside the model's folder");
  }
  std::error_code ec;
  const fs::path base = fs::canonical(model_dir.empty() ? fs::path(".") : fs::path(model_dir), ec);
  if (ec) return IoError(where + ": the model's folder '" + model_dir + "' cannot be resolved: " + ec.message());
  // weakly_canonical resolves `..` and every symbolic link of the existing prefix.
  const fs::path target = fs::weakly_canonical(base / location, ec);
  if (ec) return IoError(where + " cannot be resolved: " + ec.message());
  if (!IsInside(target, base)) {
    return InvalidArgument(where + " resolves to '" + target.string() + "', outside the model's folder '" +
                           base.string() + "'");
  }
  if (ref.offset < 0) return InvalidArgument(where + ": negative offset " + std::to_string(ref.offset));
  if (ref.length >= 0 && static_cast<uint64_t>(ref.length) != expected) {
    return InvalidArgument(where + ": length " + std::to_string(ref.length) + " but the tensor needs " +
                           std::to_string(expected) + " bytes");
  }
  // Opened by its resolved path: a regular file, without blocking on a FIFO.
  KEEL_ASSIGN_OR_RETURN(common::RegularFile file, common::RegularFile::Open(target.string(), where + ": file"));
  const uint64_t offset = static_cast<uint64_t>(ref.offset);
  if (offset > file.size() || file.size() - offset < expected) {
    return IoError(where + " is too short: " + std::to_string(file.size()) + " bytes, the tensor needs " +
                   std::to_string(expected) + " at offset " + std::to_string(offset));
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(expected));
  KEEL_RETURN_IF_ERROR(file.ReadAt(offset, bytes.data(), bytes.size(), where));
  return bytes;
}

}  // namespace keel::frontend
