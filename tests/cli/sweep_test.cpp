// `stacklab sweep` with the local executor: the out_dir lock against a second invocation (and
// not stuck after a crash), `--status` counts and its exit code, flag errors, train.seed in the
// grid refused; each child's config.json holding what its run id names; runs whose config
// changed, as `--status` and `--dry-run` report them; the state a failed Slurm submission leaves.
#include <sys/file.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "support/cli.h"

namespace sl::testing {
namespace {

namespace fs = std::filesystem;

// A sweep of `n_layers` x 1 seed in `dir`/out; `iters` steps each.
std::string write_sweep(const std::string& dir, int iters, const std::string& layers) {
  const std::string path = dir + "/sweep.json";
  write_text(path, R"({"name": "t", "base": ")" + base_config() + R"(", "out_dir": ")" + dir +
                       R"(/out",
    "overrides": {"model.n_embd": 16, "model.n_head": 2, "model.block_size": 16, "train.batch_size": 4,
                  "train.max_iters": )" +
                       std::to_string(iters) + R"(, "train.eval_interval": 20},
    "grid": {"model.n_layer": )" +
                       layers + "}}");
  return path;
}

std::string status_line(const RunResult& r) { return r.out.substr(0, r.out.find('\n')); }

TEST(SweepCommand, ASecondInvocationOnARunningOutDirIsRefusedNamingItAndTheHolder) {
  const std::string dir = make_temp_dir("sweep_lock");
  const std::string sweep =
      write_sweep(dir, 100000, "[1]");  // ~10 s if a failure leaves it running
  Child first({"sweep", sweep, "--jobs", "1"});
  ASSERT_TRUE(
      wait_until([&] { return fs::exists(dir + "/out/L1-pre-layernorm-res-s0/metrics.jsonl"); }));
  const RunResult second = run_stacklab({"sweep", sweep, "--jobs", "1"});
  EXPECT_EQ(second.exit_code, 1) << second;
  EXPECT_NE(second.output.find(dir + "/out is in use by another stacklab sweep"), std::string::npos)
      << second;
  EXPECT_NE(second.output.find("executor local, pid "), std::string::npos) << second;
  const RunResult status = run_stacklab({"sweep", "--status", dir + "/out"});
  EXPECT_NE(status_line(status).find("running 1,"), std::string::npos) << status;
  first.signal(SIGTERM);  // the run checkpoints; the sweep exits 143
  EXPECT_EQ(first.wait().exit_code, 143);
  const RunResult after = run_stacklab({"sweep", "--status", dir + "/out"});
  EXPECT_NE(status_line(after).find("interrupted 1"), std::string::npos) << after;
  EXPECT_EQ(after.exit_code, 0) << "an interrupted run is no failure";
  fs::remove_all(dir);
}

// Issue 60: after a SIGINT the summary said "3 runs, 0 failed, 0 diverged" of runs that never ran.
TEST(SweepCommand, TheSummaryOfAStoppedSweepCountsTheRunsItInterruptedAndTheOnesItNeverRan) {
  const std::string dir = make_temp_dir("sweep_sigint");
  const std::string sweep =
      write_sweep(dir, 100000, "[1, 2, 3]");  // ~10 s each if a failure leaves one running
  Child first({"sweep", sweep, "--jobs", "1"});
  ASSERT_TRUE(
      wait_until([&] { return fs::exists(dir + "/out/L1-pre-layernorm-res-s0/metrics.jsonl"); }));
  first.signal(SIGINT);
  const RunResult r = first.wait();
  EXPECT_EQ(r.exit_code, 130) << r;
  EXPECT_TRUE(contains(r.out,
                       "3 runs, 0 failed, 0 diverged; 1 interrupted, 2 not run (run the "
                       "sweep again to continue them)"))
      << r;
  fs::remove_all(dir);
}

// `stacklab sweep ... | head -1` used to die of SIGPIPE at its next progress line, before writing
// its manifest: a run completed on disk stayed "new" there. A closed stdout now stops the sweep as
// SIGINT does (exit 141), no further run starts, and the manifest says what each run did.
TEST(SweepCommand, APipeClosedByHeadStopsTheSweepWithItsManifestWritten) {
  const std::string dir = make_temp_dir("sweep_pipe");
  const std::string sweep = write_sweep(dir, 200, "[1, 2, 3, 4, 5]");
  const std::string cmd = "{ '" + kStacklab + "' sweep '" + sweep + "' --jobs 1; echo $? > '" +
                          dir + "/rc'; } | head -1 > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_EQ(read_text(dir + "/rc"), "141\n");
  const nlohmann::json manifest = read_json(dir + "/out/manifest.json");
  int completed = 0;
  for (const nlohmann::json& r : manifest.at("runs")) {
    const std::string summary = dir + "/out/" + r.at("dir").get<std::string>() + "/summary.json";
    const std::string on_disk =
        fs::exists(summary) ? read_json(summary).at("status").get<std::string>() : "new";
    EXPECT_EQ(r.at("status").get<std::string>(), on_disk) << r.at("id");
    completed += on_disk == "completed";
  }
  EXPECT_LT(completed, 5) << "the sweep went on after its stdout closed";
  fs::remove_all(dir);
}

TEST(SweepCommand, TheLockIsNotStuckOnTheRecordOfASweepThatDied) {
  const std::string dir = make_temp_dir("sweep_stale");
  const std::string sweep = write_sweep(dir, 40, "[1, 2]");
  fs::create_directories(dir + "/out");
  // The record of a sweep that died (its pid is gone, its flock with it).
  write_text(dir + "/out/sweep.lock",
             R"({"executor": "local", "pid": 999999999, "host": "x", "job": ""})");
  const RunResult r = run_stacklab({"sweep", sweep, "--jobs", "2"});
  EXPECT_EQ(r.exit_code, 0) << r;
  const RunResult status = run_stacklab({"sweep", "--status", dir + "/out"});
  EXPECT_NE(status_line(status).find("completed 2, failed 0"), std::string::npos) << status;
  fs::remove_all(dir);
}

TEST(SweepCommand, CountsAFailedRunAndExitsNonZeroWithItsLogsLastLine) {
  const std::string dir = make_temp_dir("sweep_status");
  const std::string sweep = write_sweep(dir, 40, "[1, 2]");
  ASSERT_EQ(run_stacklab({"sweep", sweep, "--jobs", "2"}).exit_code, 0);
  const std::string run = dir + "/out/L2-pre-layernorm-res-s0";
  fs::remove(run + "/summary.json");
  write_text(run + "/config.json",
             "{\"model\": {\"n_head\": 3}}");  // a run whose config no longer loads
  const RunResult again = run_stacklab({"sweep", sweep, "--jobs", "2"});
  EXPECT_EQ(again.exit_code, 1) << again;
  const RunResult status = run_stacklab({"sweep", "--status", dir + "/out"});
  EXPECT_EQ(status.exit_code, 1) << status;
  EXPECT_NE(status_line(status).find(
                "new 0, queued 0, running 0, completed 1, failed 1, diverged 0, interrupted 0"),
            std::string::npos)
      << status;
  EXPECT_NE(status.out.find("failed L2-pre-layernorm-res-s0: stacklab train: error: " + run +
                            "/config.json"),
            std::string::npos)
      << status;
  fs::remove_all(dir);
}

TEST(SweepCommand, SlurmFlagsWithTheLocalExecutorAndAnUnknownExecutorAreRefused) {
  const std::string dir = make_temp_dir("sweep_flags");
  const std::string sweep = write_sweep(dir, 40, "[1]");
  const RunResult a = run_stacklab({"sweep", sweep, "--max-parallel", "2"});
  EXPECT_EQ(a.exit_code, 1);
  EXPECT_NE(a.output.find("--max-parallel: only with --executor slurm"), std::string::npos) << a;
  const RunResult b = run_stacklab({"sweep", sweep, "--executor", "pbs"});
  EXPECT_NE(b.output.find("--executor: expected \"local\" or \"slurm\", got \"pbs\""),
            std::string::npos)
      << b;
  const RunResult c = run_stacklab({"sweep", "--status", dir});
  EXPECT_NE(c.output.find(dir + ": not a sweep directory (no manifest.json)"), std::string::npos)
      << c;
  fs::remove_all(dir);
}

TEST(SweepCommand, PrintsTheArrayScriptAndSubmitsNothing) {
  const std::string dir = make_temp_dir("sweep_dry");
  const std::string sweep = write_sweep(dir, 40, "[1, 2]");
  const RunResult r =
      run_stacklab({"sweep", sweep, "--executor", "slurm", "--max-parallel", "1", "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("#SBATCH --array=0-1%1"), std::string::npos) << r;
  EXPECT_NE(r.out.find("submitted with: sbatch --parsable " + dir + "/out/slurm/array.sbatch"),
            std::string::npos)
      << r;
  EXPECT_FALSE(fs::exists(dir + "/out/slurm/array.sbatch"));
  EXPECT_FALSE(fs::exists(dir + "/out/L1-pre-layernorm-res-s0/config.json"));
  fs::remove_all(dir);
}

// The sweep of the user report that trained one seed twice: train.seed in the grid.
TEST(SweepCommand, RefusesTrainSeedInTheGridNamingTheFileTheKeyAndSeeds) {
  const std::string dir = make_temp_dir("sweep_seedgrid");
  const std::string sweep = dir + "/seedgrid.json";
  write_text(sweep, R"({"name": "seedgrid", "base": ")" + base_config() + R"(", "out_dir": ")" +
                        dir + R"(/out",
    "overrides": {"train.max_iters": 3, "model.n_embd": 16, "model.n_layer": 1}, "grid": {"train.seed": [1, 2]}})");
  for (const std::vector<std::string>& extra : {std::vector<std::string>{}, {"--dry-run"}}) {
    const RunResult r = run_stacklab(concat({"sweep", sweep}, extra));
    EXPECT_EQ(r.exit_code, 1) << r;
    EXPECT_NE(r.output.find(sweep + ": grid.train.seed: "), std::string::npos) << r;
    EXPECT_NE(r.output.find("\"seeds\": [1, 2]"), std::string::npos) << r;
  }
  EXPECT_FALSE(fs::exists(dir + "/out"));
  fs::remove_all(dir);
}

// `validate` refuses a config whose data.path is missing; a sweep (and its --dry-run, which users
// run to check a plan) refuses it too, naming the file, the sweep and a run, before planning.
TEST(SweepCommand, AMissingDataPathIsRefusedBeforePlanningAlsoByTheDryRun) {
  const std::string dir = make_temp_dir("sweep_nodata");
  const std::string sweep = dir + "/text.json", text = dir + "/data/shakespeare_char/input.txt";
  write_text(
      sweep,
      R"({"name": "text", "base": ")" + base_config() + R"(", "out_dir": ")" + dir +
          R"(/out", "overrides": {"data.source": "text", "data.path": ")" + text +
          R"(", "train.max_iters": 3, "model.n_embd": 16}, "grid": {"model.n_layer": [1, 2]}})");
  for (const std::vector<std::string>& extra : {std::vector<std::string>{"--dry-run"}, {}}) {
    const RunResult r = run_stacklab(concat({"sweep", sweep}, extra));
    EXPECT_EQ(r.exit_code, 1) << r;
    EXPECT_NE(r.output.find(sweep + ": run "), std::string::npos) << r;
    EXPECT_NE(r.output.find("data.path '" + text + "': no such file"), std::string::npos) << r;
    EXPECT_NE(r.output.find("get_data.py"), std::string::npos) << r;
    EXPECT_EQ(r.out.find("would"), std::string::npos) << "no plan printed: " << r;
  }
  EXPECT_FALSE(fs::exists(dir + "/out"));
  fs::remove_all(dir);
}

