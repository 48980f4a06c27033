// `stacklab train CONFIG [--section.key=value ...] [--out DIR] [--force]` and
// `stacklab train --resume RUN_DIR [--train.max_iters=N [--optim.lr_decay_iters=D]]
// [--train.threads=T]`: runs the trainer, turns SIGINT/SIGTERM into a clean stop (finish the step,
// checkpoint, flush; exit 130/143) and divergence into exit code 3.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/loader.h"
#include "core/error.h"
#include "core/fsutil.h"
#include "train/provenance.h"
#include "train/run_lock.h"
#include "train/setup.h"
#include "train/trainer.h"

namespace sl {
namespace {

std::atomic<int> g_stop{0};

extern "C" void on_stop_signal(int sig) {
  g_stop.store(sig);
  std::signal(sig, SIG_DFL);  // a second signal ends the process at once
}

std::string joined(const std::string& cmd, const ArgList& args) {
  std::string s = "stacklab " + cmd;
  for (const auto& a : args) s += " " + a;
  return s;
}

}  // namespace

// The resolved config a run directory was started with.
Config load_run_config(const std::string& run_dir) {
  const std::string path = run_dir + "/config.json";
  if (!std::filesystem::exists(path))
    throw Error(run_dir + ": not a run directory (no config.json)");
  nlohmann::json j = read_json_file(path);
  if (j.is_object()) j.erase("derived");
  Config cfg = config_from_json(j, path);
  cfg.source_path = path;
  return cfg;
}

namespace {

// The data a run resumes on must be the data it started with (provenance.json, when present).
void check_resume_provenance(const std::string& run_dir, const Config& started) {
  const nlohmann::json stored = read_provenance(run_dir);
  if (stored.is_null())
    return;  // a run from before fingerprints: the checkpoint's config check remains
  const std::vector<std::string> changes = provenance_changes(stored, make_provenance(started));
  if (changes.empty()) return;
  std::string list;
  for (const auto& c : changes) list += "\n  " + c;
  throw Error(run_dir +
              ": cannot resume: what the run was made from has changed since it started (" +
              run_dir + "/provenance.json):" + list +
              "\nrestore the data file (or config.json), or start a new run");
}

// Whether the learning rate of `kind` falls to optim.min_lr at optim.lr_decay_iters.
bool schedule_decays(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::Cosine:
      return true;
    case ScheduleKind::Constant:
    case ScheduleKind::WarmupConstant:
      return false;
  }
  return false;
}

// An extension past the decay horizon of a decaying schedule would run every new step at
// optim.min_lr (0 by default: the new steps would change nothing). Refused unless the user says
// where the decay ends now (--optim.lr_decay_iters, also to keep it where it was).
void check_extended_decay(const Config& started, const Config& cfg, bool decay_set) {
  const int horizon = resolved_lr_decay_iters(started);
  if (decay_set || !schedule_decays(cfg.optim.schedule) || cfg.train.max_iters <= horizon) return;
  char min_lr[32];
  std::snprintf(min_lr, sizeof min_lr, "%g", cfg.optim.min_lr);
  throw Error(
      "--train.max_iters=" + std::to_string(cfg.train.max_iters) +
      ": the run's learning rate (optim.schedule=" + name_of(cfg.optim.schedule) +
      ") has decayed to optim.min_lr=" + min_lr + " at optim.lr_decay_iters=" +
      std::to_string(horizon) + ", so every new step would run at lr " + min_lr +
      "; extend the decay too with --optim.lr_decay_iters=" + std::to_string(cfg.train.max_iters) +
      " (or pass --optim.lr_decay_iters=" + std::to_string(horizon) +
      " to keep it and train the new steps at optim.min_lr)");
}

// --resume RUN_DIR [--train.max_iters=N [--optim.lr_decay_iters=D]] [--train.threads=T]: the
// run's own config, extended. `decay_changed` is set when the decay horizon moves.
Config resume_config(const std::string& run_dir, const std::vector<std::string>& overrides,
                     bool& decay_changed) {
  const Config started = load_run_config(run_dir);
  check_resume_provenance(run_dir, started);
  nlohmann::json j = to_json(started);
  std::string refused;
  bool decay_set = false;
  for (const auto& kv : overrides) {
    const std::string key = apply_override(j, kv, run_dir + "/config.json");
    decay_set = decay_set || key == "optim.lr_decay_iters";
    if (key != "train.max_iters" && key != "train.threads" && key != "optim.lr_decay_iters")
      refused += (refused.empty() ? "" : ", ") + kv;
  }
  if (!refused.empty())
    throw Error("--resume: config overrides (" + refused +
                ") are not accepted; a resumed run keeps the config it started with (only "
                "--train.max_iters=N, "
                "to extend it, with --optim.lr_decay_iters=D to move its decay, and "
                "--train.threads=T may change)");
  Config cfg = config_from_json(j, run_dir + "/config.json (with the --resume overrides)");
  cfg.source_path = started.source_path;
  if (cfg.train.max_iters < started.train.max_iters)
    throw Error("--train.max_iters=" + std::to_string(cfg.train.max_iters) +
                ": a resumed run can be extended, not "
                "shortened (it was started with train.max_iters=" +
                std::to_string(started.train.max_iters) + ")");
  if (decay_set && cfg.train.max_iters == started.train.max_iters)
    throw Error(
        "--optim.lr_decay_iters: a resumed run keeps its schedule; its decay can move only with an "
        "extension "
        "(--train.max_iters=N above " +
        std::to_string(started.train.max_iters) + ")");
  if (cfg.train.max_iters > started.train.max_iters) {
    check_extended_decay(started, cfg, decay_set);
    if (!decay_set && started.optim.lr_decay_iters == 0)
      cfg.optim.lr_decay_iters = started.train.max_iters;  // the horizon it was trained under
    decay_changed = resolved_lr_decay_iters(cfg) != resolved_lr_decay_iters(started);
    if (decay_changed)
      std::printf(
          "note: the learning-rate decay now ends at optim.lr_decay_iters=%d (was %d); the steps "
          "from here "
          "on follow the new schedule\n",
          resolved_lr_decay_iters(cfg), resolved_lr_decay_iters(started));
    std::printf("extending %s from %d to %d steps\n", run_dir.c_str(), started.train.max_iters,
                cfg.train.max_iters);
  }

  if (cfg.train.threads != started.train.threads)
    std::printf(
        "note: train.threads %d -> %d; losses are bit-identical to an uninterrupted run only at "
        "the same "
        "thread count\n",
        started.train.threads, cfg.train.threads);
  return cfg;
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
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  const RunState status = train(cfg, opt);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (status == RunState::Diverged) return kExitDiverged;
  if (status == RunState::Interrupted) return 128 + g_stop.load();
  return kExitOk;
}

}  // namespace sl
