// fuzz/fuzz_input.h — reads typed values off a libFuzzer input (like LLVM's
// FuzzedDataProvider, which clang 14's headers ship only with compiler-rt):
// every read is defined for any input; past the end it returns zeros.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace keel::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool empty() const { return pos_ >= size_; }
  size_t remaining() const { return size_ - pos_; }

  template <typename T>
  T Read() {
    T v{};
    const size_t n = sizeof(T) < remaining() ? sizeof(T) : remaining();
    if (n) std::memcpy(&v, data_ + pos_, n);
    pos_ += n;
    return v;
  }
  // A value in [lo, hi] (inclusive).
  uint64_t Range(uint64_t lo, uint64_t hi) {
    const uint64_t span = hi - lo + 1;
    const uint64_t v = Read<uint64_t>();
    return span == 0 ? v : lo + v % span;
  }
  bool Bool() { return Read<uint8_t>() & 1; }
  // Up to `max` bytes.
  std::vector<uint8_t> Bytes(size_t max) {
    const size_t n = static_cast<size_t>(Range(0, max));
    const size_t take = n < remaining() ? n : remaining();
    std::vector<uint8_t> out(data_ + pos_, data_ + pos_ + take);
    out.resize(n);  // zero padded: the length is the fuzzer's choice, the content too
    pos_ += take;
    return out;
  }
  std::string String(size_t max) {
    auto b = Bytes(max);
    return std::string(b.begin(), b.end());
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace keel::fuzz