// Real tiny runs: each child's config.json holds the seed, name and grid values its id names,
// and two seeds give two different losses.
TEST(SweepCommand, EachChildsConfigHoldsTheValuesItsRunIdNames) {
  const std::string dir = make_temp_dir("sweep_child_cfg");
  const std::string sweep = dir + "/sweep.json";
  write_text(sweep,
             R"({"name": "t", "base": ")" + base_config() + R"(", "out_dir": ")" + dir + R"(/out",
    "seeds": [1, 2],
    "overrides": {"model.n_embd": 16, "model.n_head": 2, "model.block_size": 16, "train.batch_size": 4,
                  "train.max_iters": 3, "train.eval_interval": 3, "model.n_layer": 1},
    "grid": {"model.norm": ["layernorm", "rmsnorm"], "optim.learning_rate": [0.01, 0.003]}})");
  const RunResult dry = run_stacklab({"sweep", sweep, "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry;
  const RunResult r = run_stacklab({"sweep", sweep, "--jobs", "2"});
  ASSERT_EQ(r.exit_code, 0) << r;
  std::map<std::string, double> loss;
  size_t runs = 0;
  for (const std::string norm : {"layernorm", "rmsnorm"})
    for (const double lr : {0.01, 0.003})
      for (const int seed : {1, 2}) {
        std::ostringstream id;
        id << "L1-pre-" << norm << "-res-learning_rate" << nlohmann::json(lr).dump() << "-s"
           << seed;
        const std::string run = dir + "/out/" + id.str();
        ASSERT_TRUE(fs::exists(run + "/config.json")) << run << "\n" << r;
        const nlohmann::json c = read_json(run + "/config.json");
        EXPECT_EQ(c["train"]["seed"], seed) << run;
        EXPECT_EQ(c["train"]["name"], id.str()) << run;
        EXPECT_EQ(c["model"]["norm"], norm) << run;
        EXPECT_EQ(c["optim"]["learning_rate"], lr) << run;
        EXPECT_EQ(c["model"]["n_layer"], 1) << run;
        loss[id.str()] = read_json(run + "/summary.json").at("final_val_loss").get<double>();
        ++runs;
        // The command line sets the seed once: the dry run shows no second, contradicting one.
        const size_t line = dry.out.find(id.str() + " ");
        ASSERT_NE(line, std::string::npos) << dry;
        const std::string cmd = dry.out.substr(line, dry.out.find('\n', line) - line);
        EXPECT_EQ(cmd.find("--train.seed="), cmd.rfind("--train.seed=")) << cmd;
      }
  EXPECT_EQ(runs, 8u);
  EXPECT_NE(loss["L1-pre-layernorm-res-learning_rate0.01-s1"],
            loss["L1-pre-layernorm-res-learning_rate0.01-s2"]);
  fs::remove_all(dir);
}

// A sweep over a base config of its own, which the test then edits.
std::string write_own_base_sweep(const std::string& dir) {
  nlohmann::json base = read_json(base_config());
  base.erase("description");
  write_text(dir + "/base.json", base.dump(2));
  const std::string path = dir + "/sweep.json";
  write_text(path, R"({"name": "t", "base": "base.json", "out_dir": ")" + dir + R"(/out",
    "overrides": {"model.n_embd": 16, "model.n_head": 2, "model.block_size": 16, "train.batch_size": 4,
                  "train.max_iters": 3, "train.eval_interval": 3},
    "grid": {"model.n_layer": [1, 2]}})");
  return path;
}

