// Sweep-file parsing and expansion (cross product of the grid, times variants, times seeds),
// one function per part of the file: header keys, seeds, overrides, grid, variants, run ids.
#include "sweep/plan.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "config/config.h"
#include "config/loader.h"
#include "config/suggest.h"
#include "config/validate.h"
#include "nn/wiring.h"
#include "train/keep.h"
#include "train/resume.h"
#include "util/error.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::set<std::string> kWiringKeys = {"model.n_layer", "model.residual", "model.norm",
                                           "model.norm_position", "model.residual_scale"};
const std::set<std::string> kSweepKeys = {"name",      "description", "base",     "mode",   "seeds",
                                          "overrides", "grid",        "variants", "out_dir"};

std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_null()) return "null";
  return v.dump();
}

// "optim.learning_rate" = 0.01 -> "learning_rate0.01" (for the ids of non-wiring grid keys)
std::string id_token(const std::string& key, const json& v) {
  return key.substr(key.rfind('.') + 1) + value_text(v);
}

void need(bool ok, const std::string& path, const std::string& what) {
  if (!ok) throw ConfigError(path + ": " + what);
}

// "[1, 2]": the values of a key, as a "seeds" list would be written.
std::string list_text(const json& values) {
  std::string s = "[";
  for (const auto& v : (values.is_array() ? values : json::array({values}))) {
    if (s.size() > 1) s += ", ";
    s += v.dump();
  }
  return s + "]";
}

// The keys the sweep sets for each run itself are refused anywhere else in the file: a value
// there would be replaced without a word (the seed comes from "seeds", the name from the run id,
// the directory from "out_dir", the threads from the executor). `where` is e.g. "grid", `values`
// the value(s) written.
void refuse_sweep_owned(const std::string& path, const std::string& where, const std::string& key,
                        const json& values) {
  if (key == "train.seed")
    throw ConfigError(path + ": " + where + "." + key +
                      ": the sweep sets each run's seed from its \"seeds\" list " +
                      "(default [0]; train: one run per seed, the id ends in -s<seed>; probe: "
                      "every seed in one " +
                      "probe), which would replace this value; write \"seeds\": " +
                      list_text(values) + " instead");
  if (key == "train.threads")
    throw ConfigError(
        path + ": " + where + "." + key +
        ": the sweep sets each run's threads itself (1 with the local executor, "
        "--slurm-cpus-per-task on Slurm), which would replace this value; run more "
        "at once with --jobs, or give Slurm runs more cores with --slurm-cpus-per-task");
  if (key == "train.name" || key == "train.out_dir")
    throw ConfigError(path + ": " + where + "." + key + ": the sweep sets " + key +
                      " for each run (its directory " +
                      "is <out_dir>/<run id>), which would replace this value; name the sweep with "
                      "\"name\" and " +
                      "choose its directory with \"out_dir\"");
}

// A dotted key and value of the sweep file, checked against the config schema here so a typo is
// reported against the sweep file (`where` is e.g. "grid"), not against the base config.
// A relative data.path is the sweep file's, as its base is: made absolute against the file's
// folder, so the runs read the same file from any working directory (and on a Slurm node).
std::string checked_override(const std::string& path, const std::string& where,
                             const std::string& key, const json& value) {
  refuse_sweep_owned(path, where, key, value);
  json v = value;
  if (key == "data.path" && v.is_string() && !v.get<std::string>().empty() &&
      fs::path(v.get<std::string>()).is_relative())
    v = (fs::absolute(path).parent_path() / v.get<std::string>()).lexically_normal().string();
  const std::string arg = override_arg(key, v);
  json scratch = json::object();
  apply_override(scratch, arg, path + ": " + where);
  return arg;
}

// One point of the grid: its overrides, the id part of its non-wiring keys, its variant name.
struct Point {
  std::vector<std::string> overrides;
  std::string extra_id;
  std::string variant;
};

