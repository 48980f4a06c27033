// Provenance: what a run directory was made from, so its numbers cannot be passed off as those
// of another config. provenance.json holds the resolved config (less the keys that only say
// where or how fast it runs: train.name, train.out_dir, train.threads), the data source's
// identity (a text file's size and FNV-1a hash; a Markov source is fully given by its keys)
// and a fingerprint over both. `train` writes it; `train --resume` and the sweep's "is this run
// already done?" (check_run) compare it with what they would produce now.
// Not here: the checkpoint's own config check (checkpoint.h), deciding what to do on a change.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "train/run_state.h"

namespace sl {

// {"format", "fingerprint", "config", "data", "run"} for cfg (its data file is read and hashed);
// `run` is what else decides the result and is not a config key (a probe's seeds), or null.
nlohmann::json make_provenance(const Config& cfg, const nlohmann::json& run = nullptr);
// Writes run_dir/provenance.json (atomically).
void write_provenance(const std::string& run_dir, const Config& cfg,
                      const nlohmann::json& run = nullptr);
// run_dir/provenance.json, or null when there is none; a malformed one is an Error naming it.
nlohmann::json read_provenance(const std::string& run_dir);

// The dotted keys whose values differ between two provenance records, each as
// "model.n_embd: 32 -> 16" (stored -> current); "data.file: ..." for a changed data file.
std::vector<std::string> provenance_changes(const nlohmann::json& stored,
                                            const nlohmann::json& current);

// Where a training or probe run directory stands against the config it should hold.
struct RunCheck {
  RunState state = RunState::New;    // New, Resumable, Completed, Diverged or Changed
  std::vector<std::string> changes;  // Changed: what differs (provenance_changes)
};
// A training run (run_dir/summary.json) or, with probe, a probe run (run_dir/probe.json).
// A directory with results but a different (or no) provenance is Changed, never done.
// `run` as for make_provenance.
RunCheck check_run(const std::string& run_dir, const Config& expected, bool probe = false,
                   const nlohmann::json& run = nullptr);

}  // namespace sl
