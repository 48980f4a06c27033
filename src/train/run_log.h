// The run log of a training run: the metrics.jsonl records (each checked against the schema of
// train/records.h), summary.json and the console lines, with the step-time window behind the
// train records' throughput. rewind_metrics cuts metrics.jsonl back to a checkpoint on resume.
// Not here: what is measured or when (train/trainer.cpp), the saved state (train/train_state.h).
#pragma once
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "train/milestones.h"
#include "train/run_state.h"
#include "util/fsutil.h"

namespace sl {

// What summary.json and the last console line report; the trainer keeps it current.
struct RunOutcome {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();  // not measured yet
  double last_train_loss = kNone;  // the last training batch's loss
  double last_val = kNone, last_train_eval = kNone;
  int64_t last_eval_step = -1;  // -1: no eval yet
  double best_val = std::numeric_limits<double>::infinity();
  nlohmann::json divergence = nullptr;  // the diverged record's fields but kind, or null
  nlohmann::json stopped = nullptr;     // why the run stopped before its horizon, or null
  nlohmann::json milestones = nlohmann::json::object();  // train/milestones.h Milestones::to_json
  std::string error;                                     // why the run failed, or ""
};

class RunLog {
 public:
  // `cfg` is read when each line is written (the data source may set vocab_size first): it must
  // outlive the log.
  RunLog(const Config& cfg, std::string dir, std::string command_line, bool progress_tty);

  // Appends to dir/metrics.jsonl from here on (after the file was prepared or rewound).
  void open_metrics();
  // The console header (model, reference losses) and the start (or resume) record. `data_check`:
  // data/known_data.h check_known_data of a text run's file (null for others), kept for summary().
  void start(int64_t step, bool resumed, int64_t n_params, const nlohmann::json& reference_losses,
             const nlohmann::json& data_check);
  void eval(int64_t step, double val_loss, double train_loss);
  // The console line of a milestone first reached at `step` (train/milestones.h).
  void milestone(const MilestoneKind& m, int64_t step, double val_loss, double line);
  // The console line of a run stopped by its rule (`stopped`: train/escape_stop.h's record of
  // the escape rule, or Milestones::stop_record).
  void stopped(const nlohmann::json& stopped);
  // A layers record: `metrics` from to_json(LayerStats, ...), plus step, kind and loss.
  void layers(int64_t step, nlohmann::json metrics, double loss);
  // The diverged record (`divergence`: step, reason, blocks, loss, value, limit) and its line.
  void diverged(const nlohmann::json& divergence);
  // One applied step: the train record every log.log_interval steps (and at the last step),
  // else the live progress line on a terminal. `ms`: the step's wall time.
  void train_step(int64_t step, double loss, double lr, double grad_norm, double ms);
  // summary.json; `state` is Running, Completed, Diverged, Interrupted or Failed.
  void summary(RunState state, int64_t steps, int64_t start_step, double wall_seconds,
               double run_seconds, const RunOutcome& o) const;
  // A resumed run's first write, before it cuts metrics.jsonl or rewrites config.json and
  // provenance.json: the summary.json it finds (if any) says "running", with the max_iters the
  // run now aims at and its other fields as they were. A kill at any later write then leaves a
  // run that reads as unfinished (and resumable), never one that reads as completed at the old
  // step count under a config at the new horizon.
  void mark_running() const;
  // The last console line: how the run ended (`state` as above), the step of every number.
  void finish(RunState state, int64_t steps, const RunOutcome& o) const;

 private:
  const char* line_start() const { return progress_tty_ ? "\r\033[K" : ""; }

  int64_t tokens_per_step() const;

  const Config& cfg_;
  std::string dir_, command_line_;
  bool progress_tty_;
  std::unique_ptr<LineLog> metrics_;
  nlohmann::json refs_ = nullptr;        // the reference losses, from start()
  nlohmann::json data_check_ = nullptr;  // from start()
  std::chrono::steady_clock::time_point window_start_ = std::chrono::steady_clock::now();
  int64_t window_steps_ = 0;
  double ms_avg_ = 0.0;
};

// What fixes this run's arithmetic besides its config, as the start and resume records hold it
// ("numeric_path"): the matrix-product path of the build, the kernels OpenBLAS picked for this
// CPU, the clone of the vector loops, the thread count, and whether subnormals are flushed to zero
// (read back from this thread's control register).
nlohmann::json numeric_path_json();

// Rewinds metrics.jsonl to a checkpoint at `step`: keeps the records of the steps before it and
// the history of earlier resumes (their "resume" records, up to `step`); the records from `step`
// on are cut (the resumed run writes them again), with a note naming their lines. A line that
// is not a JSON record (damaged on disk, or torn by a crash mid-write) is never lost silently:
// a warning names the file and line, and the line is appended to metrics.jsonl.damaged.
void rewind_metrics(const std::string& path, int64_t step);

}  // namespace sl
