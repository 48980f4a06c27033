// `stacklab sweep ... --executor slurm`: one job array per sweep (sweep/slurm_script.h) over its
// pending runs, each run's resolved config written into its directory first (the tasks resume
// from it), submitted with `sbatch --parsable`, the job id recorded in the manifest and the
// out_dir's lock; `--wait` follows the job with the progress line until its tasks have left
// the queue. The scheduler is asked with squeue only (sacct needs accounting, which many
// clusters restrict): what it does not answer comes from the run directories.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>

#include "config/loader.h"
#include "sweep/exec.h"
#include "train/provenance.h"
#include "train/trainer.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/exit_codes.h"
#include "util/fsutil.h"
#include "util/signals.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::atomic<int> g_wait_stop{0};

// One submitted sweep: its plan, job id and the items of its tasks, by task index.
struct Submitted {
  const SweepPlan* plan;
  std::string job;
  std::vector<SweepItem*> tasks;
  nlohmann::json manifest;  // what manifest.json records about the job
};

// The task indices squeue lists for `job`, with their Slurm states; {} once the job has left the
// queue; nullopt when squeue cannot answer.
std::optional<std::map<int, std::string>> squeue_tasks(const std::string& job) {
  const CommandResult r = run_command({"squeue", "-h", "-r", "-j", job, "-o", "%i %T"});
  if (r.exit_code == 0) return parse_squeue_tasks(job, r.out);
  if (r.err.find("Invalid job id") != std::string::npos) return std::map<int, std::string>{};
  return std::nullopt;
}

// Writes the run's config.json (as `stacklab train` would) unless the run already has one.
void prepare_run(const SweepPlan& plan, const SweepRun& run, int threads) {
  make_dirs(run.dir);
  if (plan.mode == SweepMode::Probe)
    write_provenance(run.dir, run.config, run.run_info);  // train writes its own
  if (plan.mode != SweepMode::Train || fs::exists(run.dir + "/config.json")) return;
  Config cfg = load_config(plan.base, run_overrides(run, threads));
  cfg.train.out_dir = fs::path(run.dir).parent_path().string();  // where it lies, as --out records
  write_file_atomic(run.dir + "/config.json", run_config_json(cfg).dump(2) + "\n");
}

// A training task's command: `train --resume DIR --train.threads=C`, then the overrides that extend
// the run (--on-change extend), which a requeued task repeats unchanged.
std::vector<std::string> resume_args(const std::string& dir, int cpus,
                                     const std::vector<std::string>& extend) {
  std::vector<std::string> a = {"train", "--resume", dir,
                                "--train.threads=" + std::to_string(cpus)};
  a.insert(a.end(), extend.begin(), extend.end());
  return a;
}

std::string submit_one(const SweepPlan& plan, const std::vector<SweepItem*>& pending,
                       const SlurmOptions& opt, bool dry_run) {
  const std::string out = fs::absolute(plan.out_dir).lexically_normal().string();
  std::vector<SlurmTask> tasks;
  for (const SweepItem* it : pending) {
    SweepRun run = *it->run;
    run.dir = fs::absolute(run.dir).lexically_normal().string();
    if (!dry_run) prepare_run(plan, run, opt.cpus_per_task);
    // A training task always resumes its run directory: from its checkpoint, or from the
    // config.json written here (so a requeued task and a fresh one run the same command).
    tasks.push_back({run.id, run.dir,
                     plan.mode == SweepMode::Train  // threads: this submission's
                                                    // --slurm-cpus-per-task, also on a resubmission
                         ? resume_args(run.dir, opt.cpus_per_task, it->extend)
                         : child_args(plan, run, opt.cpus_per_task)});
  }
  const std::string binary = fs::canonical("/proc/self/exe").string();
  const std::string script =
      slurm_array_script(plan.name, plan.source, tasks, opt, binary, out + "/slurm");
  const std::string path = out + "/slurm/array.sbatch";
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  argv.insert(argv.end(), opt.extra.begin(), opt.extra.end());
  argv.push_back(path);
  if (dry_run) {
    std::printf("---- %s (not written: --dry-run)\n%s---- submitted with:", path.c_str(),
                script.c_str());
    for (const auto& a : argv) std::printf(" %s", a.c_str());
    std::printf("\n");
    return "";
  }
  make_dirs(out + "/slurm");
  write_file_atomic(path, script);
  const CommandResult r = run_command(argv);
  if (r.exit_code != 0)
    throw Error("sbatch " + path + " failed (exit " + std::to_string(r.exit_code) +
                "): " + (r.err.empty() ? r.out : r.err) +
                (r.exit_code == 127 ? " (is Slurm installed and sbatch on PATH?)" : ""));
  return parse_sbatch_job_id(r.out);
}

