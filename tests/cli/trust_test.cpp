// What a user trusts, end to end through the `stacklab` binary: a run directory holds
// the numbers of its own config (fingerprints checked by sweeps and resume), a run's config.json
// re-runs bit for bit, run names cannot escape, resume extends, best checkpoints and sampling,
// gradient accumulation, and the message of each case a user can get wrong.
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "support/cli.h"

namespace sl {
namespace {

using nlohmann::json;
using testing::base_config;
using testing::concat;
using testing::contains;
using testing::make_temp_dir;
using testing::read_json;
using testing::read_jsonl;
using testing::records_of;
using testing::run_stacklab;
using testing::tiny_model_args;
using testing::write_text;
namespace fs = std::filesystem;

// Train and eval records (the numbers a run reports), without timings.
json losses(const std::string& dir) {
  json t = json::array();
  for (const auto& r : read_jsonl(dir + "/metrics.jsonl")) {
    if (r.at("kind") == "train")
      t.push_back({r.at("step"), r.at("loss"), r.at("lr"), r.at("grad_norm")});
    if (r.at("kind") == "eval") t.push_back({r.at("step"), r.at("val_loss"), r.at("train_loss")});
  }
  return t;
}

std::vector<std::string> tiny_run(const std::string& out,
                                  const std::vector<std::string>& extra = {}) {
  return concat(concat(concat({"train", base_config()}, tiny_model_args()), {"--out", out}), extra);
}

// A sweep file in `dir` over `base` with the given overrides, training 3-step runs.
std::string write_sweep(const std::string& dir, const std::string& base, const json& overrides,
                        const json& extra = json::object()) {
  json common = {{"model.n_layer", 1},    {"model.n_head", 2},    {"model.block_size", 8},
                 {"train.batch_size", 2}, {"train.max_iters", 3}, {"train.eval_interval", 2}};
  for (const auto& [k, v] : overrides.items()) common[k] = v;
  json s = {{"name", "t"}, {"base", base}, {"out_dir", dir + "/out"}, {"overrides", common}};
  for (const auto& [k, v] : extra.items()) s[k] = v;
  write_text(dir + "/sweep.json", s.dump(2));
  return dir + "/sweep.json";
}

// ---- provenance --------------------------------------------------------------------------

TEST(Provenance, ASweepWhoseOverrideChangedDoesNotCountTheOldRunAsDone) {
  const std::string dir = make_temp_dir("prov");
  const std::string sweep = write_sweep(dir, base_config(), {{"model.n_embd", 32}});
  ASSERT_EQ(run_stacklab({"sweep", sweep}).exit_code, 0);
  write_sweep(dir, base_config(), {{"model.n_embd", 16}});
  const auto r = run_stacklab({"sweep", sweep});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, "model.n_embd: 32 -> 16")) << r;
  EXPECT_TRUE(contains(r.output, "--on-change rerun")) << r;

  const auto again = run_stacklab({"sweep", sweep, "--on-change", "rerun"});
  ASSERT_EQ(again.exit_code, 0) << again;
  const std::string run = dir + "/out/L1-pre-layernorm-res-s0";
  EXPECT_EQ(read_json(run + "/config.json").at("model").at("n_embd"), 16);
  EXPECT_EQ(read_json(run + ".changed-1/config.json").at("model").at("n_embd"), 32)
      << "the old run is kept";
  EXPECT_TRUE(contains(run_stacklab({"sweep", sweep}).output, "0 to do, 1 already done"));
}

TEST(Provenance, TurningSaveBestOffDoesNotMakeASweepsRunsChanged) {
  const std::string dir = make_temp_dir("savebest");
  const std::string sweep = write_sweep(dir, base_config(), {{"model.n_embd", 16}});
  ASSERT_EQ(run_stacklab({"sweep", sweep}).exit_code, 0);
  write_sweep(dir, base_config(), {{"model.n_embd", 16}, {"train.save_best", false}});
  const auto r = run_stacklab({"sweep", sweep});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(contains(r.output, "0 to do, 1 already done")) << r;
}

