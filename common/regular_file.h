// common/regular_file.h — open a file only when it is a regular file.
//
// Hostile inputs (issue 13): a path given to Keel (a model, its external data, an
// input tensor file, a kernel library) may name a FIFO, a device, a directory or
// a socket. std::ifstream blocks forever on a FIFO and reports a directory's size
// as 2^63-1; RegularFile opens with O_NONBLOCK, then fstat()s the *open*
// descriptor, so what is checked is what is read (no stat-then-open race).
//
// Ownership: RegularFile owns its descriptor (closed on destruction; movable).
// Thread-safety: ReadAt uses pread and may be called from several threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "keel/status.h"

namespace keel::common {

class RegularFile {
 public:
  // `what` names the file in errors, e.g. "input file 'x.bin'". Errors (one line):
  // kNotFound (no such path), kInvalidArgument (not a regular file: says which
  // kind), kIoError (any other open/fstat failure, with strerror).
  static Result<RegularFile> Open(const std::string& path, const std::string& what);

  RegularFile(RegularFile&& other) noexcept : fd_(other.fd_), size_(other.size_) { other.fd_ = -1; }
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }  // from fstat at open

  // Reads exactly `n` bytes at `offset` (kIoError naming `what` when the file is
  // shorter now than at open, or on a read error).
  Status ReadAt(uint64_t offset, void* dst, size_t n, const std::string& what) const;
  // The whole file (size() bytes).
  Result<std::vector<uint8_t>> ReadAll(const std::string& what) const;

 private:
  RegularFile(int fd, uint64_t size) : fd_(fd), size_(size) {}
  int fd_ = -1;
  uint64_t size_ = 0;
};

// "a directory", "a FIFO", "a character device", ... for an st_mode (errors).
const char* FileKindName(unsigned mode);

}  // namespace keel::common
