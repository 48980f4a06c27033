// `stacklab sample RUN_DIR`: generates from a trained tiny run, deterministically for a seed, and
// refuses a corrupt checkpoint as `train --resume` does.
#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "support/cli.h"

namespace sl {
namespace {

using testing::concat;
using testing::run_stacklab;

// A trained tiny Markov run, once per test process.
const std::string& trained_run() {
  static const std::string dir = [] {
    const std::string d = testing::make_temp_dir("sample") + "/run";
    const auto r = run_stacklab(concat(
        concat({"train", testing::base_config()}, testing::tiny_model_args()), {"--out", d}));
    EXPECT_EQ(r.exit_code, 0) << r;
    return d;
  }();
  return dir;
}

// Markov tokens print as "PROMPT | t1 t2 ...": the generated ids.
std::vector<int> generated_ids(const std::string& output) {
  std::vector<int> ids;
  const size_t bar = output.find(" | ");
  if (bar == std::string::npos) return ids;
  std::istringstream in(output.substr(bar + 3));
  int id = 0;
  while (in >> id) ids.push_back(id);
  return ids;
}

TEST(SampleCommand, GeneratesTheRequestedNumberOfTokensFromTheVocabulary) {
  const auto r = run_stacklab({"sample", trained_run(), "--tokens", "20", "--seed", "1"});
  ASSERT_EQ(r.exit_code, 0) << r;
  const std::vector<int> ids = generated_ids(r.output);
  ASSERT_EQ(ids.size(), 20u) << r;
  for (int id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 32);  // base.json's vocab_size
  }
}

TEST(SampleCommand, IsDeterministicForAFixedSeed) {
  const auto a = run_stacklab({"sample", trained_run(), "--tokens", "20", "--seed", "1"});
  const auto b = run_stacklab({"sample", trained_run(), "--tokens", "20", "--seed", "1"});
  const auto c = run_stacklab({"sample", trained_run(), "--tokens", "20", "--seed", "2"});
  ASSERT_EQ(a.exit_code, 0) << a;
  EXPECT_EQ(a.output, b.output);
  EXPECT_NE(a.output, c.output) << "another seed should draw another sequence";
}

TEST(SampleCommand, RejectsADirectoryThatIsNotARun) {
  const std::string dir = testing::make_temp_dir("notarun");
  const auto r = run_stacklab({"sample", dir, "--tokens", "5"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_NE(r.output.find(dir + ": not a run directory"), std::string::npos) << r;
}

TEST(SampleCommand, RejectsANegativeTokenCount) {
  const auto r = run_stacklab({"sample", trained_run(), "--tokens", "-1"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_NE(r.output.find("--tokens"), std::string::npos) << r;
}

// A copy of the trained run whose checkpoint `which` has one data byte flipped (near the end of
// the file, inside the last tensor: the header still parses, only the checksum can tell).
std::string run_with_flipped_byte(const std::string& which) {
  const std::string copy = testing::make_temp_dir("flipped") + "/run";
  std::filesystem::copy(trained_run(), copy, std::filesystem::copy_options::recursive);
  const std::string ckpt = copy + "/checkpoints/" + which + ".safetensors";
  std::string bytes = testing::read_text(ckpt);
  bytes[bytes.size() - 7] = static_cast<char>(bytes[bytes.size() - 7] ^ 0x10);
  testing::write_text(ckpt, bytes);
  return copy;
}

TEST(SampleCommand, RefusesACheckpointWhoseChecksumDoesNotMatchNamingTheFile) {
  const std::string run = run_with_flipped_byte("latest");
  const auto r = run_stacklab({"sample", run, "--tokens", "5", "--seed", "1"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_NE(r.output.find(run + "/checkpoints/latest.safetensors: checksum mismatch"),
            std::string::npos)
      << r;
  EXPECT_EQ(r.out, "") << "nothing may be sampled from a corrupt checkpoint";
  // The same file refuses `train --resume` with the same words: one check for both.
  const auto resume = run_stacklab({"train", "--resume", run});
  EXPECT_EQ(resume.exit_code, 1) << resume;
  EXPECT_NE(resume.output.find(run + "/checkpoints/latest.safetensors: checksum mismatch"),
            std::string::npos)
      << resume;
}

TEST(SampleCommand, RefusesACorruptCheckpointGivenByPathOrAsBest) {
  const std::string run = run_with_flipped_byte("best");
  const std::string best = run + "/checkpoints/best.safetensors";
  for (const std::string& which : {std::string("best"), best}) {
    const auto r = run_stacklab({"sample", run, "--checkpoint", which, "--tokens", "5"});
    EXPECT_EQ(r.exit_code, 1) << which << ": " << r;
    EXPECT_NE(r.output.find(best + ": checksum mismatch"), std::string::npos) << which << ": " << r;
  }
  EXPECT_EQ(run_stacklab({"sample", run, "--tokens", "5"}).exit_code, 0) << "latest is intact";
}

// A text run keeps its vocabulary (vocab.json): sampling needs that, not the data file.
TEST(SampleCommand, ATextRunSamplesFromItsVocabularyWhenItsDataFileIsGone) {
  const std::string tmp = testing::make_temp_dir("sample_text");
  std::string text;
  while (text.size() < 3000) text += "the cat sat on the mat. ";
  testing::write_text(tmp + "/corpus.txt", text);
  const auto train = run_stacklab(
      concat(concat({"train", testing::base_config()}, testing::tiny_model_args()),
             {"--data.source=text", "--data.path=" + tmp + "/corpus.txt", "--out", tmp + "/run"}));
  ASSERT_EQ(train.exit_code, 0) << train;
  std::filesystem::remove(tmp + "/corpus.txt");
  const auto r =
      run_stacklab({"sample", tmp + "/run", "--prompt", "the ", "--tokens", "30", "--seed", "1"});
  ASSERT_EQ(r.exit_code, 0) << r;
  ASSERT_EQ(r.out.rfind("the ", 0), 0u) << r;
  const std::string sample = r.out.substr(0, r.out.find_last_not_of('\n') + 1);
  EXPECT_EQ(sample.size(), 34u) << r;
  EXPECT_EQ(sample.find_first_not_of("the casonm."), std::string::npos) << r;
  const auto unknown = run_stacklab({"sample", tmp + "/run", "--prompt", "xyz", "--tokens", "1"});
  EXPECT_EQ(unknown.exit_code, 1) << unknown;
  EXPECT_NE(unknown.output.find("at index 0 of the input"), std::string::npos) << unknown;
  EXPECT_NE(unknown.output.find(tmp + "/run/vocab.json"), std::string::npos) << unknown;
  std::filesystem::remove_all(tmp);
}

}  // namespace
}  // namespace sl
