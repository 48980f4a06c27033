// Loader: turns a config file plus `--key=value` overrides into a validated Config.
// Reads JSON (comments allowed), resolves "extends" chains (deep merge, relative to the extending
// file), makes data.path absolute, applies overrides typed by the schema, then validates.
// Not here: the keys, defaults and rules themselves (see config.h).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"

namespace sl {

// Reads and parses one JSON file (configs and sweep files). Missing file: names it; malformed:
// "path:line:col: ..."; a key twice in one object: "path: duplicate key 'model.n_layer' ...".
nlohmann::json read_json_file(const std::string& path);

// Objects merge key by key (recursively); anything else in `overlay` replaces what `base` had.
void merge_json(nlohmann::json& base, const nlohmann::json& overlay);

// A config file with its "extends" chain resolved, before overrides and validation.
struct ResolvedJson {
  nlohmann::json json;     // merged; no "extends" key left
  Provenance where;        // "model.n_layer" -> the file that set it last
  nlohmann::json derived;  // the top file's "derived" section (a run's config.json), or null
};
ResolvedJson resolve_extends(const std::string& path);

// Applies "--model.n_layer=32" or "model.n_layer=32" to `cfg`. The value is parsed as the key's
// type (integer, number, true/false, string; null also for model.final_norm). Unknown keys and
// bad values throw ConfigError, prefixed with `context` (e.g. the config path) when given.
// Returns the dotted key that was set.
std::string apply_override(nlohmann::json& cfg, const std::string& kv,
                           const std::string& context = "");

// resolve_extends, then overrides in order, then validation. train.name defaults to the file's
// stem (an explicit empty name is an error); source_path is the file's absolute path. A
// "derived" section (a run's resolved config.json) is skipped here; check_derived_section
// (train/setup.h, which knows the wirings) compares it with what the file's keys derive.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace sl
