// Tests for train/resume: each rule for continuing a run directory, one test per rule. The
// end-to-end resumes (kill, resume, compare losses) are in tests/cli/train_resume_test.cpp.
#include "train/resume.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/safetensors.h"
#include "train/provenance.h"
#include "util/error.h"
#include "util/fsutil.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

Config started_run(ScheduleKind schedule = ScheduleKind::Constant) {
  Config c;
  c.train.max_iters = 100;
  c.optim.schedule = schedule;
  return c;
}

// A run that trained all its steps (its checkpoint at train.max_iters, no escape stop).
TrainedSoFar completed(const Config& started) { return {started.train.max_iters, nullptr}; }

// The summary of a run stopped on its escape rule at `step` under `margin`.
nlohmann::json escaped_summary(int64_t step, double margin) {
  return {{"status", "completed"},
          {"steps", step},
          {"stopped",
           {{"reason", "escaped"},
            {"step", step},
            {"val_loss", 1.5882},
            {"unigram_on_val", 1.7},
            {"margin", margin}}}};
}

std::string error_of(const Config& started, const std::vector<std::string>& overrides,
                     const TrainedSoFar& so_far) {
  try {
    resumed_config(started, overrides, "runs/r", so_far);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string error_of(const Config& started, const std::vector<std::string>& overrides) {
  return error_of(started, overrides, completed(started));
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ResumeRules, WithoutOverridesTheRunKeepsItsConfigAndSaysNothing) {
  const ResumedConfig r = resumed_config(started_run(), {}, "runs/r", completed(started_run()));
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
                                 {"train.max_iters=200", "optim.lr_decay_iters=100"}, "runs/r",
                                 completed(started_run(ScheduleKind::Cosine))))
      << "keeping the old horizon on purpose is allowed";
}

// Issue 60: "has decayed" was said of a run stopped at step 50 of its decay to 200.
TEST(ResumeRules, ARunIsToldItHasDecayedOnlyWhenItTrainedToItsDecayHorizon) {
  Config started = started_run(ScheduleKind::Cosine);
  started.optim.warmup_iters = 60;
  const std::string e = error_of(started, {"train.max_iters=200"}, {50, nullptr});
  EXPECT_FALSE(has(e, "has decayed")) << e;
  EXPECT_TRUE(
      has(e, "decays to optim.min_lr=0 at optim.lr_decay_iters=100 (the run is at step 50)"))
      << e;
  EXPECT_TRUE(has(e, "extend the decay too with --optim.lr_decay_iters=200"))
      << "every step it trained is in the warm-up, so the decay can still move: " << e;
  started.optim.warmup_iters = 10;
  const std::string past = error_of(started, {"train.max_iters=200"}, {50, nullptr});
  EXPECT_TRUE(has(past, "pass --optim.lr_decay_iters=100 to keep it")) << past;
  EXPECT_FALSE(has(past, "extend the decay too")) << "a moved decay would rewrite steps 11-49";
  EXPECT_TRUE(has(past,
                  "stacklab train runs/r/config.json --train.max_iters=200 "
                  "--optim.lr_decay_iters=200 --out NEW_DIR"))
      << past;
}

// Issue 60: a cosine run extended with its decay moved said a schedule it never trained under.
TEST(ResumeRules, ADecayMovedUnderStepsTheRunTrainedIsRefusedNamingTheFirstStepItChanges) {
  Config started = started_run(ScheduleKind::Cosine);
  started.optim.warmup_iters = 10;
  const std::string e =
      error_of(started, {"train.max_iters=200", "optim.lr_decay_iters=200"}, {50, nullptr});
  for (const char* part :
       {"--optim.lr_decay_iters=200: runs/r trained steps 0-49 under optim.lr_decay_iters=100",
        "changes the learning rate of step 11", "a schedule it never trained under",
        "Keep the decay (--optim.lr_decay_iters=100)",
        "stacklab train runs/r/config.json --train.max_iters=200 --optim.lr_decay_iters=200"})
    EXPECT_TRUE(has(e, part)) << "missing '" << part << "' in " << e;
  EXPECT_EQ(error_of(started, {"train.max_iters=200", "optim.lr_decay_iters=200"}, {11, nullptr}),
            "")
      << "steps 0-10 (the warm-up and the cosine's first step) run at the same rates";
  EXPECT_EQ(error_of(started_run(), {"train.max_iters=200", "optim.lr_decay_iters=200"}), "")
      << "a constant rate does not read the decay";
}

// Issue 60: an extension of a run stopped on its escape rule evaluated the same state again,
// stopped at the same step having trained nothing, and relabelled the run with the new horizon.
TEST(ResumeRules, ARunStoppedOnItsEscapeRuleIsNotExtended) {
  for (const ScheduleKind kind : {ScheduleKind::Constant, ScheduleKind::Cosine}) {
    Config started = started_run(kind);
    started.train.stop_below_unigram = 0.1;
    const TrainedSoFar stopped{50, escaped_summary(50, 0.1)};
    for (const std::vector<std::string>& o :
         {std::vector<std::string>{"train.max_iters=400"},
          std::vector<std::string>{"train.max_iters=400", "optim.lr_decay_iters=400"}}) {
      const std::string e = error_of(started, o, stopped);
      for (const char* part :
           {"runs/r stopped on its escape rule at step 50 (val loss 1.5882 <= unigram on val "
            "1.7000 - 0.1",
            "would train nothing", "--train.stop_below_unigram=0"})
        EXPECT_TRUE(has(e, part)) << "missing '" << part << "' in " << e;
    }
    EXPECT_NO_THROW(resumed_config(started, {}, "runs/r", stopped))
        << "resumed at its own horizon it is what it was";
    const TrainedSoFar other_margin{50, escaped_summary(50, 0.2)};
    EXPECT_FALSE(
        has(error_of(started, {"train.max_iters=400", "optim.lr_decay_iters=100"}, other_margin),
            "escape"))
        << "stopped under another margin than the run's: not this rule";
  }
}

