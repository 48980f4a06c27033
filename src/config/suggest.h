// Key suggestions: the "did you mean" of an unknown key or value (config sections and keys,
// `--key=value` overrides, choices, sweep keys, subcommands and flags), by edit distance.
// Not here: which keys exist (config.h's schema, each caller's own list).
#pragma once
#include <string>
#include <vector>

namespace sl {

// The candidate nearest to `key` by edit distance, or "" when none is plausibly meant.
std::string closest_key(const std::string& key, const std::vector<std::string>& candidates);
// "unknown key; did you mean 'n_layer'?" or "unknown key; valid keys: a, b, c".
std::string unknown_key_message(const std::string& key, const std::vector<std::string>& candidates);

}  // namespace sl
