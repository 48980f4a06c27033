// The one checked path for reading JSON files stacklab wrote or a user edited (vocabularies,
// checkpoint metadata, manifests, sweep files, summaries): parse errors and any missing field,
// wrong type or out-of-range value become an sl::Error naming the file and the field, never a
// nlohmann exception (which the CLI would report as an internal error).
// Not here: configs, whose schema-driven checks live in src/config/.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace sl {

// `text` parsed as JSON; `file` names it in errors ("vocabulary file 'runs/x/vocab.json'").
nlohmann::json parse_json_text(const std::string& text, const std::string& file);
// The file at `path`, read and parsed; `what` names it in errors (e.g. "vocabulary file").
nlohmann::json parse_json_file(const std::string& path, const std::string& what);

// A field of the object `obj` (itself field `where` of `file`, "" for the top level). Each throws
// "<file>: field '<where.key>' ..." when the field is missing or of the wrong type or range.
const nlohmann::json& json_field(const nlohmann::json& obj, const std::string& file,
                                 const std::string& key, const std::string& where = "");
std::string json_string(const nlohmann::json& obj, const std::string& file, const std::string& key,
                        const std::string& where = "");
int64_t json_int(const nlohmann::json& obj, const std::string& file, const std::string& key,
                 int64_t lo, int64_t hi, const std::string& where = "");
double json_number(const nlohmann::json& obj, const std::string& file, const std::string& key,
                   const std::string& where = "");
const nlohmann::json& json_array(const nlohmann::json& obj, const std::string& file,
                                 const std::string& key, const std::string& where = "");
const nlohmann::json& json_object(const nlohmann::json& obj, const std::string& file,
                                  const std::string& key, const std::string& where = "");

}  // namespace sl
