// common/file_digest.cc — see file_digest.h.
#include "common/file_digest.h"

#include <algorithm>
#include <vector>

namespace keel::common {

Result<FileDigest> DigestFile(const RegularFile& file, const std::string& what) {
  FileDigest out;
  out.size = file.size();
  Sha256 sha;
  std::vector<uint8_t> chunk(std::min<uint64_t>(file.size(), uint64_t{1} << 20));
  for (uint64_t at = 0; at < file.size();) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), file.size() - at));
    KEEL_RETURN_IF_ERROR(file.ReadAt(at, chunk.data(), n, what));
    sha.Update(chunk.data(), n);
    at += n;
  }
  out.sha256 = sha.Final();
  return out;
}

Result<FileDigest> DigestPath(const std::string& path, const std::string& what) {
  KEEL_ASSIGN_OR_RETURN(RegularFile file, RegularFile::Open(path, what));
  return DigestFile(file, what + " '" + path + "'");
}

}  // namespace keel::common
