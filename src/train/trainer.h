// Trainer: runs one training job from a resolved Config into a run directory:
//   config.json     the resolved config (all defaults) plus derived values (wiring, final_norm)
//   metrics.jsonl   one JSON record per line: start, train, eval, layers, diverged (the keys:
//                   train/records.h; written by train/run_log.h)
//   summary.json    status (completed | diverged | interrupted | failed | running), losses,
//   references checkpoints/latest.safetensors   weights + optimizer state + train state, atomic
// Divergence ends the run cleanly as a result: a train or val loss that is non-finite or above
// 10 x ln(vocab_size), or a non-finite gradient norm. A stop request (SIGINT/SIGTERM, set by
// the CLI) finishes the step, checkpoints, and returns. An error after the run has started is
// recorded as status "failed" (with the message) and rethrown. The caller holds the run
// directory's lock (train/run_lock.h).
#pragma once
#include <atomic>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "train/run_state.h"

namespace sl {

struct TrainOptions {
  std::string run_dir;                     // where everything is written
  bool resume = false;                     // continue from run_dir/checkpoints/latest.safetensors
  bool decay_changed = false;              // resume: the extension moves optim.lr_decay_iters
  std::string command_line;                // recorded in summary.json
  const std::atomic<int>* stop = nullptr;  // non-zero: stop after the current step
  bool progress_tty = false;               // a live progress line (stdout is a terminal)
};

// How the run ended: Completed, Diverged or Interrupted (an error is thrown, summary "failed").
RunState train(Config cfg, const TrainOptions& opt);

// What a run directory's config.json holds: the resolved config plus its derived values. Also
// written by `stacklab sweep --executor slurm` before a run starts (its tasks resume from it).
nlohmann::json run_config_json(const Config& cfg);

// The directory a config trains into: train.out_dir / train.name.
std::string default_run_dir(const Config& cfg);

// The entries a training run writes into its directory (and scripts/plot_run.py's plots/), the
// run lock aside: any of them present means the directory holds a run. Those of `dir` present.
std::vector<std::string> run_entries_in(const std::string& dir);

// `train --force`: removes the run_entries_in(dir), so a run started over has none of the old
// run's files beside it (plots, a text run's vocab.json, metrics.jsonl.damaged); returns them.
std::vector<std::string> clear_run_entries(const std::string& dir);

}  // namespace sl
