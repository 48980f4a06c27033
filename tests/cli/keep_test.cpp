// What a finished run keeps of its checkpoints (issue 60, "What a study keeps"): train.keep_final
// ("full", the default and the old behaviour; "weights"; "none"), `stacklab prune` for runs that
// finished before, and `sweep --status` saying what a sweep holds on disk. Nothing an extension
// needs is dropped silently: a resume or extension of a pruned run is refused, saying why. Each
// test failed on ba93eca (no such key, command or line).
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/safetensors.h"
#include "support/cli.h"

namespace sl::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A 2-block run of 8 steps with best.safetensors too; `extra`: more overrides.
RunResult train_small(const std::string& out, const std::vector<std::string>& extra = {}) {
  return run_stacklab(
      concat({"train", base_config(), "--model.n_layer=2", "--model.n_embd=16", "--model.n_head=2",
              "--model.block_size=16", "--train.batch_size=4", "--train.max_iters=8",
              "--train.eval_interval=4", "--train.ckpt_interval=4", "--train.save_best=true",
              "--train.threads=1", "--out", out},
             extra));
}

// The tensor names of a checkpoint that belong to the optimizer ("optim.*").
int optimizer_tensors(const std::string& path) {
  int n = 0;
  for (const auto& [name, t] : load_safetensors(path).tensors) n += name.rfind("optim.", 0) == 0;
  return n;
}

TEST(KeepFinal, TheDefaultKeepsWeightsAndOptimizerStateAsBefore) {
  const std::string run = make_temp_dir("keep_full") + "/run";
  ASSERT_EQ(train_small(run).exit_code, 0);
  EXPECT_EQ(read_json(run + "/config.json")["train"]["keep_final"], "full");
  EXPECT_GT(optimizer_tensors(run + "/checkpoints/latest.safetensors"), 0);
  EXPECT_GT(optimizer_tensors(run + "/checkpoints/best.safetensors"), 0);
  EXPECT_FALSE(fs::exists(run + "/checkpoints/kept.json"));
}

