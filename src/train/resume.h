// The rules for continuing a run directory with `stacklab train --resume RUN_DIR`: which
// overrides a resumed run accepts (train.max_iters to extend it, optim.lr_decay_iters to move its
// decay with an extension, train.threads), that it is never shortened, that a decaying schedule
// is not extended past its horizon unless the new horizon is given, that its data and config
// still match provenance.json, and that a run that wrote a checkpoint still has it. Each rule
// throws an Error naming the flag or file. Not here: the run lock, the checkpoint
// (train/checkpoint.h) or the loop (train/trainer.h).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"

namespace sl {

// The resolved config a run directory was started with (RUN_DIR/config.json, its derived
// section dropped). Throws when RUN_DIR has no config.json.
Config load_run_config(const std::string& run_dir);

// Whether an extension of the run in `run_dir` to `cfg`'s train.max_iters has begun: its first
// write (RunLog::mark_running) made summary.json say "running" with that max_iters. Only then may
// its fingerprint and checkpoint still hold the old horizon (check_resume_provenance, the
// trainer's restore): a config.json edited by hand is no extension.
bool extension_started(const std::string& run_dir, const Config& cfg);

// The data and config a run resumes on must be what it started with: `stored` is its
// provenance.json (null for a run without one: then nothing is compared here).
void check_resume_provenance(const std::string& run_dir, const nlohmann::json& stored,
                             const Config& started);

// A run resumed without checkpoints/latest.safetensors starts over from step 0, which is right
// only if it never wrote one: throws an Error naming the file when its summary.json says it
// completed or was interrupted, or its metrics.jsonl goes past the first checkpoint step
// (train.ckpt_interval of `cfg`, the resumed config), instead of training it again.
void check_checkpoint_not_lost(const std::string& run_dir, const Config& cfg);

struct ResumedConfig {
  Config cfg;                      // the run's config with the accepted overrides
  bool decay_changed = false;      // the extension moves the resolved optim.lr_decay_iters
  std::vector<std::string> notes;  // what the resume changes, one line each, to print
};

// `started` (the run's config.json) with the --resume overrides `overrides` ("key=value")
// applied, as the rules above allow; messages name RUN_DIR/config.json.
ResumedConfig resumed_config(const Config& started, const std::vector<std::string>& overrides,
                             const std::string& run_dir);

}  // namespace sl
