// Sweep run states read from run directories, the pending decision, task records and the out_dir
// lock.
#include "sweep/state.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "util/error.h"
#include "util/fsutil.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

struct RunDir {
  RunDir() {
    std::string pattern = ::testing::TempDir() + "/sweep_state_XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
    out = pattern;
    plan.mode = SweepMode::Train;
    plan.out_dir = out;
    run.id = "L1-s0";
    run.dir = out + "/L1-s0";
    make_dirs(run.dir);
  }
  ~RunDir() { fs::remove_all(out); }
  void put(const std::string& name, const std::string& text) const {
    write_file_atomic(run.dir + "/" + name, text);
  }
  RunState state() const { return run_state(plan, run); }
  std::string out;
  SweepPlan plan;
  SweepRun run;
};

// The pid of a process that has exited and been reaped: nothing runs under it (for a while).
long long dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int st = 0;
  waitpid(pid, &st, 0);
  return pid;
}

TEST(RunState, AnEmptyDirectoryOrOnlyASubmittedConfigIsNew) {
  RunDir d;
  EXPECT_EQ(d.state(), RunState::New);
  d.put("config.json", "{}");
  EXPECT_EQ(d.state(), RunState::New);
}

TEST(RunState, TheSummaryDecidesCompletedAndDiverged) {
  RunDir d;
  d.put("config.json", "{}");
  d.put("summary.json", R"({"status": "completed"})");
  EXPECT_EQ(d.state(), RunState::Completed);
  d.put("summary.json", R"({"status": "diverged"})");
  EXPECT_EQ(d.state(), RunState::Diverged);
}

TEST(RunState, ACompletedSummaryShortOfTheHorizonOrWithoutItsConfigIsNotDone) {
  RunDir d;
  d.run.config.train.max_iters = 24;
  d.put("config.json", "{}");
  d.put("metrics.jsonl", "");
  d.put("summary.json", R"({"status": "completed", "steps": 6})");
  EXPECT_EQ(d.state(), RunState::Interrupted) << "a copy awaiting its extension is resumable";
  write_task_record(d.run.dir, {Executor::Local, TaskState::Exited, 0, "", "h", 1});
  EXPECT_EQ(d.state(), RunState::Interrupted) << "its exit 0 was at the old horizon";
  d.put("summary.json", R"({"status": "completed", "steps": 24})");
  EXPECT_EQ(d.state(), RunState::Completed);
  fs::remove(d.run.dir + "/config.json");  // a copy stopped before it, or deleted by hand
  EXPECT_NE(d.state(), RunState::Completed) << "a summary with no config matches no config";
}

TEST(RunState, ARunStoppedOnEscapeByTheMarginTheSweepStillAsksForIsDoneShortOfItsHorizon) {
  RunDir d;
  d.run.config.train.max_iters = 12000;
  d.run.config.train.stop_below_unigram = 0.1;
  d.put("config.json", "{}");
  d.put("metrics.jsonl", "");
  d.put("summary.json", R"({"status": "completed", "steps": 400,
    "stopped": {"reason": "escaped", "step": 400, "margin": 0.1}})");
  write_task_record(d.run.dir, {Executor::Local, TaskState::Exited, 0, "", "h", 1});
  EXPECT_EQ(d.state(), RunState::Completed) << "it would stop at step 400 again";
  d.run.config.train.stop_below_unigram = 0.0;
  EXPECT_EQ(d.state(), RunState::Interrupted) << "a sweep without the rule wants the steps after";
  d.run.config.train.stop_below_unigram = 0.2;
  EXPECT_EQ(d.state(), RunState::Interrupted) << "nor is it done under another margin";
}

TEST(RunState, MetricsWithoutAResultAreAnInterruptedRun) {
  RunDir d;
  d.put("metrics.jsonl", "");
  d.put("summary.json", R"({"status": "running"})");
  EXPECT_EQ(d.state(), RunState::Interrupted);
}

TEST(RunState, TheTaskRecordsExitCodeNamesFailedAndInterrupted) {
  RunDir d;
  write_task_record(d.run.dir, {Executor::Slurm, TaskState::Exited, 1, "7_0", "h", 1});
  EXPECT_EQ(d.state(), RunState::Failed);
  write_task_record(d.run.dir, {Executor::Slurm, TaskState::Exited, 143, "7_0", "h", 1});
  EXPECT_EQ(d.state(), RunState::Interrupted);
  write_task_record(d.run.dir, {Executor::Slurm, TaskState::Exited, 0, "7_0", "h", 1});
  EXPECT_EQ(d.state(), RunState::Failed) << "exit 0 without a completed summary is no result";
}

