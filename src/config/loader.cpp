// Loader: files, "extends" chains and overrides. Each file is checked on its own (unknown keys,
// types) before merging, so an error names the file that holds the bad key; ranges and
// cross-field rules are checked once on the merged result, with provenance for the origin.
#include "config/loader.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "config/suggest.h"
#include "config/validate.h"
#include "util/fsutil.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// 1-based line and column of the 0-based byte index `at` in `text`.
std::pair<std::size_t, std::size_t> line_column(const std::string& text, std::size_t at) {
  at = std::min(at, text.size());
  std::size_t line = 1, line_start = 0;
  for (std::size_t i = 0; i < at; ++i)
    if (text[i] == '\n') ++line, line_start = i + 1;
  return {line, at - line_start + 1};
}

// nlohmann's what() is "[json.exception.parse_error.101] parse error at line 2, column 8:
// <detail>".
std::string parse_error_detail(const std::string& what) {
  std::size_t column = what.find("column ");
  std::size_t colon = column == std::string::npos ? column : what.find(": ", column);
  if (colon != std::string::npos) return what.substr(colon + 2);
  std::size_t bracket = what.find("] ");
  return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

// The deepest nesting of arrays and objects a config or sweep file may have (theirs is 3 or 4): the
// bound keeps the time to read any file linear in its size (80,000 nested '[' took 20 s).
constexpr std::size_t kMaxJsonDepth = 64;

// nlohmann keeps the last of two equal keys in an object without a word; a strict load refuses
// them. The parser callback sees every object, array and key in document order, so a stack of
// open containers gives the duplicate's dotted path ("model.n_layer", "variants[1].name").
// It also refuses nesting deeper than kMaxJsonDepth, before the deep container is built.
class DuplicateKeyCheck {
 public:
  explicit DuplicateKeyCheck(const std::string& path) : path_(path) {}

  bool operator()(int /*depth*/, json::parse_event_t event, json& value) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (open_.size() >= kMaxJsonDepth)
          throw ConfigError(path_ + ": arrays and objects nested deeper than " +
                            std::to_string(kMaxJsonDepth) + " levels; not a config or sweep file");
        open_.push_back({event == json::parse_event_t::array_start, child_name(), {}, "", 0});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        open_.pop_back();
        element_done();
        break;
      case json::parse_event_t::key: {
        Container& c = open_.back();
        c.key = value.get<std::string>();
        if (!c.keys.insert(c.key).second)
          throw ConfigError(path_ + ": duplicate key '" + child_name() +
                            "': a key may appear once in an object (a JSON reader would silently "
                            "keep one of them)");
        break;
      }
      case json::parse_event_t::value:
        element_done();
        break;
    }
    return true;
  }

 private:
  struct Container {
    bool array;
    std::string name;            // its dotted path, "" for the top level
    std::set<std::string> keys;  // objects: the keys seen so far
    std::string key;             // objects: the key whose value is being read
    std::size_t index;           // arrays: the element being read
  };
  // The dotted path of the value being read in the innermost open container.
  std::string child_name() const {
    if (open_.empty()) return "";
    const Container& c = open_.back();
    if (c.array) return c.name + "[" + std::to_string(c.index) + "]";
    return c.name.empty() ? c.key : c.name + "." + c.key;
  }
  void element_done() {
    if (!open_.empty() && open_.back().array) ++open_.back().index;
  }

  std::string path_;
  std::vector<Container> open_;
};

// Records every leaf of one config layer as set by `origin`.
void record_provenance(const json& layer, const std::string& origin, Provenance& where) {
  for (const auto& section : layer.items()) {
    if (!section.value().is_object()) {
      where[section.key()] = origin;
      continue;
    }
    for (const auto& leaf : section.value().items())
      where[section.key() + "." + leaf.key()] = origin;
  }
}

// data.path is relative to the file (or, for an override, the working directory) that set it.
void resolve_data_path(json& layer, const fs::path& base_dir) {
  auto data = layer.find("data");
  if (data == layer.end() || !data->is_object()) return;
  auto path = data->find("path");
  if (path == data->end() || !path->is_string()) return;
  const std::string p = path->get<std::string>();
  if (p.empty() || fs::path(p).is_absolute()) return;
  *path = fs::absolute(base_dir / p).lexically_normal().string();
}

