// The parts of `stacklab sweep` both executors use (see sweep/exec.h).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>
#include <tuple>

#include "data/source.h"
#include "sweep/exec.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/fsutil.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

std::string read_fd(int fd) {
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

}  // namespace

void check_sweep_data(const std::vector<SweepPlan>& plans) {
  std::set<std::tuple<std::string, double, int>> checked;
  for (const SweepPlan& plan : plans)
    for (const SweepRun& run : plan.runs) {
      const DataConfig& d = run.config.data;
      const int T = run.config.model.block_size;
      if (d.source != SourceKind::Text || !checked.insert({d.path, d.val_fraction, T}).second)
        continue;
      try {
        make_data_source(name_of(d.source), run.config.model.vocab_size, d.order, d.alpha, d.seed,
                         d.path, d.val_fraction)
            ->check_context_length(T);
      } catch (const Error& e) {  // the data's own message, said of the sweep and run
        throw Error(plan.source + ": run " + run.id + ": " + e.what());
      }
    }
}

std::vector<SweepItem> collect_items(const std::vector<SweepPlan>& plans, bool compare) {
  std::vector<SweepItem> items;
  for (const auto& plan : plans)
    for (const auto& r : plan.runs) {
      items.push_back({&plan,
                       &r,
                       plans.size() > 1 ? plan.name + "/" + r.id : r.id,
                       run_state(plan, r),
                       "",
                       {},
                       false,
                       {}});
      if (!compare) continue;
      RunCheck st = sweep_run_state(plan, r);
      if (st.state != RunState::Changed) continue;
      items.back().changes = std::move(st.changes);
      // A failed run holds no result that could pass for the sweep's: it is still counted failed
      // (its log says why), while its changes make the real run refuse it like any changed one.
      if (items.back().state != RunState::Failed) items.back().state = RunState::Changed;
    }
  return items;
}

std::string changed_runs_message(const std::vector<SweepItem>& items) {
  std::string list;
  size_t n = 0;
  for (const auto& it : items) {
    if (it.changes.empty()) continue;
    ++n;
    list += "\n  " + it.run->dir + ":";
    for (const auto& c : it.changes) list += "\n    " + c;
  }
  if (n == 0) return "";
  return std::to_string(n) + (n == 1 ? " run holds" : " runs hold") +
         " the result of a different config or data than the sweep now gives (stored -> now):" +
         list +
         "\nrerun them into fresh directories (the old ones are kept as <dir>.changed-N) with "
         "--on-change rerun";
}

size_t print_plans(const std::vector<SweepPlan>& plans, const std::vector<SweepItem>& items,
                   const std::string& how, bool pool) {
  size_t todo = 0;
  for (const auto& plan : plans) {
    size_t plan_todo = 0;
    for (const auto& it : items) plan_todo += it.plan == &plan && run_pending(it.state);
    todo += plan_todo;
    std::printf("sweep %s: %zu %s run%s (%zu to do, %zu already done) in %s, %s\n",
                plan.name.c_str(), plan.runs.size(), name_of(plan.mode).c_str(),
                plan.runs.size() == 1 ? "" : "s", plan_todo, plan.runs.size() - plan_todo,
                plan.out_dir.c_str(), how.c_str());
  }
  if (plans.size() >
      1)  // the local executor shares one pool of slots; Slurm gets one array per sweep
    std::printf("%zu sweeps%s: %zu runs to do, %s\n", plans.size(), pool ? " in one pool" : "",
                todo, how.c_str());
  return todo;
}

std::vector<std::string> run_overrides(const SweepRun& run, int threads) {
  std::vector<std::string> ov = run.overrides;
  ov.insert(ov.end(),
            {"--train.threads=" + std::to_string(threads),
             "--train.seed=" + std::to_string(run.seeds.at(0)), "--train.name=" + run.id});
  return ov;
}

