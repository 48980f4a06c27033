// The milestones of a run (train/milestones.h): their lines from the references on the val
// batches, the first eval at or below each, the stop rules read on them, and which summaries
// count as stopped by the rule a config still asks for.
#include "train/milestones.h"

#include <cmath>

#include <gtest/gtest.h>

namespace sl {
namespace {

using json = nlohmann::json;

// base.json's references on its val batches (issue 57).
const json kRefs = {
    {"unigram_on_val", 3.4356}, {"bigram_on_val", 2.884}, {"optimum_on_val", 0.747}};

TrainConfig margins(double margin, double near) {
  TrainConfig t;
  t.milestone_margin = margin;
  t.near_optimum = near;
  return t;
}

TEST(Milestones, TheLinesAreTheReferencesMinusTheMarginAndTheOptimumPlusItsGap) {
  const Milestones m(kRefs, margins(0.1, 0.15));
  EXPECT_DOUBLE_EQ(m.line(StopAt::M1), 3.4356 - 0.1);
  EXPECT_DOUBLE_EQ(m.line(StopAt::M2), 2.884 - 0.1);
  EXPECT_DOUBLE_EQ(m.line(StopAt::M3), 0.747 + 0.15);
  const Milestones wide(kRefs, margins(0.3, 0.05));
  EXPECT_DOUBLE_EQ(wide.line(StopAt::M2), 2.884 - 0.3);
  EXPECT_DOUBLE_EQ(wide.line(StopAt::M3), 0.747 + 0.05);
}

TEST(Milestones, EachIsReachedAtTheFirstEvalAtOrBelowItsLineAndKeepsIt) {
  Milestones m(kRefs, margins(0.1, 0.15));
  EXPECT_TRUE(m.record(0, 3.47).empty());
  EXPECT_TRUE(m.record(50, 3.3357).empty()) << "just above m1's line";
  const auto at100 = m.record(100, 3.4356 - 0.1);
  ASSERT_EQ(at100.size(), 1u) << "exactly on the line counts";
  EXPECT_STREQ(at100[0]->name, "m1");
  EXPECT_TRUE(m.record(150, 3.5).empty()) << "a later eval above the line changes nothing";
  const auto at200 = m.record(200, 0.85);
  ASSERT_EQ(at200.size(), 2u) << "m2 and m3 at once";
  EXPECT_STREQ(at200[0]->name, "m2");
  EXPECT_STREQ(at200[1]->name, "m3");
  const json j = m.to_json();
  EXPECT_EQ(j.at("m1").at("step"), 100);
  EXPECT_DOUBLE_EQ(j.at("m1").at("val_loss").get<double>(), 3.4356 - 0.1);
  EXPECT_EQ(j.at("m2").at("step"), 200);
  EXPECT_EQ(j.at("m3").at("step"), 200);
  EXPECT_EQ(j.at("m2").at("reference"), "bigram_on_val");
  EXPECT_DOUBLE_EQ(j.at("m3").at("margin").get<double>(), 0.15);
}

TEST(Milestones, AMissingOrNullReferenceGivesNoLineAndIsNeverReached) {
  Milestones m({{"unigram_on_val", 3.0}, {"bigram_on_val", 2.5}, {"optimum_on_val", nullptr}},
               margins(0.1, 0.15));
  EXPECT_TRUE(std::isnan(m.line(StopAt::M3)));
  m.record(0, 0.0);
  EXPECT_FALSE(m.reached(StopAt::M3)) << "a text run has no optimum";
  EXPECT_TRUE(m.to_json().at("m3").at("line").is_null());
  EXPECT_TRUE(m.to_json().at("m3").at("step").is_null());
  EXPECT_TRUE(m.reached(StopAt::M2));
}

TEST(StopRule, StopAtStopsAtItsMilestoneAndTheOlderMarginAtTheEscape) {
  Config c;
  c.train.stop_at = StopAt::M2;
  const Milestones m(kRefs, c.train);
  EXPECT_FALSE(stop_rule_met(c, m, 3.0)) << "m1 is not m2";
  EXPECT_TRUE(stop_rule_met(c, m, 2.784));
  Config escape;
  escape.train.stop_below_unigram = 0.25;
  EXPECT_FALSE(stop_rule_met(escape, Milestones(kRefs, escape.train), 3.4356 - 0.2))
      << "the escape rule's own margin, not train.milestone_margin";
  EXPECT_TRUE(stop_rule_met(escape, Milestones(kRefs, escape.train), 3.4356 - 0.25));
  EXPECT_FALSE(stop_rule_met(Config{}, m, 0.0)) << "no rule stops nothing";
}

TEST(StopRule, ARunStoppedAtItsMilestoneIsDoneOnlyUnderTheSameMilestoneAndMargin) {
  Config c;
  c.train.stop_at = StopAt::M2;
  c.train.max_iters = 3000;
  const Milestones m(kRefs, c.train);
  const json summary = {
      {"status", "completed"}, {"steps", 400}, {"stopped", m.stop_record(StopAt::M2, 400, 2.7)}};
  EXPECT_EQ(summary.at("stopped").at("reason"), "milestone");
  EXPECT_EQ(summary.at("stopped").at("milestone"), "m2");
  EXPECT_TRUE(stopped_by_its_rule(summary, c));
  c.train.max_iters = 12000;
  EXPECT_TRUE(stopped_by_its_rule(summary, c)) << "at any longer horizon";
  Config m3 = c;
  m3.train.stop_at = StopAt::M3;
  EXPECT_FALSE(stopped_by_its_rule(summary, m3)) << "a later milestone: to continue";
  Config wider = c;
  wider.train.milestone_margin = 0.2;
  EXPECT_FALSE(stopped_by_its_rule(summary, wider)) << "another line";
  c.train.max_iters = 400;
  EXPECT_FALSE(stopped_by_its_rule(summary, c)) << "stopped at its horizon is no early stop";
  EXPECT_TRUE(same_stop_rule(m3.train, m3.train));
  EXPECT_FALSE(same_stop_rule(m3.train, wider.train));
}

}  // namespace
}  // namespace sl
