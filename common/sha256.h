// common/sha256.h — SHA-256 (FIPS 180-4), self-contained.
//
// Used for kernel library integrity: keelc records the library's SHA-256 in the
// executable, and the VM recomputes it over the bytes it is about to load,
// before dlopen. Not constant-time (nothing secret is hashed).
//
// Thread-safety: a Sha256 object is a plain value; distinct objects may be used
// from distinct threads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace keel::common {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  void Update(const void* data, size_t n);
  Digest Final();  // the object must not be updated afterwards

  static Digest Hash(const void* data, size_t n);
  static std::string Hex(const Digest& d);  // 64 lowercase hex digits

 private:
  void Block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;  // bytes
};

}  // namespace keel::common