std::vector<std::string> child_args(const SweepPlan& plan, const SweepRun& r, int threads,
                                    bool fresh, const std::vector<std::string>& extend) {
  std::vector<std::string> a;
  if (plan.mode == SweepMode::Probe) {
    a = {"probe", plan.base};
    a.insert(a.end(), r.overrides.begin(), r.overrides.end());
    std::string seeds;
    for (uint64_t s : r.seeds) {  // appended piecewise: GCC 12 warns (-Wrestrict) on "," + ...
      if (!seeds.empty()) seeds += ',';
      seeds += std::to_string(s);
    }
    a.insert(a.end(), {"--train.threads=" + std::to_string(threads), "--seeds", seeds, "--out",
                       r.dir + "/probe.json"});
  } else if (!fresh && fs::exists(r.dir + "/config.json")) {
    a = {"train", "--resume",
         r.dir};  // continues from its checkpoint, or starts from its config.json
    a.insert(a.end(), extend.begin(), extend.end());
  } else {
    a = {"train", plan.base};
    const auto ov = run_overrides(r, threads);
    a.insert(a.end(), ov.begin(), ov.end());
    a.insert(a.end(), {"--out", r.dir, "--force"});
  }
  return a;
}

void write_manifest(const SweepPlan& plan, const std::vector<SweepItem>& items,
                    const nlohmann::json& extra) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& it : items) {
    if (it.plan != &plan) continue;
    const SweepRun& r = *it.run;
    nlohmann::json j = {{"id", r.id},
                        {"dir", fs::path(r.dir).filename().string()},
                        {"overrides", r.overrides},
                        {"seeds", r.seeds},
                        {"status", spell(it.state)}};
    if (!r.variant.empty()) j["variant"] = r.variant;  // also where the id leaves it out
    if (!it.job.empty()) j["job"] = it.job;
    runs.push_back(j);
  }
  nlohmann::json m = {{"name", plan.name},
                      {"mode", name_of(plan.mode)},
                      {"base", plan.base},
                      {"sweep_file", plan.source},
                      {"runs", runs}};
  for (const auto& [k, v] : extra.items()) m[k] = v;
  write_file_atomic(plan.out_dir + "/manifest.json", m.dump(2) + "\n");
}

void SweepProgress::finished(const SweepItem& item, double seconds,
                             const std::vector<SweepItem>& items) {
  ++done_;
  busy_seconds_ += seconds;
  done_cost_ += item.run->cost;
  const double per_cost = done_cost_ > 0.0 ? busy_seconds_ / done_cost_ : 0.0;
  double left = 0.0;
  for (const auto& q : items)
    if (q.state == RunState::New || q.state == RunState::Queued || q.state == RunState::Running ||
        q.state == RunState::Resumable)
      left += q.run->cost;
  const double elapsed = seconds_since(t0_);
  std::printf("[%zu/%zu] %-40s %-12s %6.1f s | elapsed %s | ETA %s\n", done_, todo_,
              item.label.c_str(), spell(item.state).c_str(), seconds,
              format_duration(elapsed).c_str(), format_duration(per_cost * left / slots_).c_str());
  if (item.state == RunState::Failed)
    std::printf("    %s: %s (log: %s/log.txt)\n", item.label.c_str(),
                last_line(item.run->dir + "/log.txt").c_str(), item.run->dir.c_str());
  std::fflush(stdout);
}

std::string last_line(const std::string& path) {
  try {
    std::string text = read_file(path);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    const size_t nl = text.rfind('\n');
    return nl == std::string::npos ? text : text.substr(nl + 1);
  } catch (const Error&) {  // no log.txt (the child failed before writing one): no last line
    return "";
  }
}

CommandResult run_command(const std::vector<std::string>& argv) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw Error("pipe failed running " + argv.at(0));
  const pid_t pid = fork();
  if (pid < 0) throw Error("fork failed running " + argv.at(0));
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    close(out_pipe[0]), close(out_pipe[1]), close(err_pipe[0]), close(err_pipe[1]);
    std::vector<char*> args;
    for (const auto& s : argv) args.push_back(const_cast<char*>(s.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", argv[0].c_str(), std::strerror(errno));
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  CommandResult r;
  // stderr is read on a thread so a chatty command cannot block on a full pipe while we read
  // stdout.
  std::thread err_reader([&] { r.err = read_fd(err_pipe[0]); });
  r.out = read_fd(out_pipe[0]);
  err_reader.join();
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace sl