TEST(RunState, ALocalRunWhoseProcessIsGoneIsInterruptedAndASlurmOneRunning) {
  RunDir d;
  write_task_record(d.run.dir, {Executor::Local, TaskState::Running, -1, "", host_name(),
                                static_cast<long long>(getpid())});
  EXPECT_EQ(d.state(), RunState::Running);
  write_task_record(d.run.dir,
                    {Executor::Local, TaskState::Running, -1, "", host_name(), dead_pid()});
  EXPECT_EQ(d.state(), RunState::Interrupted);
  write_task_record(d.run.dir,
                    {Executor::Slurm, TaskState::Running, -1, "7_0", "elsewhere", dead_pid()});
  EXPECT_EQ(d.state(), RunState::Running)
      << "the scheduler, not a pid, says whether a Slurm task still runs";
}

TEST(RunState, AProbeIsCompletedByItsProbeJson) {
  RunDir d;
  d.plan.mode = SweepMode::Probe;
  EXPECT_EQ(d.state(), RunState::New);
  d.put("probe.json", "{}");
  EXPECT_EQ(d.state(), RunState::Completed);
}

TEST(RunState, ATornTaskRecordIsIgnored) {
  RunDir d;
  d.put("task.json", R"({"executor": "slurm", "state": "exi)");
  EXPECT_EQ(d.state(), RunState::New);
  EXPECT_FALSE(read_task_record(d.run.dir).has_value());
}

TEST(TaskRecord, RoundTripsThroughTheRunDirectory) {
  RunDir d;
  write_task_record(d.run.dir, {Executor::Slurm, TaskState::Exited, 143, "12_3", "node7", 4242});
  const auto t = read_task_record(d.run.dir);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->executor, Executor::Slurm);
  EXPECT_EQ(t->state, TaskState::Exited);
  EXPECT_EQ(t->exit_code, 143);
  EXPECT_EQ(t->job, "12_3");
  EXPECT_EQ(t->host, "node7");
  EXPECT_EQ(t->pid, 4242);
}

TEST(RunPending, OnlyRunsWithAResultAreSkipped) {
  EXPECT_FALSE(run_pending(RunState::Completed));
  EXPECT_FALSE(run_pending(RunState::Diverged));
  for (const RunState s : {RunState::New, RunState::Queued, RunState::Running, RunState::Failed,
                           RunState::Interrupted})
    EXPECT_TRUE(run_pending(s)) << s;
}

TEST(StateOfExit, MapsTheExitCodesOfStacklab) {
  EXPECT_EQ(state_of_exit(0), RunState::Completed);
  EXPECT_EQ(state_of_exit(3), RunState::Diverged);
  EXPECT_EQ(state_of_exit(130), RunState::Interrupted);
  EXPECT_EQ(state_of_exit(143), RunState::Interrupted);
  EXPECT_EQ(state_of_exit(1), RunState::Failed);
  EXPECT_EQ(state_of_exit(137), RunState::Failed);
}

auto never_asked = [](const std::string&) -> std::optional<bool> {
  ADD_FAILURE() << "job_alive asked without a recorded job";
  return false;
};

TEST(SweepLock, ASecondHolderIsRefusedNamingTheOutDirAndTheHolder) {
  RunDir d;
  SweepLock first = SweepLock::acquire(d.out, Executor::Local, never_asked);
  try {
    SweepLock::acquire(d.out, Executor::Local, never_asked);
    FAIL() << "a second lock was granted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(d.out), std::string::npos) << m;
    EXPECT_NE(m.find("executor local"), std::string::npos) << m;
    EXPECT_NE(m.find("pid " + std::to_string(getpid())), std::string::npos) << m;
  }
}

TEST(SweepLock, IsFreeAgainOnceItsHolderLetGo) {
  RunDir d;
  { SweepLock first = SweepLock::acquire(d.out, Executor::Local, never_asked); }
  EXPECT_NO_THROW(SweepLock::acquire(d.out, Executor::Local, never_asked));
}

TEST(SweepLock, ARecordedSlurmJobHoldsItUntilItLeavesTheQueue) {
  RunDir d;
  { SweepLock::acquire(d.out, Executor::Slurm, never_asked).set_job("77"); }
  std::string asked;
  auto alive = [&](const std::string& job) -> std::optional<bool> {
    asked = job;
    return true;
  };
  try {
    SweepLock::acquire(d.out, Executor::Local, alive);
    FAIL() << "granted while job 77 is queued";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Slurm job 77"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(d.out), std::string::npos) << e.what();
  }
  EXPECT_EQ(asked, "77");
  auto unknown = [](const std::string&) -> std::optional<bool> { return std::nullopt; };
  EXPECT_THROW(SweepLock::acquire(d.out, Executor::Slurm, unknown), Error);
  auto gone = [](const std::string&) -> std::optional<bool> { return false; };
  EXPECT_NO_THROW(SweepLock::acquire(d.out, Executor::Slurm, gone));
  EXPECT_NO_THROW(SweepLock::acquire(d.out, Executor::Slurm, never_asked))
      << "the finished job's record was replaced";
}

}  // namespace
}  // namespace sl