nlohmann::json slurm_manifest(const Submitted& s, const SlurmOptions& opt) {
  char when[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return {{"executor", name_of(Executor::Slurm)},
          {"slurm",
           {{"job", s.job},
            {"script", "slurm/array.sbatch"},
            {"tasks", s.tasks.size()},
            {"submitted", when},
            {"cpus_per_task", opt.cpus_per_task},
            {"max_parallel", opt.max_parallel},
            {"extra", opt.extra}}}};
}

bool is_final(RunState state) {
  return state == RunState::Completed || state == RunState::Failed || state == RunState::Diverged ||
         state == RunState::Interrupted;
}

// Polls squeue and the run directories until every job has left the queue, printing the
// progress line as runs finish. Returns the exit code (failed runs: 1; a signal: 128 + it).
int follow(std::vector<Submitted>& subs, std::vector<SweepItem>& items, size_t todo, int slots) {
  SweepProgress progress(todo, slots);
  std::map<const SweepItem*, Clock::time_point> started;
  for (auto& s : subs)
    for (SweepItem* it : s.tasks) started[it] = Clock::now();
  bool busy = true, warned = false;
  std::optional<StopSignals> stop_signals;
  stop_signals.emplace(g_wait_stop, StopSignalOptions{});
  while (busy && !g_wait_stop.load()) {
    for (int i = 0; i < 20 && !g_wait_stop.load(); ++i)
      usleep(100 * 1000);  // 2 s, a signal ends it sooner
    busy = false;
    for (auto& s : subs) {
      std::vector<RunState> before;
      for (SweepItem* it : s.tasks) {
        before.push_back(it->state);
        it->state = run_state(*it->plan, *it->run);
      }
      const std::optional<size_t> in_queue = refine_with_squeue(s.job, s.tasks);
      const bool answered = in_queue.has_value();
      if (!answered && !warned)
        std::printf("sweep: squeue did not answer; still waiting for job %s\n", s.job.c_str());
      warned = warned || !answered;
      for (size_t k = 0; k < s.tasks.size(); ++k) {
        SweepItem* it = s.tasks[k];
        if (it->state == RunState::Running && before[k] != RunState::Running)
          started[it] = Clock::now();
        if (is_final(it->state) && !is_final(before[k]))
          progress.finished(*it, seconds_since(started[it]), items);
      }
      busy = busy || !answered || *in_queue > 0;
      write_manifest(*s.plan, items, s.manifest);
    }
  }
  stop_signals.reset();  // SIGINT and SIGTERM end the process again
  if (g_wait_stop.load()) {
    std::printf(
        "\nsweep: stopped following; the Slurm job(s) go on (stacklab sweep --status OUT_DIR)\n");
    return 128 + g_wait_stop.load();
  }
  size_t failed = 0;
  for (const auto& s : subs)
    for (const SweepItem* it : s.tasks) failed += it->state == RunState::Failed;
  return failed ? kExitError : kExitOk;
}

}  // namespace

std::optional<bool> slurm_job_alive(const std::string& job) {
  const auto tasks = squeue_tasks(job);
  if (!tasks) return std::nullopt;
  return !tasks->empty();
}