TEST(ResumeRules, AConstantRunIsExtendedWithItsDecayPinnedToTheOldMaxIters) {
  const ResumedConfig r =
      resumed_config(started_run(), {"train.max_iters=200"}, "runs/r", completed(started_run()));
  EXPECT_EQ(r.cfg.train.max_iters, 200);
  EXPECT_EQ(r.cfg.optim.lr_decay_iters, 100) << "the horizon it was trained under";
  EXPECT_FALSE(r.decay_changed);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], "extending runs/r from 100 to 200 steps");
}

TEST(ResumeRules, ANewDecayHorizonMovesTheDecayWithANote) {
  // Every step trained (0-99) is in the warm-up, whose rates the decay does not change.
  Config started = started_run(ScheduleKind::Cosine);
  started.optim.warmup_iters = 100;
  const ResumedConfig r = resumed_config(
      started, {"train.max_iters=200", "optim.lr_decay_iters=200"}, "runs/r", completed(started));
  EXPECT_TRUE(r.decay_changed);
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_TRUE(has(r.notes[0], "now ends at optim.lr_decay_iters=200 (was 100)")) << r.notes[0];
}

TEST(ResumeRules, TheThreadCountMayChangeWithANote) {
  const ResumedConfig r =
      resumed_config(started_run(), {"train.threads=3"}, "runs/r", completed(started_run()));
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

TEST(ResumeRules, HowFarARunTrainedIsItsCheckpointsStepAndItsSummary) {
  const fs::path dir = fs::path(::testing::TempDir()) / "stacklab_resume_test_so_far";
  fs::remove_all(dir);
  fs::create_directories(dir / "checkpoints");
  const TrainedSoFar none = trained_so_far(dir.string());
  EXPECT_EQ(none.step, 0) << "no checkpoint: the run starts over";
  EXPECT_TRUE(none.summary.is_null());
  write_file_atomic((dir / "summary.json").string(), escaped_summary(50, 0.1).dump());
  save_safetensors((dir / "checkpoints/latest.safetensors").string(), {},
                   {{"train_state", R"({"step": 50})"}});
  const TrainedSoFar t = trained_so_far(dir.string());
  EXPECT_EQ(t.step, 50);
  EXPECT_EQ(t.summary, escaped_summary(50, 0.1));
  save_safetensors((dir / "checkpoints/latest.safetensors").string(), {},
                   {{"train_state", R"({"rng": 1})"}});
  try {
    trained_so_far(dir.string());
    ADD_FAILURE() << "a checkpoint without a step was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "latest.safetensors: its train_state has no step")) << e.what();
  }
  fs::remove_all(dir);
}

// Issue 60: a checkpoint resumed under the other matrix-product path (OpenBLAS, libxsmm) got no
// note, where a thread change does.
TEST(ResumeRules, EachPartOfTheNumericPathThatChangedGetsANoteAsAThreadChangeDoes) {
  const nlohmann::json was = {{"matmul", "libxsmm 1.17 JIT in tiles (OpenBLAS for alpha != 1)"},
                              {"openblas_core", "Haswell"},
                              {"vector_loops", "x86-64-v4 (AVX-512)"},
                              {"threads", 1}};
  nlohmann::json now = was;
  now["threads"] = 2;  // the threads note's (train.threads), not this one's
  EXPECT_TRUE(numeric_path_notes(was, now).empty());
  now["matmul"] = "OpenBLAS";
  const std::vector<std::string> one = numeric_path_notes(was, now);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0],
            "note: numeric_path.matmul libxsmm 1.17 JIT in tiles (OpenBLAS for alpha != 1) -> "
            "OpenBLAS (the run's last start or resume record); losses are bit-identical to an "
            "uninterrupted run only on the same matrix-product path");
  now["openblas_core"] = "SkylakeX";
  now["vector_loops"] = "x86-64-v3 (AVX2)";
  EXPECT_EQ(numeric_path_notes(was, now).size(), 3u);
  EXPECT_TRUE(numeric_path_notes(nullptr, now).empty()) << "a run from before the record";
}

TEST(ResumeRules, TheNumericPathARunLastRanOnIsItsLastStartOrResumeRecords) {
  const fs::path dir = fs::path(::testing::TempDir()) / "stacklab_resume_test_path";
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_TRUE(last_numeric_path(dir.string()).is_null()) << "no metrics.jsonl";
  write_file_atomic(
      (dir / "metrics.jsonl").string(),
      R"({"step": 0, "kind": "start", "numeric_path": {"matmul": "OpenBLAS"}})"
      "\n"
      R"({"step": 0, "kind": "train", "loss": 3.1})"
      "\n"
      R"({"step": 4, "kind": "resume", "numeric_path": {"matmul": "libxsmm"}})"
      "\n"
      R"({"step": 5, "kind": "eval", "numeric_path": {"matmul": "not a start record"}})"
      "\n"
      R"({"step": 6, "kind": "resume", "numeric_pa)");  // torn by a crash
  EXPECT_EQ(last_numeric_path(dir.string()), (nlohmann::json{{"matmul", "libxsmm"}}));
  fs::remove_all(dir);
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
