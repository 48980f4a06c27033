// Tests for MarkovSource: the chain is a proper distribution, its stationary distribution is
// stationary, the exact entropies agree with Monte-Carlo estimates, and batches are
// reproducible in the ways the trainer relies on (fixed eval, rng-driven train).
#include "data/markov.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "util/error.h"

namespace sl {
namespace {

// Mean of f over a long stationary sample, with a batch-means standard error (the samples are
// correlated through the chain's state, so the iid formula would be too optimistic).
struct Estimate {
  double mean, se;
};
Estimate estimate(const std::vector<double>& vals) {
  const size_t nb = 100, per = vals.size() / nb;
  std::vector<double> means(nb, 0.0);
  for (size_t b = 0; b < nb; ++b) {
    for (size_t i = 0; i < per; ++i) means[b] += vals[b * per + i];
    means[b] /= static_cast<double>(per);
  }
  double m = 0.0, v = 0.0;
  for (double x : means) m += x;
  m /= static_cast<double>(nb);
  for (double x : means) v += (x - m) * (x - m);
  v /= static_cast<double>(nb - 1);
  return {m, std::sqrt(v / static_cast<double>(nb))};
}

TEST(MarkovSource, TransitionRowsSumToOne) {
  const MarkovSource src(7, 2, 0.3, 11);
  const auto& P = src.transitions();
  ASSERT_EQ(P.size(), size_t{49 * 7});
  for (int c = 0; c < src.num_contexts(); ++c) {
    double s = 0.0;
    for (int v = 0; v < 7; ++v) {
      EXPECT_GT(P[size_t(c) * 7 + size_t(v)], 0.0);
      s += P[size_t(c) * 7 + size_t(v)];
    }
    EXPECT_NEAR(s, 1.0, 1e-12) << "context " << c;
  }
}

// pi'[(c * V + v) mod C] = sum_c pi[c] P[c, v] must give back pi.
void expect_stationary(const MarkovSource& src, double tol) {
  const int V = src.vocab_size(), C = src.num_contexts();
  const auto& pi = src.stationary();
  std::vector<double> next(size_t(C), 0.0);
  double total = 0.0;
  for (int c = 0; c < C; ++c) {
    total += pi[size_t(c)];
    for (int v = 0; v < V; ++v)
      next[size_t((c * V + v) % C)] += pi[size_t(c)] * src.transitions()[size_t(c * V + v)];
  }
  EXPECT_NEAR(total, 1.0, 1e-12);
  double l1 = 0.0;
  for (int c = 0; c < C; ++c) l1 += std::fabs(next[size_t(c)] - pi[size_t(c)]);
  EXPECT_LT(l1, tol);
}

TEST(MarkovSource, StationaryDistributionIsStationary) {
  for (int k = 1; k <= 3; ++k) expect_stationary(MarkovSource(5, k, 0.5, 3), 1e-11);
  expect_stationary(MarkovSource(2, 1, 0.02, 9), 1e-11);  // tiny alpha: nearly deterministic
}

TEST(MarkovSource, LargestConfigurationBuildsInSecondsAndIsStationary) {
  const auto t0 = std::chrono::steady_clock::now();
  const MarkovSource src(32, 3, 0.5, 1);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 10.0);
  EXPECT_EQ(src.num_contexts(), 32768);
  expect_stationary(src, 1e-10);
}

TEST(MarkovSource, EntropyRateMatchesMonteCarloEstimate) {
  const MarkovSource src(8, 2, 0.5, 5);
  Rng rng(123);
  const std::vector<int32_t> seq = src.sample_sequence(400000, rng);
  std::vector<double> nll;
  for (size_t t = 2; t < seq.size(); ++t) {
    const int c = src.context_of(&seq[t - 2]);
    nll.push_back(-std::log(src.transitions()[size_t(c) * 8 + size_t(seq[t])]));
  }
  const Estimate e = estimate(nll);
  EXPECT_NEAR(e.mean, src.entropy_rate(), 4.0 * e.se) << "se " << e.se;
  EXPECT_LT(e.se, 0.01);
}

TEST(MarkovSource, UnigramEntropyMatchesMonteCarloEstimate) {
  const MarkovSource src(6, 3, 0.4, 8);
  const std::vector<double> p = src.unigram();
  Rng rng(77);
  const std::vector<int32_t> seq = src.sample_sequence(300000, rng);
  std::vector<double> nll;
  for (int32_t s : seq) nll.push_back(-std::log(p[size_t(s)]));
  const Estimate e = estimate(nll);
  EXPECT_NEAR(e.mean, src.unigram_entropy(), 4.0 * e.se) << "se " << e.se;
}

TEST(MarkovSource, FirstConditionalEntropyMatchesFreshStationaryStarts) {
  // For order 3, the loss at t = 0 is H(X1 | X0) = H2 - H1 from the stationary pair marginal;
  // drawing many fresh 2-symbol sequences checks both the start distribution and that formula.
  const int V = 4;
  const MarkovSource src(V, 3, 0.3, 21);
  std::vector<double> pair(size_t(V * V), 0.0), single(size_t(V), 0.0);
  for (int c = 0; c < src.num_contexts(); ++c) {
    pair[size_t(c / V)] += src.stationary()[size_t(c)];
    single[size_t(c / (V * V))] += src.stationary()[size_t(c)];
  }
  Rng rng(5);
  std::vector<double> nll;
  for (int i = 0; i < 200000; ++i) {
    const auto s = src.sample_sequence(2, rng);
    nll.push_back(-std::log(pair[size_t(s[0] * V + s[1])] / single[size_t(s[0])]));
  }
  const Estimate e = estimate(nll);  // independent draws: batch means is just the plain SE
  const double exact = src.block_entropy(2) - src.block_entropy(1);
  EXPECT_NEAR(e.mean, exact, 4.0 * e.se);
  EXPECT_NEAR(src.reference_losses(1).optimal, exact, 1e-12);
}

TEST(MarkovSource, ReferenceLossesAreOrderedOptimalUnigramUniform) {
  for (int k = 1; k <= 3; ++k)
    for (int T : {1, 2, 3, 16, 256}) {
      const MarkovSource src(9, k, 0.7, uint64_t(k));
      const ReferenceLosses r = src.reference_losses(T);
      EXPECT_TRUE(r.optimal_known);
      EXPECT_NEAR(r.uniform, std::log(9.0), 1e-12);
      EXPECT_LE(r.optimal, r.unigram + 1e-12) << "k=" << k << " T=" << T;
      EXPECT_LE(r.unigram, r.uniform + 1e-12);
      EXPECT_GE(r.optimal, src.entropy_rate() - 1e-12);
    }
}

TEST(MarkovSource, OptimalLossAveragesBlockEntropyStepsThenEntropyRate) {
  const MarkovSource src(5, 3, 0.5, 2);
  const double H1 = src.block_entropy(1), H2 = src.block_entropy(2), H3 = src.block_entropy(3);
  const double h = src.entropy_rate();
  EXPECT_NEAR(src.reference_losses(2).optimal, ((H2 - H1) + (H3 - H2)) / 2.0, 1e-12);
  EXPECT_NEAR(src.reference_losses(10).optimal, ((H2 - H1) + (H3 - H2) + 8.0 * h) / 10.0, 1e-12);
  // Order 1: every position already sees its whole context.
  const MarkovSource one(5, 1, 0.5, 2);
  EXPECT_NEAR(one.reference_losses(1).optimal, one.entropy_rate(), 1e-12);
}

// The bigram predictor and the optimum on one given batch, by hand from the chain's own tables:
// V = 2, order 2, the row x = (0, 1, 1) with targets y = (1, 1, 0). The bigram predicts each
// target from the symbol before it through the stationary pair distribution (for order 2, the
// stationary 2-gram pi itself); the optimum predicts the first target from the stationary pair
// over the first symbol's marginal (the sequence starts stationary), the others from the
// transition row of the two symbols before them.
TEST(MarkovSource, BigramAndOptimumOnAGivenBatchAreTheHandComputedMeans) {
  const MarkovSource src(2, 2, 1.0, 5);
  const auto& pi = src.stationary();  // (4,) over (a, b) = a * 2 + b
  const auto& P = src.transitions();  // (4, 2)
  const auto q = [&](int a, int b) {  // q(b | a)
    return pi[size_t(a * 2 + b)] / (pi[size_t(a * 2)] + pi[size_t(a * 2 + 1)]);
  };
  Batch b;
  b.B = 1;
  b.T = 3;
  b.x = {0, 1, 1};
  b.y = {1, 1, 0};
  const double bigram = -(std::log(q(0, 1)) + std::log(q(1, 1)) + std::log(q(1, 0))) / 3.0;
  EXPECT_NEAR(src.bigram_loss_on({b}), bigram, 1e-12);
  const double first = pi[1] / (pi[0] + pi[1]);  // p(x1 = 1 | x0 = 0)
  const double optimum =
      -(std::log(first) + std::log(P[size_t(1 * 2 + 1)]) + std::log(P[size_t(3 * 2 + 0)])) / 3.0;
  ASSERT_TRUE(src.optimum_loss_on({b}).has_value());
  EXPECT_NEAR(*src.optimum_loss_on({b}), optimum, 1e-12);
  EXPECT_NE(*src.optimum_loss_on({b}), src.bigram_loss_on({b})) << "order 2: pairs are not all";
}

// For an order-1 chain the current symbol is the whole context: the bigram is the optimum.
TEST(MarkovSource, ForAnOrderOneChainTheBigramIsTheOptimumToTheLastBit) {
  MarkovSource src(5, 1, 0.3, 9);
  const std::vector<Batch> val = src.eval_batches(3, 4, 16, false);
  EXPECT_EQ(src.bigram_loss_on(val), src.optimum_loss_on(val).value());
}

// configs/base.json's chain on its val batches (8 of 8 x 64): the numbers an independent port
// of this file found (issue 57): unigram 3.4356, bigram about 2.884, optimum about 0.747.
TEST(MarkovSource, BaseJsonsValBatchesScoreTheIssuesUnigramBigramAndOptimum) {
  MarkovSource src(32, 2, 0.02, 1234);
  const std::vector<Batch> val = src.eval_batches(8, 8, 64, false);
  ReferenceLosses r = src.reference_losses(64);
  measure_on_batches(r, src, val);
  EXPECT_NEAR(r.unigram_on_val.value(), 3.4356, 5e-5);
  EXPECT_NEAR(r.bigram_on_val.value(), 2.884, 5e-4);
  EXPECT_NEAR(r.optimum_on_val.value(), 0.747, 5e-4);
  EXPECT_TRUE(r.optimum_on_val_note.empty());
  const nlohmann::json j = to_json(r);
  EXPECT_FALSE(j.contains("optimum_on_val_note"));
  EXPECT_DOUBLE_EQ(j.at("bigram_on_val").get<double>(), *r.bigram_on_val);
}

// Order 3: the first two targets of a row come from the stationary 2- and 3-gram marginals; on
// many batches the three predictors keep their order, each knowing more than the one before.
TEST(MarkovSource, OnManyBatchesTheOptimumBeatsTheBigramWhichBeatsTheUnigram) {
  for (int order : {2, 3}) {
    MarkovSource src(6, order, 0.2, 21);
    const std::vector<Batch> val = src.eval_batches(20, 8, 32, false);
    const double uni = unigram_loss_on(val, src.unigram_probs());
    const double bi = src.bigram_loss_on(val), opt = src.optimum_loss_on(val).value();
    EXPECT_LT(bi, uni) << "order " << order;
    EXPECT_LT(opt, bi) << "order " << order;
    EXPECT_NEAR(opt, src.reference_losses(32).optimal, 0.05) << "the population's, estimated";
  }
}

TEST(MarkovSource, HugeAlphaGivesNearlyUniformChain) {
  const MarkovSource src(4, 2, 1e5, 1);
  EXPECT_NEAR(src.entropy_rate(), std::log(4.0), 1e-3);
  EXPECT_NEAR(src.unigram_entropy(), std::log(4.0), 1e-4);
}

TEST(MarkovSource, TargetsAreInputsShiftedByOne) {
  MarkovSource src(10, 2, 0.5, 4);
  Rng rng(1);
  const Batch b = src.train_batch(3, 12, rng);
  ASSERT_EQ(b.B, 3);
  ASSERT_EQ(b.T, 12);
  ASSERT_EQ(b.x.size(), size_t{36});
  ASSERT_EQ(b.y.size(), size_t{36});
  for (int i = 0; i < 3; ++i)
    for (int t = 0; t + 1 < 12; ++t)
      EXPECT_EQ(b.y[size_t(i * 12 + t)], b.x[size_t(i * 12 + t + 1)]);
  for (int32_t v : b.y) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 10);
  }
}