TEST(SweepCommand, StatusAndDryRunReportRunsWhoseBaseConfigChangedAsTheRealRunWould) {
  const std::string dir = make_temp_dir("sweep_changed");
  const std::string sweep = write_own_base_sweep(dir);
  ASSERT_EQ(run_stacklab({"sweep", sweep, "--jobs", "2"}).exit_code, 0);
  nlohmann::json base = read_json(dir + "/base.json");
  base["optim"]["learning_rate"] = 0.002;
  write_text(dir + "/base.json", base.dump(2));

  const RunResult real = run_stacklab({"sweep", sweep, "--jobs", "2"});
  EXPECT_EQ(real.exit_code, 1) << real;
  EXPECT_NE(real.output.find("optim.learning_rate: 0.001 -> 0.002"), std::string::npos) << real;
  for (const std::string& target : {dir + "/out", sweep}) {
    const RunResult st = run_stacklab({"sweep", "--status", target});
    EXPECT_EQ(st.exit_code, 1) << target << ": changed runs are not results of this sweep\n" << st;
    EXPECT_NE(status_line(st).find("completed 0,"), std::string::npos) << st;
    EXPECT_NE(status_line(st).find("changed 2"), std::string::npos) << st;
    EXPECT_NE(st.out.find("changed L1-pre-layernorm-res-s0: optim.learning_rate: 0.001 -> 0.002"),
              std::string::npos)
        << st;
    EXPECT_NE(st.out.find("--on-change rerun"), std::string::npos) << st;
  }
  const RunResult dry = run_stacklab({"sweep", sweep, "--dry-run"});
  EXPECT_EQ(dry.exit_code, 1) << "the real run refuses, and so does its dry run\n" << dry;
  EXPECT_NE(dry.output.find(dir + "/out/L2-pre-layernorm-res-s0:"), std::string::npos) << dry;
  EXPECT_EQ(dry.output.find("train --resume"), std::string::npos) << dry;
  const RunResult rerun = run_stacklab({"sweep", sweep, "--dry-run", "--on-change", "rerun"});
  EXPECT_EQ(rerun.exit_code, 0) << rerun;
  EXPECT_NE(rerun.out.find(dir + "/out/L1-pre-layernorm-res-s0.changed-1"), std::string::npos)
      << rerun;
  EXPECT_EQ(rerun.out.find("train --resume"), std::string::npos) << "the moved runs start fresh\n"
                                                                 << rerun;
  EXPECT_FALSE(fs::exists(dir + "/out/L1-pre-layernorm-res-s0.changed-1"))
      << "a dry run moves nothing";
  fs::remove_all(dir);
}

