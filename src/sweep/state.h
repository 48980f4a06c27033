// Where each run of a sweep stands, read from its run directory alone (so both executors and
// `stacklab sweep --status` agree), the task record an executor writes there, the one decision
// "does this run still need running?", and the out_dir's lock file.
//   <run>/task.json     {"executor", "state": "running"|"exited", "exit", "job", "host", "pid"}
//   <out_dir>/sweep.lock  the invocation (or Slurm job) that holds the out_dir, as JSON
// Running runs, talking to Slurm: sweep/local.cpp, sweep/slurm.cpp.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "sweep/choices.h"
#include "sweep/plan.h"
#include "train/run_state.h"
#include "util/fsutil.h"

namespace sl {

// The states a sweep's run can be in, in the order `--status` counts them (train/run_state.h
// spells them; Queued only comes from Slurm; Changed, a directory holding another config's or
// data's result, from comparing it with the sweep: sweep/exec.h collect_items).
inline constexpr RunState kSweepRunStates[] = {
    RunState::New,    RunState::Queued,   RunState::Running,     RunState::Completed,
    RunState::Failed, RunState::Diverged, RunState::Interrupted, RunState::Changed};

// A task record's "state": the run's process has started, or has exited (with its exit code).
enum class TaskState { Running, Exited };
template <>
struct ChoiceNames<TaskState> {
  static constexpr std::pair<TaskState, std::string_view> table[] = {
      {TaskState::Running, "running"}, {TaskState::Exited, "exited"}};
};

// What an executor records in <run>/task.json when it starts a run and when the run exits.
struct TaskRecord {
  std::optional<Executor> executor;  // none: a record naming no executor this version knows
  TaskState state = TaskState::Running;
  int exit_code = -1;  // when exited: the process's exit code (128 + signal if killed)
  std::string job;     // Slurm: "<array job>_<task>"; local: empty
  std::string host;
  long long pid = 0;
};
void write_task_record(const std::string& run_dir, const TaskRecord& t);
std::optional<TaskRecord> read_task_record(
    const std::string& run_dir);  // none if absent or unreadable

// Completed, Diverged, Interrupted or Failed for a `stacklab train`/`probe` exit code.
RunState state_of_exit(int exit_code);

// The run's state from its directory: New, Running, Completed, Failed, Diverged or Interrupted.
// A local run recorded as running whose process is gone (same host) is Interrupted; a Slurm one
// stays Running here and the caller asks the scheduler.
RunState run_state(const SweepPlan& plan, const SweepRun& run);

// Whether a run in `state` is (re)started by the next `stacklab sweep`: everything that has no
// result yet (new, failed, interrupted; queued or running only if its job is gone, which the
// lock guarantees). The one place both executors decide which runs are pending.
bool run_pending(RunState state);

// The out_dir's lock: <out_dir>/sweep.lock, held with flock(2) (util/fsutil.h FileLock) by a
// running invocation alone, not by the runs it forks (the descriptor is close-on-exec; the kernel
// releases the lock when the invocation dies, and its local runs stop with it, so a crash leaves
// nothing stuck) and, for Slurm, recorded with the job id until that job has left the queue.
// Each run directory has a lock of its own (train.lock, train/run_lock.h): another file name.
class SweepLock {
 public:
  // Takes the lock for `executor` or throws sl::Error naming out_dir and the holder (pid, host,
  // executor, job). `job_alive(job)` says whether a recorded Slurm job is still queued or running;
  // it returns nullopt when the scheduler cannot be asked (then the lock is refused, with a hint).
  static SweepLock acquire(const std::string& out_dir, Executor executor,
                           const std::function<std::optional<bool>(const std::string&)>& job_alive);
  SweepLock(SweepLock&& other) noexcept;
  SweepLock& operator=(SweepLock&&) = delete;
  SweepLock(const SweepLock&) = delete;
  ~SweepLock();
  // Records the submitted job: after this invocation exits, the job holds the out_dir.
  void set_job(const std::string& job);
  const std::string& path() const { return file_.path(); }

 private:
  SweepLock(FileLock file, Executor executor);
  void write_record(const std::string& job);
  FileLock file_;
  Executor executor_;
};

}  // namespace sl
