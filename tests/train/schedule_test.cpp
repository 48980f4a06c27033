// Tests for train/schedule: constant, warmup_constant and cosine rates at the points where
// each phase starts and ends, checked against hand-computed values.
#include "train/schedule.h"

#include <cmath>
#include <numbers>

#include <gtest/gtest.h>

namespace sl {
namespace {

OptimConfig schedule(const std::string& name, int warmup, int decay_iters, double min_lr) {
  OptimConfig c;
  c.schedule = parse_choice<ScheduleKind>(name).value();
  c.learning_rate = 1e-3;
  c.warmup_iters = warmup;
  c.lr_decay_iters = decay_iters;
  c.min_lr = min_lr;
  return c;
}

TEST(Schedule, ConstantIsTheLearningRateAtEveryStep) {
  const OptimConfig c = schedule("constant", 10, 0, 1e-4);
  for (int64_t step : {0, 5, 10, 299, 1000}) EXPECT_EQ(learning_rate_at(c, step, 300), 1e-3);
}

TEST(Schedule, WarmupConstantRisesLinearlyToTheRateAndStaysThere) {
  const OptimConfig c = schedule("warmup_constant", 10, 0, 0.0);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 0, 300), 1e-4);  // lr * 1/10
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 4, 300), 5e-4);  // lr * 5/10
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 9, 300), 1e-3);  // last warmup step: the full rate
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 10, 300), 1e-3);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 5000, 300), 1e-3);
}

TEST(Schedule, WarmupOfZeroItersStartsAtTheFullRate) {
  EXPECT_DOUBLE_EQ(learning_rate_at(schedule("warmup_constant", 0, 0, 0.0), 0, 300), 1e-3);
  EXPECT_DOUBLE_EQ(learning_rate_at(schedule("cosine", 0, 100, 1e-4), 0, 300), 1e-3);
}

TEST(Schedule, CosineWarmsUpThenFallsFromTheRateToMinLrOverTheDecayWindow) {
  const OptimConfig c = schedule("cosine", 10, 110, 1e-4);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 0, 300), 1e-4);       // warmup start: lr/10
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 9, 300), 1e-3);       // warmup end
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 10, 300), 1e-3);      // cosine start: coeff 1
  EXPECT_NEAR(learning_rate_at(c, 60, 300), 5.5e-4, 1e-15);  // halfway: min + 0.5*(lr - min)
  const double quarter = 1e-4 + 0.5 * (1.0 + std::cos(std::numbers::pi * 0.25)) * 9e-4;
  EXPECT_NEAR(learning_rate_at(c, 35, 300), quarter, 1e-15);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 110, 300), 1e-4);  // end of decay
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 200, 300), 1e-4);  // after decay: min_lr
}

TEST(Schedule, CosineWithLrDecayItersZeroDecaysOverMaxIters) {
  const OptimConfig c = schedule("cosine", 0, 0, 0.0);
  EXPECT_NEAR(learning_rate_at(c, 50, 100), 5e-4, 1e-15);  // halfway through max_iters = 100
  EXPECT_NEAR(learning_rate_at(c, 50, 200), 0.5 * (1.0 + std::cos(std::numbers::pi * 0.25)) * 1e-3,
              1e-15);
  EXPECT_EQ(learning_rate_at(c, 100, 100), 0.0);
}

TEST(Schedule, CosineWithDecayEndingInsideWarmupGoesToMinLrAfterWarmup) {
  const OptimConfig c = schedule("cosine", 10, 5, 1e-4);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 9, 300), 1e-3);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 10, 300), 1e-4);
}

TEST(Schedule, RejectsANegativeStep) {
  EXPECT_THROW(learning_rate_at(schedule("constant", 0, 0, 0.0), -1, 100), Error);
}

}  // namespace
}  // namespace sl
