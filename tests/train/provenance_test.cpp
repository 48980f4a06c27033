// Run fingerprints (train/provenance.h): a text corpus is identified by its content, not by
// where it lies; a changed corpus or key changes the fingerprint and is listed.
#include "train/provenance.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace sl {
namespace {
namespace fs = std::filesystem;

std::string write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  return p.string();
}

Config text_config(const std::string& path) {
  Config c;
  c.data.source = SourceKind::Text;
  c.data.path = path;
  return c;
}

TEST(Provenance, ATextCorpusIsIdentifiedByItsContentNotItsPath) {
  const fs::path dir = fs::path(::testing::TempDir()) / "stacklab_provenance_test";
  fs::remove_all(dir);
  const std::string a = write_file(dir / "a" / "corpus.txt", "the same words\n");
  const std::string moved = write_file(dir / "moved" / "corpus.txt", "the same words\n");
  const std::string other = write_file(dir / "other.txt", "other words\n");
  const auto fp = [](const Config& c) { return make_provenance(c).at("fingerprint"); };
  EXPECT_EQ(fp(text_config(a)), fp(text_config(moved))) << "a moved checkout is the same run";
  EXPECT_NE(fp(text_config(a)), fp(text_config(other)));
  const auto changes =
      provenance_changes(make_provenance(text_config(a)), make_provenance(text_config(other)));
  ASSERT_FALSE(changes.empty());
  EXPECT_NE(changes.front().find("data.file"), std::string::npos) << changes.front();
  Config wider = text_config(a);
  wider.model.n_embd = 128;
  EXPECT_NE(fp(text_config(a)), fp(wider));
  fs::remove_all(dir);
}

TEST(Provenance, FlushingSubnormalsIsPartOfTheNumericPathNotOfARunsIdentity) {
  // Like train.threads: runs made before the key existed ran unflushed, and stay the same runs.
  Config kept;
  kept.train.flush_subnormals = false;
  EXPECT_EQ(make_provenance(Config{}).at("fingerprint"), make_provenance(kept).at("fingerprint"));
  EXPECT_TRUE(provenance_changes(make_provenance(kept), make_provenance(Config{})).empty());
}

// A run recorded before model.emb_scale existed drew its embeddings N(0, init_std): it is the
// same run as the default "init_std", and a "changed" one for "unit".
TEST(Provenance, ARunRecordedBeforeAKeyExistedHasThatKeysDefault) {
  nlohmann::json old = make_provenance(Config{});
  old["config"]["model"].erase("emb_scale");
  EXPECT_TRUE(provenance_changes(old, make_provenance(Config{})).empty());
  Config unit;
  unit.model.emb_scale = EmbScale::Unit;
  const auto changes = provenance_changes(old, make_provenance(unit));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0], "model.emb_scale: \"init_std\" -> \"unit\"");
}

}  // namespace
}  // namespace sl
