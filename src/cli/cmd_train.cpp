// `stacklab train CONFIG [--section.key=value ...] [--out DIR] [--force]` and
// `stacklab train --resume RUN_DIR [--train.max_iters=N [--optim.lr_decay_iters=D]]
// [--train.threads=T]`: runs the trainer, turns SIGINT/SIGTERM into a clean stop (finish the step,
// checkpoint, flush; exit 130/143) and divergence into exit code 3.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/loader.h"
#include "core/error.h"
#include "core/fsutil.h"
#include "core/signals.h"
#include "train/provenance.h"
#include "train/resume.h"
#include "train/run_lock.h"
#include "train/setup.h"
#include "train/trainer.h"

namespace sl {
namespace {

std::atomic<int> g_stop{0};

std::string joined(const std::string& cmd, const ArgList& args) {
  std::string s = "stacklab " + cmd;
  for (const auto& a : args) s += " " + a;
  return s;
}

}  // namespace

namespace {

// --resume RUN_DIR [--train.max_iters=N [--optim.lr_decay_iters=D]] [--train.threads=T]: the
// run's own config, extended as train/resume.h allows. `decay_changed` is set when the decay
// horizon moves.
Config resume_config(const std::string& run_dir, const std::vector<std::string>& overrides,
                     bool& decay_changed) {
  const Config started = load_run_config(run_dir);
  check_resume_provenance(run_dir, read_provenance(run_dir), started);
  ResumedConfig r = resumed_config(started, overrides, run_dir);
  for (const std::string& note : r.notes) std::printf("%s\n", note.c_str());
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
    lock.emplace(RunLock::acquire(opt.run_dir, opt.command_line, true));
    if (std::filesystem::exists(opt.run_dir + "/metrics.jsonl") && !a.has("force"))
      throw Error(opt.run_dir + " already holds a run; continue it with --resume " + opt.run_dir +
                  ", or write elsewhere with --out DIR (or --train.name=NAME), or pass --force to "
                  "start it over");
    if (a.has("force")) {
      std::filesystem::remove_all(opt.run_dir + "/checkpoints");
      std::filesystem::remove(opt.run_dir + "/provenance.json");
    }
  }
  opt.stop = &g_stop;
  opt.progress_tty = isatty(STDOUT_FILENO) != 0;
  RunState status = RunState::Completed;
  {
    // A second signal ends the process at once.
    const StopSignals stop_signals(g_stop, {.second_signal_ends = true});
    status = train(cfg, opt);
  }
  if (status == RunState::Diverged) return kExitDiverged;
  if (status == RunState::Interrupted) return 128 + g_stop.load();
  return kExitOk;
}

}  // namespace sl
