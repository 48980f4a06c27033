// The record schema, declared once: the keys of every metrics.jsonl record kind, of summary.json
// and of `stacklab probe` output, each with its JSON type and a one-line meaning. The trainer and
// the probe build their records through checked_record(), which fails (an internal error, file
// and line) on a key the schema does not declare or a declared key left out; `stacklab registry
// --records --json` prints the schema, `--markdown` its table, and the CLI tests check a real
// run against it. Not here: the values (trainer.cpp, probe.cpp) or reading runs back.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sl {

enum class FieldType {
  kInt,           // an integer
  kNumber,        // a number (non-finite is written as null: kNumberOrNull)
  kNumberOrNull,  // a number, or null when non-finite or not measured yet
  kString,
  kBool,
  kObject,
  kObjectOrNull,
  kArray,
  kArrayOrNull,  // a per-layer metric: an array of numbers (null entries), or null as a whole
  kStringOrNull,
  kIntOrNull,
};

// A number as the records write it: null when non-finite (kNumberOrNull).
inline nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

struct RecordField {
  std::string key;
  FieldType type;
  std::string meaning;    // one line
  bool optional = false;  // absent in some records of the kind (the meaning says when)
};

struct RecordKind {
  std::vector<std::string> kinds;  // the "kind" values sharing these keys ("start", "resume")
  std::string when;                // when such a record is written
  std::vector<RecordField> fields;
};

// The record kinds of metrics.jsonl, in the order a run first writes them. The "layers" kind's
// fields include one per entry of the per-layer metric registry (train/layer_stats.h).
const std::vector<RecordKind>& metrics_record_kinds();
const RecordKind& metrics_record_kind(const std::string& kind);  // InternalError if unknown
const std::vector<RecordField>& summary_fields();                // summary.json
const std::vector<RecordField>& probe_fields();                  // `stacklab probe` output

const char* type_name(FieldType t);  // "int", "number|null", ...
bool type_matches(FieldType t, const nlohmann::json& v);

// `fields` as written: SL_CHECK that its keys are exactly the declared ones (every required key,
// optional ones at most) and each value has its declared type. Returns `j` unchanged.
nlohmann::json checked_fields(nlohmann::json j, const std::vector<RecordField>& fields,
                              const std::string& what);
// A metrics.jsonl record: checked_fields against its kind (j["kind"]).
nlohmann::json checked_record(nlohmann::json j);

// {"metrics.jsonl": [{kinds, when, fields: [{key, type, meaning, optional}]}],
//  "summary.json": {fields}, "probe": {fields}}: what `stacklab registry --records --json` prints.
nlohmann::json records_json();
// The same as one Markdown table (file, record kind, key, type, meaning).
std::string records_markdown();

}  // namespace sl