TEST(KeepFinal, AWeightsRunKeepsWeightsThatSampleReadsAndRefusesAnExtensionSayingWhy) {
  const std::string dir = make_temp_dir("keep_weights"), full = dir + "/full", run = dir + "/w";
  ASSERT_EQ(train_small(full).exit_code, 0);
  const RunResult r = train_small(run, {"--train.keep_final=weights"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(contains(r.out, "train.keep_final \"weights\"")) << r;
  EXPECT_EQ(read_json(run + "/summary.json")["status"], "completed");
  for (const char* f : {"latest", "best"}) {
    const std::string path = run + "/checkpoints/" + f + ".safetensors";
    EXPECT_EQ(optimizer_tensors(path), 0) << path;
    EXPECT_EQ(load_safetensors(path).metadata.at("kept"), "weights");
    // AdamW's two moments per weight are gone: about a third of the full run's file is left.
    EXPECT_LT(fs::file_size(path), fs::file_size(full + "/checkpoints/" + f + ".safetensors") / 2);
  }
  EXPECT_EQ(read_json(run + "/checkpoints/kept.json")["kept"], "weights");
  const RunResult sample = run_stacklab({"sample", run, "--tokens", "5", "--seed", "1"});
  EXPECT_EQ(sample.exit_code, 0) << sample;
  // Sampled from the same weights as the full run's.
  EXPECT_EQ(sample.out, run_stacklab({"sample", full, "--tokens", "5", "--seed", "1"}).out);
  const RunResult ext =
      run_stacklab({"train", "--resume", run, "--train.max_iters=16", "--optim.lr_decay_iters=16"});
  EXPECT_EQ(ext.exit_code, 1) << ext;
  EXPECT_TRUE(contains(ext.output, "pruned to the weights alone")) << ext;
  EXPECT_TRUE(contains(ext.output, "checkpoints/kept.json")) << ext;
  EXPECT_EQ(read_json(run + "/summary.json")["status"], "completed");  // the run is untouched
  EXPECT_EQ(read_json(run + "/summary.json")["steps"], 8);
}

TEST(KeepFinal, ANoneRunKeepsNoCheckpointAndItsResumeSaysWhyNotThatAFileWasLost) {
  const std::string run = make_temp_dir("keep_none") + "/run";
  ASSERT_EQ(train_small(run, {"--train.keep_final=none"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(run + "/checkpoints/latest.safetensors"));
  EXPECT_FALSE(fs::exists(run + "/checkpoints/best.safetensors"));
  const RunResult ext =
      run_stacklab({"train", "--resume", run, "--train.max_iters=16", "--optim.lr_decay_iters=16"});
  EXPECT_EQ(ext.exit_code, 1) << ext;
  EXPECT_TRUE(contains(ext.output, "pruned to nothing (no checkpoint kept)")) << ext;
  EXPECT_FALSE(contains(ext.output, "is missing, but the run wrote it")) << ext;
}

TEST(KeepFinal, AValueNotAChoiceIsRefusedNamingTheKeyWithASuggestion) {
  const RunResult r =
      run_stacklab({"validate", base_config(), "--train.keep_final=weight", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output,
                       "train.keep_final: expected one of \"full\", \"weights\", "
                       "\"none\", got \"weight\"; did you mean 'weights'?"))
      << r;
}

// A sweep of 2 runs in `out` with `keep` as its train.keep_final.
std::string write_sweep(const std::string& path, const std::string& out, const std::string& keep) {
  write_text(path, R"({"name": "k", "base": ")" + base_config() + R"(", "out_dir": ")" + out +
                       R"(", "seeds": [0, 1],
    "overrides": {"model.n_embd": 16, "model.n_head": 2, "model.block_size": 16,
                  "train.batch_size": 2, "train.max_iters": 4, "train.eval_interval": 2,
                  "train.ckpt_interval": 0, "optim.lr_decay_iters": 4,
                  "train.keep_final": ")" +
                       keep + R"("},
    "grid": {"model.n_layer": [1]}})");
  return path;
}

TEST(KeepFinal, IsNoPartOfARunsIdentityAndStatusSaysWhatASweepHoldsOnDisk) {
  const std::string dir = make_temp_dir("keep_sweep");
  ASSERT_EQ(run_stacklab({"sweep", write_sweep(dir + "/k.json", dir + "/k", "weights")}).exit_code,
            0);
  // The same sweep keeping everything: its runs are still done, not changed.
  const RunResult dry =
      run_stacklab({"sweep", write_sweep(dir + "/k.json", dir + "/k", "full"), "--dry-run"});
  EXPECT_EQ(dry.exit_code, 0) << dry;
  EXPECT_TRUE(contains(dry.out, "(0 to do, 2 already done)")) << dry;
  const RunResult st = run_stacklab({"sweep", "--status", dir + "/k"});
  EXPECT_EQ(st.exit_code, 0) << st;
  EXPECT_TRUE(contains(st.out, "  on disk: ")) << st;
  EXPECT_TRUE(contains(st.out,
                       ": 0 runs with the optimizer state (resumable, extendable), 2 with "
                       "the weights alone"))
      << st;
}

TEST(SweepStatus, AFolderThatIsNotASweepIsNamedAndTheOthersAreStillReported) {
  const std::string dir = make_temp_dir("status_several");
  ASSERT_EQ(run_stacklab({"sweep", write_sweep(dir + "/k.json", dir + "/k", "full")}).exit_code, 0);
  fs::create_directories(dir + "/not_a_sweep");
  const RunResult st = run_stacklab({"sweep", "--status", dir + "/not_a_sweep", dir + "/k"});
  EXPECT_NE(st.exit_code, 0) << st;
  EXPECT_TRUE(contains(st.output, dir + "/not_a_sweep: not a sweep directory")) << st;
  EXPECT_TRUE(contains(st.out, "sweep k: 2 runs in " + dir + "/k")) << st;  // still reported
}

TEST(Prune, ADryRunListsWhatWouldGoAndChangesNothing) {
  const std::string dir = make_temp_dir("prune_dry"), run = dir + "/sweep/run";
  ASSERT_EQ(train_small(run).exit_code, 0);
  const uintmax_t before = fs::file_size(run + "/checkpoints/latest.safetensors");
  const RunResult r = run_stacklab({"prune", dir, "--keep", "weights", "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(contains(r.out, "would prune " + run +
                                  ": latest.safetensors without its optimizer "
                                  "state, best.safetensors without its "
                                  "optimizer state"))
      << r;
  EXPECT_TRUE(contains(r.out, "prune: 1 run would be pruned")) << r;
  EXPECT_EQ(fs::file_size(run + "/checkpoints/latest.safetensors"), before);
  EXPECT_FALSE(fs::exists(run + "/checkpoints/kept.json"));
}

TEST(Prune, WithoutKeepARunWhoseConfigKeepsTheOptimizerStateIsLeftWholeAndCounted) {
  const std::string dir = make_temp_dir("prune_own"), run = dir + "/run";
  ASSERT_EQ(train_small(run).exit_code, 0);
  const RunResult r = run_stacklab({"prune", dir});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(contains(r.out, "prune: 0 runs pruned")) << r;
  EXPECT_TRUE(
      contains(r.out, "1 finished run keeps the optimizer state (train.keep_final \"full\""))
      << r;
  EXPECT_GT(optimizer_tensors(run + "/checkpoints/latest.safetensors"), 0);
}

TEST(Prune, DroppingWhatAnExtensionNeedsIsSaidAndTheExtensionIsThenRefused) {
  const std::string dir = make_temp_dir("prune_ext");
  ASSERT_EQ(run_stacklab({"sweep", write_sweep(dir + "/k.json", dir + "/k", "full")}).exit_code, 0);
  const RunResult r = run_stacklab({"prune", dir + "/k", "--keep", "weights"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(contains(r.out,
                       "its config keeps the optimizer state for a resume or an extension "
                       "(train.keep_final \"full\"): dropped by --keep, it can no longer "
                       "be resumed or extended"))
      << r;
  EXPECT_TRUE(contains(r.out, "2 of them lose the optimizer state their config keeps")) << r;
  const std::string run = dir + "/k/L1-pre-layernorm-res-s0";
  EXPECT_EQ(optimizer_tensors(run + "/checkpoints/latest.safetensors"), 0);
  EXPECT_EQ(read_json(run + "/checkpoints/kept.json")["by"], "stacklab prune");
  // The sweep at a longer horizon: its extension of the pruned run is refused, saying why.
  std::string text = read_text(dir + "/k.json");
  for (const char* key : {"\"train.max_iters\": 4", "\"optim.lr_decay_iters\": 4"}) {
    const size_t at = text.find(key);
    ASSERT_NE(at, std::string::npos);
    text.replace(at + std::string(key).size() - 1, 1, "8");
  }
  write_text(dir + "/k8.json", text);
  const RunResult st = run_stacklab({"sweep", "--status", dir + "/k8.json"});
  EXPECT_EQ(st.exit_code, 1) << st;
  EXPECT_TRUE(contains(st.out,
                       "cannot extend L1-pre-layernorm-res-s0: its checkpoints were "
                       "pruned"))
      << st;
  EXPECT_FALSE(contains(st.out, "to extend L1-pre-layernorm-res-s0")) << st;
  const RunResult ext = run_stacklab({"sweep", dir + "/k8.json", "--on-change", "extend"});
  EXPECT_NE(ext.exit_code, 0) << ext;
  EXPECT_TRUE(contains(read_text(run + "/log.txt") + ext.output, "pruned to the weights alone"))
      << ext;
  EXPECT_EQ(read_json(run + "/summary.json")["steps"], 4);  // nothing trained, nothing relabelled
}

TEST(Prune, NoneRemovesTheCheckpointsAndUnfinishedRunsAreLeftAlone) {
  const std::string dir = make_temp_dir("prune_none"), done = dir + "/done", open = dir + "/open";
  ASSERT_EQ(train_small(done).exit_code, 0);
  ASSERT_EQ(train_small(open).exit_code, 0);
  json s = read_json(open + "/summary.json");  // as a run stopped by a signal leaves it
  s["status"] = "interrupted";
  write_text(open + "/summary.json", s.dump());
  const RunResult r = run_stacklab({"prune", dir, "--keep", "none"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_FALSE(fs::exists(done + "/checkpoints/latest.safetensors"));
  EXPECT_EQ(read_json(done + "/checkpoints/kept.json")["kept"], "none");
  EXPECT_TRUE(fs::exists(open + "/checkpoints/latest.safetensors"));
  EXPECT_TRUE(contains(r.out, "left " + open + ": not finished (summary.json says interrupted)"))
      << r;
}

TEST(Prune, KeepFullAndAMisspeltChoiceAreRefused) {
  const std::string dir = make_temp_dir("prune_bad");
  const RunResult full = run_stacklab({"prune", dir, "--keep", "full"});
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_TRUE(contains(full.output, "--keep full drops nothing")) << full;
  const RunResult typo = run_stacklab({"prune", dir, "--keep", "weigts"});
  EXPECT_EQ(typo.exit_code, 1);
  EXPECT_TRUE(contains(typo.output, "did you mean 'weights'?")) << typo;
  const RunResult empty = run_stacklab({"prune", dir});
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_TRUE(contains(empty.output, "holds no run directory")) << empty;
}

}  // namespace
}  // namespace sl::testing
