// The rules for continuing a run directory with `stacklab train --resume RUN_DIR`: which
// overrides a resumed run accepts (train.max_iters to extend it, optim.lr_decay_iters to move its
// decay with an extension, train.threads), that it is never shortened, that a decaying schedule
// is not extended past its horizon unless the new horizon is given, that its data and config
// still match provenance.json, that an extension trains what its config will say (not a run
// stopped by its stop rule under that rule, not a schedule that rewrites steps already trained;
// a later stop rule, train.stop_at, continues a run stopped at an earlier milestone), and that a
// run that wrote a checkpoint still has it. Each rule throws an Error naming the flag or file. Also
// the notes a resume prints for what may change its last bits (threads, the numeric path). Not
// here: the run lock, the checkpoint (train/checkpoint.h) or the loop (train/trainer.h).
#pragma once
#include <cstdint>
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

// How far a run directory trained, for the extension rules: the step its checkpoint resumes at
// (checkpoints/latest.safetensors' train_state, read from the file's header alone; 0 when there is
// none: the run starts over) and its summary.json (null when absent or torn).
struct TrainedSoFar {
  int64_t step = 0;
  nlohmann::json summary;
};
TrainedSoFar trained_so_far(const std::string& run_dir);

// Whether `cfg` stops by another rule than `started` (train.stop_at, train.stop_below_unigram, the
// margin of the milestone it stops at; train/milestones.h same_stop_rule).
bool stop_rule_changes(const Config& started, const Config& cfg);

// Why extending the run `started` (trained as `so_far`) to `cfg` (a larger train.max_iters, its
// optim.lr_decay_iters as the extension sets it, or another stop rule) would leave a run whose
// config.json names what it never trained, or trains nothing; "" when it would not:
// - the run stopped by its rule (its escape, train/escape_stop.h, or its milestone,
//   train/milestones.h) and cfg keeps the rule: resumed, it evaluates the same state and stops
//   there again, training nothing;
// - cfg's other stop rule is met by an eval the run has logged (its milestones' lines are drawn
//   from the reference losses of cfg's val batches): before its checkpoint, the run trained past
//   where cfg stops; at it, the resumed run stops there again. A rule no eval meets (a later
//   milestone, or none) continues the run as cfg's uninterrupted run would train it;
// - the schedule changes the learning rate of a step it already trained (a cosine decay moved
//   past the warm-up): a fresh run of cfg would train those steps otherwise.
// `run_dir` names the run in the message. Shared by `train --resume` (resumed_config) and
// `sweep --on-change extend` (sweep_run_extension), so the sweep refuses before it runs.
std::string extension_problem(const Config& started, const Config& cfg, const TrainedSoFar& so_far,
                              const std::string& run_dir);

// The numeric_path of the last "start" or "resume" record in RUN_DIR/metrics.jsonl (null when it
// has none): what the run's arithmetic last ran on (train/run_log.h numeric_path_json).
nlohmann::json last_numeric_path(const std::string& run_dir);

// One "note: ..." line for each part of a run's numeric path that differs between `was` (its last
// start or resume record's) and `now`: the matrix-product path (matmul: libxsmm or OpenBLAS), the
// kernels OpenBLAS picked (openblas_core) and the vector-loop clone (vector_loops). Like a thread
// change, each may change the last bits of every step from here on. None when `was` is null.
std::vector<std::string> numeric_path_notes(const nlohmann::json& was, const nlohmann::json& now);

struct ResumedConfig {
  Config cfg;                      // the run's config with the accepted overrides
  bool decay_changed = false;      // the extension moves the resolved optim.lr_decay_iters
  std::vector<std::string> notes;  // what the resume changes, one line each, to print
};

// `started` (the run's config.json, trained as `so_far`) with the --resume overrides `overrides`
// ("key=value") applied, as the rules above allow (an extension as extension_problem allows);
// messages name RUN_DIR/config.json.
ResumedConfig resumed_config(const Config& started, const std::vector<std::string>& overrides,
                             const std::string& run_dir, const TrainedSoFar& so_far);

}  // namespace sl
