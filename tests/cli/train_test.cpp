// `stacklab train` end to end on tiny models: the files of a run directory; every metrics.jsonl
// record and summary.json holds exactly the keys, of the types, that the record schema
// (`stacklab registry --records --json`) declares; divergence (exit 3); refusing to overwrite a
// run; text data (vocab.json, vocab_size from the corpus, and the errors for an empty or non-UTF-8
// file). Stopping and resuming are in train_resume_test.cpp.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "config/config.h"
#include "nn/model.h"
#include "support/cli.h"
#include "train/layer_stats.h"

namespace sl {
namespace {

using nlohmann::json;
using testing::base_config;
using testing::concat;
using testing::make_temp_dir;
using testing::read_json;
using testing::read_jsonl;
using testing::records_of;
using testing::run_stacklab;
using testing::tiny_model_args;
namespace fs = std::filesystem;

std::vector<int64_t> steps_of(const std::vector<json>& records) {
  std::vector<int64_t> s;
  for (const auto& r : records) s.push_back(r.at("step").get<int64_t>());
  return s;
}

void expect_numbers(const json& array, size_t n, const std::string& what) {
  ASSERT_TRUE(array.is_array()) << what << ": " << array;
  EXPECT_EQ(array.size(), n) << what;
  for (const auto& v : array) EXPECT_TRUE(v.is_number()) << what << ": " << array;
}

// The record schema as the binary declares it (`stacklab registry --records --json`).
const json& record_schema() {
  static const json schema = [] {
    const auto r = run_stacklab({"registry", "--records", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r;
    return json::parse(r.out);
  }();
  return schema;
}

// Whether `v` has the declared type, spelled "int", "number|null", ...
bool has_type(const json& v, const std::string& type) {
  std::stringstream alternatives(type);
  std::string t;
  while (std::getline(alternatives, t, '|'))
    if ((t == "int" && v.is_number_integer()) || (t == "number" && v.is_number()) ||
        (t == "string" && v.is_string()) || (t == "bool" && v.is_boolean()) ||
        (t == "object" && v.is_object()) || (t == "array" && v.is_array()) ||
        (t == "null" && v.is_null()))
      return true;
  return false;
}

// `record` holds every required key of `fields`, no undeclared key, each of its declared type.
void expect_declared_keys(const json& record, const json& fields, const std::string& what) {
  std::set<std::string> declared;
  for (const auto& f : fields) {
    const std::string key = f.at("key");
    declared.insert(key);
    if (!record.contains(key)) {
      EXPECT_TRUE(f.at("optional").get<bool>()) << what << " lacks the declared key " << key;
      continue;
    }
    EXPECT_TRUE(has_type(record.at(key), f.at("type")))
        << what << " key " << key << " is not " << f.at("type") << ": " << record.at(key);
  }
  for (const auto& [key, v] : record.items())
    EXPECT_TRUE(declared.count(key)) << what << " has the undeclared key " << key;
}

// Every metrics.jsonl record of `dir` against its kind's declared fields, and summary.json.
void expect_run_matches_the_record_schema(const std::string& dir) {
  for (const auto& r : read_jsonl(dir + "/metrics.jsonl")) {
    const json* fields = nullptr;
    for (const auto& k : record_schema().at("metrics.jsonl"))
      for (const auto& name : k.at("kinds"))
        if (name == r.at("kind")) fields = &k.at("fields");
    ASSERT_NE(fields, nullptr) << "undeclared record kind: " << r;
    expect_declared_keys(r, *fields,
                         r.at("kind").get<std::string>() + " record at step " +
                             std::to_string(r.at("step").get<int64_t>()));
  }
  expect_declared_keys(read_json(dir + "/summary.json"),
                       record_schema().at("summary.json").at("fields"), "summary.json");
}

class TrainedTinyRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("train") + "/run";
    result_ = run_stacklab(concat(concat({"train", base_config()}, tiny_model_args()),
                                  {"--train.eval_interval=10", "--log.layer_interval=10",
                                   "--log.log_interval=5", "--out", dir_}));
    ASSERT_EQ(result_.exit_code, 0) << result_;
  }
  std::string dir_;
  testing::RunResult result_;
};

TEST_F(TrainedTinyRun, WritesConfigMetricsSummaryAndCheckpoint) {
  EXPECT_TRUE(fs::exists(dir_ + "/checkpoints/latest.safetensors"));
  const json cfg = read_json(dir_ + "/config.json");
  EXPECT_EQ(cfg.at("model").at("n_layer"), 2);
  ASSERT_TRUE(cfg.contains("derived"));
  EXPECT_TRUE(cfg.at("derived").is_object());
  const json summary = read_json(dir_ + "/summary.json");
  EXPECT_EQ(summary.at("status"), "completed");
  EXPECT_EQ(summary.at("steps"), 40);
  EXPECT_EQ(summary.at("diverged"), false);
  EXPECT_TRUE(summary.at("final_val_loss").is_number());
  EXPECT_NE(result_.output.find("done: completed after 40 steps"), std::string::npos) << result_;
  EXPECT_FALSE(fs::exists(dir_ + "/train.lock")) << "a run that ended releases its run directory";
}

TEST_F(TrainedTinyRun, EveryMetricsLineEndsWithANewlineAndParses) {
  const std::string text = testing::read_text(dir_ + "/metrics.jsonl");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  const auto records =
      read_jsonl(dir_ + "/metrics.jsonl");  // fails the test on a line that does not parse
  for (const auto& r : records) {
    EXPECT_TRUE(r.at("step").is_number_integer()) << r;
    EXPECT_TRUE(r.at("kind").is_string()) << r;
  }
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.front().at("kind"), "start");
  EXPECT_EQ(records_of(records, "start").size(), 1u);
  EXPECT_EQ(records.front().at("n_layer"), 2);
  EXPECT_TRUE(records.front().at("reference_losses").at("uniform").is_number());
}

TEST_F(TrainedTinyRun, EveryRecordAndTheSummaryHoldExactlyTheDeclaredKeys) {
  expect_run_matches_the_record_schema(dir_);
  const auto records = read_jsonl(dir_ + "/metrics.jsonl");
  EXPECT_EQ(steps_of(records_of(records, "train")),
            (std::vector<int64_t>{0, 5, 10, 15, 20, 25, 30, 35, 39}));
  const auto eval = records_of(records, "eval");
  EXPECT_EQ(steps_of(eval), (std::vector<int64_t>{0, 10, 20, 30, 40}));
  for (const auto& r : eval)
    for (const char* key : {"val_loss", "train_loss"})
      EXPECT_TRUE(r.at(key).is_number()) << key << " in " << r << ": a healthy run's losses";
}

TEST(RecordSchema, DeclaresEveryKindWithAMeaningForEveryKey) {
  std::set<std::string> kinds;
  for (const auto& k : record_schema().at("metrics.jsonl")) {
    for (const auto& name : k.at("kinds")) kinds.insert(name.get<std::string>());
    for (const auto& f : k.at("fields"))
      EXPECT_FALSE(f.at("meaning").get<std::string>().empty()) << f;
  }
  EXPECT_EQ(kinds,
            (std::set<std::string>{"start", "resume", "train", "eval", "layers", "diverged"}));
  for (const LayerMetric& m : layer_metrics()) {
    bool declared = false;
    for (const auto& k : record_schema().at("metrics.jsonl"))
      if (k.at("kinds").at(0) == "layers")
        for (const auto& f : k.at("fields")) declared = declared || f.at("key") == m.name;
    EXPECT_TRUE(declared) << "the layers record declares every per-layer metric: " << m.name;
  }
  EXPECT_EQ(run_stacklab({"registry", "--json"}).exit_code, 0)
      << "the wiring registries keep their own output";
  EXPECT_FALSE(json::parse(run_stacklab({"registry", "--json"}).out).contains("metrics.jsonl"));
}

TEST_F(TrainedTinyRun, LayersRecordsCoverEveryLayerBoundaryAndParameter) {
  json cfg_json = read_json(dir_ + "/config.json");
  cfg_json.erase("derived");
  const Config cfg = config_from_json(cfg_json, "config.json");
  std::set<std::string> names;
  for (const auto& p : Model(cfg.model).parameters()) names.insert(p.name);
  const size_t L = 2;

  const auto layers = records_of(read_jsonl(dir_ + "/metrics.jsonl"), "layers");
  ASSERT_EQ(steps_of(layers), (std::vector<int64_t>{0, 10, 20, 30, 39}))
      << "and one at the last step";
  EXPECT_EQ(records_of(read_jsonl(dir_ + "/metrics.jsonl"), "start").at(0).at("layer_metrics"),
            layer_metrics_json())
      << "the start record describes the layers records' keys";
  EXPECT_TRUE(layers[0].at("update_ratio").is_null()) << "no update has happened at step 0";
  for (const auto& r : layers) {
    const std::string at = "step " + std::to_string(r.at("step").get<int>());
    for (const LayerMetric& m :
         layer_metrics()) {  // every registered metric, with its documented length
      if (std::string(m.name) == "update_ratio" && r.at("step") == 0) continue;
      expect_numbers(r.at(m.name),
                     static_cast<size_t>(axis_length(m.axis, static_cast<int64_t>(L))),
                     at + " " + m.name);
    }
    std::set<std::string> logged;
    for (const auto& [name, v] : r.at("params").items()) {
      logged.insert(name);
      EXPECT_TRUE(v.is_number()) << at << " " << name;
    }
    EXPECT_EQ(logged, names) << at;
  }
}

TEST(TrainCommand, AHugeLearningRateDivergesWithExitCode3) {
  // The 4 x 64 model of base.json: at this rate its gradients overflow within a few dozen steps.
  const std::string dir = make_temp_dir("diverge") + "/run";
  const auto r = run_stacklab({"train", base_config(), "--train.max_iters=60", "--train.threads=1",
                               "--optim.learning_rate=1e4", "--out", dir});
  ASSERT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.output.find("diverged"), std::string::npos) << r;
  const json summary = read_json(dir + "/summary.json");
  EXPECT_EQ(summary.at("status"), "diverged");
  EXPECT_EQ(summary.at("diverged"), true) << summary;
  ASSERT_TRUE(summary.at("divergence").is_object()) << summary;
  EXPECT_TRUE(summary.at("divergence").at("step").is_number_integer());
  EXPECT_TRUE(summary.at("divergence").at("reason").is_string());
  EXPECT_TRUE(summary.at("divergence").at("blocks").is_array());
  const auto diverged = records_of(read_jsonl(dir + "/metrics.jsonl"), "diverged");
  ASSERT_EQ(diverged.size(), 1u);
  EXPECT_EQ(diverged[0].at("step"), summary.at("divergence").at("step"));
  EXPECT_EQ(diverged[0].at("reason"), summary.at("divergence").at("reason"));
  expect_run_matches_the_record_schema(dir);
}