std::optional<size_t> refine_with_squeue(const std::string& job, std::vector<SweepItem*>& items) {
  const auto tasks = squeue_tasks(job);
  if (!tasks) return std::nullopt;
  const std::string prefix = job + "_";
  for (SweepItem* it : items) {
    if (it->job.rfind(prefix, 0) != 0) continue;
    const auto found = tasks->find(std::atoi(it->job.c_str() + prefix.size()));
    const auto record = read_task_record(it->run->dir);
    const bool own_record = record && record->job == it->job;  // not one of an earlier submission
    if (found == tasks->end()) {
      if (it->state == RunState::Running)
        it->state = RunState::Interrupted;  // recorded as running, gone from the queue
    } else if (found->second == "PENDING" || found->second == "REQUEUED" ||
               found->second == "REQUEUE_HOLD" || found->second == "SUSPENDED") {
      it->state = RunState::Queued;
    } else if (it->state != RunState::Completed && it->state != RunState::Diverged &&
               (!own_record || record->state == TaskState::Running)) {
      it->state = RunState::Running;  // else: the run has its result, or the task exited (its
                                      // record says how)
    }
  }
  return tasks->size();
}

int submit_slurm(const std::vector<SweepPlan>& plans, std::vector<SweepItem>& items,
                 const SlurmOptions& opt, bool dry_run, bool wait, std::vector<SweepLock>& locks) {
  std::string how = "as a Slurm job array";
  if (opt.max_parallel > 0) how += ", at most " + std::to_string(opt.max_parallel) + " at once";
  const size_t todo = print_plans(plans, items, how, false);
  // Before anything is submitted every out_dir has a manifest, its runs in the states they are
  // in (new, ...), without a job: a submission that fails leaves a state --status reads
  // ("not submitted", with sbatch's error), and the lock keeps no job, so it holds nothing.
  if (!dry_run)
    for (const auto& plan : plans)
      write_manifest(plan, items, {{"executor", name_of(Executor::Slurm)}});
  std::vector<Submitted> subs;
  for (size_t p = 0; p < plans.size(); ++p) {
    Submitted s{&plans[p], "", {}, {}};
    for (auto& it : items)
      if (it.plan == &plans[p] && run_pending(it.state)) s.tasks.push_back(&it);
    if (s.tasks.empty()) {
      std::printf("sweep %s: nothing to submit (every run has a result)\n", plans[p].name.c_str());
      continue;
    }
    try {
      s.job = submit_one(plans[p], s.tasks, opt, dry_run);
    } catch (const Error& e) {
      if (dry_run) throw;
      std::string why;  // one line, for --status
      for (const char c : std::string(e.what())) {
        const bool space = c == '\n' || c == '\r' || c == ' ';
        if (!space || (!why.empty() && why.back() != ' ')) why += space ? ' ' : c;
      }
      write_manifest(
          plans[p], items,
          {{"executor", name_of(Executor::Slurm)}, {"slurm", {{"job", ""}, {"error", why}}}});
      throw;
    }
    if (dry_run) continue;
    locks[p].set_job(s.job);
    for (size_t k = 0; k < s.tasks.size(); ++k) {
      s.tasks[k]->job = s.job + "_" + std::to_string(k);
      s.tasks[k]->state = RunState::Queued;
    }
    s.manifest = slurm_manifest(s, opt);
    write_manifest(plans[p], items, s.manifest);
    std::printf(
        "sweep %s: submitted %zu run(s) as Slurm job %s (%s/slurm/array.sbatch); see stacklab "
        "sweep --status %s\n",
        plans[p].name.c_str(), s.tasks.size(), s.job.c_str(), plans[p].out_dir.c_str(),
        plans[p].out_dir.c_str());
    subs.push_back(std::move(s));
  }
  std::fflush(stdout);
  if (!wait || dry_run || subs.empty()) return kExitOk;
  return follow(subs, items, todo,
                opt.max_parallel > 0 ? opt.max_parallel : static_cast<int>(todo));
}

}  // namespace sl
