// The escape rule as a stopping rule (train/escape_stop.h): its definition at the margin's edge,
// which summaries count as stopped on escape, and which config changes leave such a run the same.
#include "train/escape_stop.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace sl {
namespace {

using json = nlohmann::json;

Config with_margin(double margin, int max_iters) {
  Config c;
  c.train.stop_below_unigram = margin;
  c.train.max_iters = max_iters;
  return c;
}

json escaped_summary(int64_t step, double margin) {
  return {{"status", "completed"},
          {"steps", step},
          {"stopped", escape_stop_record(step, 3.0, 3.4356, margin)}};
}

TEST(EscapeRule, AValLossAtLeastTheMarginBelowTheUnigramLossHasEscaped) {
  EXPECT_TRUE(escaped(3.3, 3.5, 0.1)) << "0.2 below";
  EXPECT_TRUE(escaped(3.25, 3.5, 0.25)) << "exactly the margin below counts (at or below)";
  EXPECT_FALSE(escaped(3.26, 3.5, 0.25)) << "0.24 below is not enough";
  EXPECT_FALSE(escaped(1.0, 3.5, 0.0)) << "margin 0 is off, however low the loss";
  EXPECT_FALSE(escaped(std::nan(""), 3.5, 0.1));
  EXPECT_FALSE(escaped(1.0, std::numeric_limits<double>::infinity(), 0.1))
      << "an infinite unigram loss on val (a token of probability 0) is no reference";
}

TEST(EscapeRule, ARunStoppedOnEscapeIsDoneAtAnyLongerHorizonUnderTheSameMargin) {
  EXPECT_TRUE(stopped_on_escape(escaped_summary(400, 0.1), with_margin(0.1, 3000)));
  EXPECT_TRUE(stopped_on_escape(escaped_summary(400, 0.1), with_margin(0.1, 12000)));
  EXPECT_FALSE(stopped_on_escape(escaped_summary(400, 0.1), with_margin(0.2, 12000)))
      << "another margin is another rule";
  EXPECT_FALSE(stopped_on_escape(escaped_summary(400, 0.1), with_margin(0.0, 12000)))
      << "a config that no longer stops wants the steps after the escape";
  EXPECT_FALSE(stopped_on_escape(escaped_summary(400, 0.1), with_margin(0.1, 400)))
      << "at or below its stop step the horizon, not the rule, ends it";
  json running = escaped_summary(400, 0.1);
  running["status"] = "running";
  EXPECT_FALSE(stopped_on_escape(running, with_margin(0.1, 3000)));
  EXPECT_FALSE(stopped_on_escape(
      json{{"status", "completed"}, {"steps", 400}, {"stopped", nullptr}}, with_margin(0.1, 3000)))
      << "a run completed short of its horizon without stopping is one to extend";
  EXPECT_FALSE(stopped_on_escape(json(nullptr), with_margin(0.1, 3000))) << "no summary";
}

TEST(EscapeRule, OnlyTheHorizonAndAnUnreadDecayLeaveARunStoppedOnEscapeTheSame) {
  OptimConfig constant;
  constant.schedule = ScheduleKind::Constant;
  const std::vector<std::string> horizon = {"train.max_iters: 3000 -> 12000",
                                            "optim.lr_decay_iters: 3000 -> 12000",
                                            "config.json: train.max_iters: 3000 -> 12000 (an "
                                            "extension to it was started)"};
  EXPECT_TRUE(only_horizon_changes(horizon, constant));
  EXPECT_TRUE(only_horizon_changes({}, constant));
  EXPECT_FALSE(only_horizon_changes({"optim.learning_rate: 0.0003 -> 0.001"}, constant));
  EXPECT_FALSE(only_horizon_changes({"train.stop_below_unigram: 0.1 -> 0.2"}, constant));
  OptimConfig cosine;
  cosine.schedule = ScheduleKind::Cosine;
  EXPECT_FALSE(only_horizon_changes({"optim.lr_decay_iters: 3000 -> 12000"}, cosine))
      << "under cosine the decay moves every step's rate";
  EXPECT_FALSE(only_horizon_changes({"train.max_iters: 3000 -> 12000"}, cosine))
      << "lr_decay_iters 0 decays to max_iters";
  cosine.lr_decay_iters = 5000;
  EXPECT_TRUE(only_horizon_changes({"train.max_iters: 3000 -> 12000"}, cosine))
      << "a fixed decay is not moved by the horizon";
}

}  // namespace
}  // namespace sl