TEST(MarkovSource, EvalBatchesAreIdenticalAcrossCallsAndIgnoreTheTrainingRng) {
  MarkovSource a(10, 2, 0.5, 4), b(10, 2, 0.5, 4);
  Rng r1(1), r2(999);
  const auto first = a.eval_batches(3, 4, 16, false);
  a.train_batch(4, 16, r1);
  b.train_batch(4, 16, r2);
  b.train_batch(4, 16, r2);
  const auto again = a.eval_batches(3, 4, 16, false);
  const auto other = b.eval_batches(3, 4, 16, false);
  ASSERT_EQ(first.size(), size_t{3});
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(first[i].x, again[i].x);
    EXPECT_EQ(first[i].y, again[i].y);
    EXPECT_EQ(first[i].x, other[i].x);
  }
  EXPECT_NE(first[0].x, a.eval_batches(1, 4, 16, true)[0].x) << "train and val eval splits differ";
}

TEST(MarkovSource, SameSeedGivesSameBatchesAndDifferentSeedDifferent) {
  MarkovSource a(10, 2, 0.5, 4), b(10, 2, 0.5, 4), c(10, 2, 0.5, 5);
  Rng ra(7), rb(7), rc(7);
  EXPECT_EQ(a.train_batch(2, 32, ra).x, b.train_batch(2, 32, rb).x);
  EXPECT_NE(a.train_batch(2, 32, ra).x, c.train_batch(2, 32, rc).x);
  EXPECT_EQ(a.transitions(), b.transitions());
  EXPECT_NE(a.transitions(), c.transitions());
  EXPECT_NE(a.eval_batches(1, 2, 32, false)[0].x, c.eval_batches(1, 2, 32, false)[0].x);
  Rng r1(1), r2(2);
  EXPECT_NE(a.train_batch(2, 32, r1).x, a.train_batch(2, 32, r2).x);
}

