// Running sweeps: the entry `stacklab sweep` calls (run_sweeps, sweep/local.cpp, with the local
// executor), `--status` (sweep/status.cpp), the Slurm executor (sweep/slurm.cpp), and what they
// share (sweep/common.cpp): the runs of every plan with their states, the command each run
// executes, the manifest, the progress line with its ETA, and running an external command
// (sbatch, squeue). Flag parsing is the CLI's (cli/cmd_sweep.cpp).
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/plan.h"
#include "sweep/slurm_script.h"
#include "sweep/state.h"

namespace sl {

// What a `stacklab sweep` invocation asks for (cli/cmd_sweep.cpp parses the flags into it).
struct SweepOptions {
  Executor executor = Executor::Local;
  int jobs = 1;                         // local: runs at once
  OnChange on_change = OnChange::Fail;  // --on-change: a changed run refused, rerun or extended
  bool dry_run = false;                 // print what would run, change nothing
  bool wait = false;                    // slurm: follow the job until its tasks have left the queue
  SlurmOptions slurm;                   // slurm: sbatch's options
};

// Expands the sweep files, locks each out_dir (unless dry_run), compares every run with the
// sweep (a changed one is refused, or moved aside with rerun_changed) and runs the pending ones
// with the executor; returns the exit code. Several files run in one pool (local) or as one
// job array each (slurm); two that write to the same out_dir are refused.
int run_sweeps(const std::vector<std::string>& files, const SweepOptions& opt);

// One run of one plan, with its state (sweep/state.h) as this invocation sees it.
struct SweepItem {
  const SweepPlan* plan;
  const SweepRun* run;
  std::string label;  // the run id, prefixed with the sweep's name when there are several
  RunState state = RunState::New;
  std::string job;  // Slurm: "<job>_<task>" of the task that runs it
  std::vector<std::string>
      changes;         // state Changed (or a failed run's): what differs, "key: stored -> now"
  bool fresh = false;  // a changed run rerun: its old directory is moved aside, it starts anew
  std::vector<std::string>
      extend;  // --on-change extend: the overrides its `train --resume` continues it with
};

// Every run of every plan, in order, each with run_state(); with `compare` (the plans' configs
// are those the sweep gives now), a run whose directory holds the result of another config or
// data (sweep_run_state: changed) gets its changes and is Changed (a failed one stays Failed).
// The one decision the real run, --dry-run and --status share.
std::vector<SweepItem> collect_items(const std::vector<SweepPlan>& plans, bool compare = true);

// The text every run reads, made once per distinct (data.path, data.val_fraction, block_size) as
// `stacklab validate` makes it: a missing, non-UTF-8 or too short file is an Error naming the
// sweep file and the first run that reads it, before a plan is printed (also with --dry-run) or a
// run starts.
void check_sweep_data(const std::vector<SweepPlan>& plans);

// "" when no item has changes; else what `stacklab sweep` refuses with: each changed run's
// directory and changes, and the hint to rerun them with --on-change rerun.
std::string changed_runs_message(const std::vector<SweepItem>& items);

// One line per sweep ("sweep NAME: N train runs (k to do, m already done) in OUT, HOW"), one for
// several ("in one pool" for the local executor's shared slots); returns how many runs are pending.
size_t print_plans(const std::vector<SweepPlan>& plans, const std::vector<SweepItem>& items,
                   const std::string& how, bool pool);

// The stacklab arguments that run `run` with `threads` threads: a probe, a resume of the run's
// config.json when there is one (and the run is not `fresh`: moved aside first) with `extend`'s
// overrides after it, else a fresh training run.
std::vector<std::string> child_args(const SweepPlan& plan, const SweepRun& run, int threads,
                                    bool fresh = false,
                                    const std::vector<std::string>& extend = {});

// The overrides that make a run's config from the plan's base: the sweep's, then threads, seed,
// name.
std::vector<std::string> run_overrides(const SweepRun& run, int threads);

// <out_dir>/manifest.json: the plan and each run's state; `extra` merged in at the top level.
void write_manifest(const SweepPlan& plan, const std::vector<SweepItem>& items,
                    const nlohmann::json& extra);

// The "[k/n] label state secs | elapsed | ETA" line. ETA: seconds per unit of estimated work so
// far, times the work of the runs not yet finished, over the slots. Runs differ by 100x in size
// (L=1 vs L=96), so counting runs would promise the end long before the deep runs even start.
class SweepProgress {
 public:
  SweepProgress(size_t todo, int slots)
      : todo_(todo), slots_(slots), t0_(std::chrono::steady_clock::now()) {}
  // `item` finished in `seconds`; `items` gives the work left (states New, Queued, Running and
  // Resumable).
  void finished(const SweepItem& item, double seconds, const std::vector<SweepItem>& items);

 private:
  size_t todo_, done_ = 0;
  int slots_;
  double busy_seconds_ = 0.0, done_cost_ = 0.0;
  std::chrono::steady_clock::time_point t0_;
};

// The last non-empty line of a file ("" if unreadable).
std::string last_line(const std::string& path);

// Runs argv[0] (looked up in PATH) with no shell; stdout and stderr captured.
struct CommandResult {
  int exit_code = -1;  // 127: could not be started
  std::string out, err;
};
CommandResult run_command(const std::vector<std::string>& argv);

// `--status` (sweep/status.cpp): one line of counts per sweep directory (or sweep file), each
// failed and changed run, a note when the runs cannot be compared; 1 while any failed or changed.
int sweep_status(const std::vector<std::string>& dirs);

// ---- Slurm (sweep/slurm.cpp) ---------------------------------------------------------------

// Whether Slurm job `job` still has tasks queued or running; nullopt when squeue cannot answer.
std::optional<bool> slurm_job_alive(const std::string& job);

// Writes each pending run's config and <out_dir>/slurm/array.sbatch, submits it (unless dry_run:
// then prints it), records the job in the manifest and the lock; with `wait`, follows it to the
// end. Returns the exit code. `locks`: one per plan, held by the caller (empty with dry_run);
// each records the job it submitted.
int submit_slurm(const std::vector<SweepPlan>& plans, std::vector<SweepItem>& items,
                 const SlurmOptions& opt, bool dry_run, bool wait, std::vector<SweepLock>& locks);

// Refines the states of the items of one plan with squeue: pending tasks are Queued, running
// ones Running, tasks recorded as running that Slurm no longer knows Interrupted. Returns how
// many tasks of the job the queue still holds; nullopt when squeue cannot answer (states stay as
// the run directories say).
std::optional<size_t> refine_with_squeue(const std::string& job, std::vector<SweepItem*>& items);

}  // namespace sl
