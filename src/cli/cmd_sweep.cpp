// `stacklab sweep SWEEP.json [SWEEP.json ...] [--jobs N] [--dry-run] [--on-change rerun|fail]`: expands each sweep (see
// train/sweep.h), writes its <out_dir>/manifest.json, and runs each point as a child `stacklab
// train` or `stacklab probe` process (single-threaded, log in <run>/log.txt), up to N at once.
// A run directory whose provenance differs from the point's config (a changed sweep file, base
// or data file) is never skipped as done: --on-change fail (default) stops, rerun moves it aside.
// Several sweep files share one pool of N slots, in the order given: no core idles at the end of
// one sweep while the next has runs waiting. Runs that are already complete are skipped,
// interrupted ones resumed; failed or diverged runs are recorded and the sweep goes on.
// SIGINT/SIGTERM are passed to the children, which checkpoint.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/loader.h"
#include "core/error.h"
#include "core/fsutil.h"
#include "train/provenance.h"
#include "train/sweep.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::atomic<int> g_sweep_stop{0};
extern "C" void on_sweep_signal(int sig) { g_sweep_stop.store(sig); }

// sigaction without SA_RESTART: std::signal on glibc restarts the blocking waitpid() after the
// handler, so the stop would reach the children only when one of them happened to finish.
void set_stop_handler(void (*handler)(int)) {
  struct sigaction sa{};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// A run directory holding another config's result (RunState::kChanged) is moved aside to the
// first free "<dir>.changed-N" so the run starts fresh and nothing is lost.
std::string move_aside(const std::string& dir) {
  for (int n = 1;; ++n) {
    const std::string to = dir + ".changed-" + std::to_string(n);
    if (fs::exists(to)) continue;
    fs::rename(dir, to);
    return to;
  }
}

// "completed", "diverged", "resumable" or "new", from what the run dir holds (sweep_run_state).
// A changed run is never counted as done: with --on-change rerun it is moved aside and becomes
// "new"; with fail (the default) it is "changed" and the sweep stops before running anything.
std::string run_state(const SweepPlan& plan, const SweepRun& r, bool rerun_changed, bool dry_run,
                      std::vector<std::string>& changed) {
  const RunState st = sweep_run_state(plan, r);
  if (st.kind != RunState::kChanged) return st.name();
  if (rerun_changed) {
    if (dry_run) return "new";
    std::printf("%s: config or data changed; old run moved to %s\n", r.dir.c_str(), move_aside(r.dir).c_str());
    return "new";
  }
  std::string what = "  " + r.dir + ":";
  for (const auto& c : st.changes) what += "\n    " + c;
  changed.push_back(what);
  return "changed";
}

std::vector<std::string> child_args(const SweepPlan& plan, const SweepRun& r, const std::string& state) {
  std::vector<std::string> a;
  if (plan.mode == "probe") {
    a = {"probe", plan.base};
    a.insert(a.end(), r.overrides.begin(), r.overrides.end());
    std::string seeds;
    for (uint64_t s : r.seeds) seeds += (seeds.empty() ? "" : ",") + std::to_string(s);
    a.insert(a.end(), {"--train.threads=1", "--seeds", seeds, "--out", r.dir + "/probe.json"});
  } else if (state == "resumable") {
    a = {"train", "--resume", r.dir};
  } else {
    a = {"train", plan.base};
    a.insert(a.end(), r.overrides.begin(), r.overrides.end());
    a.insert(a.end(), {"--train.threads=1", "--train.seed=" + std::to_string(r.seeds.at(0)),
                       "--train.name=" + r.id, "--out", r.dir, "--force"});
  }
  return a;
}

pid_t spawn(const std::vector<std::string>& args, const std::string& log_path) {
  const pid_t pid = fork();
  if (pid < 0) throw Error("fork failed");
  if (pid == 0) {
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
  return pid;
}

std::string last_line(const std::string& path) {
  try {
    std::string text = read_file(path);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    const size_t nl = text.rfind('\n');
    return nl == std::string::npos ? text : text.substr(nl + 1);
  } catch (const std::exception&) {
    return "";
  }
}

std::string fmt_time(double s) {
  char buf[32];
  const long t = static_cast<long>(s + 0.5);
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  return buf;
}

}  // namespace

int cmd_sweep(const ArgList& argv) {
  Args a = parse_args("sweep", argv, {"jobs", "on-change"}, {"dry-run"}, false);
  const std::string on_change = a.get("on-change", "fail");
  if (on_change != "fail" && on_change != "rerun")
    throw Error("--on-change: expected rerun or fail, got '" + on_change + "'");
  std::vector<std::string> changed;
  if (a.positional.empty()) throw Error("expected a SWEEP.json file (or several, run in one pool)");
  std::vector<SweepPlan> plans;
  for (const auto& path : a.positional) plans.push_back(expand_sweep(path));
  for (size_t i = 0; i < plans.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      if (fs::weakly_canonical(plans[i].out_dir) == fs::weakly_canonical(plans[k].out_dir))
        throw Error(plans[i].source + " and " + plans[k].source + " write to the same out_dir " + plans[i].out_dir);
  const long long jobs_flag = a.get_int("jobs", 0);
  if (jobs_flag < 0) throw Error("--jobs: must be >= 1 (or 0 for one per core)");
  const int jobs = jobs_flag > 0 ? static_cast<int>(jobs_flag) : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  // Every run of every plan, in order; status is keyed by the run's position in `items`.
  struct Item {
    const SweepPlan* plan;
    const SweepRun* run;
    std::string label;  // the run id, prefixed with the sweep's name when there are several
  };
  std::vector<Item> items;
  for (const auto& plan : plans)
    for (const auto& r : plan.runs) items.push_back({&plan, &r, plans.size() > 1 ? plan.name + "/" + r.id : r.id});
  std::vector<std::string> status(items.size());
  size_t todo = 0;
  for (const auto& plan : plans) {
    size_t plan_todo = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].plan != &plan) continue;
      status[i] = run_state(plan, *items[i].run, on_change == "rerun", a.has("dry-run"), changed);
      if (status[i] != "completed" && status[i] != "diverged") ++plan_todo;
    }
    todo += plan_todo;
    std::printf("sweep %s: %zu %s run%s (%zu to do, %zu already done) in %s, %d at once\n", plan.name.c_str(),
                plan.runs.size(), plan.mode.c_str(), plan.runs.size() == 1 ? "" : "s", plan_todo,
                plan.runs.size() - plan_todo, plan.out_dir.c_str(), jobs);
  }
  if (plans.size() > 1) std::printf("%zu sweeps in one pool: %zu runs to do, %d at once\n", plans.size(), todo, jobs);
  if (!changed.empty() && !a.has("dry-run")) {
    std::string list;
    for (const auto& c : changed) list += "\n" + c;
    throw Error(std::to_string(changed.size()) + (changed.size() == 1 ? " run holds" : " runs hold") +
                " the result of a different config or data than the sweep now gives (stored -> now):" + list +
                "\nrerun them into fresh directories (the old ones are kept as <dir>.changed-N) with --on-change rerun");
  }
  if (a.has("dry-run")) {
    for (size_t i = 0; i < items.size(); ++i) {
      std::printf("  %-40s %-10s stacklab", items[i].label.c_str(), status[i].c_str());
      for (const auto& s : child_args(*items[i].plan, *items[i].run, status[i])) std::printf(" %s", s.c_str());
      std::printf("\n");
    }
    return kExitOk;
  }

  auto write_manifest = [&](const SweepPlan& plan) {
    nlohmann::json runs = nlohmann::json::array();
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].plan != &plan) continue;
      const SweepRun& r = *items[i].run;
      runs.push_back({{"id", r.id}, {"dir", fs::path(r.dir).filename().string()}, {"overrides", r.overrides},
                      {"seeds", r.seeds}, {"status", status[i]}});
    }
    nlohmann::json m = {{"name", plan.name}, {"mode", plan.mode}, {"base", plan.base}, {"sweep_file", plan.source},
                        {"runs", runs}};
    write_file_atomic(plan.out_dir + "/manifest.json", m.dump(2) + "\n");
  };
  for (const auto& plan : plans) {
    make_dirs(plan.out_dir);
    write_manifest(plan);
  }

  set_stop_handler(on_sweep_signal);
  std::map<pid_t, size_t> running;  // pid -> index in items
  std::map<pid_t, Clock::time_point> started;
  size_t next = 0, finished = 0, failed = 0;
  double busy_seconds = 0.0, done_cost = 0.0;
  const auto t0 = Clock::now();
  bool forwarded = false;
  while (true) {
    while (!g_sweep_stop.load() && static_cast<int>(running.size()) < jobs && next < items.size()) {
      const size_t i = next++;
      const SweepRun& r = *items[i].run;
      if (status[i] == "completed" || status[i] == "diverged") continue;
      make_dirs(r.dir);
      if (items[i].plan->mode == "probe") write_provenance(r.dir, r.config, r.run_info);  // train writes its own
      const pid_t pid = spawn(child_args(*items[i].plan, r, status[i]), r.dir + "/log.txt");
      running[pid] = i;
      started[pid] = Clock::now();
      status[i] = "running";
    }
    if (running.empty()) break;
    if (g_sweep_stop.load() && !forwarded) {
      for (const auto& [pid, i] : running) kill(pid, g_sweep_stop.load());
      forwarded = true;
      std::printf("\nsweep: stopping; the running runs checkpoint and can be resumed by running the sweep again\n");
    }
    int wstatus = 0;
    const pid_t pid = waitpid(-1, &wstatus, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const size_t i = it->second;
    const SweepRun& r = *items[i].run;
    const double secs = std::chrono::duration<double>(Clock::now() - started[pid]).count();
    busy_seconds += secs;
    done_cost += r.cost;
    running.erase(it);
    const int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    if (code == kExitOk) status[i] = "completed";
    else if (code == kExitDiverged) status[i] = "diverged";
    else if (code == 130 || code == 143) status[i] = "interrupted";
    else {
      status[i] = "failed (exit " + std::to_string(code) + ")";
      ++failed;
    }
    ++finished;
    // ETA: the seconds per unit of estimated work so far, times the work left (runs waiting or
    // running, counted whole), over the slots. Runs differ by 100x in size (L=1 vs L=96), so
    // counting runs would promise the end long before the deep runs even start.
    const double per_cost = done_cost > 0.0 ? busy_seconds / done_cost : 0.0;
    double left = 0.0;
    for (size_t q = 0; q < items.size(); ++q)
      if (status[q] == "new" || status[q] == "resumable" || status[q] == "running") left += items[q].run->cost;
    std::printf("[%zu/%zu] %-40s %-12s %6.1f s | elapsed %s | ETA %s\n", finished, todo, items[i].label.c_str(),
                status[i].c_str(), secs, fmt_time(std::chrono::duration<double>(Clock::now() - t0).count()).c_str(),
                fmt_time(per_cost * left / jobs).c_str());
    if (status[i].rfind("failed", 0) == 0)
      std::printf("    %s: %s (log: %s/log.txt)\n", items[i].label.c_str(), last_line(r.dir + "/log.txt").c_str(),
                  r.dir.c_str());
    std::fflush(stdout);
    write_manifest(*items[i].plan);
  }
  set_stop_handler(SIG_DFL);
  for (const auto& plan : plans) {
    write_manifest(plan);
    size_t plan_failed = 0, diverged = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].plan != &plan) continue;
      diverged += status[i] == "diverged";
      plan_failed += status[i].rfind("failed", 0) == 0;
    }
    std::printf("sweep %s: %zu run%s, %zu failed, %zu diverged; manifest %s/manifest.json\n", plan.name.c_str(),
                plan.runs.size(), plan.runs.size() == 1 ? "" : "s", plan_failed, diverged, plan.out_dir.c_str());
  }
  if (g_sweep_stop.load()) return 128 + g_sweep_stop.load();
  return failed ? kExitError : kExitOk;
}

}  // namespace sl
