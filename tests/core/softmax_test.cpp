// softmax (plain and causal) and the fused cross-entropy.
#include <gtest/gtest.h>

#include <cmath>

#include "core/ops.h"
#include "support/gradcheck.h"

namespace sl {
namespace {
using testing::grad_check;
using testing::randn;

TEST(Softmax, RowsSumToOne) {
  Tensor y = softmax(randn({4, 7}, 1, 3.0f, false));
  for (int r = 0; r < 4; ++r) {
    double s = 0;
    for (int j = 0; j < 7; ++j) s += y.data()[r * 7 + j];
    EXPECT_NEAR(s, 1.0, 1e-6);
  }
}

TEST(Softmax, IsStableForLargeLogits) {
  std::vector<float> y = softmax(Tensor::from({3}, {1000, 1000, -1000})).to_vector();
  EXPECT_NEAR(y[0], 0.5f, 1e-6);
  EXPECT_EQ(y[2], 0.0f);
}

TEST(Softmax, CausalMaskHidesTheFuture) {
  Tensor x = randn({2, 5, 5}, 2, 1.0f, false);
  Tensor y = softmax(x, true);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 5; ++i) {
      double s = 0;
      for (int j = 0; j < 5; ++j) {
        const float p = y.data()[(b * 5 + i) * 5 + j];
        if (j > i) {
          EXPECT_EQ(p, 0.0f);
        }
        s += p;
      }
      EXPECT_NEAR(s, 1.0, 1e-6);
    }
  // Changing a future score leaves every row unchanged.
  Tensor x2 = x.clone();
  x2.data()[0 * 5 + 3] += 5.0f;  // row 0, key 3 (future for query 0)
  EXPECT_EQ(softmax(x2, true).to_vector(), y.to_vector());
}

TEST(Softmax, BackwardMatchesFiniteDifferencesPlainAndCausal) {
  for (bool causal : {false, true})
    EXPECT_TRUE(
        grad_check([causal](const std::vector<Tensor>& in) { return softmax(in[0], causal); },
                   {randn({2, 3, 4, 4}, 3)}))
        << "causal=" << causal;
}

TEST(CrossEntropy, UniformLogitsGiveLnV) {
  for (int V : {2, 32, 65}) {
    std::vector<int32_t> t = {0, static_cast<int32_t>(V - 1), 1};
    EXPECT_NEAR(cross_entropy(Tensor::zeros({3, V}), t).item(), std::log(static_cast<double>(V)),
                1e-6);
  }
}

TEST(CrossEntropy, MatchesMinusLogSoftmaxOfTheTarget) {
  Tensor l = Tensor::from({1, 3}, {1.0f, 2.0f, 3.0f});
  const double expected =
      -std::log(std::exp(2.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)));
  EXPECT_NEAR(cross_entropy(l, {1}).item(), expected, 1e-6);
}

TEST(CrossEntropy, BackwardMatchesFiniteDifferences) {
  std::vector<int32_t> targets = {0, 3, 2, 2, 1, 4};
  EXPECT_TRUE(
      grad_check([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], targets); },
                 {randn({2, 3, 5}, 4, 2.0f)}));
}

TEST(CrossEntropy, RejectsATargetOutsideTheVocabulary) {
  try {
    cross_entropy(Tensor::zeros({2, 4}), {1, 4});
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("target 4 at row 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sl
