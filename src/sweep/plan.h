// Sweep plans: a sweep file names a base config, a grid of dotted keys to values, optional
// named variants (override sets crossed with the grid), seeds, and whether each point trains
// or probes. expand_sweep() turns it into runs with readable ids (L32-pre-layernorm-res-s0),
// each validated as a full config before anything runs; sweep_run_state() says whether a run's
// directory already holds that run's result. Running them: sweep/exec.h.
// The file format (every key, what paths are relative to) is in docs/usage.md, "Sweep files".
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "sweep/choices.h"
#include "train/provenance.h"

namespace sl {

struct SweepRun {
  std::string id;   // e.g. "L32-pre-layernorm-res-s0"; probes have no seed suffix
  std::string dir;  // <out_dir>/<id>
  std::vector<std::string> overrides;  // "--model.n_layer=32", ... in application order
  std::vector<uint64_t> seeds;         // train: one seed; probe: all seeds
  double cost = 1.0;                   // estimated work (FLOPs of its steps), for the sweep's ETA
  Config config;  // resolved as the child run will resolve it (its seed and name, 1 thread)
  nlohmann::json run_info;  // provenance "run" (a probe's seeds), or null
  std::string variant;      // the variant's "name" ("" without one), in manifest.json "variant"
};

struct SweepPlan {
  std::string name;
  SweepMode mode = SweepMode::Train;
  std::string base, out_dir, source;  // base: absolute path
  std::vector<SweepRun> runs;
};

// Reads and validates the sweep file; every expanded point is checked with load_config. Errors
// name the sweep file and the key in it (grid.model.n_layr, variants[1].name, base, ...). The
// keys the sweep sets per run (train.seed from "seeds", train.name, train.out_dir, train.threads)
// are refused in overrides, grid and variants, and so is a key set where another place's value
// replaces it at every run (grid and overrides, grid and a variant, overrides and every variant):
// no value written in the file is silently replaced.
SweepPlan expand_sweep(const std::string& path);

// "--model.n_layer=32" from a key and a JSON value.
std::string override_arg(const std::string& key, const nlohmann::json& value);

// Where run `r` stands: New, Resumable, Completed, Diverged, or Changed (its directory holds a
// result of a different config or data: never counted as done). The one place a sweep decides
// this, for every executor.
RunCheck sweep_run_state(const SweepPlan& plan, const SweepRun& r);

// What continues run `r` to the sweep's horizon when its directory holds the sweep's config but
// for a smaller train.max_iters (and, with it, another optim.lr_decay_iters) or another stop rule
// (train.stop_at, train.stop_below_unigram: a run stopped at m1 continued to m2): the overrides
// of `stacklab train --resume DIR` ("--train.max_iters=N", "--optim.lr_decay_iters=D",
// "--train.stop_at=m2", ...). Else a message saying why not: the run has no provenance, neither
// its max_iters is smaller nor its stop rule other, another key differs, the sweep leaves
// optim.lr_decay_iters at 0, which an extension would pin to the run's old horizon
// (docs/usage.md, "Resume and extend"), so the run would stay changed, or train --resume would
// refuse it (train/resume.h extension_problem).
struct Extension {
  std::vector<std::string> overrides;  // empty: not extendable
  std::string why_not;
  long long from = 0, to = 0;  // train.max_iters stored and the sweep's
  std::string what;            // "train.max_iters 3000 -> 12000, train.stop_at \"m1\" -> \"m2\""
};
Extension sweep_run_extension(const SweepPlan& plan, const SweepRun& r);

}  // namespace sl
