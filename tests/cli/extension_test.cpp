// The convergence study's extension (`train --resume DIR --train.max_iters=N
// --optim.lr_decay_iters=D`, `stacklab sweep --on-change extend`) under what ordinarily interrupts
// it: a SIGKILL at every one of its writes (STACKLAB_KILL_AFTER_WRITES, util/fsutil.h), a repeat
// of the same command (a requeued Slurm task), a copy stopped before its config.json, and
// `--status` on copies awaiting their extension. Each test failed on 5353e72.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli.h"

namespace sl::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const char* const kRun = "L1-pre-layernorm-res-s0";

// A one-run sweep in `out` trained `iters` steps with its decay at `iters`, checkpoints and
// evals every 2 steps; `extra`: more JSON members for its overrides, each with a leading comma.
std::string write_sweep(const std::string& path, const std::string& out, int iters,
                        const std::string& extra = "") {
  write_text(path, R"({"name": "t", "base": ")" + base_config() + R"(", "out_dir": ")" + out +
                       R"(",
    "overrides": {"model.n_embd": 16, "model.n_head": 2, "model.block_size": 16,
                  "train.batch_size": 4, "train.eval_interval": 2, "train.ckpt_interval": 2,
                  "train.max_iters": )" +
                       std::to_string(iters) + R"(, "optim.lr_decay_iters": )" +
                       std::to_string(iters) + extra + R"(},
    "grid": {"model.n_layer": [1]}})");
  return path;
}

std::string status_line(const RunResult& r) { return r.out.substr(0, r.out.find('\n')); }

// What must be the same, bit for bit, between two runs of one config: every record's step, kind
// and losses (a weight that differed would change the next loss).
std::vector<std::string> trajectory(const std::string& run) {
  std::vector<std::string> out;
  for (const json& r : read_jsonl(run + "/metrics.jsonl")) {
    const std::string kind = r.value("kind", "");
    if (kind != "train" && kind != "eval") continue;
    json k = {{"step", r.at("step")}, {"kind", kind}};
    for (const char* key : {"loss", "val_loss", "train_loss"})
      if (r.contains(key)) k[key] = r.at(key);
    out.push_back(k.dump());
  }
  return out;
}

// Runs `stacklab args` with STACKLAB_KILL_AFTER_WRITES=k in its environment.
RunResult run_killed_after(int k, const std::vector<std::string>& args) {
  setenv("STACKLAB_KILL_AFTER_WRITES", std::to_string(k).c_str(), 1);
  RunResult r = run_stacklab(args);
  unsetenv("STACKLAB_KILL_AFTER_WRITES");
  return r;
}

TEST(Extension, AKillAtEveryWriteLeavesARunThatNeverReadsAsDoneAndItsRepeatEndsBitIdentical) {
  const std::string dir = make_temp_dir("extend_kills");
  ASSERT_EQ(run_stacklab({"sweep", write_sweep(dir + "/short.json", dir + "/short", 6)}).exit_code,
            0);
  // The reference: the same copy extended without interruption.
  fs::copy(dir + "/short", dir + "/ref", fs::copy_options::recursive);
  const RunResult ref = run_stacklab(
      {"sweep", write_sweep(dir + "/ref.json", dir + "/ref", 12), "--on-change", "extend"});
  ASSERT_EQ(ref.exit_code, 0) << ref;
  const std::vector<std::string> want = trajectory(dir + "/ref/" + kRun);
  const json want_summary = read_json(dir + "/ref/" + std::string(kRun) + "/summary.json");
  ASSERT_EQ(want_summary.at("steps"), 12);

  int killed = 0;
  for (int k = 1; k < 100; ++k) {
    SCOPED_TRACE("killed after write " + std::to_string(k));
    const std::string out = dir + "/k" + std::to_string(k), run = out + "/" + kRun;
    fs::copy(dir + "/short", out, fs::copy_options::recursive);
    const std::string sweep = write_sweep(out + ".json", out, 12);
    const std::vector<std::string> extend = {"train", "--resume", run, "--train.max_iters=12",
                                             "--optim.lr_decay_iters=12"};
    const RunResult first = run_killed_after(k, extend);
    if (first.term_signal != SIGKILL) {  // past the extension's last write: it ran through
      ASSERT_EQ(first.exit_code, 0) << first;
      EXPECT_EQ(trajectory(run), want);
      break;
    }
    ++killed;
    const json summary = read_json(run + "/summary.json");
    const bool finished = summary.at("status") == "completed" && summary.at("steps") == 12;
    if (!finished) {
      EXPECT_NE(summary.at("status"), "completed")
          << "a stopped extension must not read as done: " << summary.dump();
      const RunResult st = run_stacklab({"sweep", "--status", sweep});
      EXPECT_FALSE(contains(status_line(st), "completed 1")) << st;
    }
    // Odd k: repeated as a requeued Slurm task repeats it; even k: the sweep run again.
    const RunResult again =
        k % 2 ? run_stacklab(extend) : run_stacklab({"sweep", sweep, "--on-change", "extend"});
    ASSERT_EQ(again.exit_code, 0) << again;
    EXPECT_EQ(read_json(run + "/summary.json").at("status"), "completed");
    EXPECT_EQ(read_json(run + "/summary.json").at("final_val_loss"),
              want_summary.at("final_val_loss"));
    EXPECT_EQ(trajectory(run), want) << "the interrupted extension ends as the uninterrupted one";
    const RunResult st = run_stacklab({"sweep", "--status", sweep});
    EXPECT_TRUE(contains(status_line(st), "completed 1")) << st;
  }
  EXPECT_GE(killed, 8) << "an extension writes its summary, config, fingerprint, metrics, "
                          "checkpoints: every one of them was a kill point";
  fs::remove_all(dir);
}

