// No silent wrong result from the CLI: `sample` refuses weights trained with another config,
// a flag never swallows the next flag as its value, `--resume` refuses `--out` and `--force`,
// a run that lost its checkpoint is not trained again, `--force` starts a directory clean,
// any run file makes a directory hold a run, a closed stdout stops a run cleanly, a run name is
// bounded, errors name their file, and `--out` is what config.json records. Each test names the
// behaviour it pins; each failed before it was fixed.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli.h"

namespace sl {
namespace {

using json = nlohmann::json;
using testing::base_config;
using testing::concat;
using testing::make_temp_dir;
using testing::read_json;
using testing::read_text;
using testing::run_stacklab;
using testing::RunResult;
using testing::tiny_model_args;
using testing::write_text;
namespace fs = std::filesystem;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// `stacklab train base.json tiny... extra... --out OUT`, expected to succeed.
void train_ok(const std::string& out, const std::vector<std::string>& extra = {}) {
  const RunResult r = run_stacklab(
      concat(concat(concat({"train", base_config()}, tiny_model_args()), extra), {"--out", out}));
  ASSERT_EQ(r.exit_code, 0) << r;
}

// Exit 1 with every part in the output.
void expect_error(const RunResult& r, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.exit_code, 1) << r;
  for (const auto& p : parts) EXPECT_TRUE(contains(r.output, p)) << "missing '" << p << "':\n" << r;
}

// ---- sample: the checkpoint's config is the run's ----------------------------------------------

TEST(SampleConfig, ACheckpointOfAnotherWiringIsRefusedNamingTheKey) {
  // Post-norm weights of the same shapes used to run through the pre-norm run's blocks, exit 0.
  const std::string root = make_temp_dir("honest");
  train_ok(root + "/pre");
  train_ok(root + "/post", {"--model.norm_position=post"});
  const RunResult r =
      run_stacklab({"sample", root + "/pre", "--checkpoint",
                    root + "/post/checkpoints/latest.safetensors", "--tokens", "5"});
  expect_error(r, {"stacklab sample: error:", "post/checkpoints/latest.safetensors",
                   "'model.norm_position'", root + "/pre/config.json"});
}

TEST(SampleConfig, ARunWhoseConfigJsonWasEditedIsRefusedNamingEveryEditedKey) {
  // An edited activation used to sample other tokens with exit 0, while --resume refused it.
  const std::string run = make_temp_dir("honest") + "/run";
  train_ok(run);
  json cfg = read_json(run + "/config.json");
  cfg["model"]["activation"] = "relu";
  cfg["model"]["norm_eps"] = 1e-3;
  cfg.erase("derived");
  write_text(run + "/config.json", cfg.dump(2));
  const RunResult r = run_stacklab({"sample", run, "--tokens", "5"});
  expect_error(r, {"'model.activation'", "'model.norm_eps'", "written with a different config"});
}

TEST(SampleConfig, ACheckpointFromBeforeAnExtensionStillSamples) {
  // What a resume may change (max_iters, lr_decay_iters, threads) is not a different model.
  const std::string root = make_temp_dir("honest");
  train_ok(root + "/run");
  fs::copy_file(root + "/run/checkpoints/latest.safetensors", root + "/before.safetensors");
  const RunResult ext = run_stacklab(
      {"train", "--resume", root + "/run", "--train.max_iters=50", "--optim.lr_decay_iters=50"});
  ASSERT_EQ(ext.exit_code, 0) << ext;
  const RunResult r = run_stacklab(
      {"sample", root + "/run", "--checkpoint", root + "/before.safetensors", "--tokens", "5"});
  EXPECT_EQ(r.exit_code, 0) << r;
}

// ---- flags: a value never starts with "--" -----------------------------------------------------

TEST(FlagValues, AFlagFollowedByAFlagIsRefusedNamingTheFlagWithoutAValueInEverySubcommand) {
  // `train CONFIG --out --train.max_iters=2` used to train the full run into "--train.max_iters=2".
  const std::string run = make_temp_dir("honest") + "/run";
  train_ok(run);
  const RunResult train =
      run_stacklab({"train", base_config(), "--out", "--train.max_iters=2", "--train.threads=1"});
  expect_error(train, {"stacklab train: error: --out needs a value", "'--train.max_iters=2'"});
  EXPECT_FALSE(fs::exists("--train.max_iters=2"));
  expect_error(run_stacklab({"sample", run, "--seed", "--tokens", "3"}),
               {"stacklab sample: error: --seed needs a value", "'--tokens'"});
  expect_error(run_stacklab({"probe", base_config(), "--out", "--seeds", "0"}),
               {"stacklab probe: error: --out needs a value", "'--seeds'"});
  expect_error(run_stacklab({"probe", base_config(), "--out=--seeds"}),
               {"--out needs a value", "'--seeds'"});
  expect_error(run_stacklab({"sweep", "x.json", "--jobs", "--dry-run"}),
               {"--jobs needs a value", "'--dry-run'"});
  expect_error(run_stacklab({"train", "--resume", "--force"}), {"--resume needs a value"});
}

TEST(FlagValues, NegativeNumbersAndSbatchOptionsAreStillValues) {
  const RunResult neg = run_stacklab({"toyblock", "--x", "-1,2", "--strength", "-0.5"});
  EXPECT_EQ(neg.exit_code, 0) << neg;
  // --slurm-extra passes sbatch's own options; only this command's flags are refused there.
  const RunResult extra = run_stacklab(
      {"sweep", "no_such_sweep.json", "--executor", "slurm", "--slurm-extra", "--hold"});
  EXPECT_EQ(extra.exit_code, 1) << extra;
  EXPECT_FALSE(contains(extra.output, "needs a value")) << extra;
  EXPECT_TRUE(contains(extra.output, "no_such_sweep.json")) << extra;
  expect_error(run_stacklab({"sweep", "x.json", "--executor", "slurm", "--slurm-extra", "--wait"}),
               {"--slurm-extra needs a value", "'--wait'"});
}

// ---- train --resume ----------------------------------------------------------------------------

TEST(ResumeFlags, OutAndForceAreRefusedWithResumeAndTheRunIsUntouched) {
  // Both used to exit 0 and be ignored: resumed in place, not started over.
  const std::string root = make_temp_dir("honest");
  train_ok(root + "/run");
  const std::string metrics = read_text(root + "/run/metrics.jsonl");
  expect_error(run_stacklab({"train", "--resume", root + "/run", "--out", root + "/elsewhere"}),
               {"--out is not accepted with --resume"});
  expect_error(run_stacklab({"train", "--resume", root + "/run", "--force"}),
               {"--force is not accepted with --resume"});
  EXPECT_FALSE(fs::exists(root + "/elsewhere"));
  EXPECT_EQ(read_text(root + "/run/metrics.jsonl"), metrics);
}

TEST(ResumeLostCheckpoint, ACompletedRunWithoutItsCheckpointIsRefusedNotTrainedAgain) {
  // Used to say "no checkpoint yet ...; starting from step 0", cut the metrics and train again.
  const std::string run = make_temp_dir("honest") + "/run";
  train_ok(run, {"--train.ckpt_interval=20"});
  fs::remove(run + "/checkpoints/latest.safetensors");
  const std::string metrics = read_text(run + "/metrics.jsonl");
  expect_error(run_stacklab({"train", "--resume", run, "--train.max_iters=60"}),
               {"latest.safetensors is missing", "summary.json says completed"});
  EXPECT_EQ(read_text(run + "/metrics.jsonl"), metrics);
  // Without its summary, the log past the first checkpoint step says the same.
  fs::remove(run + "/summary.json");
  expect_error(
      run_stacklab({"train", "--resume", run, "--train.max_iters=60"}),
      {"latest.safetensors is missing", "past the first checkpoint", "train.ckpt_interval=20"});
  EXPECT_EQ(read_text(run + "/metrics.jsonl"), metrics);
}

// ---- train into a directory that holds a run ---------------------------------------------------

TEST(RunDirectory, ForceRemovesEveryFileOfTheOldRunAndSaysWhich) {
  // Plots, metrics.jsonl.damaged and a text run's vocab.json used to stay beside the new run.
  const std::string run = make_temp_dir("honest") + "/run";
  train_ok(run);
  fs::create_directories(run + "/plots");
  write_text(run + "/plots/loss.png", "old");
  write_text(run + "/metrics.jsonl.damaged", "old");
  write_text(run + "/vocab.json", "{}");
  write_text(run + "/notes.txt", "mine");
  const RunResult r = run_stacklab(
      concat(concat({"train", base_config()}, tiny_model_args()), {"--out", run, "--force"}));
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(contains(r.output,
                       "note: --force: removed config.json, metrics.jsonl, "
                       "metrics.jsonl.damaged, summary.json, provenance.json, "
                       "vocab.json, checkpoints, plots from " +
                           run))
      << r;
  EXPECT_FALSE(fs::exists(run + "/plots"));
  EXPECT_FALSE(fs::exists(run + "/metrics.jsonl.damaged"));
  EXPECT_FALSE(fs::exists(run + "/vocab.json")) << "a Markov run has no vocabulary";
  EXPECT_EQ(read_text(run + "/notes.txt"), "mine") << "files a run does not write are left alone";
}

TEST(RunDirectory, AnyRunFileMakesADirectoryHoldARun) {
  // A user's own config.json or summary.json without metrics.jsonl used to be overwritten.
  for (const std::string file : {"config.json", "summary.json"}) {
    const std::string dir = make_temp_dir("honest");
    write_text(dir + "/" + file, "{\"mine\": 1}");
    const RunResult r =
        run_stacklab(concat(concat({"train", base_config()}, tiny_model_args()), {"--out", dir}));
    expect_error(r, {dir + " already holds a run (" + file + ")", "--force"});
    EXPECT_EQ(read_text(dir + "/" + file), "{\"mine\": 1}");
  }
}

// ---- a closed stdout ---------------------------------------------------------------------------

TEST(ClosedStdout, TrainPipedIntoHeadStopsLikeSigintWithACheckpointAndAnInterruptedSummary) {
  // `stacklab train ... | head` used to die of SIGPIPE: no checkpoint, summary left at running.
  const std::string root = make_temp_dir("honest");
  const std::string run = root + "/run";
  std::string cmd = "{ '" + testing::kStacklab + "' train '" + base_config() + "'";
  for (const auto& a : tiny_model_args()) cmd += " '" + a + "'";
  cmd += " --train.max_iters=1000000 --log.log_interval=1 --out '" + run + "'; echo $? > '" + root +
         "/rc'; } | head -1 > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;  // the pipeline's status: head's
  EXPECT_EQ(read_text(root + "/rc"), "141\n");
  const json s = read_json(run + "/summary.json");
  EXPECT_EQ(s.at("status"), "interrupted") << s;
  EXPECT_LT(s.at("steps").get<int64_t>(), 1000000);
  EXPECT_TRUE(fs::exists(run + "/checkpoints/latest.safetensors"));
}

// ---- names, files and --out --------------------------------------------------------------------

TEST(RunNames, ALongTrainNameIsRefusedByValidateWithAShortMessage) {
  // 5000 characters used to pass validate and fail train with a 5000-character message.
  const RunResult r = run_stacklab(
      {"validate", base_config(), "--train.name=" + std::string(5000, 'x'), "--quiet"});
  expect_error(r, {"train.name", "is 5000 characters long (at most 200)", base_config()});
  EXPECT_LT(r.output.size(), 600u) << r;
}

TEST(RunNames, AMarkovVocabularyOfOneNamesTheConfigFile) {
  expect_error(run_stacklab({"validate", base_config(), "--model.vocab_size=1"}),
               {base_config(), "model.vocab_size", "2 to 1024"});
  expect_error(
      run_stacklab({"validate", base_config(), "--model.vocab_size=1024", "--data.order=3"}),
      {base_config(), "model.vocab_size", "V^(order+1) = 1099511627776"});
}

TEST(RunNames, ARunWrittenWithOutRecordsItsDirectoryAndNameAndResumesExactly) {
  // config.json used to say out_dir "runs" and name "base" whatever --out said.
  const std::string root = make_temp_dir("honest");
  train_ok(root + "/mine/");
  const json cfg = read_json(root + "/mine/config.json");
  EXPECT_EQ(cfg.at("train").at("name"), "mine");
  EXPECT_EQ(cfg.at("train").at("out_dir"), root);
  const RunResult ext = run_stacklab({"train", "--resume", root + "/mine", "--train.max_iters=50"});
  ASSERT_EQ(ext.exit_code, 0) << ext;
  EXPECT_EQ(read_json(root + "/mine/config.json").at("train").at("name"), "mine");
}

// ---- docs/usage.md says what the commands print ------------------------------------------------

std::string usage_md() { return read_text(testing::kSourceDir + "/docs/usage.md"); }

TEST(DocsAgree, ValidateQuietPrintsTheThreeLinesUsageMdDescribes) {
  // usage.md used to say "only the one-line summary"; it prints three lines.
  const RunResult r = run_stacklab({"validate", base_config(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out, "") << "nothing on stdout";
  EXPECT_EQ(r.output.rfind("model: ", 0), 0u) << r;
  EXPECT_TRUE(contains(r.output, "\nblock: ")) << r;
  EXPECT_TRUE(contains(r.output, "\n" + base_config() + ": ok\n")) << r;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 3) << r;
  EXPECT_TRUE(contains(usage_md(), "prints only the three lines always printed to stderr"));
  EXPECT_FALSE(contains(usage_md(), "one-line summary"));
}

TEST(DocsAgree, ATextRunSamplesWithoutTheBarUsageMdGivesMarkovRuns) {
  // usage.md used to say every sample prints "PROMPT | generated tokens".
  const std::string root = make_temp_dir("honest");
  std::string text;
  for (int i = 0; i < 60; ++i) text += "the quick brown fox jumps over the lazy dog. ";
  write_text(root + "/text.txt", text);
  train_ok(root + "/run", {"--data.source=text", "--data.path=" + root + "/text.txt"});
  const RunResult r = run_stacklab({"sample", root + "/run", "--prompt", "the", "--tokens", "8"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out.rfind("the", 0), 0u) << r;
  EXPECT_FALSE(contains(r.out, " | ")) << r;
  EXPECT_TRUE(
      contains(usage_md(), "a text run prints the prompt followed by the\n  generated text"));
}

}  // namespace
}  // namespace sl
