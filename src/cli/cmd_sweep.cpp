// `stacklab sweep SWEEP.json [--jobs N] [--dry-run]`: expands the sweep (see train/sweep.h),
// writes <out_dir>/manifest.json, and runs each point as a child `stacklab train` or
// `stacklab probe` process (single-threaded, log in <run>/log.txt), up to N at once. Runs that
// are already complete are skipped, interrupted ones resumed; failed or diverged runs are
// recorded and the sweep goes on. SIGINT/SIGTERM are passed to the children, which checkpoint.
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

// "completed", "diverged", "resumable" or "new", from what the run dir holds.
std::string run_state(const SweepPlan& plan, const SweepRun& r) {
  if (plan.mode == "probe") return fs::exists(r.dir + "/probe.json") ? "completed" : "new";
  const std::string summary = r.dir + "/summary.json";
  if (fs::exists(summary)) {
    try {
      auto j = nlohmann::json::parse(read_file(summary));
      const std::string st = j.value("status", "");
      if (st == "completed" || st == "diverged") return st;
    } catch (const std::exception&) {
    }
  }
  return fs::exists(r.dir + "/config.json") ? "resumable" : "new";
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
  Args a = parse_args("sweep", argv, {"jobs"}, {"dry-run"}, false);
  if (a.positional.size() != 1) throw Error("expected one SWEEP.json file");
  const SweepPlan plan = expand_sweep(a.positional[0]);
  const long long jobs_flag = a.get_int("jobs", 0);
  if (jobs_flag < 0) throw Error("--jobs: must be >= 1 (or 0 for one per core)");
  const int jobs = jobs_flag > 0 ? static_cast<int>(jobs_flag) : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  std::map<std::string, std::string> status;
  size_t todo = 0;
  for (const auto& r : plan.runs) {
    status[r.id] = run_state(plan, r);
    if (status[r.id] != "completed" && status[r.id] != "diverged") ++todo;
  }
  std::printf("sweep %s: %zu %s runs (%zu to do, %zu already done) in %s, %d at once\n", plan.name.c_str(),
              plan.runs.size(), plan.mode.c_str(), todo, plan.runs.size() - todo, plan.out_dir.c_str(), jobs);
  if (a.has("dry-run")) {
    for (const auto& r : plan.runs) {
      std::printf("  %-40s %-10s stacklab", r.id.c_str(), status[r.id].c_str());
      for (const auto& s : child_args(plan, r, status[r.id])) std::printf(" %s", s.c_str());
      std::printf("\n");
    }
    return kExitOk;
  }

  make_dirs(plan.out_dir);
  auto write_manifest = [&]() {
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& r : plan.runs)
      runs.push_back({{"id", r.id}, {"dir", fs::path(r.dir).filename().string()}, {"overrides", r.overrides},
                      {"seeds", r.seeds}, {"status", status[r.id]}});
    nlohmann::json m = {{"name", plan.name}, {"mode", plan.mode}, {"base", plan.base}, {"sweep_file", plan.source},
                        {"runs", runs}};
    write_file_atomic(plan.out_dir + "/manifest.json", m.dump(2) + "\n");
  };
  write_manifest();

  set_stop_handler(on_sweep_signal);
  std::map<pid_t, const SweepRun*> running;
  std::map<pid_t, Clock::time_point> started;
  size_t next = 0, finished = 0, failed = 0;
  double busy_seconds = 0.0;
  const auto t0 = Clock::now();
  bool forwarded = false;
  while (true) {
    while (!g_sweep_stop.load() && static_cast<int>(running.size()) < jobs && next < plan.runs.size()) {
      const SweepRun& r = plan.runs[next++];
      const std::string st = status[r.id];
      if (st == "completed" || st == "diverged") continue;
      make_dirs(r.dir);
      const pid_t pid = spawn(child_args(plan, r, st), r.dir + "/log.txt");
      running[pid] = &r;
      started[pid] = Clock::now();
      status[r.id] = "running";
    }
    if (running.empty()) break;
    if (g_sweep_stop.load() && !forwarded) {
      for (const auto& [pid, r] : running) kill(pid, g_sweep_stop.load());
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
    const SweepRun& r = *it->second;
    const double secs = std::chrono::duration<double>(Clock::now() - started[pid]).count();
    busy_seconds += secs;
    running.erase(it);
    const int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    if (code == kExitOk) status[r.id] = "completed";
    else if (code == kExitDiverged) status[r.id] = "diverged";
    else if (code == 130 || code == 143) status[r.id] = "interrupted";
    else {
      status[r.id] = "failed (exit " + std::to_string(code) + ")";
      ++failed;
    }
    ++finished;
    const double per_run = busy_seconds / static_cast<double>(finished);
    size_t left = 0;
    for (const auto& q : plan.runs)
      if (status[q.id] == "new" || status[q.id] == "resumable" || status[q.id] == "running") ++left;
    std::printf("[%zu/%zu] %-40s %-12s %6.1f s | elapsed %s | ETA %s\n", finished, todo, r.id.c_str(),
                status[r.id].c_str(), secs, fmt_time(std::chrono::duration<double>(Clock::now() - t0).count()).c_str(),
                fmt_time(per_run * static_cast<double>(left) / jobs).c_str());
    if (status[r.id].rfind("failed", 0) == 0)
      std::printf("    %s: %s (log: %s/log.txt)\n", r.id.c_str(), last_line(r.dir + "/log.txt").c_str(), r.dir.c_str());
    std::fflush(stdout);
    write_manifest();
  }
  set_stop_handler(SIG_DFL);
  write_manifest();
  size_t diverged = 0;
  for (const auto& [id, st] : status) diverged += st == "diverged";
  std::printf("sweep %s: %zu runs, %zu failed, %zu diverged; manifest %s/manifest.json\n", plan.name.c_str(),
              plan.runs.size(), failed, diverged, plan.out_dir.c_str());
  if (g_sweep_stop.load()) return 128 + g_sweep_stop.load();
  return failed ? kExitError : kExitOk;
}

}  // namespace sl