TEST(Extension, ARepeatOfAnExtensionThatAlreadyTookEffectIsAResumeNotARefusal) {
  const std::string dir = make_temp_dir("extend_repeat");
  ASSERT_EQ(run_stacklab({"sweep", write_sweep(dir + "/s.json", dir + "/out", 6)}).exit_code, 0);
  const std::string run = dir + "/out/" + kRun;
  const std::vector<std::string> extend = {"train", "--resume", run, "--train.max_iters=12",
                                           "--optim.lr_decay_iters=12"};
  ASSERT_EQ(run_stacklab(extend).exit_code, 0);
  const RunResult repeat = run_stacklab(extend);
  EXPECT_EQ(repeat.exit_code, 0) << "a requeued task repeats its command\n" << repeat;
  EXPECT_FALSE(contains(repeat.output, "keeps its schedule")) << repeat;
  const RunResult moved =
      run_stacklab({"train", "--resume", run, "--train.max_iters=12", "--optim.lr_decay_iters=9"});
  EXPECT_EQ(moved.exit_code, 1) << "another decay at the same horizon is still refused\n" << moved;
  EXPECT_TRUE(contains(moved.output, "keeps its schedule")) << moved;
  fs::remove_all(dir);
}

// Found in review: a sweep at the old horizon continued a half-started extension to the new one
// (its fingerprint still said the old horizon) and called it completed; and the leniency for a
// stale fingerprint let a config.json edited by hand pass, skipping the decay check.
TEST(Extension, AHalfStartedExtensionIsNoRunOfTheOldHorizonAndAHandEditIsNoExtension) {
  const std::string dir = make_temp_dir("extend_half");
  const std::string old_sweep = write_sweep(dir + "/s.json", dir + "/out", 6);
  ASSERT_EQ(run_stacklab({"sweep", old_sweep}).exit_code, 0);
  const std::string run = dir + "/out/" + kRun;
  fs::copy(dir + "/out", dir + "/edited", fs::copy_options::recursive);
  // Writes: the summary's "running", metrics.jsonl cut back, config.json; killed before
  // provenance.json.
  const RunResult killed = run_killed_after(
      3, {"train", "--resume", run, "--train.max_iters=12", "--optim.lr_decay_iters=12"});
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed;
  ASSERT_EQ(read_json(run + "/config.json").at("train").at("max_iters"), 12);
  const RunResult same = run_stacklab({"sweep", old_sweep});
  EXPECT_EQ(same.exit_code, 1) << "not continued to 12 and called a 6-step result\n" << same;
  EXPECT_TRUE(contains(same.output, "config.json: train.max_iters: 12 -> 6")) << same;

  // The same two files as a hand edit, with the summary still "completed" at 6: refused.
  const std::string edited = dir + "/edited/" + kRun;
  json cfg = read_json(edited + "/config.json");
  cfg["train"]["max_iters"] = 12;
  write_text(edited + "/config.json", cfg.dump(2));
  const RunResult resumed = run_stacklab({"train", "--resume", edited});
  EXPECT_EQ(resumed.exit_code, 1) << resumed;
  EXPECT_TRUE(contains(resumed.output, "cannot resume: what the run was made from has changed"))
      << resumed;
  fs::remove_all(dir);
}

