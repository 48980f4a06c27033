// Tests for the data-source factory and the DataSource defaults: names map to sources,
// bad names and missing paths name their config field.
#include "data/source.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>

#include "data/markov.h"
#include "data/text.h"
#include "util/error.h"

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
  ReferenceLosses r;
  r.uniform = 2.0;
  r.unigram = 1.5;
  EXPECT_TRUE(to_json(r).at("optimal").is_null());
  r.optimal = 1.0;
  r.optimal_known = true;
  EXPECT_DOUBLE_EQ(to_json(r).at("optimal").get<double>(), 1.0);
}

// The reference a run's val_loss is compared with: the unigram predictor's loss on the very
// batches val_loss is measured on (a fixed 4,096-token set), not the source's population entropy.
TEST(ReferenceLosses, TheUnigramLossOnTheValBatchesIsTheMeanOfMinusLogPOverTheirTargets) {
  Batch b;
  b.B = 1;
  b.T = 4;
  b.y = {0, 1, 1, 2};
  const std::vector<double> p = {0.5, 0.25, 0.25};
  EXPECT_DOUBLE_EQ(unigram_loss_on({b}, p),
                   (std::log(2.0) + 2 * std::log(4.0) + std::log(4.0)) / 4.0);
  ReferenceLosses r;
  EXPECT_FALSE(to_json(r).contains("unigram_on_val")) << "absent where no batches were given";
  r.unigram_on_val = unigram_loss_on({b}, {1.0, 0.0, 0.0});
  EXPECT_TRUE(to_json(r).at("unigram_on_val").is_null()) << "a token of probability 0: infinite";

  MarkovSource src(32, 2, 0.02, 1234);  // configs/base.json's source
  const std::vector<Batch> val = src.eval_batches(8, 8, 64, false);
  const double on_val = unigram_loss_on(val, src.unigram_probs());
  const double entropy = src.reference_losses(64).unigram;
  EXPECT_NE(on_val, entropy) << "a finite sample is not the population";
  EXPECT_NEAR(on_val, entropy, 0.1) << "but estimates it";
}

}  // namespace
}  // namespace sl