// A sweep of 2 depths trained `iters` steps, with optim.lr_decay_iters `decay` and `extra`
// overrides (JSON members, each with its leading comma).
std::string write_horizon_sweep(const std::string& dir, int iters, int decay,
                                const std::string& extra = "") {
  const std::string path = dir + "/sweep.json";
  write_text(path, R"({"name": "t", "base": ")" + base_config() + R"(", "out_dir": ")" + dir +
                       R"(/out",
    "overrides": {"model.n_embd": 16, "model.n_head": 2, "model.block_size": 16, "train.batch_size": 4,
                  "train.eval_interval": 2, "train.ckpt_interval": 2, "train.max_iters": )" +
                       std::to_string(iters) + R"(, "optim.lr_decay_iters": )" +
                       std::to_string(decay) + extra + R"(},
    "grid": {"model.n_layer": [1, 2]}})");
  return path;
}

TEST(SweepCommand, OnChangeExtendContinuesRunsWhoseOneChangeIsALongerHorizonOnTheirOwnCheckpoints) {
  const std::string dir = make_temp_dir("sweep_extend");
  ASSERT_EQ(run_stacklab({"sweep", write_horizon_sweep(dir, 4, 4), "--jobs", "2"}).exit_code, 0);
  const std::string run = dir + "/out/L2-pre-layernorm-res-s0";
  const std::string sweep = write_horizon_sweep(dir, 8, 8);

  const RunResult refused = run_stacklab({"sweep", sweep});
  EXPECT_EQ(refused.exit_code, 1) << "a longer horizon is a change, refused by default\n"
                                  << refused;
  const RunResult dry = run_stacklab({"sweep", sweep, "--dry-run", "--on-change", "extend"});
  EXPECT_EQ(dry.exit_code, 0) << dry;
  EXPECT_TRUE(contains(dry.out, run + ": train.max_iters 4 -> 8: continued by train --resume"))
      << dry;
  EXPECT_TRUE(
      contains(dry.out, "train --resume " + run + " --train.max_iters=8 --optim.lr_decay_iters=8"))
      << dry;
  EXPECT_TRUE(contains(dry.out, "resumable")) << dry;
  const RunResult slurm =
      run_stacklab({"sweep", sweep, "--executor", "slurm", "--dry-run", "--on-change", "extend"});
  EXPECT_EQ(slurm.exit_code, 0) << slurm;
  EXPECT_TRUE(contains(slurm.out, "'train' '--resume' '" + run +
                                      "' '--train.threads=1' '--train.max_iters=8' "
                                      "'--optim.lr_decay_iters=8'"))
      << "a Slurm task continues the run as the local executor does\n"
      << slurm;

  const RunResult ext = run_stacklab({"sweep", sweep, "--on-change", "extend", "--jobs", "2"});
  ASSERT_EQ(ext.exit_code, 0) << ext;
  const nlohmann::json summary = read_json(run + "/summary.json");
  EXPECT_EQ(summary.at("status"), "completed") << summary.dump();
  EXPECT_EQ(summary.at("steps"), 8) << "continued to the sweep's horizon\n" << summary.dump();
  const auto records = read_jsonl(run + "/metrics.jsonl");
  EXPECT_TRUE(std::any_of(records.begin(), records.end(), [](const nlohmann::json& r) {
    return r.value("kind", "") == "resume";
  })) << "continued from its checkpoint, not trained again";
  const RunResult st = run_stacklab({"sweep", "--status", dir + "/out"});
  EXPECT_EQ(st.exit_code, 0) << st;
  EXPECT_TRUE(contains(status_line(st), "completed 2,")) << st;
  fs::remove_all(dir);
}