std::string chain_string(const std::vector<std::string>& chain, const std::string& last) {
  std::string s;
  for (const auto& f : chain) s += f + " -> ";
  return s + last;
}

json load_layer(const fs::path& file, std::vector<std::string>& chain,
                std::vector<std::string>& chain_keys, Provenance& where, json* derived) {
  const std::string name = file.string();
  std::error_code
      ec;  // a name the filesystem refuses (too long, a bad component) is the file's problem
  const std::string key = fs::weakly_canonical(fs::absolute(file, ec), ec).string();
  if (ec) {
    const std::string from =
        chain.empty() ? name : chain.back() + ": extends: base config '" + name + "'";
    throw ConfigError(from + ": " + ec.message());
  }
  if (std::find(chain_keys.begin(), chain_keys.end(), key) != chain_keys.end())
    throw ConfigError(chain.back() + ": extends: cycle " + chain_string(chain, name));
  if (!chain.empty() && !fs::exists(file, ec))
    throw ConfigError(chain.back() + ": extends: base config '" + name + "' not found" +
                      (ec ? " (" + ec.message() + ")" : ""));
  json layer = read_json_file(name);
  if (!layer.is_object()) throw ConfigError(name + ": expected a JSON object at the top level");
  if (auto d = layer.find("derived");
      d != layer.end()) {  // checked after the merge (top file only)
    if (!d->is_object())
      throw ConfigError(name + ": derived: expected an object, got " + d->dump());
    if (derived) *derived = *d;
    layer.erase(d);
  }

  json merged = json::object();
  if (auto ext = layer.find("extends"); ext != layer.end()) {
    if (!ext->is_string() || ext->get<std::string>().empty())
      throw ConfigError(name + ": extends: expected a file name, got " + ext->dump());
    const fs::path base = (file.parent_path() / ext->get<std::string>()).lexically_normal();
    layer.erase(ext);
    chain.push_back(name);
    chain_keys.push_back(key);
    merged = load_layer(base, chain, chain_keys, where, nullptr);
    chain.pop_back();
    chain_keys.pop_back();
  }
  parse_config(layer, name);  // unknown keys and types, reported against this file
  resolve_data_path(layer, file.parent_path());
  record_provenance(layer, name, where);
  merge_json(merged, layer);
  return merged;
}

// How an override value is spelled for the key's type, for messages.
std::string expected_type(const json& schema_value) {
  if (schema_value.is_number_integer()) return "an integer";
  if (schema_value.is_number()) return "a number";
  if (schema_value.is_boolean()) return "true or false";
  if (schema_value.is_null()) return "true, false or null";
  return "a string";
}

}  // namespace

json read_json_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw ConfigError("config file not found: " + path);
  if (fs::is_directory(path, ec)) throw ConfigError(path + ": is a directory, not a config file");
  // Bounded, and a regular file: "extends": "/dev/zero" (or any endless stream) and a FIFO must
  // fail at once, naming the file, not read forever or block.
  constexpr std::uint64_t kMaxConfigBytes = 16u << 20;
  std::string text;
  try {
    text = read_regular_file(path, kMaxConfigBytes, "config file");
  } catch (const Error& e) {  // the same message, as the config error it is
    throw ConfigError(e.what());
  }
  try {
    return json::parse(text, DuplicateKeyCheck(path), /*allow_exceptions=*/true,
                       /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    // e.byte counts bytes read, so the offending byte is at index byte - 1.
    auto [line, column] = line_column(text, e.byte == 0 ? 0 : e.byte - 1);
    throw ConfigError(path + ":" + std::to_string(line) + ":" + std::to_string(column) +
                      ": malformed JSON: " + parse_error_detail(e.what()));
  } catch (const json::exception& e) {
    // e.g. out_of_range 406, a number too large for any JSON number type (found by fuzz_config)
    throw ConfigError(path + ": malformed JSON: " + parse_error_detail(e.what()));
  }
}

void merge_json(json& base, const json& overlay) {
  if (!base.is_object() || !overlay.is_object()) {
    base = overlay;
    return;
  }
  for (const auto& item : overlay.items()) {
    auto it = base.find(item.key());
    if (it != base.end() && it->is_object() && item.value().is_object())
      merge_json(*it, item.value());
    else
      base[item.key()] = item.value();
  }
}

