// Run fingerprints: the identity config, the data file's size and hash, and the comparison.
#include "train/provenance.h"

#include <filesystem>
#include <fstream>
#include <map>

#include "data/text.h"
#include "train/escape_stop.h"
#include "train/milestones.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/hash.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kFormat = "stacklab.provenance.v1";

// The config minus what only says where or how fast a run goes. A text source sets
// model.vocab_size from its file, and the file's content (size and hash) is its identity, not
// where it lies: both are covered by the data identity, so a moved checkout or corpus (an
// absolute data.path that differs) does not make every run "changed".
// train.save_best and train.keep_final only decide which checkpoint files are written and kept,
// like out_dir where.
// train.flush_subnormals is part of the numeric path like train.threads (the start record's
// numeric_path names both): it changes only values below FLT_MIN, and runs made before the key
// existed ran unflushed, so filling in its default would misstate them.
void erase_non_identity(json& j) {
  for (const char* k :
       {"name", "out_dir", "threads", "save_best", "keep_final", "flush_subnormals"})
    if (j.contains("train") && j["train"].is_object()) j["train"].erase(k);
}

json identity_config(const Config& cfg) {
  json j = to_json(cfg);
  erase_non_identity(j);
  if (cfg.data.source == SourceKind::Text) {
    j["model"].erase("vocab_size");
    j["data"].erase("path");
  }
  return j;
}

// Size and FNV-1a of a data file, read once per process per path.
json file_identity(const std::string& path) {
  static std::map<std::string, json> cache;
  if (auto it = cache.find(path); it != cache.end()) return it->second;
  check_regular_file(path, kMaxTextBytes, "data.path");  // a FIFO would block the open below
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("data.path '" + path +
                "': cannot open for reading (needed for the run's fingerprint)");
  uint64_t h = kFnvBasis, bytes = 0;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    h = fnv1a64(h, buf, static_cast<size_t>(in.gcount()));
    bytes += static_cast<uint64_t>(in.gcount());
  }
  return cache[path] = json{{"bytes", bytes}, {"fnv1a64", hex64(h)}};
}

json data_identity(const Config& cfg) {
  if (cfg.data.source == SourceKind::Text)
    return json{{"source", "text"}, {"file", file_identity(cfg.data.path)}};
  return json{{"source",
               to_json(cfg).at("data").at("source")}};  // synthetic: fully given by the data.* keys
}

void collect_changes(const json& a, const json& b, const std::string& prefix,
                     std::vector<std::string>& out) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : a.items())
      collect_changes(v, b.contains(k) ? b.at(k) : json("(absent)"),
                      prefix.empty() ? k : prefix + "." + k, out);
    for (const auto& [k, v] : b.items())
      if (!a.contains(k))
        collect_changes(json("(absent)"), v, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  if (a != b)
    out.push_back((prefix.empty() ? "(root)" : prefix) + ": " + a.dump() + " -> " + b.dump());
}

// A key the stored config lacks was added to stacklab after the run was made; a new key's
// default keeps the old behaviour (keys are extended, never changed), so the run had the default.
// Only keys the current identity has are filled (a text source's identity has no vocab_size).
void fill_defaults(json& stored, const json& defaults, const json& current) {
  if (!stored.is_object() || !defaults.is_object() || !current.is_object()) return;
  for (const auto& [k, v] : defaults.items()) {
    if (!current.contains(k)) continue;
    if (!stored.contains(k))
      stored[k] = v;
    else
      fill_defaults(stored[k], v, current.at(k));
  }
}

bool is_object_field(const json& j, const char* key) {
  return j.contains(key) && j.at(key).is_object();
}

// run_dir/summary.json, or null when absent or torn.
json summary_or_null(const std::string& run_dir) {
  std::error_code ec;
  if (!fs::exists(run_dir + "/summary.json", ec)) return nullptr;
  return json::parse(read_file(run_dir + "/summary.json"), nullptr, false);
}

// A run stopped by its rule (its escape, train/escape_stop.h, or its milestone,
// train/milestones.h) under the rule `expected` still asks for is the same run at any longer
// horizon when the horizon is all that differs: it would stop at the same eval. So a sweep that
// extends its stage (--on-change extend) finds it done, not to extend.
bool done_on_escape(const std::string& run_dir, const Config& expected,
                    const std::vector<std::string>& changes) {
  return only_horizon_changes(changes, expected.optim) &&
         stopped_by_its_rule(summary_or_null(run_dir), expected);
}

}  // namespace

json make_provenance(const Config& cfg, const json& run) {
  json p = {{"config", identity_config(cfg)}, {"data", data_identity(cfg)}, {"run", run}};
  const std::string canon = p.dump();
  p["fingerprint"] = hex64(fnv1a64(kFnvBasis, canon.data(), canon.size()));
  p["format"] = kFormat;
  return p;
}

void write_provenance(const std::string& run_dir, const Config& cfg, const json& run) {
  write_file_atomic(run_dir + "/provenance.json", make_provenance(cfg, run).dump(2) + "\n");
}

json read_provenance(const std::string& run_dir) {
  const std::string path = run_dir + "/provenance.json";
  if (!fs::exists(path)) return nullptr;
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON (" + std::string(e.what()) +
                "); delete it to treat the run as changed");
  }
  if (!j.is_object() || j.value("format", json()) != json(kFormat) ||
      !is_object_field(j, "config") || !is_object_field(j, "data") || !j.contains("fingerprint") ||
      !j.at("fingerprint").is_string())
    throw Error(path + ": field 'format' must be \"" + std::string(kFormat) +
                "\" with objects 'config' and 'data' and a string 'fingerprint'");
  return j;
}