TEST(Provenance, ARunMadeBeforeAKeyExistedIsNotChanged) {
  const std::string dir = make_temp_dir("newkey");
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/a", {"--train.max_iters=4"})).exit_code, 0);
  // As written by a binary from before train.save_best and model.dropout existed.
  json p = read_json(dir + "/a/provenance.json");
  p["config"]["train"].erase("save_best");
  p["config"]["model"].erase("dropout");
  write_text(dir + "/a/provenance.json", p.dump(2));
  const auto resumed = run_stacklab({"train", "--resume", dir + "/a", "--train.max_iters=6"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_FALSE(contains(resumed.output, "changed")) << resumed;
  // A real change is still one.
  const auto changed = run_stacklab(
      {"train", "--resume", dir + "/a", "--train.max_iters=8", "--optim.learning_rate=0.5"});
  EXPECT_EQ(changed.exit_code, 1) << changed;
}

TEST(Provenance, AChangedBaseConfigIsDetectedBySweep) {
  const std::string dir = make_temp_dir("prov");
  write_text(dir + "/base.json",
             json{{"extends", base_config()}, {"optim", {{"learning_rate", 0.002}}}}.dump());
  const std::string sweep = write_sweep(dir, "base.json", json::object());
  ASSERT_EQ(run_stacklab({"sweep", sweep}).exit_code, 0);
  write_text(dir + "/base.json",
             json{{"extends", base_config()}, {"optim", {{"learning_rate", 0.003}}}}.dump());
  const auto r = run_stacklab({"sweep", sweep});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, "optim.learning_rate: 0.002 -> 0.003")) << r;
}

TEST(Provenance, AChangedDataFileIsDetectedBySweepAndByResume) {
  const std::string dir = make_temp_dir("prov");
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the cat sat on the mat. ";
  write_text(dir + "/corpus.txt", text);
  const json data = {{"data.source", "text"}, {"data.path", dir + "/corpus.txt"}};
  const std::string sweep = write_sweep(dir, base_config(), data);
  ASSERT_EQ(run_stacklab({"sweep", sweep}).exit_code, 0);
  write_text(dir + "/corpus.txt", text + "a dog ran.");
  const auto r = run_stacklab({"sweep", sweep});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, "data.file.bytes")) << r;
  const auto resume = run_stacklab(
      {"train", "--resume", dir + "/out/L1-pre-layernorm-res-s0", "--train.max_iters=5"});
  EXPECT_EQ(resume.exit_code, 1) << resume;
  EXPECT_TRUE(contains(resume.output, "cannot resume")) << resume;
  EXPECT_TRUE(contains(resume.output, "data.file.fnv1a64")) << resume;
}

// ---- re-runnable configs and contained paths ---------------------------------------------

