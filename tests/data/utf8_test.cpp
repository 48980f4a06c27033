// Tests for the strict UTF-8 decoder/encoder: every encoding length round-trips, and each kind
// of malformed input is rejected with the byte offset where it starts.
#include "data/utf8.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace sl {
namespace {

std::string error_of(const std::string& bytes) {
  try {
    utf8_decode(bytes, "input");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Utf8, BoundaryCodePointsRoundTrip) {
  const std::vector<char32_t> cps = {0x0,    0x7F,   0x80,   0x7FF,   0x800,
                                     0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF};
  std::string bytes;
  for (char32_t cp : cps) utf8_append(bytes, cp);
  EXPECT_EQ(bytes.size(), size_t{1 + 1 + 2 + 2 + 3 + 3 + 3 + 3 + 4 + 4});
  EXPECT_EQ(utf8_decode(bytes, "input"), cps);
}

TEST(Utf8, KnownMultibyteStringDecodesToItsCodePoints) {
  EXPECT_EQ(utf8_decode("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", "input"),
            (std::vector<char32_t>{U'a', 0xE9, 0x20AC, 0x1F600}));
}

TEST(Utf8, MalformedInputIsRejectedAtItsByteOffset) {
  EXPECT_NE(error_of("\xFF").find("byte offset 0 (unexpected lead byte)"), std::string::npos);
  EXPECT_NE(error_of("ab\x80").find("byte offset 2"), std::string::npos);
  EXPECT_NE(error_of("abc\xC3(").find("byte offset 3 (missing continuation"), std::string::npos);
  EXPECT_NE(error_of("xy\xE2\x82").find("byte offset 2 (truncated"), std::string::npos);
  EXPECT_NE(error_of("\xC0\xAF").find("overlong"), std::string::npos);
  EXPECT_NE(error_of("\xE0\x80\xAF").find("overlong"), std::string::npos);
  EXPECT_NE(error_of("\xED\xA0\x80").find("surrogate"), std::string::npos);
  EXPECT_NE(error_of("\xF4\x90\x80\x80").find("above U+10FFFF"), std::string::npos);
  EXPECT_NE(error_of("\xF4\x90\x80\x80").find("input:"), std::string::npos);
}

TEST(Utf8, CodePointsAreDescribedReadablyInMessages) {
  EXPECT_EQ(describe_code_point(U'z'), "'z' (U+007A)");
  EXPECT_EQ(describe_code_point(U'\n'), "U+000A");
  EXPECT_EQ(describe_code_point(0x20AC), "'\xE2\x82\xAC' (U+20AC)");
}

}  // namespace
}  // namespace sl