void read_header(const json& j, const std::string& path, SweepPlan& plan) {
  need(j.is_object(), path, "a sweep file must be a JSON object");
  for (const auto& [k, v] : j.items())
    if (!kSweepKeys.count(k))
      throw ConfigError(path + ": " + k + ": " +
                        unknown_key_message(k, {kSweepKeys.begin(), kSweepKeys.end()}));
  plan.source = fs::absolute(path).string();
  need(j.contains("name") && j["name"].is_string(), path, "name: expected a non-empty string");
  plan.name = j["name"].get<std::string>();
  if (const std::string bad = plain_name_problem(plan.name); !bad.empty())
    throw ConfigError(path + ": name: " + shown_name(plan.name) + " " + bad +
                      "; a sweep name is a plain directory name");
  need(!j.contains("description") || j["description"].is_string(), path,
       "description: expected a string");
  need(j.contains("base") && j["base"].is_string() && !j["base"].get<std::string>().empty(), path,
       "base: expected the path of a config file (relative to the sweep file's folder)");
  plan.base = (fs::path(plan.source).parent_path() / j["base"].get<std::string>())
                  .lexically_normal()
                  .string();
  need(fs::is_regular_file(plan.base), path,
       "base: config file '" + plan.base +
           "' not found (base is relative to the sweep file's folder)");
  need(!j.contains("mode") || j["mode"].is_string(), path,
       "mode: expected " + quoted_choices<SweepMode>());
  const std::string mode = j.value("mode", name_of(SweepMode::Train));
  const std::optional<SweepMode> parsed = parse_choice<SweepMode>(mode);
  need(parsed.has_value(), path,
       "mode: expected " + quoted_choices<SweepMode>() + ", got \"" + mode + "\"");
  plan.mode = *parsed;
  need(!j.contains("out_dir") ||
           (j["out_dir"].is_string() && !j["out_dir"].get<std::string>().empty()),
       path,
       "out_dir: expected a non-empty string (a directory, relative to the working directory)");
  plan.out_dir = j.value("out_dir", "runs/" + plan.name);
}

std::vector<uint64_t> read_seeds(const json& j, const std::string& path) {
  if (!j.contains("seeds")) return {0};
  need(j["seeds"].is_array() && !j["seeds"].empty(), path,
       "seeds: expected a non-empty array of integers");
  std::vector<uint64_t> seeds;
  std::set<uint64_t> seen;
  for (const auto& s : j["seeds"]) {
    need(s.is_number_unsigned(), path, "seeds: expected non-negative integers, got " + s.dump());
    need(seen.insert(s.get<uint64_t>()).second, path, "seeds: " + s.dump() + " appears twice");
    seeds.push_back(s.get<uint64_t>());
  }
  return seeds;
}

std::vector<std::string> read_overrides(const json& j, const std::string& path) {
  std::vector<std::string> common;
  if (!j.contains("overrides")) return common;
  need(j["overrides"].is_object(), path, "overrides: expected an object of dotted keys to values");
  for (const auto& [k, v] : j["overrides"].items())
    common.push_back(checked_override(path, "overrides", k, v));
  return common;
}

// The cross product of the grid, its keys in sorted order (a JSON object is read as a sorted map;
// the values in the order written).
std::vector<Point> grid_points(const json& j, const std::string& path) {
  std::vector<Point> points = {Point{}};
  if (!j.contains("grid")) return points;
  need(j["grid"].is_object(), path, "grid: expected an object of dotted keys to arrays of values");
  for (const auto& [k, values] : j["grid"].items()) {
    need(values.is_array() && !values.empty(), path,
         "grid." + k + ": expected a non-empty array of values");
    refuse_sweep_owned(path, "grid", k, values);
    for (size_t a = 0; a < values.size(); ++a)
      for (size_t b = 0; b < a; ++b)
        need(values[a] != values[b], path,
             "grid." + k + ": the value " + values[a].dump() + " appears twice");
    std::vector<Point> next;
    for (const Point& p : points)
      for (const auto& v : values) {
        Point q = p;
        q.overrides.push_back(checked_override(path, "grid", k, v));
        if (!kWiringKeys.count(k)) q.extra_id += "-" + id_token(k, v);
        next.push_back(q);
      }
    points = std::move(next);
  }
  return points;
}

