// Strict UTF-8 decoding (RFC 3629) and encoding for the character-level text source.
#include "data/utf8.h"

#include <cstdio>

#include "util/error.h"

namespace sl {

std::vector<char32_t> utf8_decode(std::string_view bytes, const std::string& what) {
  std::vector<char32_t> out;
  out.reserve(bytes.size());
  const size_t n = bytes.size();
  size_t i = 0;
  auto fail = [&](const char* why) {
    throw Error(what + ": invalid UTF-8 at byte offset " + std::to_string(i) + " (" + why + ")");
  };
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    if (b0 < 0x80) {
      out.push_back(b0);
      ++i;
      continue;
    }
    int len = 0;
    char32_t cp = 0;
    if ((b0 & 0xE0) == 0xC0) {
      len = 2;
      cp = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
      len = 3;
      cp = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
      len = 4;
      cp = b0 & 0x07;
    } else {
      fail("unexpected lead byte");
    }
    if (i + static_cast<size_t>(len) > n) fail("truncated sequence at end of input");
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(bytes[i + static_cast<size_t>(k)]);
      if ((b & 0xC0) != 0x80) fail("missing continuation byte");
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len]) fail("overlong encoding");
    if (cp >= 0xD800 && cp <= 0xDFFF) fail("surrogate code point");
    if (cp > 0x10FFFF) fail("code point above U+10FFFF");
    out.push_back(cp);
    i += static_cast<size_t>(len);
  }
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  SL_CHECK(cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF), "not a Unicode scalar value");
  auto put = [&](unsigned v) { out.push_back(static_cast<char>(v)); };
  if (cp < 0x80) {
    put(cp);
  } else if (cp < 0x800) {
    put(0xC0 | (cp >> 6));
    put(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    put(0xE0 | (cp >> 12));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  } else {
    put(0xF0 | (cp >> 18));
    put(0x80 | ((cp >> 12) & 0x3F));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  }
}

std::string utf8_encode(char32_t cp) {
  std::string s;
  utf8_append(s, cp);
  return s;
}

std::string describe_code_point(char32_t cp) {
  char hex[16];
  std::snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(cp));
  const bool printable = cp >= 0x20 && cp != 0x7F && !(cp >= 0x80 && cp < 0xA0) && cp <= 0x10FFFF &&
                         !(cp >= 0xD800 && cp <= 0xDFFF);
  if (!printable) return hex;
  std::string s = "'";  // built by appends: GCC 12 flags "'" + str + ... with a bogus -Wrestrict
  utf8_append(s, cp);
  s.append("' (").append(hex).append(")");
  return s;
}

}  // namespace sl
