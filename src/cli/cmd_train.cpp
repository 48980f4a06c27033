// `stacklab train CONFIG [--section.key=value ...] [--out DIR] [--force]` and
// `stacklab train --resume RUN_DIR`: runs the trainer, turns SIGINT/SIGTERM into a clean stop
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
  j.erase("derived");
  Config cfg = config_from_json(j, path);
  cfg.source_path = path;
  return cfg;
}

int cmd_train(const ArgList& argv) {
  Args a = parse_args("train", argv, {"out", "resume"}, {"force"}, true);
  Config cfg;
  TrainOptions opt;
  if (a.has("resume")) {
    if (!a.positional.empty()) throw Error("give either CONFIG or --resume RUN_DIR, not both");
    if (!a.overrides.empty())
      throw Error("--resume: config overrides (" + a.overrides[0] +
                  ") are not accepted; a resumed run keeps the config it started with");
    opt.run_dir = a.get("resume", "");
    cfg = load_run_config(opt.run_dir);
    opt.resume = true;
  } else {
    if (a.positional.size() != 1) throw Error("expected one CONFIG file (or --resume RUN_DIR)");
    cfg = load_config(a.positional[0], a.overrides);
    opt.run_dir = a.get("out", default_run_dir(cfg));
    if (std::filesystem::exists(opt.run_dir + "/metrics.jsonl") && !a.has("force"))
      throw Error(opt.run_dir + " already holds a run; continue it with --resume " + opt.run_dir +
                  ", or write elsewhere with --out DIR (or --train.name=NAME), or pass --force to start it over");
    if (a.has("force")) std::filesystem::remove_all(opt.run_dir + "/checkpoints");
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
