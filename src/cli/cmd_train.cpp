// `stacklab train CONFIG [--section.key=value ...] [--out DIR] [--force]` and
// `stacklab train --resume RUN_DIR [--train.max_iters=N [--optim.lr_decay_iters=D]]
// [--train.threads=T]`: runs the trainer, turns SIGINT/SIGTERM and a closed stdout (SIGPIPE) into
// a clean stop (finish the step, checkpoint, flush; exit 130/143/141) and divergence into exit
// code 3.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/loader.h"
#include "config/validate.h"
#include "train/keep.h"
#include "train/provenance.h"
#include "train/resume.h"
#include "train/run_lock.h"
#include "train/run_log.h"
#include "train/setup.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/signals.h"

namespace sl {
namespace {

std::atomic<int> g_stop{0};

std::string joined(const std::string& cmd, const ArgList& args) {
  std::string s = "stacklab " + cmd;
  for (const auto& a : args) s += " " + a;
  return s;
}

// "config.json, metrics.jsonl".
std::string joined_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// --out DIR: the run's config.json says where it is (train.out_dir and train.name are DIR's
// parent and name), not where the config would have put it.
void place_run(Config& cfg, const std::string& dir) {
  namespace fs = std::filesystem;
  fs::path p = fs::path(dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "runs/x/"
  if (p.empty() || p.filename() == "." || p.filename() == "..") {
    p = fs::absolute(p).lexically_normal();
    if (!p.has_filename()) p = p.parent_path();
  }
  const std::string name = p.filename().string();
  if (const std::string bad = plain_name_problem(name); !bad.empty())
    throw Error("--out " + dir + ": the run directory's name " + shown_name(name) + " " + bad);
  cfg.train.name = name;
  cfg.train.out_dir = p.has_parent_path() ? p.parent_path().string() : ".";
}

}  // namespace

namespace {

// --resume RUN_DIR [--train.max_iters=N [--optim.lr_decay_iters=D]] [--train.threads=T]: the
// run's own config, extended as train/resume.h allows, with a note for each change that may alter
// its last bits (threads, the numeric path). `decay_changed` is set when the decay horizon moves.
Config resume_config(const std::string& run_dir, const std::vector<std::string>& overrides,
                     bool& decay_changed) {
  const Config started = load_run_config(run_dir);
  // A finished run whose checkpoints were pruned (train/keep.h) is refused first, saying so.
  if (const std::string why = not_kept_reason(run_dir); !why.empty())
    throw Error(run_dir + ": " + why);
  check_resume_provenance(run_dir, read_provenance(run_dir), started);
  const TrainedSoFar so_far = trained_so_far(run_dir);
  ResumedConfig r = resumed_config(started, overrides, run_dir, so_far);
  for (const std::string& note : r.notes) std::printf("%s\n", note.c_str());
  if (so_far.step > 0)  // continued from a checkpoint: say what else changes its last bits
    for (const std::string& note :
         numeric_path_notes(last_numeric_path(run_dir), numeric_path_json()))
      std::printf("%s\n", note.c_str());
  decay_changed = r.decay_changed;
  return r.cfg;
}

}  // namespace

int cmd_train(const ArgList& argv) {
  Args a = parse_args("train", argv, {"out", "resume"}, {"force"}, true);
  Config cfg;
  TrainOptions opt;
  opt.command_line = joined("train", argv);
  std::optional<RunLock> lock;  // held until the process is done with the run directory
  if (a.has("resume")) {
    if (!a.positional.empty()) throw Error("give either CONFIG or --resume RUN_DIR, not both");
    if (a.has("out") || a.has("force"))  // a resumed run stays in RUN_DIR and keeps its steps
      throw Error(std::string(a.has("out") ? "--out" : "--force") +
                  " is not accepted with --resume: a resumed run continues in RUN_DIR from its "
                  "checkpoint (to start over: stacklab train RUN_DIR/config.json --out DIR "
                  "[--force])");
    opt.run_dir = a.get("resume", "");
    if (std::filesystem::is_directory(opt.run_dir))  // else resume_config says it is not a run
      lock.emplace(RunLock::acquire(opt.run_dir, opt.command_line, false));
    cfg = resume_config(opt.run_dir, a.overrides, opt.decay_changed);
    opt.resume = true;
  } else {
    if (a.positional.size() != 1)
      throw Error("expected one CONFIG file (or --resume RUN_DIR), got " +
                  std::to_string(a.positional.size()) +
                  "; to train with the defaults and overrides only, save them with 'stacklab "
                  "validate --defaults > "
                  "defaults.json' and give that file (configs/base.json is the study's base "
                  "config, not the defaults)");
    check_derived_section(a.positional[0]);
    cfg = load_config(a.positional[0], a.overrides);
    opt.run_dir = a.get("out", default_run_dir(cfg));
    if (a.has("out")) place_run(cfg, opt.run_dir);
    lock.emplace(RunLock::acquire(opt.run_dir, opt.command_line, true));
    const std::vector<std::string> held = run_entries_in(opt.run_dir);
    if (!held.empty() && !a.has("force"))
      throw Error(opt.run_dir + " already holds a run (" + joined_names(held) +
                  "); continue it with --resume " + opt.run_dir +
                  ", or write elsewhere with --out DIR (or --train.name=NAME), or pass --force to "
                  "start it over (it removes them)");
    if (a.has("force") && !held.empty())
      std::printf("note: --force: removed %s from %s: the run starts over\n",
                  joined_names(clear_run_entries(opt.run_dir)).c_str(), opt.run_dir.c_str());
  }
  opt.stop = &g_stop;
  opt.progress_tty = isatty(STDOUT_FILENO) != 0;
  RunState status = RunState::Completed;
  {
    // A second signal ends the process at once; a closed stdout stops the run like SIGINT.
    const StopSignals stop_signals(g_stop,
                                   {.second_signal_ends = true, .stop_on_closed_output = true});
    status = train(cfg, opt);
  }
  if (status == RunState::Diverged) return kExitDiverged;
  if (status == RunState::Interrupted) return 128 + g_stop.load();
  return kExitOk;
}

}  // namespace sl