// Each point crossed with each variant (an object of dotted keys and an optional "name").
std::vector<Point> with_variants(std::vector<Point> points, const json& j,
                                 const std::string& path) {
  if (!j.contains("variants")) return points;
  const json& vars = j["variants"];
  need(vars.is_array() && !vars.empty(), path, "variants: expected a non-empty array of objects");
  std::vector<Point> next;
  for (const Point& p : points)
    for (size_t i = 0; i < vars.size(); ++i) {
      const std::string where = "variants[" + std::to_string(i) + "]";
      need(vars[i].is_object(), path,
           where + ": expected an object of dotted keys (and an optional \"name\")");
      Point q = p;
      for (const auto& [k, v] : vars[i].items()) {
        if (k != "name") {
          q.overrides.push_back(checked_override(path, where, k, v));
          continue;
        }
        need(v.is_string(), path, where + ".name: expected a string, got " + v.dump());
        q.variant = v.get<std::string>();
        if (const std::string bad = plain_name_problem(q.variant); !bad.empty())
          throw ConfigError(path + ": " + where + ".name: " + shown_name(q.variant) + " " + bad +
                            "; it becomes part of a run directory's name");
      }
      next.push_back(q);
    }
  return next;
}

// A key set in two places where one value would replace the other at every run is refused, naming
// it: the grid and "overrides" (the overrides value would never be trained), the grid and a
// variant (the grid's values would never be trained: every point gets the variant's), and
// "overrides" and every variant (the overrides value would never be trained). A key in
// "overrides" and in some variants is allowed: the overrides value is the other variants' one.
void refuse_clashes(const json& j, const std::string& path) {
  const json none = json::object();
  const json& ov = j.contains("overrides") ? j["overrides"] : none;
  const json& grid = j.contains("grid") ? j["grid"] : none;
  for (const auto& [k, v] : grid.items())
    if (ov.contains(k))
      throw ConfigError(path + ": grid." + k + ": also set in overrides; the grid's values " +
                        "replace it at every point, so overrides." + k +
                        " would never be trained: remove one of the two");
  if (!j.contains("variants")) return;
  const json& vars = j["variants"];
  for (size_t i = 0; i < vars.size(); ++i)
    for (const auto& [k, v] : vars[i].items())
      if (grid.contains(k))
        throw ConfigError(path + ": variants[" + std::to_string(i) + "]." + k +
                          ": also a grid key; the variant's value would replace every grid " +
                          "value " + list_text(grid[k]) +
                          ", so they would never be trained: set it in the grid or in the " +
                          "variants, not both");
  for (const auto& [k, v] : ov.items()) {
    bool everywhere = true;
    for (const auto& var : vars) everywhere = everywhere && var.contains(k);
    if (everywhere)
      throw ConfigError(path + ": overrides." + k + ": every variant sets " + k +
                        ", so this value would never be trained: remove it from overrides");
  }
}

// The point's config as the child will resolve it; a rule broken only by the combination
// (n_embd % n_head, ...) is reported against the sweep file with the point's overrides.
Config point_config(const SweepPlan& plan, const std::string& path, std::vector<std::string> ov) {
  try {
    return load_config(plan.base, ov);
  } catch (const ConfigError& e) {
    std::string list;
    for (const auto& o : ov) list += " " + o;
    throw ConfigError(path + ": the point with" + list + " is not a valid config: " + e.what());
  }
}

// Whether every '-'-separated word of a variant's name is already a word of the run id
// ("pre-res" in "L8-pre-layernorm-res"): then appending the name would only repeat it.
bool id_shows_name(const std::string& id, const std::string& name) {
  const auto words = [](const std::string& s) {
    std::set<std::string> out;
    for (size_t b = 0; b <= s.size();) {
      const size_t e = std::min(s.find('-', b), s.size());
      out.insert(s.substr(b, e - b));
      b = e + 1;
    }
    return out;
  };
  const std::set<std::string> in_id = words(id);
  for (const std::string& w : words(name))
    if (!in_id.count(w)) return false;
  return true;
}