TEST(TrainCommand, AFiniteLossAboveTenTimesTheUniformLossEndsTheRunAsDiverged) {
  // At this rate the tiny model's loss explodes to millions (uniform: ln 32 = 3.47) but stays
  // finite.
  const std::string dir = make_temp_dir("diverge") + "/run";
  const auto r =
      run_stacklab(concat(concat({"train", base_config()}, tiny_model_args()),
                          {"--train.max_iters=30", "--optim.learning_rate=1e3", "--out", dir}));
  ASSERT_EQ(r.exit_code, 3) << r;
  const json summary = read_json(dir + "/summary.json");
  EXPECT_EQ(summary.at("status"), "diverged") << summary;
  EXPECT_EQ(summary.at("diverged"), true) << summary;
  const json& d = summary.at("divergence");
  ASSERT_TRUE(d.is_object()) << summary;
  EXPECT_NEAR(d.at("limit").get<double>(), 10.0 * std::log(32.0), 1e-9) << d;
  EXPECT_EQ(d.at("loss"), "loss") << "the training batch's loss went out of range first: " << d;
  EXPECT_GT(d.at("value").get<double>(), d.at("limit").get<double>()) << d;
  EXPECT_NE(d.at("reason").get<std::string>().find("train loss"), std::string::npos) << d;
  EXPECT_NE(d.at("reason").get<std::string>().find("10 x ln(vocab_size) = 34.6574"),
            std::string::npos)
      << d;
  EXPECT_LT(summary.at("steps").get<int64_t>(), 30) << "the run stops where it diverged";
  const auto diverged = records_of(read_jsonl(dir + "/metrics.jsonl"), "diverged");
  ASSERT_EQ(diverged.size(), 1u);
  EXPECT_EQ(diverged[0].at("step"), d.at("step"));
  EXPECT_EQ(diverged[0].at("reason"), d.at("reason"));
}