TEST(SweepCommand, OnChangeExtendRefusesAnyOtherChangeAndAnUnsetDecayHorizonNamingWhy) {
  const std::string dir = make_temp_dir("sweep_extend_refused");
  ASSERT_EQ(run_stacklab({"sweep", write_horizon_sweep(dir, 4, 4), "--jobs", "2"}).exit_code, 0);
  const RunResult other =
      run_stacklab({"sweep", write_horizon_sweep(dir, 8, 8, R"(, "optim.learning_rate": 0.002)"),
                    "--on-change", "extend"});
  EXPECT_EQ(other.exit_code, 1) << other;
  EXPECT_TRUE(contains(other.output, "other changes than the horizon: optim.learning_rate"))
      << other;
  const RunResult unset =
      run_stacklab({"sweep", write_horizon_sweep(dir, 8, 0), "--on-change", "extend"});
  EXPECT_EQ(unset.exit_code, 1) << unset;
  EXPECT_TRUE(contains(unset.output, "optim.lr_decay_iters at 0")) << unset;
  const RunResult shorter =
      run_stacklab({"sweep", write_horizon_sweep(dir, 2, 2), "--on-change", "extend"});
  EXPECT_EQ(shorter.exit_code, 1) << shorter;
  EXPECT_TRUE(contains(shorter.output, "train.max_iters is not smaller")) << shorter;
  const RunResult bad =
      run_stacklab({"sweep", write_horizon_sweep(dir, 8, 8), "--on-change", "grow"});
  EXPECT_EQ(bad.exit_code, 1) << "as every other bad sweep flag\n" << bad;
  EXPECT_TRUE(contains(bad.output, "--on-change: expected \"fail\", \"rerun\" or \"extend\""))
      << bad;
  fs::remove_all(dir);
}