// Ids name the depth and the wiring formula, then any other grid key; a variant's "name" is
// appended where those alone do not tell two points apart, or where the id does not already show
// it (a variant that sets a key the id does not name, e.g. model.init or model.mlp, keeps its name
// in the id: its runs are never named like the plain wiring's).
void add_runs(SweepPlan& plan, const std::string& path, const std::vector<std::string>& common,
              const std::vector<Point>& points, const std::vector<uint64_t>& seeds,
              bool has_variants) {
  std::vector<Config> cfgs;
  std::map<std::string, int> count;
  std::vector<std::string> base_ids;
  for (const Point& p : points) {
    std::vector<std::string> ov = common;
    ov.insert(ov.end(), p.overrides.begin(), p.overrides.end());
    cfgs.push_back(point_config(plan, path, ov));
    base_ids.push_back("L" + std::to_string(cfgs.back().model.n_layer) + "-" +
                       wiring_id(cfgs.back().model) + p.extra_id);
    ++count[base_ids.back()];
  }
  std::set<std::string> ids;
  for (size_t i = 0; i < points.size(); ++i) {
    std::vector<std::string> ov = common;
    ov.insert(ov.end(), points[i].overrides.begin(), points[i].overrides.end());
    std::string id = base_ids[i];
    const std::string& variant = points[i].variant;
    if (!variant.empty() && (count[id] > 1 || !id_shows_name(id, variant))) id += "-" + variant;
    const ModelConfig& m = cfgs[i].model;
    const double L = m.n_layer, C = m.n_embd, T = m.block_size;
    const double step_flops = 6.0 * cfgs[i].train.batch_size * cfgs[i].train.grad_accum_steps * T *
                              L * C * (12.0 * C + 2.0 * T);
    auto add_run = [&](const std::string& run_id, std::vector<uint64_t> run_seeds) {
      if (!ids.insert(run_id).second)
        throw ConfigError(
            path + ": two points of the sweep get the same run id '" + run_id + "'" +
            (has_variants
                 ? "; give the variants distinct \"name\"s"
                 : "; ids name n_layer, the wiring and the other grid keys, so two grid points "
                   "differ only in how they spell the same config"));
      // A probe is one forward + backward per seed; a training run max_iters steps (plus evals).
      const double steps = plan.mode == SweepMode::Probe ? static_cast<double>(run_seeds.size())
                                                         : cfgs[i].train.max_iters;
      SweepRun r{run_id,
                 plan.out_dir + "/" + run_id,
                 ov,
                 run_seeds,
                 step_flops * steps,
                 cfgs[i],
                 nullptr,
                 points[i].variant};
      r.config.train.threads = 1;
      if (plan.mode == SweepMode::Probe) {
        r.run_info = {{"probe_seeds", run_seeds}};
      } else {  // as the child's command line sets them (cli: run_overrides); the file cannot
                // (refuse_sweep_owned)
        r.config.train.seed = run_seeds.at(0);
        r.config.train.name = run_id;
        r.config.train.out_dir = plan.out_dir;  // as train --out records it
      }
      plan.runs.push_back(std::move(r));
    };
    if (plan.mode == SweepMode::Probe)
      add_run(id, seeds);
    else
      for (uint64_t s : seeds) add_run(id + "-s" + std::to_string(s), {s});
  }
}

}  // namespace

// An Extension that says why the run is not extendable.
Extension not_extendable(std::string why) {
  Extension e;
  e.why_not = std::move(why);
  return e;
}

std::string override_arg(const std::string& key, const json& value) {
  std::string arg = "--";  // built by appending: GCC 12 warns (-Wrestrict) on "--" + key + ...
  arg += key;
  arg += '=';
  arg += value_text(value);
  return arg;
}

