// The local executor of `stacklab sweep` (the default) and the entry every sweep invocation goes
// through (run_sweeps): expands each sweep (sweep/plan.h), locks its out_dir
// (<out_dir>/sweep.lock) against a second invocation, writes its <out_dir>/manifest.json and runs
// the points that are pending (sweep/state.h: not completed or diverged). The local executor runs
// each point as a child `stacklab train` or `stacklab probe` (single-threaded, log in
// <run>/log.txt), up to N at once; several sweep files share one pool of N slots, in the order
// given, so no core idles at the end of one sweep while the next has runs waiting. Failed or
// diverged runs are recorded and the sweep goes on; SIGINT/SIGTERM are passed to the children,
// which checkpoint. The Slurm executor (sweep/slurm.cpp) submits the same runs as one job array
// per sweep. Flags: cli/cmd_sweep.cpp; --status: sweep/status.cpp.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "config/loader.h"
#include "sweep/exec.h"
#include "train/provenance.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/exit_codes.h"
#include "util/fsutil.h"
#include "util/signals.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::atomic<int> g_sweep_stop{0};

// Forks `stacklab ARGS` with its output appended to RUN/log.txt; the child records itself in
// RUN/task.json before the exec (the parent cannot: the trainer, starting, removes temp files).
// The child gets SIGTERM when the sweep dies (PR_SET_PDEATHSIG; the trainer checkpoints and stops,
// as on a forwarded stop): a sweep killed with SIGKILL leaves no orphan training, and the out_dir
// lock (not inherited: FileLock's O_CLOEXEC) is free for the next invocation. Until the exec the
// child has the sweep's own SIGINT/SIGTERM handler, which would only set a flag the exec discards:
// the signals are blocked over the fork and the child restores their default action first, so a
// stop (forwarded, or the sweep's death) that comes before the exec ends the child.
pid_t spawn(const std::vector<std::string>& args, const std::string& run_dir) {
  const std::string log_path = run_dir + "/log.txt";
  const pid_t parent = getpid();
  sigset_t stops, before;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stops, &before);
  const pid_t pid = fork();
  if (pid != 0) {
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (pid < 0) throw Error("fork failed");
    return pid;
  }
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  // The parent may have died before the prctl: then getppid() is no longer it.
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) _exit(kExitError);
  try {
    write_task_record(run_dir, {Executor::Local, TaskState::Running, -1, "", host_name(),
                                static_cast<long long>(getpid())});
  } catch (const std::exception& e) {  // a forked child must not unwind into the parent's main
    std::fprintf(stderr, "stacklab sweep: %s\n", e.what());
    _exit(kExitError);
  }
  const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  // Each child is single-threaded (--train.threads=1); OpenMP must not start (or spin) more.
  setenv("OMP_NUM_THREADS", "1", 1);
  std::vector<char*> argv;
  static char self[] = "stacklab";
  argv.push_back(self);
  for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  std::perror("stacklab sweep: exec");
  _exit(127);
}

// The local executor: up to `jobs` children at once over the pending items, in order.
class LocalPool {
 public:
  LocalPool(std::vector<SweepItem>& items, int jobs, size_t todo)
      : items_(items), jobs_(jobs), progress_(todo, jobs) {}