TEST(SweepCommand, AFailedRunWhoseConfigChangedIsCountedFailedAndListedWithItsChanges) {
  const std::string dir = make_temp_dir("sweep_failed_changed");
  const std::string sweep = write_sweep(dir, 3, "[1, 2]");
  ASSERT_EQ(run_stacklab({"sweep", sweep, "--jobs", "2"}).exit_code, 0);
  // As a Slurm task leaves a run whose config.json was edited before it started: no summary, no
  // provenance, a config the sweep does not give, and the task's exit code.
  const std::string run = dir + "/out/L2-pre-layernorm-res-s0";
  fs::remove(run + "/summary.json");
  fs::remove(run + "/provenance.json");
  nlohmann::json cfg = read_json(run + "/config.json");
  cfg["optim"]["learning_rate"] = 0.5;
  write_text(run + "/config.json", cfg.dump(2));
  write_text(
      run + "/task.json",
      R"({"executor": "local", "state": "exited", "exit": 1, "job": "", "host": "h", "pid": 1})");
  const RunResult st = run_stacklab({"sweep", "--status", dir + "/out"});
  EXPECT_EQ(st.exit_code, 1) << st;
  EXPECT_NE(status_line(st).find("completed 1, failed 1, diverged 0, interrupted 0, changed 0"),
            std::string::npos)
      << st;
  EXPECT_NE(st.out.find("changed L2-pre-layernorm-res-s0: optim.learning_rate: 0.5 -> 0.001"),
            std::string::npos)
      << st;
  EXPECT_NE(st.out.find("stacklab sweep would refuse to run: 1 run holds"), std::string::npos)
      << st;
  const RunResult real = run_stacklab({"sweep", sweep, "--jobs", "2"});
  EXPECT_EQ(real.exit_code, 1) << real;
  EXPECT_NE(real.output.find(run + ":\n    optim.learning_rate: 0.5 -> 0.001"), std::string::npos)
      << real;
  fs::remove_all(dir);
}

