// Run states from run directories, task records, the pending decision and the out_dir lock.
#include "sweep/state.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "train/milestones.h"
#include "util/error.h"
#include "util/exit_codes.h"
#include "util/fsutil.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

std::optional<nlohmann::json> read_json_or_none(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  const std::string text = read_file(path);  // an unreadable file is an error naming it
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    return std::nullopt;  // torn or foreign: treated as absent
  }
}

std::string utc_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A string field of a record we wrote, or `fallback` when it is absent or not a string (a record
// edited by hand or torn is treated as absent, never as an internal error).
std::string string_or(const nlohmann::json& j, const char* key, const std::string& fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

long long int_or(const nlohmann::json& j, const char* key, long long fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<long long>() : fallback;
}

std::optional<nlohmann::json> parse_json_or_none(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    return std::nullopt;  // empty, torn or foreign: treated as absent
  }
}

}  // namespace

void write_task_record(const std::string& run_dir, const TaskRecord& t) {
  nlohmann::json j = {{"executor", t.executor ? name_of(*t.executor) : ""},
                      {"state", name_of(t.state)},
                      {"job", t.job},
                      {"host", t.host},
                      {"pid", t.pid}};
  j["exit"] = t.state == TaskState::Exited ? nlohmann::json(t.exit_code) : nlohmann::json(nullptr);
  write_file_atomic(run_dir + "/task.json", j.dump() + "\n");
}

std::optional<TaskRecord> read_task_record(const std::string& run_dir) {
  auto j = read_json_or_none(run_dir + "/task.json");
  if (!j || !j->is_object()) return std::nullopt;
  TaskRecord t;
  t.executor = parse_choice<Executor>(string_or(*j, "executor", ""));
  const std::optional<TaskState> state = parse_choice<TaskState>(string_or(*j, "state", ""));
  if (!state) return std::nullopt;
  t.state = *state;
  t.job = string_or(*j, "job", "");
  t.host = string_or(*j, "host", "");
  if (j->contains("pid") && (*j)["pid"].is_number_integer()) t.pid = (*j)["pid"].get<long long>();
  if (j->contains("exit") && (*j)["exit"].is_number_integer())
    t.exit_code = (*j)["exit"].get<int>();
  return t;
}

RunState state_of_exit(int exit_code) {
  if (exit_code == kExitOk) return RunState::Completed;
  if (exit_code == kExitDiverged) return RunState::Diverged;
  if (exit_code == 130 || exit_code == 143) return RunState::Interrupted;  // SIGINT, SIGTERM
  return RunState::Failed;
}

RunState run_state(const SweepPlan& plan, const SweepRun& run) {
  std::error_code ec;
  if (plan.mode == SweepMode::Probe && fs::exists(run.dir + "/probe.json", ec))
    return RunState::Completed;
  const auto summary = read_json_or_none(run.dir + "/summary.json");
  // An unknown or absent status (a torn or foreign summary) counts as none: New, which a
  // summary never says.
  const RunState summary_status =
      summary && summary->is_object()
          ? parse_choice<RunState>(string_or(*summary, "status", "")).value_or(RunState::New)
          : RunState::New;
  // A summary completed short of the run's horizon (train.max_iters) belongs to a run that is
  // to be extended or whose extension was stopped: never done; unless the run stopped by the
  // rule the sweep still asks for (train/milestones.h stopped_by_its_rule): it would stop there
  // again.
  // (Whether the rest of its config is the sweep's is check_run's question, asked by
  // collect_items.)
  const bool short_of_horizon =
      summary_status == RunState::Completed &&
      int_or(*summary, "steps", run.config.train.max_iters) < run.config.train.max_iters &&
      !stopped_by_its_rule(*summary, run.config);
  // A summary with no config.json beside it (a copy stopped midway) matches no config: not done.
  const bool orphan = plan.mode == SweepMode::Train && summary_status != RunState::New &&
                      !fs::exists(run.dir + "/config.json", ec);
  if (plan.mode == SweepMode::Train && !short_of_horizon && !orphan &&
      (summary_status == RunState::Completed || summary_status == RunState::Diverged))
    return summary_status;
  if (const auto task = read_task_record(run.dir)) {
    if (task->state == TaskState::Exited) {
      const RunState exited = state_of_exit(task->exit_code);
      if (exited != RunState::Completed) return exited;
      // Exit 0 with no summary at the horizon: a run completed at a shorter one, to be extended
      // (or whose extension stopped before its own task record): resumable, not failed.
      return short_of_horizon ? RunState::Interrupted : RunState::Failed;
    }
    if (task->executor == Executor::Local && task->host == host_name() && !process_alive(task->pid))
      return RunState::Interrupted;
    return RunState::Running;
  }
  if (summary_status == RunState::Interrupted || fs::exists(run.dir + "/metrics.jsonl", ec))
    return RunState::Interrupted;
  return RunState::New;  // a config.json written at submission alone: nothing has run yet
}

bool run_pending(RunState state) {
  return state != RunState::Completed && state != RunState::Diverged;
}

// ---- the lock ---------------------------------------------------------------------------------

SweepLock::SweepLock(FileLock file, Executor executor)
    : file_(std::move(file)), executor_(executor) {}

SweepLock::SweepLock(SweepLock&& other) noexcept = default;

SweepLock::~SweepLock() =
    default;  // releases the flock; a Slurm job recorded in the file keeps holding

void SweepLock::write_record(const std::string& job) {
  const nlohmann::json j = {{"executor", name_of(executor_)},
                            {"pid", static_cast<long long>(getpid())},
                            {"host", host_name()},
                            {"since", utc_now()},
                            {"job", job}};
  file_.write_record(j.dump() + "\n");
}

void SweepLock::set_job(const std::string& job) { write_record(job); }

SweepLock SweepLock::acquire(
    const std::string& out_dir, Executor executor,
    const std::function<std::optional<bool>(const std::string&)>& job_alive) {
  make_dirs(out_dir);
  const std::string path = out_dir + "/sweep.lock";
  // Not inherited: a run outliving its sweep must not keep the out_dir locked (and none does:
  // local.cpp's children stop when the sweep dies).
  FileLock file = FileLock::try_lock(path);
  const bool got = file.held();
  const auto held =
      parse_json_or_none(file.previous_record());  // read under the lock (or to name who holds it)
  SweepLock lock(std::move(file), executor);
  auto holder = [&]() {
    if (!held || !held->is_object()) return std::string("an unknown holder");
    std::string s = "executor " + string_or(*held, "executor", "?") + ", pid " +
                    std::to_string(int_or(*held, "pid", 0)) + " on host " +
                    string_or(*held, "host", "?") + ", since " + string_or(*held, "since", "?");
    if (!string_or(*held, "job", "").empty())
      s = "Slurm job " + string_or(*held, "job", "") + "; " + s;
    return s;
  };
  if (!got) {
    throw Error(out_dir + " is in use by another stacklab sweep (" + holder() +
                "); wait for it to finish or stop it, then run this again");
  }
  const std::string job = held && held->is_object() ? string_or(*held, "job", "") : "";
  if (!job.empty()) {
    const std::optional<bool> alive = job_alive(job);
    if (!alive)
      throw Error(out_dir + " is held by " + holder() +
                  ", and Slurm cannot be asked whether that job has ended "
                  "(squeue failed); if it has, remove " +
                  path);
    if (*alive)
      throw Error(out_dir + " is in use by " + holder() +
                  ": it still has runs queued or running; see `stacklab sweep "
                  "--status " +
                  out_dir + "`, wait for it, or cancel it with scancel " + job);
  }
  lock.write_record("");
  return lock;
}

}  // namespace sl