TEST(RunConfig, ARunsConfigJsonValidatesAndRetrainsToIdenticalLosses) {
  const std::string dir = make_temp_dir("rerun");
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/a")).exit_code, 0);
  const auto v = run_stacklab({"validate", dir + "/a/config.json", "--quiet"});
  EXPECT_EQ(v.exit_code, 0) << v;
  const auto r = run_stacklab({"train", dir + "/a/config.json", "--out", dir + "/b"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(losses(dir + "/a"), losses(dir + "/b"));
  EXPECT_EQ(read_json(dir + "/a/provenance.json").at("fingerprint"),
            read_json(dir + "/b/provenance.json").at("fingerprint"));
}

TEST(RunConfig, AnEditedDerivedSectionIsAnErrorNamingIt) {
  const std::string dir = make_temp_dir("rerun");
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/a")).exit_code, 0);
  json c = read_json(dir + "/a/config.json");
  c["model"]["norm_position"] = "post";  // derived.wiring still says pre
  write_text(dir + "/edited.json", c.dump());
  const auto r = run_stacklab({"validate", dir + "/edited.json"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, dir + "/edited.json: derived.")) << r;
}

TEST(ContainedPaths, ARunNameWithDotsOrSlashesIsRefusedNamingTheKey) {
  for (const std::string bad : {"../evil", "a/b", "..", ""}) {
    const std::string cwd = make_temp_dir("paths");
    const auto r = run_stacklab(
        concat(concat({"train", base_config()}, tiny_model_args()), {"--train.name=" + bad}));
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r;
    EXPECT_TRUE(contains(r.output, "train.name")) << r;
  }
  EXPECT_FALSE(fs::exists("evil")) << "nothing was written outside runs/";
}

TEST(ContainedPaths, ASweepVariantNameThatIsNotAPlainNameOrNotAStringIsAConfigError) {
  const std::string dir = make_temp_dir("paths");
  for (const json& name : {json("../x"), json(7)}) {
    const std::string sweep =
        write_sweep(dir, base_config(), json::object(),
                    {{"variants", json::array({{{"name", name}}, {{"name", "b"}}})}});
    const auto r = run_stacklab({"sweep", sweep, "--dry-run"});
    EXPECT_EQ(r.exit_code, 1) << r;  // 7 used to exit 70, an internal error
    EXPECT_TRUE(contains(r.output, sweep + ": variants[0].name")) << r;
  }
}

// ---- resume and extend, best checkpoint, sampling ----------------------------------------

TEST(ResumeExtend, ACompletedRunExtendsToTheLossesOfALongerRun) {
  const std::string dir = make_temp_dir("extend");
  const std::vector<std::string> common = {"--train.eval_interval=10", "--log.log_interval=1"};
  ASSERT_EQ(
      run_stacklab(tiny_run(dir + "/short", concat(common, {"--train.max_iters=20"}))).exit_code,
      0);
  ASSERT_EQ(
      run_stacklab(tiny_run(dir + "/long", concat(common, {"--train.max_iters=40"}))).exit_code, 0);
  const auto r = run_stacklab({"train", "--resume", dir + "/short", "--train.max_iters=40"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(contains(r.output, "extending")) << r;
  EXPECT_EQ(read_json(dir + "/short/summary.json").at("steps"), 40);
  EXPECT_EQ(losses(dir + "/short"), losses(dir + "/long"));
  EXPECT_EQ(read_json(dir + "/short/config.json").at("train").at("max_iters"), 40);
}

TEST(ResumeExtend, OtherOverridesAreRefusedNamingThemAndThreadsMayChangeWithANote) {
  const std::string dir = make_temp_dir("extend");
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/a", {"--train.max_iters=10"})).exit_code, 0);
  const auto bad = run_stacklab({"train", "--resume", dir + "/a", "--optim.learning_rate=0.1"});
  EXPECT_EQ(bad.exit_code, 1) << bad;
  EXPECT_TRUE(contains(bad.output, "--optim.learning_rate=0.1")) << bad;
  const auto shorter = run_stacklab({"train", "--resume", dir + "/a", "--train.max_iters=5"});
  EXPECT_EQ(shorter.exit_code, 1) << shorter;
  EXPECT_TRUE(contains(shorter.output, "extended, not shortened")) << shorter;
  const auto threads =
      run_stacklab({"train", "--resume", dir + "/a", "--train.threads=2", "--train.max_iters=12"});
  EXPECT_EQ(threads.exit_code, 0) << threads;
  EXPECT_TRUE(contains(threads.output, "bit-identical")) << threads;
}

TEST(ResumeExtend, ExtendingACosineRunPastItsDecayIsRefusedUnlessTheDecayKeyIsGiven) {
  const std::string dir = make_temp_dir("extend");
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/a", {"--train.max_iters=20", "--optim.schedule=cosine",
                                               "--log.log_interval=1"}))
                .exit_code,
            0);
  const std::string before = testing::read_text(dir + "/a/metrics.jsonl");
  // The decay ended at step 20 (lr_decay_iters 0 = max_iters) with min_lr 0: every new step would
  // run at lr 0.
  const auto r = run_stacklab({"train", "--resume", dir + "/a", "--train.max_iters=30"});
  EXPECT_EQ(r.exit_code, 1) << r;
  for (const char* part : {"--train.max_iters=30", "has decayed", "optim.lr_decay_iters=20",
                           "optim.min_lr=0", "pass --optim.lr_decay_iters=20 to keep it"})
    EXPECT_TRUE(contains(r.output, part)) << "missing '" << part << "' in\n" << r;
  EXPECT_EQ(testing::read_text(dir + "/a/metrics.jsonl"), before)
      << "a refused extension leaves the run alone";
  // Its 20 steps trained under a decay to 20: a decay to 30 would give each of them another
  // rate, so config.json would name a schedule the run never trained under (issue 60).
  const auto moved = run_stacklab(
      {"train", "--resume", dir + "/a", "--train.max_iters=30", "--optim.lr_decay_iters=30"});
  EXPECT_EQ(moved.exit_code, 1) << moved;
  EXPECT_TRUE(contains(moved.output, "never trained under")) << moved;
  EXPECT_EQ(testing::read_text(dir + "/a/metrics.jsonl"), before);
  // Keeping the decay where it is, on purpose: the new steps run at min_lr.
  const auto kept = run_stacklab(
      {"train", "--resume", dir + "/a", "--train.max_iters=35", "--optim.lr_decay_iters=20"});
  EXPECT_EQ(kept.exit_code, 0) << kept;
  // The decay moves only with an extension.
  const auto alone = run_stacklab({"train", "--resume", dir + "/a", "--optim.lr_decay_iters=50"});
  EXPECT_EQ(alone.exit_code, 1) << alone;
  EXPECT_TRUE(contains(alone.output, "only with an extension")) << alone;
  // A run that trained only its warm-up keeps every rate it trained at under a longer decay: the
  // decay moves with the extension and trains the new steps.
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/w", {"--train.max_iters=20", "--optim.schedule=cosine",
                                               "--optim.warmup_iters=20", "--log.log_interval=1"}))
                .exit_code,
            0);
  const auto warm = run_stacklab(
      {"train", "--resume", dir + "/w", "--train.max_iters=30", "--optim.lr_decay_iters=30"});
  ASSERT_EQ(warm.exit_code, 0) << warm;
  EXPECT_EQ(read_json(dir + "/w/config.json").at("optim").at("lr_decay_iters"), 30);
  for (const auto& rec : read_jsonl(dir + "/w/metrics.jsonl")) {
    if (rec.at("kind") == "train" && rec.at("step").get<int>() >= 20) {
      EXPECT_GT(rec.at("lr").get<double>(), 0.0)
          << "the extended decay trains the new steps: " << rec;
    }
  }
  // A constant schedule extends as before.
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/c", {"--train.max_iters=20"})).exit_code, 0);
  EXPECT_EQ(run_stacklab({"train", "--resume", dir + "/c", "--train.max_iters=30"}).exit_code, 0);
}

