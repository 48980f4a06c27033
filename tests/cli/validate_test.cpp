// Config and flag errors through the command line (`stacklab validate` and `stacklab train`):
// each must exit with code 1 and one message that names the file or field and what was wrong;
// a `train` that fails this way must leave no run behind.
#include <filesystem>

#include <gtest/gtest.h>

#include "support/cli.h"

namespace sl {
namespace {

using testing::base_config;
using testing::concat;
using testing::make_temp_dir;
using testing::run_stacklab;
using testing::write_text;
namespace fs = std::filesystem;

// Runs `validate ARGS` and `train ARGS --out DIR`; both must fail with exit 1 and print every
// one of `needles`, and the failed train must not have started a run.
void expect_rejected(const std::vector<std::string>& args,
                     const std::vector<std::string>& needles) {
  const auto v = run_stacklab(concat({"validate"}, args));
  EXPECT_EQ(v.exit_code, 1) << v;
  for (const auto& n : needles)
    EXPECT_NE(v.output.find(n), std::string::npos) << "missing '" << n << "' in " << v;

  const std::string out = make_temp_dir("rejected") + "/run";
  const auto t = run_stacklab(concat(concat({"train"}, args), {"--out", out}));
  EXPECT_EQ(t.exit_code, 1) << t;
  for (const auto& n : needles)
    EXPECT_NE(t.output.find(n), std::string::npos) << "missing '" << n << "' in " << t;
  EXPECT_NE(t.output.find("stacklab train: error:"), std::string::npos) << t;
  EXPECT_FALSE(fs::exists(out + "/metrics.jsonl")) << "a failed train must not leave a run behind";
  EXPECT_FALSE(fs::exists(out)) << "a failed train must not create its run directory";
}

TEST(ValidateCommand, AcceptsTheShippedConfigs) {
  for (const char* name : {"base.json", "quickstart.json"}) {
    const auto r = run_stacklab({"validate", testing::kSourceDir + "/configs/" + name, "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << r;
    EXPECT_NE(r.output.find(": ok"), std::string::npos) << r;
  }
}

TEST(ValidateCommand, PrintsTheResolvedConfigWithDerivedValues) {
  const auto r = run_stacklab({"validate", base_config(), "--model.n_layer=7"});
  ASSERT_EQ(r.exit_code, 0) << r;
  const auto j = nlohmann::json::parse(r.out);  // stdout holds only the JSON
  EXPECT_EQ(j.at("model").at("n_layer"), 7);
  EXPECT_TRUE(j.contains("derived"));
}

TEST(ValidateCommand, DefaultsPrintsTheDefaultConfigWhichLoadsBackAsTheDefaults) {
  const auto r = run_stacklab({"validate", "--defaults"});
  ASSERT_EQ(r.exit_code, 0) << r;
  const auto defaults = nlohmann::json::parse(r.out);  // stdout holds only the JSON
  EXPECT_EQ(defaults.at("model").at("n_layer"), 4);
  EXPECT_EQ(defaults.at("data").at("alpha"), 0.5);
  EXPECT_FALSE(defaults.at("train").contains("name")) << "train.name defaults to the file's stem";
  // Saved and validated, it resolves to itself (plus the stem as train.name and the derived
  // section).
  const std::string dir = make_temp_dir();
  write_text(dir + "/defaults.json", r.out);
  const auto v = run_stacklab({"validate", dir + "/defaults.json"});
  ASSERT_EQ(v.exit_code, 0) << v;
  auto loaded = nlohmann::json::parse(v.out);
  EXPECT_EQ(loaded.at("train").at("name"), "defaults");
  loaded.erase("derived");
  loaded["train"].erase("name");
  EXPECT_EQ(loaded, defaults);
}

TEST(ValidateCommand, TheDefaultsAreNotTheStudysBaseConfig) {
  const auto defaults = nlohmann::json::parse(run_stacklab({"validate", "--defaults"}).out);
  const auto base = nlohmann::json::parse(testing::read_text(base_config()));
  EXPECT_EQ(base.at("data").at("alpha"), 0.02);
  EXPECT_NE(defaults.at("data").at("alpha"), base.at("data").at("alpha"));
}

TEST(ValidateCommand, DefaultsTakesNoConfigOrOverrides) {
  EXPECT_EQ(run_stacklab({"validate", "--defaults", base_config()}).exit_code, 1);
  EXPECT_EQ(run_stacklab({"validate", "--defaults", "--model.n_layer=2"}).exit_code, 1);
}

TEST(ValidateCommand, HelpAndErrorsPointAtDefaultsNotAtTheBaseConfig) {
  for (const char* command : {"train", "validate"}) {
    const auto help = run_stacklab({command, "--help"});
    EXPECT_NE(help.out.find("validate --defaults"), std::string::npos) << help;
    EXPECT_EQ(help.out.find("base.json holds"), std::string::npos) << help;
  }
  const auto r = run_stacklab({"train"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_NE(r.output.find("stacklab validate --defaults"), std::string::npos) << r;
  EXPECT_NE(r.output.find("the study's base config"), std::string::npos) << r;
  const std::string readme = testing::read_text(testing::kSourceDir + "/README.md");
  EXPECT_NE(readme.find("stacklab validate --defaults"), std::string::npos);
  EXPECT_EQ(readme.find("validate configs/base.json` prints them all"), std::string::npos);
}

TEST(ConfigErrors, AnUnknownKeyInAFileSuggestsTheNearestKey) {
  const std::string dir = make_temp_dir();
  write_text(dir + "/typo.json",
             R"({"extends": ")" + base_config() + R"(", "model": {"n_layers": 2}})");
  expect_rejected({dir + "/typo.json"},
                  {dir + "/typo.json", "model.n_layers", "did you mean 'n_layer'"});
}

TEST(ConfigErrors, AnOverrideOfAMisspelledKeySuggestsTheNearestKey) {
  expect_rejected({base_config(), "--model.n_layers=3"},
                  {"--model.n_layers=3", "did you mean 'n_layer'"});
}

TEST(ConfigErrors, AnOverrideOfAnUnknownSectionIsRejected) {
  expect_rejected({base_config(), "--foo.bar=1"}, {"foo.bar", "unknown key"});
}

TEST(ConfigErrors, AValueOfTheWrongTypeNamesTheFieldAndTheExpectedType) {
  const std::string dir = make_temp_dir();
  write_text(dir + "/type.json", R"({"model": {"n_layer": "two"}})");
  expect_rejected({dir + "/type.json"},
                  {dir + "/type.json", "model.n_layer", "expected an integer"});
  expect_rejected({base_config(), "--model.n_layer=abc"},
                  {"model.n_layer", "expected an integer", "'abc'"});
}

TEST(ConfigErrors, AnOutOfRangeValueNamesTheFieldAndTheBound) {
  expect_rejected({base_config(), "--model.n_layer=0"}, {"model.n_layer", "must be >= 1", "got 0"});
}

TEST(ConfigErrors, AWidthNotDivisibleByTheHeadCountIsRejected) {
  expect_rejected({base_config(), "--model.n_embd=30"},
                  {"model.n_embd", "not divisible by n_head 4"});
}

TEST(ConfigErrors, AMissingBaseConfigNamesTheExtendingFileAndTheBase) {
  const std::string dir = make_temp_dir();
  write_text(dir + "/child.json", R"({"extends": "nope.json"})");
  expect_rejected({dir + "/child.json"},
                  {dir + "/child.json", "extends", dir + "/nope.json", "not found"});
}

TEST(ConfigErrors, CyclicExtendsShowsTheCycle) {
  const std::string dir = make_temp_dir();
  write_text(dir + "/a.json", R"({"extends": "b.json"})");
  write_text(dir + "/b.json", R"({"extends": "a.json"})");
  expect_rejected({dir + "/a.json"},
                  {"extends: cycle", dir + "/a.json -> " + dir + "/b.json -> " + dir + "/a.json"});
}

TEST(ConfigErrors, MalformedJsonIsReportedWithLineAndColumn) {
  const std::string dir = make_temp_dir();
  write_text(dir + "/bad.json",
             "{\n  \"model\": {\"n_layer\": 2,,}\n}\n");  // second comma: line 2, column 26
  expect_rejected({dir + "/bad.json"}, {dir + "/bad.json:2:26:", "malformed JSON"});
}

TEST(ConfigErrors, AMissingConfigFileIsNamed) {
  const std::string path = make_temp_dir() + "/absent.json";
  expect_rejected({path}, {"config file not found: " + path});
}

TEST(ConfigErrors, ADuplicateKeyInAConfigFileNamesTheKeyAndTheFile) {
  const std::string dir = make_temp_dir();
  write_text(dir + "/dup.json",
             R"({"extends": ")" + base_config() + R"(", "model": {"n_layer": 2, "n_layer": 7}})");
  expect_rejected({dir + "/dup.json"}, {dir + "/dup.json", "duplicate key 'model.n_layer'"});
}

TEST(ConfigErrors, ADuplicateKeyInASweepFileNamesTheKeyAndTheFile) {
  const std::string dir = make_temp_dir();
  write_text(dir + "/sweep.json",
             R"({"name": "dup", "base": ")" + base_config() +
                 R"(", "grid": {"model.n_layer": [1], "model.n_layer": [2]}})");
  const auto r = run_stacklab({"sweep", dir + "/sweep.json", "--dry-run"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_NE(r.output.find(dir + "/sweep.json: duplicate key 'grid.model.n_layer'"),
            std::string::npos)
      << r;
}

TEST(ConfigErrors, ADataPathWithoutTheTextSourceNamesBothKeys) {
  expect_rejected(
      {base_config(), "--data.path=data/corpus.txt"},
      {"--data.path=data/corpus.txt", "data.path", "data.source", "--data.source=text"});
}

TEST(ConfigErrors, AWarmupLongerThanTheRunNamesBothKeys) {
  expect_rejected({base_config(), "--optim.schedule=warmup_constant", "--optim.warmup_iters=100",
                   "--train.max_iters=2"},
                  {"optim.warmup_iters", "train.max_iters"});
}

TEST(CommandLineErrors, AnUnknownFlagIsRejectedWithTheValidFlags) {
  expect_rejected({base_config(), "--bogus"}, {"unknown flag --bogus", "valid flags:"});
}

TEST(CommandLineErrors, AnUnknownCommandIsRejected) {
  const auto r = run_stacklab({"trian"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_NE(r.output.find("unknown command 'trian'"), std::string::npos) << r;
}

TEST(CommandLineErrors, NoCommandPrintsUsageAndFails) {
  const auto r = run_stacklab({});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_NE(r.output.find("usage: stacklab"), std::string::npos) << r;
}

}  // namespace
}  // namespace sl
