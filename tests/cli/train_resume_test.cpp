// Stopping and resuming `stacklab train`: a run stopped by SIGTERM (clean stop, exit 143) or
// killed by SIGKILL (after its first checkpoint) and continued with --resume must end with
// exactly the losses of the same run left alone, bit for bit. Also: resuming refuses overrides.
#include <signal.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "support/cli.h"

namespace sl {
namespace {

using nlohmann::json;
using testing::base_config;
using testing::concat;
using testing::make_temp_dir;
using testing::read_json;
using testing::read_jsonl;
using testing::records_of;
using testing::run_stacklab;
namespace fs = std::filesystem;

// Long enough (about a second) to be interrupted part-way, with checkpoints every 100 steps.
std::vector<std::string> long_run_args(const std::string& out) {
  return {"train",
          base_config(),
          "--model.n_layer=2",
          "--model.n_embd=16",
          "--model.n_head=2",
          "--model.block_size=16",
          "--train.batch_size=4",
          "--train.max_iters=1500",
          "--train.threads=1",
          "--train.eval_interval=250",
          "--log.layer_interval=200",
          "--log.log_interval=10",
          "--train.ckpt_interval=100",
          "--out",
          out};
}

// Everything a run computes that must not depend on being interrupted: per step, the train
// loss, learning rate and grad norm, the eval losses, and the per-layer gradients and update
// ratios; compared as JSON numbers, which round-trip doubles exactly. Timings are left out.
json trajectory(const std::string& dir) {
  json t = json::array();
  for (const auto& r : read_jsonl(dir + "/metrics.jsonl")) {
    const std::string kind = r.at("kind");
    json e = {{"kind", kind}, {"step", r.at("step")}};
    if (kind == "train") {
      for (const char* k : {"loss", "lr", "grad_norm"}) e[k] = r.at(k);
    } else if (kind == "eval") {
      for (const char* k : {"val_loss", "train_loss"}) e[k] = r.at(k);
    } else if (kind == "layers") {
      for (const char* k : {"loss", "grad_norm", "update_ratio", "act_rms", "stream_grad_norm"})
        e[k] = r.at(k);
    } else {
      continue;  // start / resume records describe the process, not the training
    }
    t.push_back(e);
  }
  return t;
}

json final_losses(const std::string& dir) {
  const json s = read_json(dir + "/summary.json");
  return {s.at("status"), s.at("steps"), s.at("final_val_loss"), s.at("final_train_loss"),
          s.at("best_val_loss")};
}

// The uninterrupted reference, trained once per test process.
const std::string& reference_run() {
  static const std::string dir = [] {
    const std::string d = make_temp_dir("reference") + "/run";
    const auto r = run_stacklab(long_run_args(d));
    EXPECT_EQ(r.exit_code, 0) << r;
    return d;
  }();
  return dir;
}

int64_t last_train_step(const std::string& dir) {
  const std::string path = dir + "/metrics.jsonl";
  if (!fs::exists(path)) return -1;
  std::istringstream in(testing::read_text(path));
  std::string line;
  int64_t last = -1;
  while (std::getline(in, line)) {
    if (line.find("\"kind\":\"train\"") == std::string::npos) continue;
    try {
      last = json::parse(line).at("step").get<int64_t>();
    } catch (const json::exception&) {
      // a line being written right now
    }
  }
  return last;
}

void expect_same_training(const std::string& resumed, const std::string& reference) {
  const json a = trajectory(resumed), b = trajectory(reference);
  EXPECT_EQ(a.size(), b.size());
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] != b[i]) {
      ADD_FAILURE() << "first difference at record " << i << ":\n resumed:   " << a[i]
                    << "\n reference: " << b[i];
      break;
    }
  EXPECT_EQ(final_losses(resumed), final_losses(reference));
}

TEST(TrainResume, ARunStoppedBySigtermAndResumedEqualsTheUninterruptedRun) {
  const std::string& reference = reference_run();
  const std::string dir = make_temp_dir("sigterm") + "/run";
  testing::Child child(long_run_args(dir));
  ASSERT_TRUE(testing::wait_until([&] { return last_train_step(dir) >= 30 || !child.running(); }));
  child.signal(SIGTERM);
  const auto stopped = child.wait();
  ASSERT_EQ(stopped.exit_code, 143) << "the run finished before the signal arrived? " << stopped;
  EXPECT_EQ(read_json(dir + "/summary.json").at("status"), "interrupted");
  EXPECT_NE(stopped.output.find("--resume " + dir), std::string::npos) << stopped;
  const int64_t steps = read_json(dir + "/summary.json").at("steps");
  EXPECT_GT(steps, 30);
  EXPECT_LT(steps, 1500);

  const auto resumed = run_stacklab({"train", "--resume", dir});
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_NE(resumed.output.find("resuming at step " + std::to_string(steps)), std::string::npos)
      << resumed;
  expect_same_training(dir, reference);
}