  int run() {
    // Without restarting system calls: a restarted blocking waitpid() would let the stop reach
    // the children only when one of them happened to finish. A closed stdout (`stacklab sweep
    // ... | head`) stops the sweep as SIGINT does, with its manifest written.
    const StopSignals stop_signals(g_sweep_stop,
                                   {.restart_system_calls = false, .stop_on_closed_output = true});
    bool forwarded = false;
    while (true) {
      while (!g_sweep_stop.load() && static_cast<int>(running_.size()) < jobs_ &&
             next_ < items_.size())
        start(next_++);
      if (running_.empty()) break;
      if (g_sweep_stop.load() && !forwarded) {
        // The runs write to their own logs, not the closed pipe: they get SIGTERM for it.
        const int sig = g_sweep_stop.load() == SIGPIPE ? SIGTERM : g_sweep_stop.load();
        for (const auto& [pid, i] : running_) kill(pid, sig);
        forwarded = true;
        std::printf(
            "\nsweep: stopping; the running runs checkpoint and can be resumed by running the "
            "sweep again\n");
      }
      int wstatus = 0;
      const pid_t pid = waitpid(-1, &wstatus, 0);
      if (pid < 0) {
        if (errno == EINTR) continue;
        break;
      }
      reap(pid, WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus));
    }
    return g_sweep_stop.load() ? 128 + g_sweep_stop.load() : failed_ ? kExitError : kExitOk;
  }

  // Whether item `i` was started by this pool (a stop leaves the rest as they were).
  bool started(size_t i) const { return started_items_.count(i) != 0; }

 private:
  void start(size_t i) {
    SweepItem& it = items_[i];
    if (!run_pending(it.state)) return;
    make_dirs(it.run->dir);
    if (it.plan->mode == SweepMode::Probe)
      write_provenance(it.run->dir, it.run->config, it.run->run_info);  // train writes its own
    const pid_t pid = spawn(child_args(*it.plan, *it.run, 1, it.fresh, it.extend), it.run->dir);
    running_[pid] = i;
    started_[pid] = Clock::now();
    started_items_.insert(i);
    it.state = RunState::Running;
  }

  void reap(pid_t pid, int code) {
    auto found = running_.find(pid);
    if (found == running_.end()) return;
    SweepItem& it = items_[found->second];
    running_.erase(found);
    write_task_record(it.run->dir,
                      {Executor::Local, TaskState::Exited, code, "", host_name(), pid});
    it.state = state_of_exit(code);
    failed_ += it.state == RunState::Failed;
    progress_.finished(it, seconds_since(started_[pid]), items_);
    write_manifest(*it.plan, items_, {{"executor", name_of(Executor::Local)}});
  }

  std::vector<SweepItem>& items_;
  int jobs_;
  SweepProgress progress_;
  std::map<pid_t, size_t> running_;  // pid -> index in items
  std::map<pid_t, Clock::time_point> started_;
  std::set<size_t> started_items_;
  size_t next_ = 0, failed_ = 0;
};

// A run directory whose provenance differs from the point's config (a changed sweep file, base
// or data file; collect_items gives it its changes) is never taken as done (train/provenance.h):
// with rerun it is moved aside to the first free "<dir>.changed-N" and the run starts fresh;
// with extend a run whose one change is a longer horizon or a later stop rule
// (sweep_run_extension) is continued
// there by `train --resume` (its state "resumable"), and any other change is refused;
// with fail (the default) nothing runs and the error lists what changed. Both executors call
// this before deciding what is pending; a dry run says the same and moves nothing.
void handle_changed(std::vector<SweepItem>& items, OnChange on_change, bool dry_run) {
  if (on_change == OnChange::Extend) {
    std::vector<std::string> not_extendable;
    for (auto& it : items) {
      if (it.changes.empty()) continue;
      const Extension ext = sweep_run_extension(*it.plan, *it.run);
      if (ext.overrides.empty()) {
        not_extendable.push_back(it.run->dir + ": " + ext.why_not);
        continue;
      }
      std::printf("%s: %s: continued by train --resume%s\n", it.run->dir.c_str(), ext.what.c_str(),
                  dry_run ? " (--dry-run: nothing runs)" : "");
      it.extend = ext.overrides;
      it.state = RunState::Resumable;
      it.changes.clear();
    }
    if (const std::string why = changed_runs_message(items); !why.empty()) {
      std::string reasons;
      for (const auto& r : not_extendable) reasons += "\n  " + r;
      throw Error((dry_run ? "--dry-run: stacklab sweep would refuse to run: " : "") + why +
                  "\n--on-change extend continues only a run whose one change is a longer "
                  "train.max_iters (with optim.lr_decay_iters) or a later stop rule "
                  "(train.stop_at):" +
                  reasons);
    }
    return;
  }
  if (on_change == OnChange::Fail) {
    if (std::string why = changed_runs_message(items); !why.empty()) {
      bool all_extendable = true;
      for (const auto& it : items)
        if (!it.changes.empty())
          all_extendable =
              all_extendable && !sweep_run_extension(*it.plan, *it.run).overrides.empty();
      if (all_extendable)
        why +=
            "; or, since each one's only change is a longer train.max_iters (a copy awaiting its "
            "extension) or a later stop rule (train.stop_at), continue them from their "
            "checkpoints with --on-change extend";
      throw Error(dry_run ? "--dry-run: stacklab sweep would refuse to run: " + why : why);
    }
    return;
  }
  for (auto& it : items) {
    if (it.changes.empty()) continue;
    std::string to;
    for (int k = 1; to.empty() || fs::exists(to); ++k)
      to = it.run->dir + ".changed-" + std::to_string(k);
    if (dry_run) {
      std::printf(
          "%s: config or data changed; would be moved to %s and run fresh (--dry-run: nothing "
          "moved)\n",
          it.run->dir.c_str(), to.c_str());
    } else {
      fs::rename(it.run->dir, to);
      std::printf("%s: config or data changed; old run moved to %s\n", it.run->dir.c_str(),
                  to.c_str());
    }
    it.state = RunState::New;
    it.fresh = true;
    it.changes.clear();
  }
}

