// Sweep plans: a sweep file names a base config, a grid of dotted keys to values, optional
// named variants (override sets crossed with the grid), seeds, and whether each point trains
// or probes. expand_sweep() turns it into runs with readable ids (L32-pre-layernorm-res-s0),
// each validated as a full config before anything runs. Running them is the CLI's job.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sl {

struct SweepRun {
  std::string id;                      // e.g. "L32-pre-layernorm-res-s0"; probes have no seed suffix
  std::string dir;                     // <out_dir>/<id>
  std::vector<std::string> overrides;  // "--model.n_layer=32", ... in application order
  std::vector<uint64_t> seeds;         // train: one seed; probe: all seeds
  double cost = 1.0;                   // estimated work (FLOPs of its steps), for the sweep's ETA
};

struct SweepPlan {
  std::string name, mode, base, out_dir, source;  // mode: "train" | "probe"; base: absolute path
  std::vector<SweepRun> runs;
};

// Reads and validates the sweep file; every expanded point is checked with load_config.
SweepPlan expand_sweep(const std::string& path);

// "--model.n_layer=32" from a key and a JSON value.
std::string override_arg(const std::string& key, const nlohmann::json& value);

}  // namespace sl