TEST(TrainCommand, AValLossAboveTheLimitAtAnEvalEndsTheRunAsDiverged) {
  // An eval at every step: the eval after the first update already sees the exploded model.
  const std::string dir = make_temp_dir("diverge") + "/run";
  const auto r = run_stacklab(concat(concat({"train", base_config()}, tiny_model_args()),
                                     {"--train.max_iters=30", "--train.eval_interval=1",
                                      "--optim.learning_rate=1e3", "--out", dir}));
  ASSERT_EQ(r.exit_code, 3) << r;
  const json d = read_json(dir + "/summary.json").at("divergence");
  ASSERT_TRUE(d.is_object()) << d;
  EXPECT_EQ(d.at("loss"), "val_loss") << d;
  EXPECT_NE(d.at("reason").get<std::string>().find("val loss"), std::string::npos) << d;
  const auto evals = records_of(read_jsonl(dir + "/metrics.jsonl"), "eval");
  ASSERT_FALSE(evals.empty());
  EXPECT_EQ(evals.back().at("step"), d.at("step")) << "the eval that judged the run is logged";
}

// ---- one run directory, one trainer --------------------------------------------------------

std::string this_host() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

TEST(TrainLock, ASecondTrainForceOrResumeOnARunningRunIsRefusedNamingItsPidAndHost) {
  const std::string dir = make_temp_dir("lock") + "/run";
  const auto args =
      concat(concat({"train", base_config()}, tiny_model_args()),
             {"--train.max_iters=100000", "--log.layer_interval=100000", "--out", dir});
  testing::Child first(args);
  ASSERT_TRUE(testing::wait_until(
      [&] { return !records_of(read_jsonl(dir + "/metrics.jsonl"), "train").empty(); }));
  const std::string holder = "pid " + std::to_string(first.pid()) + " on host " + this_host();
  for (const auto& second : {concat(args, {"--force", "--model.n_layer=3", "--train.max_iters=5"}),
                             concat(args, {"--train.max_iters=5"}),
                             std::vector<std::string>{"train", "--resume", dir}}) {
    const auto r = run_stacklab(second);
    EXPECT_EQ(r.exit_code, 1) << r;
    EXPECT_NE(r.output.find(dir + " is in use by another stacklab train (" + holder),
              std::string::npos)
        << r;
    EXPECT_EQ(r.output.find("starting from step 0"), std::string::npos) << r;
  }
  EXPECT_EQ(read_json(dir + "/config.json").at("model").at("n_layer"), 2)
      << "a refused run must not write its config";
  first.signal(SIGTERM);
  EXPECT_EQ(first.wait().exit_code, 143);
  const json summary = read_json(dir + "/summary.json");
  EXPECT_EQ(summary.at("n_layer"), 2);
  EXPECT_EQ(summary.at("status"), "interrupted");
  EXPECT_FALSE(fs::exists(dir + "/train.lock"));
}

