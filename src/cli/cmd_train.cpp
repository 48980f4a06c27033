// `stacklab train CONFIG [--section.key=value ...] [--out DIR] [--force]` and
// `stacklab train --resume RUN_DIR [--train.max_iters=N] [--train.threads=T]`: runs the trainer, turns SIGINT/SIGTERM into a clean stop
// (finish the step, checkpoint, flush; exit 130/143) and divergence into exit code 3.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/loader.h"
#include "core/error.h"
#include "core/fsutil.h"
#include "train/provenance.h"
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
  if (!std::filesystem::exists(path)) throw Error(run_dir + ": not a run directory (no config.json)");
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
  if (stored.is_null()) return;  // a run from before fingerprints: the checkpoint's config check remains
  const std::vector<std::string> changes = provenance_changes(stored, make_provenance(started));
  if (changes.empty()) return;
  std::string list;
  for (const auto& c : changes) list += "\n  " + c;
  throw Error(run_dir + ": cannot resume: what the run was made from has changed since it started (" +
              run_dir + "/provenance.json):" + list +
              "\nrestore the data file (or config.json), or start a new run");
}

// --resume RUN_DIR [--train.max_iters=N] [--train.threads=T]: the run's own config, extended.
Config resume_config(const std::string& run_dir, const std::vector<std::string>& overrides) {
  const Config started = load_run_config(run_dir);
  check_resume_provenance(run_dir, started);
  nlohmann::json j = to_json(started);
  std::string refused;
  for (const auto& kv : overrides) {
    const std::string key = apply_override(j, kv, run_dir + "/config.json");
    if (key != "train.max_iters" && key != "train.threads") refused += (refused.empty() ? "" : ", ") + kv;
  }
  if (!refused.empty())
    throw Error("--resume: config overrides (" + refused +
                ") are not accepted; a resumed run keeps the config it started with (only --train.max_iters=N, "
                "to extend it, and --train.threads=T may change)");
  Config cfg = config_from_json(j, run_dir + "/config.json (with the --resume overrides)");
  cfg.source_path = started.source_path;
  if (cfg.train.max_iters < started.train.max_iters)
    throw Error("--train.max_iters=" + std::to_string(cfg.train.max_iters) + ": a resumed run can be extended, not "
                "shortened (it was started with train.max_iters=" + std::to_string(started.train.max_iters) + ")");
  if (cfg.train.max_iters > started.train.max_iters) {
    if (started.optim.lr_decay_iters == 0) {
      cfg.optim.lr_decay_iters = started.train.max_iters;  // the horizon it was trained under
      if (cfg.optim.schedule == ScheduleKind::Cosine)
        std::printf("note: extending a cosine schedule: the decay horizon stays optim.lr_decay_iters=%d (the old "
                    "max_iters); steps after it run at optim.min_lr, as in nanoGPT\n",
                    cfg.optim.lr_decay_iters);
    }
    std::printf("extending %s from %d to %d steps\n", run_dir.c_str(), started.train.max_iters, cfg.train.max_iters);
  }
  if (cfg.train.threads != started.train.threads)
    std::printf("note: train.threads %d -> %d; losses are bit-identical to an uninterrupted run only at the same "
                "thread count\n",
                started.train.threads, cfg.train.threads);
  return cfg;
}

}  // namespace

int cmd_train(const ArgList& argv) {
  Args a = parse_args("train", argv, {"out", "resume"}, {"force"}, true);
  Config cfg;
  TrainOptions opt;
  if (a.has("resume")) {
    if (!a.positional.empty()) throw Error("give either CONFIG or --resume RUN_DIR, not both");
    opt.run_dir = a.get("resume", "");
    cfg = resume_config(opt.run_dir, a.overrides);
    opt.resume = true;
  } else {
    if (a.positional.size() != 1)
      throw Error("expected one CONFIG file (or --resume RUN_DIR), got " + std::to_string(a.positional.size()) +
                  "; to train with the defaults and overrides only, save them with 'stacklab validate --defaults > "
                  "defaults.json' and give that file (configs/base.json is the study's base config, not the defaults)");
    check_derived_section(a.positional[0]);
    cfg = load_config(a.positional[0], a.overrides);
    opt.run_dir = a.get("out", default_run_dir(cfg));
    if (std::filesystem::exists(opt.run_dir + "/metrics.jsonl") && !a.has("force"))
      throw Error(opt.run_dir + " already holds a run; continue it with --resume " + opt.run_dir +
                  ", or write elsewhere with --out DIR (or --train.name=NAME), or pass --force to start it over");
    if (a.has("force")) {
      std::filesystem::remove_all(opt.run_dir + "/checkpoints");
      std::filesystem::remove(opt.run_dir + "/provenance.json");
    }
  }
  opt.command_line = joined("train", argv);
  opt.stop = &g_stop;
  opt.progress_tty = isatty(STDOUT_FILENO) != 0;
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  const RunStatus status = train(cfg, opt);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (status == RunStatus::kDiverged) return kExitDiverged;
  if (status == RunStatus::kInterrupted) return 128 + g_stop.load();
  return kExitOk;
}

}  // namespace sl
