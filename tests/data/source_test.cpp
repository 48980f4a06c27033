// Tests for the data-source factory and the DataSource defaults: names map to sources,
// bad names and missing paths name their config field.
#include "data/source.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "core/error.h"
#include "data/markov.h"
#include "data/text.h"

namespace sl {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(MakeDataSource, MarkovNameBuildsAMarkovSourceWithTheGivenParameters) {
  const auto src = make_data_source("markov", 12, 2, 0.5, 3, "", 0.1);
  ASSERT_NE(dynamic_cast<MarkovSource*>(src.get()), nullptr);
  EXPECT_EQ(src->vocab_size(), 12);
  EXPECT_EQ(src->describe().at("order"), 2);
  EXPECT_TRUE(src->reference_losses(8).optimal_known);
}

TEST(MakeDataSource, TextNameBuildsATextSourceAndCanUseASavedVocabulary) {
  const std::string path = testing::TempDir() + "stacklab_source_test.txt";
  std::ofstream(path) << "the cat sat on the mat. the dog sat on the log.";
  const auto src = make_data_source("text", 0, 0, 0.0, 1, path, 0.2);
  ASSERT_NE(dynamic_cast<TextSource*>(src.get()), nullptr);
  EXPECT_FALSE(src->reference_losses(4).optimal_known);
  const std::string vocab = testing::TempDir() + "stacklab_source_test_vocab.json";
  dynamic_cast<TextSource&>(*src).save_vocab(vocab);
  const auto resumed = make_data_source("text", 0, 0, 0.0, 1, path, 0.2, vocab);
  EXPECT_EQ(resumed->vocab_size(), src->vocab_size());
}

TEST(MakeDataSource, UnknownSourceAndMissingPathNameTheirFields) {
  EXPECT_NE(
      error_of([] { make_data_source("shakespeare", 8, 1, 1.0, 0, "", 0.1); }).find("data.source"),
      std::string::npos);
  EXPECT_NE(error_of([] { make_data_source("text", 8, 1, 1.0, 0, "", 0.1); }).find("data.path"),
            std::string::npos);
}

TEST(ReferenceLosses, JsonHasNullOptimalWhenUnknown) {
  EXPECT_TRUE(to_json(ReferenceLosses{2.0, 1.5, 0.0, false}).at("optimal").is_null());
  EXPECT_DOUBLE_EQ(to_json(ReferenceLosses{2.0, 1.5, 1.0, true}).at("optimal").get<double>(), 1.0);
}

}  // namespace
}  // namespace sl
