// The float32 limit of a learning rate (issue 57, milestone_law_rules.json's read R4): AdamW's
// first update is about lr x sign(g) (m_hat / sqrt(v_hat) = g / |g| when |g| >> eps), and a
// float32 weight moves only when the update exceeds half an ulp of the weight. For a weight of
// 0.02 (the init std), in the binade [2^-6, 2^-5) whose ulp is 2^-29, that is 2^-30, about
// 9.3e-10. The rules' R4 sets the depth at which the fitted best rate falls below this against it.
// Not here: the fit of the best rate against depth (the escape law's studies), the optimizer's
// agreement with PyTorch (optimizer_test.cpp).
#include <cmath>

#include <gtest/gtest.h>

#include "train/optimizer.h"

namespace sl {
namespace {

constexpr float kWeight = 0.02f;      // base.json's init_std: a typical weight at init
constexpr double kHalfUlp = 0x1p-30;  // half the spacing of floats in [2^-6, 2^-5)

// The weight after `steps` AdamW steps at `lr`, each with the same gradient g (no weight decay).
float weight_after(double lr, int steps, float g = 1e-3f) {
  OptimConfig cfg;  // AdamW, beta1 0.9, beta2 0.95, eps 1e-8, no decay: the study's optimizer
  auto opt = make_optimizer(cfg, {{"w", Tensor::from(Shape{1}, {kWeight}, true), true}});
  Tensor w = opt->params()[0].tensor;
  for (int s = 0; s < steps; ++s) {
    w.grad_data()[0] = g;
    opt->step(static_cast<float>(lr));
  }
  return w.data()[0];
}

// The smallest rate (to a part in 1e4) whose first AdamW step changes a float32 weight of 0.02.
double smallest_rate_that_moves_the_weight() {
  double lo = 1e-12, hi = 1e-6;  // lo leaves the weight as it is, hi moves it
  while (hi / lo > 1.0001) {
    const double mid = std::sqrt(lo * hi);
    (weight_after(mid, 1) == kWeight ? lo : hi) = mid;
  }
  return hi;
}

TEST(Float32Limit, TheSmallestRateThatMovesAWeightOf002IsHalfItsUlp) {
  ASSERT_EQ(weight_after(1e-12, 1), kWeight);
  ASSERT_NE(weight_after(1e-6, 1), kWeight);
  const double rate = smallest_rate_that_moves_the_weight();
  EXPECT_NEAR(rate / kHalfUlp, 1.0, 0.01) << "measured " << rate << ", half an ulp " << kHalfUlp;
}

TEST(Float32Limit, ARateBelowItChangesNothingHoweverLongItTrains) {
  // Every step rounds back to the same float: the updates do not add up.
  EXPECT_EQ(weight_after(0.5 * kHalfUlp, 1000), kWeight);
  EXPECT_EQ(weight_after(0.9 * kHalfUlp, 1000), kWeight);
}

TEST(Float32Limit, ARateTwiceAsLargeMovesItEveryStep) {
  const float after_one = weight_after(2 * kHalfUlp, 1);
  EXPECT_EQ(after_one, std::nextafter(kWeight, 0.0f));  // one ulp down (the update is 2^-29)
  EXPECT_LT(weight_after(2 * kHalfUlp, 100), weight_after(2 * kHalfUlp, 99));
}

}  // namespace
}  // namespace sl
