// Tests for train/resume: each rule for continuing a run directory, one test per rule. The
// end-to-end resumes (kill, resume, compare losses) are in tests/cli/train_resume_test.cpp.
#include "train/resume.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/error.h"
#include "train/provenance.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

Config started_run(ScheduleKind schedule = ScheduleKind::Constant) {
  Config c;
  c.train.max_iters = 100;
  c.optim.schedule = schedule;
  return c;
}

std::string error_of(const Config& started, const std::vector<std::string>& overrides) {
  try {
    resumed_config(started, overrides, "runs/r");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ResumeRules, WithoutOverridesTheRunKeepsItsConfigAndSaysNothing) {
  const ResumedConfig r = resumed_config(started_run(), {}, "runs/r");
  EXPECT_EQ(r.cfg.train.max_iters, 100);
  EXPECT_FALSE(r.decay_changed);
  EXPECT_TRUE(r.notes.empty());
}

TEST(ResumeRules, AnOverrideOtherThanMaxItersDecayItersOrThreadsIsRefusedByName) {
  const std::string e = error_of(started_run(), {"model.n_layer=8", "train.threads=2"});
  EXPECT_TRUE(has(e, "config overrides (model.n_layer=8) are not accepted")) << e;
}

TEST(ResumeRules, ARunIsNeverShortened) {
  const std::string e = error_of(started_run(), {"train.max_iters=50"});
  EXPECT_TRUE(has(e, "--train.max_iters=50: a resumed run can be extended, not shortened")) << e;
  EXPECT_TRUE(has(e, "train.max_iters=100")) << e;
}

TEST(ResumeRules, TheDecayMovesOnlyWithAnExtension) {
  const std::string e = error_of(started_run(ScheduleKind::Cosine), {"optim.lr_decay_iters=200"});
  EXPECT_TRUE(has(e, "--optim.lr_decay_iters: a resumed run keeps its schedule")) << e;
}

TEST(ResumeRules, ACosineRunIsNotExtendedPastItsDecayUnlessTheNewDecayIsGiven) {
  const std::string e = error_of(started_run(ScheduleKind::Cosine), {"train.max_iters=200"});
  EXPECT_TRUE(has(e, "has decayed to optim.min_lr=0 at optim.lr_decay_iters=100")) << e;
  EXPECT_TRUE(has(e, "--optim.lr_decay_iters=200")) << e;
  EXPECT_NO_THROW(resumed_config(started_run(ScheduleKind::Cosine),
                                 {"train.max_iters=200", "optim.lr_decay_iters=100"}, "runs/r"))
      << "keeping the old horizon on purpose is allowed";
}

TEST(ResumeRules, AConstantRunIsExtendedWithItsDecayPinnedToTheOldMaxIters) {
  const ResumedConfig r = resumed_config(started_run(), {"train.max_iters=200"}, "runs/r");
  EXPECT_EQ(r.cfg.train.max_iters, 200);
  EXPECT_EQ(r.cfg.optim.lr_decay_iters, 100) << "the horizon it was trained under";
  EXPECT_FALSE(r.decay_changed);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], "extending runs/r from 100 to 200 steps");
}

TEST(ResumeRules, ANewDecayHorizonMovesTheDecayWithANote) {
  const ResumedConfig r =
      resumed_config(started_run(ScheduleKind::Cosine),
                     {"train.max_iters=200", "optim.lr_decay_iters=200"}, "runs/r");
  EXPECT_TRUE(r.decay_changed);
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_TRUE(has(r.notes[0], "now ends at optim.lr_decay_iters=200 (was 100)")) << r.notes[0];
}

TEST(ResumeRules, TheThreadCountMayChangeWithANote) {
  const ResumedConfig r = resumed_config(started_run(), {"train.threads=3"}, "runs/r");
  EXPECT_EQ(r.cfg.train.threads, 3);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_TRUE(has(r.notes[0], "train.threads 0 -> 3")) << r.notes[0];
}

TEST(ResumeRules, ARunWhoseProvenanceChangedIsNotResumed) {
  const Config started = started_run();
  Config other = started;
  other.data.seed += 1;
  EXPECT_NO_THROW(check_resume_provenance("runs/r", make_provenance(started), started));
  EXPECT_NO_THROW(check_resume_provenance("runs/r", nullptr, started))
      << "nothing to compare without a provenance.json";
  try {
    check_resume_provenance("runs/r", make_provenance(other), started);
    ADD_FAILURE() << "a changed data seed was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "runs/r: cannot resume")) << e.what();
    EXPECT_TRUE(has(e.what(), "data.seed")) << e.what();
  }
}

TEST(ResumeRules, ADirectoryWithoutConfigJsonIsNotARunDirectory) {
  const fs::path dir = fs::path(::testing::TempDir()) / "stacklab_resume_test_empty";
  fs::create_directories(dir);
  try {
    load_run_config(dir.string());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "not a run directory (no config.json)")) << e.what();
  }
}

}  // namespace
}  // namespace sl
