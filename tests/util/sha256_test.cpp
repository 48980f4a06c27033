// SHA-256 against the test vectors of FIPS 180-4's examples (NIST's "abc", the two-block
// message, a million 'a'), the empty string, and fed in pieces that straddle the 64-byte blocks.
#include "util/sha256.h"

#include <string>

#include <gtest/gtest.h>

namespace sl {
namespace {

TEST(Sha256, MatchesThePublishedTestVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecesGiveTheSameDigestAsOneCall) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += static_cast<char>('a' + i % 26);
  for (size_t piece : {1u, 7u, 55u, 56u, 63u, 64u, 65u, 200u}) {
    Sha256 s;
    for (size_t at = 0; at < text.size(); at += piece) s.update(text.substr(at, piece));
    EXPECT_EQ(s.hex_digest(), sha256_hex(text)) << "pieces of " << piece;
  }
}

}  // namespace
}  // namespace sl