TEST(TrainLock, AResumeTakesOverTheLockOfAKilledRunWithANote) {
  const std::string dir = make_temp_dir("lock") + "/run";
  testing::Child first(concat(concat({"train", base_config()}, tiny_model_args()),
                              {"--train.max_iters=100000", "--train.ckpt_interval=20",
                               "--log.layer_interval=100000", "--out", dir}));
  ASSERT_TRUE(
      testing::wait_until([&] { return fs::exists(dir + "/checkpoints/latest.safetensors"); }));
  const pid_t killed = first.pid();
  first.signal(SIGKILL);
  first.wait();
  ASSERT_TRUE(fs::exists(dir + "/train.lock")) << "SIGKILL leaves the lock file (not the lock)";
  testing::Child resumed({"train", "--resume", dir});
  ASSERT_TRUE(testing::wait_until(
      [&] { return !records_of(read_jsonl(dir + "/metrics.jsonl"), "resume").empty(); }));
  resumed.signal(SIGTERM);
  const auto r = resumed.wait();
  EXPECT_EQ(r.exit_code, 143) << r;
  EXPECT_NE(r.output.find("note: " + dir + "/train.lock: taking over the lock of pid " +
                          std::to_string(killed) + " on host " + this_host()),
            std::string::npos)
      << r;
  EXPECT_NE(r.output.find("a process that is gone"), std::string::npos) << r;
}