TEST(BestCheckpoint, IsWrittenAndSampleCanChooseItAndStreamSeveralSamples) {
  const std::string dir = make_temp_dir("best");
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/a", {"--train.eval_interval=10"})).exit_code, 0);
  ASSERT_TRUE(fs::exists(dir + "/a/checkpoints/best.safetensors"));
  const auto r = run_stacklab(
      {"sample", dir + "/a", "--checkpoint", "best", "--num-samples", "2", "--tokens", "5"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(contains(r.out, "\n---\n")) << r;
  const auto missing =
      run_stacklab({"sample", dir + "/a", "--checkpoint", dir + "/nope.safetensors"});
  EXPECT_EQ(missing.exit_code, 1) << missing;
  EXPECT_TRUE(contains(missing.output, "nope.safetensors not found")) << missing;
}

TEST(BestCheckpoint, IsNotWrittenWithSaveBestOffAndTheRunIsOtherwiseTheSame) {
  const std::string dir = make_temp_dir("nobest");
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/on", {"--train.eval_interval=10"})).exit_code, 0);
  ASSERT_EQ(
      run_stacklab(tiny_run(dir + "/off", {"--train.eval_interval=10", "--train.save_best=false"}))
          .exit_code,
      0);
  EXPECT_TRUE(fs::exists(dir + "/on/checkpoints/best.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/off/checkpoints/best.safetensors"));
  EXPECT_TRUE(fs::exists(dir + "/off/checkpoints/latest.safetensors"));
  const auto summary = [&](const std::string& run) {
    return read_json(dir + "/" + run + "/summary.json");
  };
  EXPECT_EQ(summary("on")["best_val_loss"], summary("off")["best_val_loss"]);
  EXPECT_EQ(summary("on")["final_val_loss"], summary("off")["final_val_loss"]);
}

// ---- gradient accumulation ---------------------------------------------------------------

TEST(GradAccum, TwoMicroBatchesGiveTheUpdateOfOneBatchOfTwiceTheSize) {
  const std::string dir = make_temp_dir("accum");
  const std::vector<std::string> common = {"--train.max_iters=3", "--train.eval_interval=1",
                                           "--log.log_interval=1"};
  ASSERT_EQ(
      run_stacklab(tiny_run(dir + "/one", concat(common, {"--train.batch_size=8"}))).exit_code, 0);
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/two", concat(common, {"--train.batch_size=4",
                                                                "--train.grad_accum_steps=2"})))
                .exit_code,
            0);
  const auto a = records_of(read_jsonl(dir + "/one/metrics.jsonl"), "train");
  const auto b = records_of(read_jsonl(dir + "/two/metrics.jsonl"), "train");
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i].at("loss").get<double>(), b[i].at("loss").get<double>(), 1e-5) << "step " << i;
    EXPECT_NEAR(a[i].at("grad_norm").get<double>(), b[i].at("grad_norm").get<double>(), 1e-4)
        << "step " << i;
  }
  // Not the same as one batch of 4: the test can fail.
  ASSERT_EQ(
      run_stacklab(tiny_run(dir + "/four", concat(common, {"--train.batch_size=4"}))).exit_code, 0);
  const auto c = records_of(read_jsonl(dir + "/four/metrics.jsonl"), "train");
  EXPECT_GT(std::abs(a[0].at("loss").get<double>() - c[0].at("loss").get<double>()), 1e-4);
}

