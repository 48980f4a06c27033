// `stacklab sweep SWEEP.json [SWEEP.json ...] [--executor local|slurm] [--jobs N] [--dry-run]
// [--on-change fail|rerun|extend]` and `stacklab sweep --status SWEEP_DIR [...]`: the flags,
// checked here, then src/sweep does the rest (sweep/exec.h run_sweeps: expansion, the out_dir lock,
// the local and Slurm executors; sweep_status: --status).
#include <algorithm>
#include <sstream>
#include <thread>

#include "cli/args.h"
#include "cli/commands.h"
#include "sweep/exec.h"
#include "util/error.h"

namespace sl {
namespace {

SlurmOptions slurm_options(const Args& a) {
  SlurmOptions o;
  o.partition = a.get("slurm-partition", "");
  o.time = a.get("slurm-time", "");
  o.mem = a.get("slurm-mem", "");
  const long long cpus = a.get_int("slurm-cpus-per-task", 1), k = a.get_int("max-parallel", 0);
  if (cpus < 1 || cpus > 4096)
    throw Error("--slurm-cpus-per-task: expected an integer from 1 to 4096");
  if (k < 0) throw Error("--max-parallel: expected an integer >= 1 (or 0 for no limit)");
  o.cpus_per_task = static_cast<int>(cpus);
  o.max_parallel = static_cast<int>(k);
  std::istringstream extra(a.get("slurm-extra", ""));
  for (std::string w; extra >> w;) o.extra.push_back(w);
  return o;
}

}  // namespace

int cmd_sweep(const ArgList& argv) {
  Args a = parse_args("sweep", argv,
                      {"jobs", "executor", "slurm-partition", "slurm-time", "slurm-cpus-per-task",
                       "slurm-mem", "slurm-extra", "max-parallel", "on-change"},
                      {"dry-run", "wait", "status"}, false, {"slurm-extra"});
  if (a.has("status")) {
    // --status reads where the runs stand; every other flag is about running them.
    for (const char* f :
         {"jobs", "executor", "slurm-partition", "slurm-time", "slurm-cpus-per-task", "slurm-mem",
          "slurm-extra", "max-parallel", "on-change", "dry-run", "wait"})
      if (a.has(f))
        throw Error(std::string("--") + f +
                    " does not apply to --status, which only reports where the runs stand (runs "
                    "awaiting a longer horizon are listed as 'to extend' either way); drop it");
    return sweep_status(a.positional);
  }
  SweepOptions opt;
  opt.executor = parse_named<Executor>(a.get("executor", name_of(Executor::Local)), "--executor");
  for (const char* f : {"slurm-partition", "slurm-time", "slurm-cpus-per-task", "slurm-mem",
                        "slurm-extra", "max-parallel", "wait"})
    if (opt.executor == Executor::Local && a.has(f))
      throw Error(std::string("--") + f + ": only with --executor slurm");
  if (opt.executor == Executor::Slurm && a.has("jobs"))
    throw Error("--jobs: only with --executor local (Slurm: --max-parallel K)");
  if (a.positional.empty()) throw Error("expected a SWEEP.json file (or several, run in one pool)");
  opt.on_change = parse_named<OnChange>(a.get("on-change", name_of(OnChange::Fail)), "--on-change");
  opt.dry_run = a.has("dry-run");
  opt.wait = a.has("wait");
  if (opt.executor == Executor::Slurm) opt.slurm = slurm_options(a);
  const long long jobs_flag = a.get_int("jobs", 0);
  if (jobs_flag < 0) throw Error("--jobs: must be >= 1 (or 0 for one per core)");
  opt.jobs = jobs_flag > 0 ? static_cast<int>(jobs_flag)
                           : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return run_sweeps(a.positional, opt);
}

}  // namespace sl