TEST(Extension, ARunFolderWithoutItsConfigJsonIsNeverTakenAsDone) {
  const std::string dir = make_temp_dir("extend_noconfig");
  const std::string sweep = write_sweep(dir + "/s.json", dir + "/out", 6);
  ASSERT_EQ(run_stacklab({"sweep", sweep}).exit_code, 0);
  const std::string run = dir + "/out/" + kRun;
  fs::remove(run + "/config.json");  // as a copy stopped before it, or a file deleted by hand

  const RunResult same = run_stacklab({"sweep", sweep});
  EXPECT_EQ(same.exit_code, 1) << same;
  EXPECT_TRUE(contains(same.output, "config.json is missing")) << same;
  const RunResult st = run_stacklab({"sweep", "--status", dir + "/out"});
  EXPECT_EQ(st.exit_code, 1) << st;
  EXPECT_TRUE(contains(status_line(st), "completed 0,")) << st;

  const RunResult longer = run_stacklab(
      {"sweep", write_sweep(dir + "/l.json", dir + "/out", 12), "--on-change", "extend"});
  EXPECT_EQ(longer.exit_code, 1) << longer;
  EXPECT_TRUE(contains(longer.output, "config.json is missing, so there is no run to continue"))
      << longer;

  // A changed rate under --on-change rerun: rerun, not taken as done.
  const RunResult rerun = run_stacklab(
      {"sweep", write_sweep(dir + "/r.json", dir + "/out", 6, R"(, "optim.learning_rate": 0.002)"),
       "--on-change", "rerun"});
  ASSERT_EQ(rerun.exit_code, 0) << rerun;
  EXPECT_TRUE(fs::exists(run + ".changed-1/summary.json")) << rerun;
  EXPECT_EQ(read_json(run + "/config.json").at("optim").at("learning_rate"), 0.002);
  fs::remove_all(dir);
}

TEST(Extension, StatusListsCopiesAwaitingTheirExtensionAsToExtendNotChanged) {
  const std::string dir = make_temp_dir("extend_status");
  ASSERT_EQ(run_stacklab({"sweep", write_sweep(dir + "/s.json", dir + "/out", 6)}).exit_code, 0);
  const std::string longer = write_sweep(dir + "/l.json", dir + "/out", 12);
  const RunResult st = run_stacklab({"sweep", "--status", longer});
  EXPECT_EQ(st.exit_code, 0) << "a copy awaiting its extension is no failure\n" << st;
  EXPECT_TRUE(contains(status_line(st), "resumable 1")) << st;
  EXPECT_TRUE(contains(st.out, "to extend " + std::string(kRun) + ": train.max_iters 6 -> 12"))
      << st;
  EXPECT_TRUE(contains(st.out, "--on-change extend")) << st;
  EXPECT_FALSE(contains(st.out, "--on-change rerun")) << "rerun would throw its steps away\n" << st;

  const RunResult flag = run_stacklab({"sweep", "--status", longer, "--on-change", "extend"});
  EXPECT_EQ(flag.exit_code, 1) << "accepted and ignored before\n" << flag;
  EXPECT_TRUE(contains(flag.output, "--on-change does not apply to --status")) << flag;
  fs::remove_all(dir);
}

// Two smaller messages of the same round: a dry run's command line is one a shell can take back
// (a path with a space is quoted), and a repeated override says which value applies.
TEST(SweepDryRun, QuotesAnArgumentWithASpaceSoItsLineCanBePasted) {
  const std::string dir = make_temp_dir("dry_quote");
  const RunResult dry =
      run_stacklab({"sweep", write_sweep(dir + "/s.json", dir + "/my out", 6), "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry;
  EXPECT_TRUE(contains(dry.out, "--out '" + dir + "/my out/" + kRun + "' --force")) << dry;
  EXPECT_TRUE(contains(dry.out, "--train.threads=1 ")) << "plain words stay as they are\n" << dry;
  fs::remove_all(dir);
}

TEST(Overrides, ARepeatedOverrideSaysThatTheLastValueApplies) {
  const std::string dir = make_temp_dir("override_twice");
  const RunResult r = run_stacklab(
      concat(concat({"validate", base_config()}, tiny_model_args()), {"--train.max_iters=7"}));
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(contains(r.output,
                       "note: --train.max_iters is given more than once (--train.max_iters=40, "
                       "then --train.max_iters=7): the last one applies"))
      << r;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sl::testing
