// train.stop_below_unigram end to end: a run stops at the first eval at least the margin below
// its unigram loss on val, its summary says so, a sweep that extends its stage
// (`--on-change extend`) leaves it alone while it continues a run that has not escaped, and
// `train --resume` of it with a longer horizon is refused: it would stop at the same eval again,
// training nothing, and relabel the run (issue 60). A cosine stage whose decay moves with the
// horizon is not continued by the sweep either. The key is validated by name.
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

// A two-run stage in `out`: "stop" under the study's margin 0.1 (a residual stack at lr 1e-2
// escapes within a few dozen steps) and "never" under a margin no run reaches (9 nats below a
// unigram loss of 3.4); `iters` steps, evals every 5; `extra`: more JSON members for its
// overrides, each with a leading comma.
std::string write_stage(const std::string& path, const std::string& out, int iters,
                        const std::string& extra = "") {
  write_text(path, R"({"name": "stage", "base": ")" + base_config() + R"(", "out_dir": ")" + out +
                       R"(",
    "overrides": {"model.n_layer": 1, "model.n_embd": 16, "model.n_head": 2,
                  "model.block_size": 16, "train.batch_size": 4, "train.eval_interval": 5,
                  "train.eval_iters": 2, "train.ckpt_interval": 50, "train.save_best": false,
                  "log.layer_interval": 1000, "optim.learning_rate": 0.01,
                  "train.max_iters": )" +
                       std::to_string(iters) + R"(, "optim.lr_decay_iters": )" +
                       std::to_string(iters) + extra + R"(},
    "variants": [{"name": "stop", "train.stop_below_unigram": 0.1},
                 {"name": "never", "train.stop_below_unigram": 9.0}]})");
  return path;
}

// The run folder in `out` whose id ends in "-<variant>-s0".
std::string run_of(const std::string& out, const std::string& variant) {
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && name.ends_with("-" + variant + "-s0")) return e.path().string();
  }
  ADD_FAILURE() << "no run of variant " << variant << " in " << out;
  return out + "/missing";
}

TEST(StopOnEscape, ARunStopsAtTheFirstEvalTheMarginBelowItsUnigramLossOnValAndSaysSo) {
  const std::string dir = make_temp_dir("escape_stop");
  const RunResult r = run_stacklab({"sweep", write_stage(dir + "/s1.json", dir + "/out", 300)});
  ASSERT_EQ(r.exit_code, 0) << r;
  const std::string stop = run_of(dir + "/out", "stop");
  const json s = read_json(stop + "/summary.json");
  ASSERT_EQ(s.at("status"), "completed") << s.dump(2);
  ASSERT_TRUE(s.at("stopped").is_object()) << "a residual stack at lr 1e-2 escapes in 300 steps";
  const int64_t at = s.at("stopped").at("step").get<int64_t>();
  EXPECT_EQ(s.at("stopped").at("reason"), "escaped");
  EXPECT_EQ(s.at("steps"), at) << "no step is trained after the escape";
  EXPECT_LT(at, 300);
  const double uni = s.at("reference_losses").at("unigram_on_val").get<double>();
  EXPECT_DOUBLE_EQ(s.at("stopped").at("unigram_on_val").get<double>(), uni);
  EXPECT_LE(s.at("final_val_loss").get<double>(), uni - 0.1);
  // The eval it stopped at is the first to meet the rule: every eval before it is above.
  int64_t last_eval = -1;
  for (const json& rec : read_jsonl(stop + "/metrics.jsonl")) {
    if (rec.value("kind", "") != "eval") continue;
    last_eval = rec.at("step").get<int64_t>();
    if (last_eval < at) {
      EXPECT_GT(rec.at("val_loss").get<double>(), uni - 0.1) << rec.dump();
    }
  }
  EXPECT_EQ(last_eval, at) << "the last eval is the one that met the rule";
  EXPECT_TRUE(fs::exists(stop + "/checkpoints/latest.safetensors"));
  const json never = read_json(run_of(dir + "/out", "never") + "/summary.json");
  EXPECT_TRUE(never.at("stopped").is_null());
  EXPECT_EQ(never.at("steps"), 300);
  fs::remove_all(dir);
}

