// Tests for data/known_data: the compiled-in manifest is data/datasets.json (the file the data
// step reads), a data.path matches a data set by its place (dest or source layout) and nothing
// else, and the check reports a file with the wrong bytes, with both sizes and checksums.
#include "data/known_data.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"
#include "util/sha256.h"

namespace sl {
namespace {

const std::string kGood = "First Citizen:\nBefore we proceed any further, hear me speak.\n";

std::vector<KnownDataset> fabricated() {
  const std::string manifest = R"({"format": "stacklab.datasets", "version": 1, "datasets": [
      {"name": "fake_char", "url": "http://127.0.0.1:9/x", "rel_path": "fakeshakespeare/input.txt",
       "dest": "fake_char/input.txt", "size": )" +
                               std::to_string(kGood.size()) + R"(, "sha256": ")" +
                               sha256_hex(kGood) +
                               R"(", "distinct_chars": 1, "about": "fabricated"}]})";
  return parse_datasets_manifest(manifest, "test manifest");
}

std::string write_at(const std::string& rel, const std::string& bytes) {
  const std::filesystem::path p = std::filesystem::path(testing::TempDir()) / "known_data" / rel;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

TEST(KnownData, TheCompiledInManifestIsDataDatasetsJson) {
  std::ifstream f(std::string(STACKLAB_SOURCE_DIR) + "/data/datasets.json");
  std::stringstream text;
  text << f.rdbuf();
  const auto from_file = parse_datasets_manifest(text.str(), "data/datasets.json");
  ASSERT_EQ(known_datasets().size(), from_file.size());
  ASSERT_FALSE(from_file.empty());
  EXPECT_EQ(known_datasets()[0].name, "shakespeare_char");
  for (size_t i = 0; i < from_file.size(); ++i) {
    EXPECT_EQ(known_datasets()[i].sha256, from_file[i].sha256) << "rebuild after editing it";
    EXPECT_EQ(known_datasets()[i].size, from_file[i].size);
  }
}

TEST(KnownData, APathMatchesADataSetByItsPlaceOnly) {
  const auto sets = fabricated();
  EXPECT_NE(known_dataset_at("data/fake_char/input.txt", sets), nullptr);
  EXPECT_NE(known_dataset_at("/abs/configs/../data/fake_char/input.txt", sets), nullptr);
  EXPECT_NE(known_dataset_at("/shared/fakeshakespeare/input.txt", sets), nullptr);
  EXPECT_EQ(known_dataset_at("data/other_char/input.txt", sets), nullptr);
  EXPECT_EQ(known_dataset_at("data/fake_char/input.txt.bak", sets), nullptr);
  EXPECT_EQ(known_dataset_at("input.txt", sets), nullptr);
}

TEST(KnownData, ACopyWithTheRightBytesIsOkAndATruncatedOneIsNotWithBothChecksums) {
  const auto sets = fabricated();
  const nlohmann::json good = check_known_data(write_at("a/fake_char/input.txt", kGood), sets);
  EXPECT_EQ(good.at("dataset"), "fake_char");
  EXPECT_TRUE(good.at("ok").get<bool>());
  EXPECT_EQ(data_check_warning(good, "x"), "");

  const std::string short_path = write_at("b/fake_char/input.txt", kGood.substr(0, 20));
  const nlohmann::json bad = check_known_data(short_path, sets);
  EXPECT_FALSE(bad.at("ok").get<bool>());
  EXPECT_EQ(bad.at("bytes"), 20);
  EXPECT_EQ(bad.at("expected_bytes"), kGood.size());
  EXPECT_EQ(bad.at("sha256"), sha256_hex(kGood.substr(0, 20)));
  EXPECT_EQ(bad.at("expected_sha256"), sha256_hex(kGood));
  const std::string w = data_check_warning(bad, short_path);
  EXPECT_NE(w.find(short_path), std::string::npos) << w;
  EXPECT_NE(w.find("(truncated)"), std::string::npos) << w;
  EXPECT_NE(w.find("get_data.py"), std::string::npos) << w;

  EXPECT_TRUE(check_known_data(write_at("c/corpus.txt", "x"), sets).is_null());
}

TEST(KnownData, AMalformedManifestIsAnErrorNamingTheField) {
  try {
    parse_datasets_manifest(R"({"format": "stacklab.datasets", "version": 1, "datasets": [
        {"name": "x", "rel_path": "a", "dest": "b", "size": 3, "sha256": "abc"}]})",
                            "m.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("m.json: field 'datasets[0].sha256'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sl