std::vector<SweepPlan> expand_plans(const std::vector<std::string>& files) {
  if (files.empty()) throw Error("expected a SWEEP.json file (or several, run in one pool)");
  std::vector<SweepPlan> plans;
  for (const auto& path : files) plans.push_back(expand_sweep(path));
  for (size_t i = 0; i < plans.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      if (fs::weakly_canonical(plans[i].out_dir) == fs::weakly_canonical(plans[k].out_dir))
        throw Error(plans[i].source + " and " + plans[k].source + " write to the same out_dir " +
                    plans[i].out_dir);
  return plans;
}

// An argument as a shell reads it: as it is when it holds only characters the shell takes
// literally, else single-quoted (a run id or path with a space), so a dry run's line can be
// pasted.
std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && s.find_first_not_of(
                                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                       "0123456789_-+=.,/:@%") == std::string::npos;
  return plain ? s : shell_quote(s);
}

// `locks`: held by run_sweeps for every out_dir since before the run states were read.
int run_local(const std::vector<SweepPlan>& plans, std::vector<SweepItem>& items, int jobs,
              bool dry_run) {
  const size_t todo = print_plans(plans, items, std::to_string(jobs) + " at once", true);
  if (dry_run) {
    for (const auto& it : items) {
      std::printf("  %-40s %-12s stacklab", it.label.c_str(), spell(it.state).c_str());
      for (const auto& s : child_args(*it.plan, *it.run, 1, it.fresh, it.extend))
        std::printf(" %s", shell_word(s).c_str());
      std::printf("\n");
    }
    return kExitOk;
  }
  for (const auto& plan : plans)
    write_manifest(plan, items, {{"executor", name_of(Executor::Local)}});
  LocalPool pool(items, jobs, todo);
  const int code = pool.run();
  for (const auto& plan : plans) {
    write_manifest(plan, items, {{"executor", name_of(Executor::Local)}});
    size_t failed = 0, diverged = 0, interrupted = 0, not_run = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      const SweepItem& it = items[i];
      if (it.plan != &plan) continue;
      diverged += it.state == RunState::Diverged;
      failed += it.state == RunState::Failed;
      // A stop (a signal, a closed stdout) leaves runs without a result: the ones it stopped and
      // the pending ones it never started. Neither is a run done.
      if (pool.started(i))
        interrupted += it.state == RunState::Interrupted;
      else
        not_run += run_pending(it.state);
    }
    std::string stopped;
    if (interrupted + not_run > 0)
      stopped = "; " + std::to_string(interrupted) + " interrupted, " + std::to_string(not_run) +
                " not run (run the sweep again to continue them)";
    std::printf("sweep %s: %zu run%s, %zu failed, %zu diverged%s; manifest %s/manifest.json\n",
                plan.name.c_str(), plan.runs.size(), plan.runs.size() == 1 ? "" : "s", failed,
                diverged, stopped.c_str(), plan.out_dir.c_str());
  }
  return code;
}

}  // namespace

int run_sweeps(const std::vector<std::string>& files, const SweepOptions& opt) {
  std::vector<SweepPlan> plans = expand_plans(files);
  check_sweep_data(plans);  // a missing data file stops a --dry-run too, as it stops validate
  // Every out_dir is locked before its run states are read or a changed run is moved aside, so
  // another invocation's runs are neither re-run from a stale state nor moved while they run.
  std::vector<SweepLock> locks;
  if (!opt.dry_run)
    for (const auto& plan : plans)
      locks.push_back(SweepLock::acquire(plan.out_dir, opt.executor, slurm_job_alive));
  std::vector<SweepItem> items = collect_items(plans);
  handle_changed(items, opt.on_change, opt.dry_run);
  if (opt.executor == Executor::Slurm)
    return submit_slurm(plans, items, opt.slurm, opt.dry_run, opt.wait, locks);
  return run_local(plans, items, opt.jobs, opt.dry_run);
}

}  // namespace sl