SweepPlan expand_sweep(const std::string& path) {
  const json j = read_json_file(path);
  SweepPlan plan;
  read_header(j, path, plan);
  const std::vector<uint64_t> seeds = read_seeds(j, path);
  const std::vector<std::string> common = read_overrides(j, path);
  const std::vector<Point> points = with_variants(grid_points(j, path), j, path);
  refuse_clashes(j, path);
  add_runs(plan, path, common, points, seeds, j.contains("variants"));
  return plan;
}

RunCheck sweep_run_state(const SweepPlan& plan, const SweepRun& r) {
  return check_run(r.dir, r.config, plan.mode == SweepMode::Probe, r.run_info);
}

Extension sweep_run_extension(const SweepPlan& plan, const SweepRun& r) {
  if (plan.mode != SweepMode::Train) return not_extendable("a probe is not extended");
  if (!std::filesystem::exists(r.dir + "/config.json"))
    return not_extendable(
        "config.json is missing, so there is no run to continue (a copy stopped midway?); "
        "remove " +
        r.dir + " and copy the run again (scripts/tier.py extend) or rerun it");
  nlohmann::json stored = read_provenance(r.dir);
  if (stored.is_null()) return not_extendable("no provenance.json to compare");
  const long long want = r.config.train.max_iters;
  const long long decay = r.config.optim.lr_decay_iters;
  nlohmann::json& train = stored["config"]["train"];
  const nlohmann::json had = train.value("max_iters", nlohmann::json());
  // The stop rule the run was made with (a run older than a key had its default).
  const nlohmann::json want_train = to_json(r.config).at("train");
  const nlohmann::json defaults = to_json(Config{}).at("train");
  std::vector<std::string> rule_args;
  std::string what;
  for (const char* k : {"stop_below_unigram", "stop_at"}) {
    const nlohmann::json was = train.value(k, defaults.at(k));
    if (was == want_train.at(k)) continue;
    rule_args.push_back(override_arg(std::string("train.") + k, want_train.at(k)));
    what += std::string(what.empty() ? "" : ", ") + "train." + k + " " + was.dump() + " -> " +
            want_train.at(k).dump();
    train[k] = want_train.at(k);
  }
  const bool longer = had.is_number_integer() && had.get<long long>() < want;
  if (!had.is_number_integer() || (!longer && rule_args.empty()))
    return not_extendable("train.max_iters is not smaller than the sweep's " +
                          std::to_string(want) + " and the stop rule is the same");
  if (longer && decay == 0)
    return not_extendable(
        "the sweep leaves optim.lr_decay_iters at 0 (max_iters), which extending pins to the "
        "run's old max_iters; set it in the sweep (e.g. to train.max_iters)");
  if (longer) {
    what = "train.max_iters " + had.dump() + " -> " + std::to_string(want) +
           (what.empty() ? "" : ", " + what);
    train["max_iters"] = want;
    stored["config"]["optim"]["lr_decay_iters"] = decay;
  }
  if (const auto rest = provenance_changes(stored, make_provenance(r.config, r.run_info));
      !rest.empty())
    return not_extendable("other changes than the horizon: " + rest.front());
  // A run whose optimizer state was not kept (train.keep_final, stacklab prune) cannot go on.
  if (std::string why = not_kept_reason(r.dir); !why.empty()) return not_extendable(why);
  // What `train --resume` would refuse, refused here before anything runs (train/resume.h).
  try {
    if (std::string why =
            extension_problem(load_run_config(r.dir), r.config, trained_so_far(r.dir), r.dir);
        !why.empty())
      return not_extendable(why);
  } catch (const Error& e) {
    return not_extendable(e.what());
  }
  std::vector<std::string> args = rule_args;
  if (longer)
    args.insert(args.begin(), {"--train.max_iters=" + std::to_string(want),
                               "--optim.lr_decay_iters=" + std::to_string(decay)});
  return {args, "", had.get<long long>(), want, what};
}

}  // namespace sl
