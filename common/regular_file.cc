// common/regular_file.cc — see regular_file.h.
#include "common/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace keel::common {

const char* FileKindName(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
  }
  return "not a regular file";
}

Result<RegularFile> RegularFile::Open(const std::string& path, const std::string& what) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever.
  // It has no effect on reads from regular files, the only thing we keep.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return NotFound(what + " '" + path + "' does not exist");
    return IoError(what + " '" + path + "' cannot be opened: " + std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError(what + " '" + path + "' cannot be inspected: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(what + " '" + path + "' is " + FileKindName(st.st_mode) + ", not a regular file");
  }
  return RegularFile(fd, static_cast<uint64_t>(st.st_size));
}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    size_ = other.size_;
    other.fd_ = -1;
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status RegularFile::ReadAt(uint64_t offset, void* dst, size_t n, const std::string& what) const {
  auto* out = static_cast<uint8_t*>(dst);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return IoError(what + ": read error at byte " + std::to_string(offset + done) + ": " + std::strerror(errno));
    }
    if (got == 0) {
      return IoError(what + ": file ended at byte " + std::to_string(offset + done) + ", expected " +
                     std::to_string(offset + n) + " (was it truncated while reading?)");
    }
    done += static_cast<size_t>(got);
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> RegularFile::ReadAll(const std::string& what) const {
  std::vector<uint8_t> bytes;
  try {
    bytes.resize(static_cast<size_t>(size_));
  } catch (const std::bad_alloc&) {
    return OutOfMemory(what + ": cannot allocate " + std::to_string(size_) + " bytes");
  }
  KEEL_RETURN_IF_ERROR(ReadAt(0, bytes.data(), bytes.size(), what));
  return bytes;
}

}  // namespace keel::common