// PATH set to `dir` while in scope (for running stacklab without Slurm's commands).
class ScopedPath {
 public:
  explicit ScopedPath(const std::string& dir)
      : old_(std::getenv("PATH") ? std::getenv("PATH") : "") {
    setenv("PATH", dir.c_str(), 1);
  }
  ~ScopedPath() { setenv("PATH", old_.c_str(), 1); }

 private:
  std::string old_;
};

TEST(SweepCommand, AFailedSlurmSubmitLeavesAManifestStatusReadsAndReleasesTheLock) {
  const std::string dir = make_temp_dir("sweep_nosbatch");
  const std::string sweep = write_sweep(dir, 3, "[1, 2]");
  fs::create_directories(dir + "/empty_path");
  {
    ScopedPath no_slurm(dir + "/empty_path");
    const RunResult submit = run_stacklab({"sweep", sweep, "--executor", "slurm"});
    EXPECT_EQ(submit.exit_code, 1) << submit;
    EXPECT_NE(submit.output.find("sbatch on PATH"), std::string::npos) << submit;
    const RunResult st = run_stacklab({"sweep", "--status", dir + "/out"});
    EXPECT_EQ(st.exit_code, 0) << st;
    EXPECT_NE(status_line(st).find("new 2,"), std::string::npos) << st;
    EXPECT_NE(status_line(st).find("not submitted"), std::string::npos) << st;
    const RunResult again = run_stacklab({"sweep", sweep, "--executor", "slurm"});
    EXPECT_EQ(again.output.find("in use"), std::string::npos) << "the failed submit holds nothing\n"
                                                              << again;
    EXPECT_NE(again.output.find("sbatch on PATH"), std::string::npos) << again;
  }
  const int fd = open((dir + "/out/sweep.lock").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
  close(fd);
  const RunResult local = run_stacklab({"sweep", sweep, "--jobs", "2"});
  EXPECT_EQ(local.exit_code, 0) << local;
  EXPECT_NE(status_line(run_stacklab({"sweep", "--status", dir + "/out"})).find("completed 2,"),
            std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sl::testing
