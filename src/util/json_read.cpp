// Checked JSON reading: every failure names the file and the dotted field.
#include "util/json_read.h"

#include "util/error.h"
#include "util/fsutil.h"

namespace sl {
namespace {

using json = nlohmann::json;

std::string dotted(const std::string& where, const std::string& key) {
  return where.empty() ? key : where + "." + key;
}

[[noreturn]] void bad(const std::string& file, const std::string& where, const std::string& key,
                      const std::string& msg) {
  throw Error(file + ": field '" + dotted(where, key) + "' " + msg);
}

const char* type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

}  // namespace

json parse_json_text(const std::string& text, const std::string& file) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number too large
    throw Error(file + ": not valid JSON: " + e.what());
  }
}

json parse_json_file(const std::string& path, const std::string& what) {
  return parse_json_text(read_file(path), what + " '" + path + "'");
}

const json& json_field(const json& obj, const std::string& file, const std::string& key,
                       const std::string& where) {
  if (!obj.is_object())
    throw Error(file + ": " +
                (where.empty() ? std::string("the top level") : "field '" + where + "'") +
                " must be an object, got " + type_name(obj));
  const auto it = obj.find(key);
  if (it == obj.end()) bad(file, where, key, "is missing");
  return *it;
}

std::string json_string(const json& obj, const std::string& file, const std::string& key,
                        const std::string& where) {
  const json& v = json_field(obj, file, key, where);
  if (!v.is_string()) bad(file, where, key, std::string("must be a string, got ") + type_name(v));
  return v.get<std::string>();
}

int64_t json_int(const json& obj, const std::string& file, const std::string& key, int64_t lo,
                 int64_t hi, const std::string& where) {
  const json& v = json_field(obj, file, key, where);
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!v.is_number_integer())
    bad(file, where, key, "must be an integer in " + range + ", got " + v.dump());
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(hi)
                             : v.get<int64_t>() > hi)
    bad(file, where, key, "must be in " + range + ", got " + v.dump());
  if (!v.is_number_unsigned() && v.get<int64_t>() < lo)
    bad(file, where, key, "must be in " + range + ", got " + v.dump());
  return v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) : v.get<int64_t>();
}

double json_number(const json& obj, const std::string& file, const std::string& key,
                   const std::string& where) {
  const json& v = json_field(obj, file, key, where);
  if (!v.is_number()) bad(file, where, key, std::string("must be a number, got ") + type_name(v));
  return v.get<double>();
}

const json& json_array(const json& obj, const std::string& file, const std::string& key,
                       const std::string& where) {
  const json& v = json_field(obj, file, key, where);
  if (!v.is_array()) bad(file, where, key, std::string("must be an array, got ") + type_name(v));
  return v;
}

const json& json_object(const json& obj, const std::string& file, const std::string& key,
                        const std::string& where) {
  const json& v = json_field(obj, file, key, where);
  if (!v.is_object()) bad(file, where, key, std::string("must be an object, got ") + type_name(v));
  return v;
}

}  // namespace sl
