// A text run on a known data set's place (data/datasets.json: .../shakespeare_char/input.txt)
// whose file fails the data set's size and SHA-256 check trains on, but says so: a warning on
// stderr naming the file, data_check in the start record and in summary.json. A run on any other
// file records data_check null.
#include <filesystem>

#include <gtest/gtest.h>

#include "support/cli.h"

namespace sl {
namespace {

using testing::concat;
using testing::read_json;
using testing::run_stacklab;

// 4000 characters of a few words: trains in a moment, and is not tiny Shakespeare.
std::string small_text() {
  const std::vector<std::string> words = {"stack", "norm", "layer", "grad", "loss"};
  std::string text;
  uint64_t x = 7;
  while (text.size() < 4000) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    text += words[(x >> 33) % words.size()] + ((x >> 20) % 7 == 0 ? ".\n" : " ");
  }
  return text;
}

testing::RunResult train_on(const std::string& path, const std::string& dir) {
  return run_stacklab(concat(concat({"train", testing::base_config()}, testing::tiny_model_args()),
                             {"--data.source=text", "--data.path=" + path, "--out", dir}));
}

nlohmann::json start_record(const std::string& dir) {
  return testing::read_jsonl(dir + "/metrics.jsonl").at(0);
}

TEST(DataCheck, AFileAtAKnownDataSetsPlaceThatFailsItsChecksumTrainsWithAWarningAndARecord) {
  const std::string tmp = testing::make_temp_dir("datacheck");
  std::filesystem::create_directories(tmp + "/data/shakespeare_char");
  const std::string path = tmp + "/data/shakespeare_char/input.txt";
  testing::write_text(path, small_text());
  const auto r = train_on(path, tmp + "/run");
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.output.find("warning: data.path '" + path +
                          "' is where the data set shakespeare_char goes, but it fails its check"),
            std::string::npos)
      << r;
  EXPECT_NE(r.output.find("(truncated)"), std::string::npos) << r;
  for (const nlohmann::json& j :
       {start_record(tmp + "/run"), read_json(tmp + "/run/summary.json")}) {
    const nlohmann::json& c = j.at("data_check");
    EXPECT_EQ(c.at("dataset"), "shakespeare_char") << j;
    EXPECT_EQ(c.at("ok"), false) << j;
    EXPECT_EQ(c.at("bytes"), small_text().size()) << j;
    EXPECT_EQ(c.at("expected_bytes"), 1115394) << j;
    EXPECT_EQ(c.at("expected_sha256"),
              "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed")
        << j;
  }
  std::filesystem::remove_all(tmp);
}

TEST(DataCheck, AnyOtherTextFileRecordsNullAndNoWarning) {
  const std::string tmp = testing::make_temp_dir("datacheck");
  testing::write_text(tmp + "/corpus.txt", small_text());
  const auto r = train_on(tmp + "/corpus.txt", tmp + "/run");
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.output.find("fails its check"), std::string::npos) << r;
  EXPECT_TRUE(start_record(tmp + "/run").at("data_check").is_null());
  EXPECT_TRUE(read_json(tmp + "/run/summary.json").at("data_check").is_null());
  std::filesystem::remove_all(tmp);
}

}  // namespace
}  // namespace sl
