// common/file_digest.h — size + SHA-256 of an open regular file.
//
// keelc records the kernel library's digest in the executable; the VM (before
// dlopen) and `keel-run --verify` recompute it. Streams the file in 1 MiB
// chunks through one descriptor, so a file of any size costs constant memory.
#pragma once

#include <cstdint>
#include <string>

#include "common/regular_file.h"
#include "common/sha256.h"
#include "keel/status.h"

namespace keel::common {

struct FileDigest {
  uint64_t size = 0;
  Sha256::Digest sha256{};
};

// Hashes file.size() bytes (kIoError naming `what` when the file shrinks meanwhile).
Result<FileDigest> DigestFile(const RegularFile& file, const std::string& what);
// Opens `path` as a regular file (never blocking) and hashes it.
Result<FileDigest> DigestPath(const std::string& path, const std::string& what);

}  // namespace keel::common