std::vector<std::string> provenance_changes(const json& stored, const json& current) {
  std::vector<std::string> out;
  json config = stored.at("config");
  erase_non_identity(config);  // a run stored when one of these still counted
  fill_defaults(config, identity_config(Config{}), current.at("config"));
  collect_changes(config, current.at("config"), "", out);
  if (!stored.at("data").is_null())
    collect_changes(stored.at("data"), current.at("data"), "data", out);
  collect_changes(stored.value("run", json()), current.value("run", json()), "run", out);
  return out;
}

RunCheck check_run(const std::string& run_dir, const Config& expected, bool probe,
                   const json& run) {
  RunCheck s;
  const bool has_result =
      probe ? fs::exists(run_dir + "/probe.json") : fs::exists(run_dir + "/config.json");
  if (!has_result) {
    std::error_code ec;
    // A summary or fingerprint without the config.json it belongs to (a copy stopped midway, a
    // file deleted by hand): no result to match with the sweep's config, so never a done run.
    if (!probe && (fs::exists(run_dir + "/summary.json", ec) ||
                   fs::exists(run_dir + "/provenance.json", ec))) {
      s.state = RunState::Changed;
      s.changes = {
          "config.json is missing (its summary.json or provenance.json cannot be "
          "matched with a config)"};
    }
    return s;  // else New: nothing there to be stale
  }
  json stored = read_provenance(run_dir);
  if (stored.is_null() &&
      !probe) {  // a run made before fingerprints: its config.json, data unchecked
    json c;
    try {
      c = json::parse(read_file(run_dir + "/config.json"));
      c.erase("derived");
      stored = {{"config", identity_config(config_from_json(c, run_dir + "/config.json"))},
                {"data", nullptr},
                {"run", run}};
    } catch (const Error& e) {  // unreadable, or not a config
      s.state = RunState::Changed;
      s.changes = {std::string("config.json is unreadable: ") + e.what()};
      return s;
    } catch (const json::exception& e) {  // not JSON
      s.state = RunState::Changed;
      s.changes = {std::string("config.json is unreadable: ") + e.what()};
      return s;
    }
  }
  if (stored.is_null()) {
    s.state = RunState::Changed;
    s.changes = {"(no provenance.json: written before run fingerprints)"};
    return s;
  }
  s.changes = provenance_changes(stored, make_provenance(expected, run));
  if (!probe && !s.changes.empty() && done_on_escape(run_dir, expected, s.changes)) {
    s.changes.clear();
    s.state = RunState::Completed;
    return s;
  }
  if (!s.changes.empty()) {
    s.state = RunState::Changed;
    return s;
  }
  if (probe) {
    s.state = RunState::Completed;
    return s;
  }
  // An extension rewrites config.json before provenance.json: stopped between the two, the
  // fingerprint still says the old horizon while config.json, which a resume continues, says the
  // new one. Such a run is the sweep's only if config.json says what the sweep says.
  try {
    const json c = json::parse(read_file(run_dir + "/config.json"));
    const json t = c.is_object() ? c.value("train", json()) : json();
    const json o = c.is_object() ? c.value("optim", json()) : json();
    const json iters = t.is_object() ? t.value("max_iters", json()) : json();
    const json decay = o.is_object() ? o.value("lr_decay_iters", json()) : json();
    if (iters.is_number_integer() && iters.get<long long>() != expected.train.max_iters)
      s.changes.push_back("config.json: train.max_iters: " + iters.dump() + " -> " +
                          std::to_string(expected.train.max_iters) +
                          " (an extension to it was started)");
    if (decay.is_number_integer() && decay.get<long long>() != expected.optim.lr_decay_iters)
      s.changes.push_back("config.json: optim.lr_decay_iters: " + decay.dump() + " -> " +
                          std::to_string(expected.optim.lr_decay_iters));
  } catch (const json::exception& e) {
    s.changes.push_back(std::string("config.json is unreadable: ") + e.what());
  }
  if (!s.changes.empty() && done_on_escape(run_dir, expected, s.changes)) {
    s.changes.clear();
    s.state = RunState::Completed;
    return s;
  }
  if (!s.changes.empty()) {
    s.state = RunState::Changed;
    return s;
  }
  s.state = RunState::Resumable;
  const std::string summary_path = run_dir + "/summary.json";
  std::error_code ec;
  if (std::filesystem::exists(summary_path, ec)) {  // none yet: the run is resumed
    try {
      const json summary = json::parse(read_file(summary_path));  // unreadable: an error
      const json st = summary.is_object() ? summary.value("status", json()) : json();
      const RunState status = st.is_string()
                                  ? parse_choice<RunState>(st.get<std::string>())
                                        .value_or(RunState::New)  // New: never a summary's
                                  : RunState::New;
      // Completed below the horizon (an extension stopped before it said "running"): resumable;
      // but one stopped on escape by the margin it still has is done (train/escape_stop.h).
      const json steps = summary.is_object() ? summary.value("steps", json()) : json();
      const bool short_of_horizon =
          status == RunState::Completed && steps.is_number_integer() &&
          steps.get<long long>() < static_cast<long long>(expected.train.max_iters) &&
          !stopped_by_its_rule(summary, expected);
      if ((status == RunState::Completed || status == RunState::Diverged) && !short_of_horizon)
        s.state = status;
    } catch (const json::parse_error&) {
      // a torn summary: the run is resumed, which rewrites it
    }
  }
  return s;
}

}  // namespace sl