TEST(StopOnEscape, ASweepExtendingItsStageLeavesAnEscapedRunAloneAndContinuesTheOthers) {
  const std::string dir = make_temp_dir("escape_extend");
  ASSERT_EQ(run_stacklab({"sweep", write_stage(dir + "/s1.json", dir + "/out", 300)}).exit_code, 0);
  const std::string stop = run_of(dir + "/out", "stop"), never = run_of(dir + "/out", "never");
  const std::string before = read_text(stop + "/summary.json");
  const std::string metrics = read_text(stop + "/metrics.jsonl");
  const std::string stage2 = write_stage(dir + "/s2.json", dir + "/out", 1200);
  const RunResult status = run_stacklab({"sweep", "--status", stage2});
  EXPECT_TRUE(contains(status.out, "1 to extend") || contains(status.out, "to extend")) << status;
  const RunResult r = run_stacklab({"sweep", stage2, "--on-change", "extend"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(contains(r.out, "1 to do, 1 already done")) << r;
  EXPECT_FALSE(contains(r.out, stop + ": train.max_iters")) << "the escaped run is not continued";
  EXPECT_EQ(read_text(stop + "/summary.json"), before) << "nor touched";
  EXPECT_EQ(read_text(stop + "/metrics.jsonl"), metrics);
  EXPECT_EQ(read_json(never + "/summary.json").at("steps"), 1200) << "the other one is extended";
  const RunResult again = run_stacklab({"sweep", stage2, "--on-change", "extend"});
  EXPECT_TRUE(contains(again.out, "0 to do, 2 already done")) << again;
  fs::remove_all(dir);
}

TEST(StopOnEscape, ExtendingAnEscapedRunIsRefusedSinceItWouldStopAgainTrainingNothing) {
  const std::string dir = make_temp_dir("escape_resume");
  ASSERT_EQ(run_stacklab({"sweep", write_stage(dir + "/s1.json", dir + "/out", 300)}).exit_code, 0);
  const std::string stop = run_of(dir + "/out", "stop");
  const std::string summary = read_text(stop + "/summary.json");
  const std::string config = read_text(stop + "/config.json");
  const std::string metrics = read_text(stop + "/metrics.jsonl");
  const int64_t at = read_json(stop + "/summary.json").at("stopped").at("step").get<int64_t>();
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--train.max_iters=1200", "--optim.lr_decay_iters=1200"},
        std::vector<std::string>{"--train.max_iters=1200"}}) {
    std::vector<std::string> cmd = {"train", "--resume", stop};
    cmd.insert(cmd.end(), flags.begin(), flags.end());
    const RunResult r = run_stacklab(cmd);
    EXPECT_EQ(r.exit_code, 1) << r;
    for (const std::string& part :
         std::vector<std::string>{"stopped on its escape rule at step " + std::to_string(at),
                                  "would train nothing", "--train.stop_below_unigram=0"})
      EXPECT_TRUE(contains(r.output, part)) << "missing '" << part << "' in\n" << r;
  }
  EXPECT_EQ(read_text(stop + "/summary.json"), summary) << "the run is not relabelled";
  EXPECT_EQ(read_text(stop + "/config.json"), config);
  EXPECT_EQ(read_text(stop + "/metrics.jsonl"), metrics);
  fs::remove_all(dir);
}

// Issue 60: a cosine stage stopped on escape at step s, then "extended" with its decay moved to
// the new horizon, evaluated again, stopped at s having trained nothing, and said config 4 x H /
// 4 x H: a fresh run of that config trains steps 0..s at other rates and ends elsewhere.
TEST(StopOnEscape, ASweepMovingACosineDecayDoesNotRelabelAnEscapedRun) {
  const std::string dir = make_temp_dir("escape_cosine");
  const std::string cosine = R"(, "optim.schedule": "cosine", "optim.warmup_iters": 2)";
  ASSERT_EQ(
      run_stacklab({"sweep", write_stage(dir + "/s1.json", dir + "/out", 300, cosine)}).exit_code,
      0);
  const std::string stop = run_of(dir + "/out", "stop");
  ASSERT_TRUE(read_json(stop + "/summary.json").at("stopped").is_object());
  const std::string summary = read_text(stop + "/summary.json");
  const std::string config = read_text(stop + "/config.json");
  const RunResult r =
      run_stacklab({"sweep", write_stage(dir + "/s2.json", dir + "/out", 1200, cosine),
                    "--on-change", "extend"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, stop + ": " + stop + " stopped on its escape rule")) << r;
  EXPECT_EQ(read_text(stop + "/summary.json"), summary) << "the escaped run is left as it is";
  EXPECT_EQ(read_text(stop + "/config.json"), config);
  fs::remove_all(dir);
}

TEST(StopOnEscape, ANegativeOrAbsurdMarginIsRefusedNamingTheKey) {
  for (const char* bad : {"--train.stop_below_unigram=-0.1", "--train.stop_below_unigram=50"}) {
    const RunResult r = run_stacklab({"validate", base_config(), bad});
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_TRUE(contains(r.output, "train.stop_below_unigram")) << r;
  }
}

}  // namespace
}  // namespace sl::testing