TEST(TrainCommand, RefusesToOverwriteARunWithoutForceOrResume) {
  const std::string dir = make_temp_dir("existing") + "/run";
  const auto args = concat(concat({"train", base_config()}, tiny_model_args()), {"--out", dir});
  ASSERT_EQ(run_stacklab(args).exit_code, 0);
  const std::string before = testing::read_text(dir + "/metrics.jsonl");

  const auto again = run_stacklab(args);
  EXPECT_EQ(again.exit_code, 1) << again;
  EXPECT_NE(again.output.find("already holds a run"), std::string::npos) << again;
  EXPECT_NE(again.output.find("--resume " + dir), std::string::npos) << again;
  EXPECT_EQ(testing::read_text(dir + "/metrics.jsonl"), before)
      << "the refused run must not touch the old one";

  const auto forced = run_stacklab(concat(args, {"--force"}));
  EXPECT_EQ(forced.exit_code, 0) << forced;
  EXPECT_EQ(records_of(read_jsonl(dir + "/metrics.jsonl"), "start").size(), 1u)
      << "--force starts the run over";
}

// ---- text data ---------------------------------------------------------------------------

TEST(TrainCommand, TrainsOnATextFileWithAVocabularyOfItsDistinctCharacters) {
  const std::string tmp = make_temp_dir("text");
  const std::vector<std::string> words = {"stack", "norm", "résidu",
                                          "layer", "grad", "loss"};  // é: 2 bytes
  std::string text;
  uint64_t x = 1;
  while (text.size() < 4000) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    text += words[(x >> 33) % words.size()] + ((x >> 20) % 7 == 0 ? ".\n" : " ");
  }
  testing::write_text(tmp + "/corpus.txt", text);
  std::set<std::string> distinct;  // characters, each as its UTF-8 bytes
  for (size_t i = 0; i < text.size();) {
    size_t n = 1;
    while (i + n < text.size() && (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80) ++n;
    distinct.insert(text.substr(i, n));
    i += n;
  }
  ASSERT_EQ(distinct.size(), 20u) << "every word, space, '.', newline and the 2-byte 'é'";
  const std::string dir = tmp + "/run";
  const auto r = run_stacklab(
      concat(concat({"train", base_config()}, tiny_model_args()),
             {"--data.source=text", "--data.path=" + tmp + "/corpus.txt", "--out", dir}));
  ASSERT_EQ(r.exit_code, 0) << r;
  ASSERT_TRUE(fs::exists(dir + "/vocab.json"));
  EXPECT_EQ(read_json(dir + "/vocab.json").at("vocab_size"), distinct.size());
  EXPECT_EQ(read_json(dir + "/config.json").at("model").at("vocab_size"), distinct.size());
  EXPECT_EQ(read_json(dir + "/summary.json").at("status"), "completed");
}

TEST(TrainCommand, AnEmptyTextFileFailsNamingTheFile) {
  const std::string tmp = make_temp_dir("text");
  testing::write_text(tmp + "/empty.txt", "");
  const auto r = run_stacklab(
      concat(concat({"train", base_config()}, tiny_model_args()),
             {"--data.source=text", "--data.path=" + tmp + "/empty.txt", "--out", tmp + "/run"}));
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_NE(r.output.find(tmp + "/empty.txt"), std::string::npos) << r;
  EXPECT_NE(r.output.find("empty"), std::string::npos) << r;
  EXPECT_FALSE(fs::exists(tmp + "/run")) << "bad data must not leave a run directory behind";
}

TEST(TrainCommand, InvalidUtf8FailsNamingTheFileAndTheOffset) {
  const std::string tmp = make_temp_dir("text");
  testing::write_text(tmp + "/bad.txt", std::string("abc\xff\xfe"
                                                    "def",
                                                    8));
  const auto r = run_stacklab(
      concat(concat({"train", base_config()}, tiny_model_args()),
             {"--data.source=text", "--data.path=" + tmp + "/bad.txt", "--out", tmp + "/run"}));
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_NE(r.output.find(tmp + "/bad.txt"), std::string::npos) << r;
  EXPECT_NE(r.output.find("invalid UTF-8 at byte offset 3"), std::string::npos) << r;
  EXPECT_FALSE(fs::exists(tmp + "/run")) << "bad data must not leave a run directory behind";
}

}  // namespace
}  // namespace sl
