// Key suggestions by edit distance (Levenshtein), with a plausibility limit so that a far-off
// typo lists the valid keys instead of suggesting an unrelated one.
#include "config/suggest.h"

#include <algorithm>
#include <limits>

namespace sl {
namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_key(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(key, c);
    if (d < best_d) best_d = d, best = c;
  }
  // Plausible only if most of the key survives: up to a third of its letters, at least 2.
  const std::size_t limit = std::max<std::size_t>(2, key.size() / 3);
  return best_d <= limit ? best : "";
}

std::string unknown_key_message(const std::string& key,
                                const std::vector<std::string>& candidates) {
  std::string near = closest_key(key, candidates);
  if (!near.empty()) return "unknown key; did you mean '" + near + "'?";
  std::string list;
  for (const auto& c : candidates) list += (list.empty() ? "" : ", ") + c;
  return "unknown key; valid keys: " + list;
}

}  // namespace sl
