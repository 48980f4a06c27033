// Sweep-file parsing and expansion (cross product of the grid, times variants, times seeds).
#include "train/sweep.h"

#include <filesystem>
#include <map>
#include <set>

#include "config/config.h"
#include "config/loader.h"
#include "nn/wiring.h"
#include "core/error.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

const std::set<std::string> kWiringKeys = {"model.n_layer", "model.residual", "model.norm", "model.norm_position",
                                           "model.residual_scale"};

std::string value_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_null()) return "null";
  return v.dump();
}

// "optim.learning_rate" = 0.01 -> "learning_rate0.01" (for the ids of non-wiring grid keys)
std::string id_token(const std::string& key, const nlohmann::json& v) {
  return key.substr(key.rfind('.') + 1) + value_text(v);
}

void need(bool ok, const std::string& path, const std::string& what) {
  if (!ok) throw ConfigError(path + ": " + what);
}

}  // namespace

std::string override_arg(const std::string& key, const nlohmann::json& value) {
  std::string arg = "--";  // built by appending: GCC 12 warns (-Wrestrict) on "--" + key + ...
  arg += key;
  arg += '=';
  arg += value_text(value);
  return arg;
}

SweepPlan expand_sweep(const std::string& path) {
  const nlohmann::json j = read_json_file(path);
  need(j.is_object(), path, "a sweep file must be a JSON object");
  static const std::set<std::string> known = {"name", "description", "base", "mode", "seeds", "overrides", "grid",
                                              "variants", "out_dir"};
  for (const auto& [k, v] : j.items())
    if (!known.count(k))
      throw ConfigError(path + ": " + k + ": " + unknown_key_message(k, {known.begin(), known.end()}));
  SweepPlan plan;
  plan.source = fs::absolute(path).string();
  need(j.contains("name") && j["name"].is_string() && !j["name"].get<std::string>().empty(), path,
       "name: expected a non-empty string");
  plan.name = j["name"];
  need(j.contains("base") && j["base"].is_string(), path, "base: expected the path of a config file");
  plan.base = (fs::path(plan.source).parent_path() / j["base"].get<std::string>()).lexically_normal().string();
  plan.mode = j.value("mode", "train");
  need(plan.mode == "train" || plan.mode == "probe", path, "mode: expected \"train\" or \"probe\", got \"" + plan.mode + "\"");
  plan.out_dir = j.value("out_dir", "runs/" + plan.name);

  std::vector<uint64_t> seeds = {0};
  if (j.contains("seeds")) {
    need(j["seeds"].is_array() && !j["seeds"].empty(), path, "seeds: expected a non-empty array of integers");
    seeds.clear();
    for (const auto& s : j["seeds"]) {
      need(s.is_number_unsigned(), path, "seeds: expected non-negative integers, got " + s.dump());
      seeds.push_back(s.get<uint64_t>());
    }
  }
  std::vector<std::string> common;
  if (j.contains("overrides")) {
    need(j["overrides"].is_object(), path, "overrides: expected an object of dotted keys to values");
    for (const auto& [k, v] : j["overrides"].items()) common.push_back(override_arg(k, v));
  }

  // Points of the grid: the cross product, in the order the keys are written.
  struct Point {
    std::vector<std::string> overrides;
    std::string extra_id;
    std::string variant;
  };
  std::vector<Point> points = {Point{}};
  if (j.contains("grid")) {
    need(j["grid"].is_object(), path, "grid: expected an object of dotted keys to arrays of values");
    for (const auto& [k, values] : j["grid"].items()) {
      need(values.is_array() && !values.empty(), path, "grid." + k + ": expected a non-empty array of values");
      std::vector<Point> next;
      for (const Point& p : points)
        for (const auto& v : values) {
          Point q = p;
          q.overrides.push_back(override_arg(k, v));
          if (!kWiringKeys.count(k)) {
            q.extra_id += '-';
            q.extra_id += id_token(k, v);
          }
          next.push_back(q);
        }
      points = std::move(next);
    }
  }
  if (j.contains("variants")) {
    need(j["variants"].is_array() && !j["variants"].empty(), path, "variants: expected a non-empty array of objects");
    std::vector<Point> next;
    for (const Point& p : points)
      for (const auto& var : j["variants"]) {
        need(var.is_object(), path, "variants: each entry must be an object of dotted keys (and an optional \"name\")");
        Point q = p;
        for (const auto& [k, v] : var.items()) {
          if (k == "name") q.variant = v.get<std::string>();
          else q.overrides.push_back(override_arg(k, v));
        }
        next.push_back(q);
      }
    points = std::move(next);
  }

  // Ids name the depth and the wiring formula, then any other grid key; a variant's "name" is
  // appended only where those alone do not tell two points apart.
  std::vector<std::string> ovs, base_ids;
  std::vector<double> step_flops, max_iters;  // per point: ~FLOPs of one forward + backward; steps
  std::map<std::string, int> count;
  for (const Point& p : points) {
    std::vector<std::string> ov = common;
    ov.insert(ov.end(), p.overrides.begin(), p.overrides.end());
    Config cfg = load_config(plan.base, ov);  // validates the point; throws naming the override
    std::string id = "L";
    id += std::to_string(cfg.model.n_layer);
    id += '-';
    id += wiring_id(cfg.model);
    id += p.extra_id;
    base_ids.push_back(id);
    const double L = cfg.model.n_layer, C = cfg.model.n_embd, T = cfg.model.block_size;
    step_flops.push_back(6.0 * cfg.train.batch_size * T * L * C * (12.0 * C + 2.0 * T));
    max_iters.push_back(static_cast<double>(cfg.train.max_iters));
    ++count[id];
  }
  std::set<std::string> ids;
  for (size_t i = 0; i < points.size(); ++i) {
    std::vector<std::string> ov = common;
    ov.insert(ov.end(), points[i].overrides.begin(), points[i].overrides.end());
    std::string id = base_ids[i];
    if (count[id] > 1 && !points[i].variant.empty()) {
      id += '-';
      id += points[i].variant;
    }
    auto add_run = [&](const std::string& run_id, std::vector<uint64_t> run_seeds) {
      if (!ids.insert(run_id).second)
        throw ConfigError(path + ": two points of the sweep get the same run id '" + run_id +
                          "'; give the variants distinct \"name\"s");
      // A probe is one forward + backward per seed; a training run max_iters steps (plus evals).
      const double steps = plan.mode == "probe" ? static_cast<double>(run_seeds.size()) : max_iters[i];
      plan.runs.push_back({run_id, plan.out_dir + "/" + run_id, ov, std::move(run_seeds), step_flops[i] * steps});
    };
    if (plan.mode == "probe") add_run(id, seeds);
    else
      for (uint64_t s : seeds) add_run(id + "-s" + std::to_string(s), {s});
  }
  return plan;
}

}  // namespace sl