// ---- dropout -------------------------------------------------------------------------

TEST(DropoutRun, IsSeededOffInEvalAndResumesToTheSameLosses) {
  const std::string dir = make_temp_dir("drop");
  const std::vector<std::string> common = {"--train.eval_interval=10", "--log.log_interval=1",
                                           "--train.max_iters=40"};
  const auto drop = concat(common, {"--model.dropout=0.2"});
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/a", drop)).exit_code, 0);
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/b", drop)).exit_code, 0);
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/none", common)).exit_code, 0);
  EXPECT_EQ(losses(dir + "/a"), losses(dir + "/b")) << "seeded from train.seed: deterministic";
  const auto ea = records_of(read_jsonl(dir + "/a/metrics.jsonl"), "eval");
  const auto en = records_of(read_jsonl(dir + "/none/metrics.jsonl"), "eval");
  EXPECT_EQ(ea.at(0).at("val_loss"), en.at(0).at("val_loss"))
      << "no dropout in eval: step 0 is the same model";
  const auto ta = records_of(read_jsonl(dir + "/a/metrics.jsonl"), "train");
  const auto tn = records_of(read_jsonl(dir + "/none/metrics.jsonl"), "train");
  EXPECT_NE(ta.at(0).at("loss"), tn.at(0).at("loss")) << "dropout is on in training";
  // Stopped at 20 and extended to 40: the dropout masks continue where they were.
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/c", concat(drop, {"--train.max_iters=20"}))).exit_code,
            0);
  ASSERT_EQ(run_stacklab({"train", "--resume", dir + "/c", "--train.max_iters=40"}).exit_code, 0);
  EXPECT_EQ(losses(dir + "/c"), losses(dir + "/a"));
}

// ---- messages ----------------------------------------------------------------------------

TEST(Messages, AnInterruptedRunReportsItsLastEvalWithItsStepAndOneStepCount) {
  const std::string dir = make_temp_dir("intr");
  testing::Child child(
      tiny_run(dir + "/a", {"--train.max_iters=100000", "--train.eval_interval=100000"}));
  ASSERT_TRUE(testing::wait_until([&] { return fs::exists(dir + "/a/summary.json"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  child.signal(SIGINT);
  const auto r = child.wait();
  ASSERT_EQ(r.exit_code, 130) << r;
  const json s = read_json(dir + "/a/summary.json");
  const int64_t n = s.at("steps").get<int64_t>();  // a slow (sanitized) build may stop after 1 step
  const std::string steps = n == 1 ? "after 1 step" : "after " + std::to_string(n) + " steps";
  EXPECT_TRUE(contains(r.output, steps)) << r;
  EXPECT_TRUE(contains(r.output, "at step 0")) << "the val loss is from step 0's eval: " << r;
  EXPECT_FALSE(contains(r.output, "after step")) << r;
}

TEST(Messages, SweepErrorsNameTheSweepFile) {
  const std::string dir = make_temp_dir("msg");
  const std::string typo =
      write_sweep(dir, base_config(), json::object(), {{"grid", {{"model.n_layr", {1, 2}}}}});
  auto r = run_stacklab({"sweep", typo, "--dry-run"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, typo + ": grid")) << r;
  EXPECT_TRUE(contains(r.output, "did you mean 'n_layer'")) << r;
  const std::string twice =
      write_sweep(dir, base_config(), json::object(), {{"grid", {{"model.n_layer", {1, 1}}}}});
  r = run_stacklab({"sweep", twice, "--dry-run"});
  EXPECT_TRUE(contains(r.output, "grid.model.n_layer: the value 1 appears twice")) << r;
  const std::string nobase = write_sweep(dir, "missing.json", json::object());
  r = run_stacklab({"sweep", nobase, "--dry-run"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, nobase + ": base: config file")) << r;
}

TEST(Messages, ConfigAndFileErrorsNameTheRightKeyAndSayWhatIsWrong) {
  auto r = run_stacklab(concat(tiny_run(make_temp_dir("msg") + "/a"), {"--model.vocab_size=1"}));
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, "model.vocab_size")) << r;
  EXPECT_FALSE(contains(r.output, "data.vocab_size")) << r;
  r = run_stacklab(
      concat(tiny_run(make_temp_dir("msg") + "/a"), {"--data.source=text", "--data.path=/tmp"}));
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, "is a directory")) << r;
}

