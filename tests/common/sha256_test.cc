// tests/common/sha256_test.cc — FIPS 180-4 / NIST example vectors, and the
// streaming interface split at every block boundary.
#include "common/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace keel::common {
namespace {

std::string HexOf(const std::string& s) { return Sha256::Hex(Sha256::Hash(s.data(), s.size())); }

TEST(Sha256Test, NistVectors) {
  EXPECT_EQ(HexOf(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(HexOf("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(HexOf("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(HexOf(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, StreamingEqualsOneShot) {
  std::string data;
  for (int i = 0; i < 300; ++i) data += static_cast<char>(i * 7 + 3);
  const auto want = Sha256::Hash(data.data(), data.size());
  for (size_t split = 0; split <= data.size(); ++split) {
    Sha256 s;
    s.Update(data.data(), split);
    s.Update(data.data() + split, data.size() - split);
    ASSERT_EQ(s.Final(), want) << "split at " << split;
  }
}

}  // namespace
}  // namespace keel::common