TEST(TrainResume, ARunKilledAfterItsFirstCheckpointAndResumedEqualsTheUninterruptedRun) {
  const std::string& reference = reference_run();
  const std::string dir = make_temp_dir("sigkill") + "/run";
  testing::Child child(long_run_args(dir));
  // Past the first checkpoint (step 100) by some steps, so the records after it must be rewound.
  ASSERT_TRUE(testing::wait_until([&] { return last_train_step(dir) >= 150 || !child.running(); }));
  child.signal(SIGKILL);
  const auto killed = child.wait();
  ASSERT_EQ(killed.term_signal, SIGKILL)
      << "the run finished before the signal arrived? " << killed;
  ASSERT_TRUE(fs::exists(dir + "/checkpoints/latest.safetensors"));
  EXPECT_EQ(read_json(dir + "/summary.json").at("status"), "running")
      << "a killed run cannot write its summary";

  const auto resumed = run_stacklab({"train", "--resume", dir});
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_EQ(resumed.output.find("resuming at step 0"), std::string::npos) << resumed;
  EXPECT_NE(resumed.output.find("resuming at step "), std::string::npos) << resumed;
  expect_same_training(dir, reference);
  EXPECT_EQ(records_of(read_jsonl(dir + "/metrics.jsonl"), "resume").size(), 1u);
}

TEST(TrainResume, ADamagedMetricsLineIsKeptAsideWithAWarningAndEarlierResumesStay) {
  const std::string dir = make_temp_dir("resume") + "/run";
  ASSERT_EQ(run_stacklab(concat(concat({"train", base_config()}, testing::tiny_model_args()),
                                {"--out", dir}))
                .exit_code,
            0);
  ASSERT_EQ(run_stacklab({"train", "--resume", dir, "--train.max_iters=50"}).exit_code, 0);
  // Damage the third line on disk.
  std::istringstream in(testing::read_text(dir + "/metrics.jsonl"));
  std::string line, text;
  for (int n = 1; std::getline(in, line); ++n)
    text += (n == 3 ? std::string("{\"step\": 1, \"kind\": \"tra") : line) + "\n";
  testing::write_text(dir + "/metrics.jsonl", text);

  const auto r = run_stacklab({"train", "--resume", dir, "--train.max_iters=60"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.output.find("warning: " + dir + "/metrics.jsonl line 3 is not a JSON record"),
            std::string::npos)
      << r;
  EXPECT_NE(testing::read_text(dir + "/metrics.jsonl.damaged")
                .find("line 3: {\"step\": 1, \"kind\": \"tra"),
            std::string::npos);
  const auto resumes = records_of(read_jsonl(dir + "/metrics.jsonl"), "resume");
  ASSERT_EQ(resumes.size(), 2u) << "the history of resumes is kept";
  EXPECT_EQ(resumes[0].at("step"), 40);
  EXPECT_EQ(resumes[1].at("step"), 50);
}

// Issue 60: a checkpoint resumed under the other matrix-product path (a run started by an
// OpenBLAS-only build, continued by a libxsmm one, or the reverse) got no note, where a thread
// change does. The start record is edited to say the other path, as the other build writes it.
TEST(TrainResume, ACheckpointResumedOnAnotherMatrixProductPathGetsANote) {
  const std::string dir = make_temp_dir("resume") + "/run";
  ASSERT_EQ(run_stacklab(concat(concat({"train", base_config()}, testing::tiny_model_args()),
                                {"--out", dir}))
                .exit_code,
            0);
  const auto same = run_stacklab({"train", "--resume", dir, "--train.max_iters=44"});
  ASSERT_EQ(same.exit_code, 0) << same;
  EXPECT_EQ(same.output.find("numeric_path"), std::string::npos) << "the same path: no note\n"
                                                                 << same;
  std::istringstream in(testing::read_text(dir + "/metrics.jsonl"));
  std::string line, text, path;
  while (std::getline(in, line)) {
    json rec = json::parse(line);
    if (rec.at("kind") == "start" || rec.at("kind") == "resume") {
      path = rec.at("numeric_path").at("matmul").get<std::string>();
      rec["numeric_path"]["matmul"] = path == "OpenBLAS" ? "libxsmm 1.17 JIT" : "OpenBLAS";
    }
    text += rec.dump() + "\n";
  }
  testing::write_text(dir + "/metrics.jsonl", text);
  const auto r = run_stacklab({"train", "--resume", dir, "--train.max_iters=48"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.output.find("note: numeric_path.matmul " +
                          std::string(path == "OpenBLAS" ? "libxsmm 1.17 JIT" : "OpenBLAS") +
                          " -> " + path),
            std::string::npos)
      << r;
  EXPECT_NE(r.output.find("bit-identical to an uninterrupted run only on the same matrix-product "
                          "path"),
            std::string::npos)
      << r;
}

TEST(TrainResume, RejectsConfigOverrides) {
  const std::string dir = make_temp_dir("resume") + "/run";
  ASSERT_EQ(run_stacklab(concat(concat({"train", base_config()}, testing::tiny_model_args()),
                                {"--out", dir}))
                .exit_code,
            0);
  const std::string before = testing::read_text(dir + "/metrics.jsonl");
  const auto r = run_stacklab({"train", "--resume", dir, "--optim.learning_rate=0.1"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_NE(r.output.find("--optim.learning_rate=0.1"), std::string::npos) << r;
  EXPECT_NE(r.output.find("not accepted"), std::string::npos) << r;
  EXPECT_EQ(testing::read_text(dir + "/metrics.jsonl"), before);
}

TEST(TrainResume, RejectsADirectoryThatIsNotARun) {
  const std::string dir = make_temp_dir("notarun");
  const auto r = run_stacklab({"train", "--resume", dir});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_NE(r.output.find(dir + ": not a run directory"), std::string::npos) << r;
}

}  // namespace
}  // namespace sl