TEST(Messages, FlagsAndCommandsGetTheNearestValidOneAndNoDoubledPrefix) {
  auto r = run_stacklab(concat(tiny_run(make_temp_dir("msg") + "/a"), {"--force=1"}));
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, "--force is a switch and takes no value")) << r;
  r = run_stacklab({"trian"});
  EXPECT_TRUE(contains(r.output, "did you mean 'train'")) << r;
  r = run_stacklab({"sample", "x", "--tokns", "3"});
  EXPECT_TRUE(contains(r.output, "did you mean --tokens")) << r;
  r = run_stacklab({"bench", base_config(), "--steps", "0"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_FALSE(contains(r.output, "error: stacklab bench:")) << r;
  r = run_stacklab({"toyblock", "--x", "1"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(r.out.empty()) << "nothing on stdout before the error: " << r;
}

TEST(Messages, EverySubcommandsHelpListsItsFlagsWithDefaults) {
  for (const char* cmd :
       {"train", "sample", "probe", "bench", "sweep", "validate", "toyblock", "gradients"}) {
    const auto r = run_stacklab({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_TRUE(contains(r.out, "flags:")) << r;
    EXPECT_TRUE(contains(r.out, "default") || contains(r.out, "required")) << r;
  }
  EXPECT_TRUE(contains(run_stacklab({"sample", "--help"}).out,
                       "--tokens N             tokens to generate per sample (default: 200)"));
}

TEST(Messages, EveryFlagACommandAcceptsIsInItsHelp) {
  for (const std::string cmd : {"train", "sample", "probe", "bench", "sweep", "validate",
                                "toyblock", "gradients", "registry"}) {
    const std::string help = run_stacklab({cmd, "--help"}).out;
    const std::string err =
        run_stacklab({cmd, "--zzzz"}).output;  // "unknown flag --zzzz; valid flags: --a --b"
    const size_t at = err.find("valid flags:");
    ASSERT_NE(at, std::string::npos) << cmd << ": " << err;
    std::istringstream in(err.substr(at + 12));
    std::string flag;
    int n = 0;
    while (in >> flag && flag.rfind("--", 0) == 0 && flag.find('.') == std::string::npos) {
      EXPECT_TRUE(contains(help, "  " + flag + " "))
          << cmd << " --help does not list " << flag << ":\n"
          << help;
      ++n;
    }
    EXPECT_GT(n, 0) << cmd;
  }
}

TEST(Messages, AVocabularyFileWithANumberForItsFormatIsABadFileNotABug) {
  const std::string dir = make_temp_dir("vocab");
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the cat sat on the mat. ";
  write_text(dir + "/corpus.txt", text);
  ASSERT_EQ(
      run_stacklab(tiny_run(dir + "/a", {"--data.source=text", "--data.path=" + dir + "/corpus.txt",
                                         "--train.max_iters=2"}))
          .exit_code,
      0);
  write_text(dir + "/a/vocab.json", "{\"format\": 6666666666666666666}");
  const auto r = run_stacklab({"sample", dir + "/a", "--tokens", "3"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, dir + "/a/vocab.json': field 'format' must be a string")) << r;
}

TEST(Messages, CountsAreGrammaticalAndProbeTablesNumberBlocksFromZero) {
  const std::string dir = make_temp_dir("msg");
  const std::string sweep = write_sweep(dir, base_config(), json::object());
  auto r = run_stacklab({"sweep", sweep, "--dry-run"});
  EXPECT_TRUE(contains(r.output, "1 train run (1 to do")) << r;
  r = run_stacklab({"probe", base_config(), "--seeds", "0", "--model.n_layer=2",
                    "--model.n_embd=16", "--model.n_head=2", "--model.block_size=8",
                    "--train.batch_size=2", "--train.threads=1"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(contains(r.output, "probe over 1 seed:")) << r;
  EXPECT_TRUE(contains(r.output, "first / last block (0 / 1)")) << r;
  EXPECT_TRUE(contains(r.output, "\n     0 ")) << "the first table row is block 0: " << r;
}

TEST(Messages, TheDataReadmeCommandRuns) {
  const std::string readme = testing::read_text(testing::kSourceDir + "/data/README.md");
  const size_t at = readme.find("build/stacklab train ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_TRUE(contains(readme.substr(at, 80), "configs/")) << "the command names a CONFIG";
  const std::string dir = make_temp_dir("readme");
  const auto r = run_stacklab(
      concat({"train", testing::kSourceDir + "/configs/quickstart.json", "--data.source=text",
              "--data.path=" + testing::kSourceDir + "/data/corpus.txt", "--data.val_fraction=0.1",
              "--train.max_iters=1", "--train.threads=1", "--out", dir + "/a"},
             {}));
  EXPECT_EQ(r.exit_code, 0) << r;
}

// ---- the numeric path and the bench ceiling ----------------------------------------------

TEST(NumericPath, TheStartRecordNamesTheMatrixPathTheOpenBlasKernelsTheVectorLoopsAndTheThreads) {
  const std::string dir = make_temp_dir("numeric");
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/a", {"--train.threads=1"})).exit_code, 0);
  const json start = read_jsonl(dir + "/a/metrics.jsonl").at(0);
  ASSERT_EQ(start.at("kind"), "start");
  const json& path = start.at("numeric_path");
  EXPECT_TRUE(path.at("matmul") == "OpenBLAS" ||
              contains(path.at("matmul").get<std::string>(), "libxsmm"))
      << path;
  EXPECT_FALSE(path.at("openblas_core").get<std::string>().empty()) << path;
  EXPECT_FALSE(path.at("vector_loops").get<std::string>().empty()) << path;
  EXPECT_EQ(path.at("threads"), 1) << path;
  const auto version = run_stacklab({"--version"});
  ASSERT_EQ(version.exit_code, 0) << version;
  EXPECT_TRUE(
      contains(version.out, "matrix products: " + path.at("matmul").get<std::string>() + "\n"))
      << version;
  EXPECT_TRUE(contains(version.out,
                       "OpenBLAS kernels: " + path.at("openblas_core").get<std::string>() + "\n"))
      << version;
}

TEST(Bench, ReportsTheSgemmCeilingOfEachRoundAndTheStepOverCeilingRatio) {
  const auto r = run_stacklab(
      concat(concat({"bench", base_config()}, tiny_model_args()),
             {"--steps", "4", "--warmup", "1", "--rounds", "2", "--threads", "1", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("ceiling_rounds"), 2) << j;
  ASSERT_GT(j.at("ceiling_gflops").get<double>(), 0.0) << j;
  EXPECT_NEAR(j.at("ceiling_ratio").get<double>(),
              j.at("gflops").get<double>() / j.at("ceiling_gflops").get<double>(), 1e-9);
  EXPECT_EQ(j.contains("ceiling_build_gflops"),
            contains(j.at("numeric_path").at("matmul").get<std::string>(), "libxsmm"));
  const auto none =
      run_stacklab(concat(concat({"bench", base_config()}, tiny_model_args()),
                          {"--steps", "2", "--warmup", "0", "--no-ceiling", "--json"}));
  ASSERT_EQ(none.exit_code, 0) << none;
  EXPECT_FALSE(json::parse(none.out).contains("ceiling_gflops")) << none;
  const auto bad = run_stacklab({"bench", base_config(), "--rounds", "0"});
  EXPECT_EQ(bad.exit_code, 1) << bad;
  EXPECT_TRUE(contains(bad.output, "--rounds: expected an integer from 1 to")) << bad;
}

}  // namespace
}  // namespace sl
