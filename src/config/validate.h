// Validation of a parsed Config: ranges, sanity limits and the rules that tie keys together
// (DeepNorm needs post-norm, a warm-up within the run, data.path only with the text source),
// each error naming the origin that set the key and its JSON path; and the checks of a plain
// name (train.name, a sweep run id). Not here: keys and types (config.h's parse_config).
#pragma once
#include <cstddef>
#include <string>

#include "config/config.h"

namespace sl {

// Ranges and cross-field rules. A key found in `where` is reported with its own origin.
void validate_config(const Config& cfg, const std::string& origin,
                     const Provenance* where = nullptr);

// "" when `name` can name a directory inside another (train.name, a sweep run id); otherwise
// what is wrong with it ("is empty", "contains '/'", "is 5000 characters long", ...). At most
// kMaxPlainName bytes: a directory name's limit (255) with room for a sweep's ".changed-N".
inline constexpr std::size_t kMaxPlainName = 200;
std::string plain_name_problem(const std::string& name);

// `name` (or any user text) quoted for an error message, cut to its first 80 characters and
// "..." when longer.
std::string shown_name(const std::string& name);

}  // namespace sl