ResolvedJson resolve_extends(const std::string& path) {
  ResolvedJson out;
  std::vector<std::string> chain, chain_keys;
  out.derived = nullptr;
  out.json = load_layer(fs::path(path), chain, chain_keys, out.where, &out.derived);
  return out;
}

std::string apply_override(json& cfg, const std::string& kv, const std::string& context) {
  const std::string origin = (context.empty() ? "" : context + ": ") + "override '" + kv + "'";
  std::string text = kv.rfind("--", 0) == 0 ? kv.substr(2) : kv;
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(origin + ": expected key=value, e.g. --model.n_layer=8");
  const std::string key = text.substr(0, eq), raw = text.substr(eq + 1);

  const json& schema = config_schema();
  std::vector<std::string> sections;
  for (const auto& item : schema.items()) sections.push_back(item.key());
  const std::size_t dot = key.find('.');
  const std::string section = key.substr(0, dot);
  if (schema.contains(section) && schema[section].is_object() && dot == std::string::npos)
    throw ConfigError(origin + ": " + key + ": is a section; name a key in it, e.g. " + section +
                      "." + schema[section].begin().key());
  if (!schema.contains(section) || (!schema[section].is_object() && dot != std::string::npos))
    throw ConfigError(origin + ": " + key + ": " + unknown_key_message(section, sections));
  const json* slot = &schema[section];
  std::string leaf;
  if (dot != std::string::npos) {
    leaf = key.substr(dot + 1);
    std::vector<std::string> leaves;
    for (const auto& item : slot->items()) leaves.push_back(item.key());
    if (!slot->contains(leaf))
      throw ConfigError(origin + ": " + key + ": " + unknown_key_message(leaf, leaves));
    slot = &(*slot)[leaf];
  }

  json value;
  if (slot->is_string()) {
    value = raw;
  } else {
    try {
      value = json::parse(raw);
    } catch (const json::exception&) {  // parse_error, or out_of_range for a number too large
      throw ConfigError(origin + ": " + key + ": expected " + expected_type(*slot) + ", got '" +
                        raw + "'");
    }
  }
  json single = leaf.empty() ? json{{section, value}} : json{{section, {{leaf, value}}}};
  parse_config(single, origin);  // the key's type and allowed values, reported against the override

  if (!cfg.is_object()) cfg = json::object();
  if (leaf.empty()) {
    cfg[section] = value;
  } else {
    if (!cfg.contains(section) || !cfg[section].is_object()) cfg[section] = json::object();
    cfg[section][leaf] = value;
  }
  return key;
}

namespace {

// An explicit "train.name": "" (or --train.name=) would silently become the file's stem.
void check_explicit_name(const ResolvedJson& resolved, const std::string& path) {
  const auto train = resolved.json.find("train");
  if (train == resolved.json.end() || !train->is_object()) return;
  const auto name = train->find("name");
  if (name == train->end() || !name->is_string() || !name->get<std::string>().empty()) return;
  const auto it = resolved.where.find("train.name");
  throw ConfigError(
      (it == resolved.where.end() ? path : it->second) +
      ": train.name: is empty; a run name is a plain directory name (leave the key out to use the "
      "config file's stem)");
}

Config load_config_unchecked(const std::string& path, const std::vector<std::string>& overrides) {
  ResolvedJson resolved = resolve_extends(path);
  for (const auto& kv : overrides) {
    const std::string key = apply_override(resolved.json, kv, path);
    if (key == "data.path") resolve_data_path(resolved.json, fs::current_path());
    resolved.where[key] =
        path + " (override " + shown_name(kv) + ")";  // cut: a 5000-character value
  }
  check_explicit_name(resolved, path);
  Config cfg = parse_config(resolved.json, path);
  validate_config(cfg, path, &resolved.where);
  if (cfg.train.name.empty()) cfg.train.name = fs::path(path).stem().string();
  if (const std::string bad = plain_name_problem(cfg.train.name); !bad.empty())
    throw ConfigError(path + ": train.name: the file's stem " + shown_name(cfg.train.name) + " " +
                      bad + "; set train.name");
  cfg.source_path = fs::absolute(path).lexically_normal().string();
  return cfg;
}

}  // namespace

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  try {
    return load_config_unchecked(path, overrides);
  } catch (const fs::filesystem_error& e) {  // a path in the config the filesystem refuses
    throw ConfigError(path + ": " + e.what());
  }
}

}  // namespace sl
