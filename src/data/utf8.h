// UTF-8 to code points and back, strict: overlong forms, surrogates and values above U+10FFFF
// are rejected with the byte offset of the offending sequence. Only what the text source needs;
// no normalisation, no grapheme clusters.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace sl {

// `what` names the input in error messages, e.g. "data.path 'input.txt'".
std::vector<char32_t> utf8_decode(std::string_view bytes, const std::string& what);

void utf8_append(std::string& out, char32_t cp);
std::string utf8_encode(char32_t cp);

// For messages: 'a' (U+0061), or just U+000A for control characters.
std::string describe_code_point(char32_t cp);

}  // namespace sl