TEST(MarkovSource, BadParametersNameTheirField) {
  auto msg = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg([] { MarkovSource(1, 1, 1.0, 0); }).find("model.vocab_size"), std::string::npos)
      << "the key a user sets is model.vocab_size (there is no data.vocab_size)";
  EXPECT_NE(msg([] { MarkovSource(4, 4, 1.0, 0); }).find("data.order"), std::string::npos);
  EXPECT_NE(msg([] { MarkovSource(4, 0, 1.0, 0); }).find("data.order"), std::string::npos);
  EXPECT_NE(msg([] { MarkovSource(4, 1, 0.0, 0); }).find("data.alpha"), std::string::npos);
  EXPECT_NE(msg([] { MarkovSource(1024, 3, 1.0, 0); }).find("2^24"), std::string::npos);
}

TEST(MarkovSource, DecodeAndEncodeRoundTripAsLettersOrIntegers) {
  const MarkovSource small(5, 1, 1.0, 0), large(40, 1, 1.0, 0);
  const std::vector<int32_t> ids = {0, 4, 2, 2, 1};
  EXPECT_EQ(small.decode(ids), "aeccb");
  EXPECT_EQ(small.encode(small.decode(ids)), ids);
  EXPECT_EQ(small.encode("a e\nc"), (std::vector<int32_t>{0, 4, 2}));
  EXPECT_THROW(small.encode("az"), Error);
  const std::vector<int32_t> big = {0, 39, 17};
  EXPECT_EQ(large.decode(big), "0 39 17");
  EXPECT_EQ(large.encode("0 39 17"), big);
  EXPECT_THROW(large.encode("0 40"), Error);
  EXPECT_THROW(large.decode({40}), Error);
}

TEST(MarkovSource, DescribeReportsParametersAndEntropies) {
  const MarkovSource src(6, 2, 0.25, 42);
  const auto j = src.describe();
  EXPECT_EQ(j.at("source"), "markov");
  EXPECT_EQ(j.at("vocab_size"), 6);
  EXPECT_EQ(j.at("order"), 2);
  EXPECT_EQ(j.at("seed"), 42);
  EXPECT_DOUBLE_EQ(j.at("entropy_rate").get<double>(), src.entropy_rate());
  EXPECT_EQ(j.at("block_entropies").size(), size_t{3});
}

}  // namespace
}  // namespace sl
