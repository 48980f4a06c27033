// Markdown helpers for the tables `stacklab registry --markdown` prints from the registries.
#pragma once
#include <string>

namespace sl {

// `s` as the text of a Markdown table cell: '|' escaped as "\|".
inline std::string markdown_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace sl
