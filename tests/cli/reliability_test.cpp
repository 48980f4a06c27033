// Bad inputs to `stacklab train` end with one clear message and exit 1, never a crash, a corrupt
// checkpoint or a half-made run directory: malformed and mistyped configs, absurd sizes (refused
// before allocating, with the memory estimate), bad text files, missing files, corrupt or foreign
// checkpoints, an edited config on resume, an unwritable output path, a full disk (RLIMIT_FSIZE)
// while checkpointing. Also: the summary's status after SIGTERM / SIGKILL, and determinism.
#include <fcntl.h>  // AT_FDCWD
#include <signal.h>
#include <stdio.h>  // renameat2, RENAME_EXCHANGE (glibc >= 2.28)
#include <sys/resource.h>

#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "support/cli.h"

namespace sl {
namespace {

using nlohmann::json;
using testing::base_config;
using testing::concat;
using testing::contains;
using testing::make_temp_dir;
using testing::read_json;
using testing::read_jsonl;
using testing::read_text;
using testing::records_of;
using testing::run_stacklab;
using testing::RunResult;
using testing::tiny_model_args;
using testing::write_text;
namespace fs = std::filesystem;

// `stacklab train CONFIG tiny... extra... --out OUT`.
RunResult train(const std::string& config, const std::vector<std::string>& extra,
                const std::string& out) {
  return run_stacklab(
      concat(concat(concat({"train", config}, tiny_model_args()), extra), {"--out", out}));
}

// Every file under `dir` with its bytes: a failed command must leave this unchanged.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      files[fs::relative(e.path(), dir).string()] = read_text(e.path().string());
  return files;
}

// Expects exit 1, one "stacklab train: error:" line holding every part, and no run dir at `out`.
void expect_refused(const RunResult& r, const std::vector<std::string>& parts,
                    const std::string& out) {
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, "stacklab train: error: ")) << r;
  for (const auto& p : parts)
    EXPECT_TRUE(contains(r.output, p)) << "missing '" << p << "' in:\n" << r;
  if (!out.empty()) {
    EXPECT_FALSE(fs::exists(out)) << "a failed start left " << out << " behind";
  }
}

// ---- configs --------------------------------------------------------------------------------

TEST(BadConfig, MalformedJsonNamesFileLineAndColumnAndCreatesNoRunDir) {
  const std::string dir = make_temp_dir("rel");
  write_text(dir + "/bad.json", "{\n  \"model\": {\"n_layer\": 2,,}\n}\n");
  expect_refused(train(dir + "/bad.json", {}, dir + "/run"),
                 {dir + "/bad.json:2:", "malformed JSON"}, dir + "/run");
}

TEST(BadConfig, AWrongTypeInTheFileNamesTheKeyAndTheExpectedType) {
  const std::string dir = make_temp_dir("rel");
  write_text(dir + "/typed.json", R"({"model": {"n_layer": "8"}})");
  expect_refused(train(dir + "/typed.json", {}, dir + "/run"),
                 {"model.n_layer", "expected an integer", "string \"8\""}, dir + "/run");
}

TEST(BadConfig, AWrongTypeInAnOverrideNamesTheKey) {
  const std::string dir = make_temp_dir("rel");
  expect_refused(train(base_config(), {"--train.batch_size=many"}, dir + "/run"),
                 {"train.batch_size", "expected an integer", "'many'"}, dir + "/run");
}

TEST(BadConfig, ZeroAndNegativeSizesNameTheBound) {
  const std::string dir = make_temp_dir("rel");
  expect_refused(train(base_config(), {"--model.n_layer=0"}, dir + "/run"),
                 {"model.n_layer", "must be >= 1, got 0"}, dir + "/run");
  expect_refused(train(base_config(), {"--train.batch_size=-4"}, dir + "/run"),
                 {"train.batch_size", "must be >= 1, got -4"}, dir + "/run");
}

TEST(BadConfig, SizesBeyondTheSanityLimitsAreRefused) {
  const std::string dir = make_temp_dir("rel");
  expect_refused(train(base_config(), {"--model.n_layer=100000"}, dir + "/run"),
                 {"model.n_layer", "must be <= 4096, got 100000"}, dir + "/run");
  expect_refused(train(base_config(), {"--model.n_embd=1048576"}, dir + "/run"),
                 {"model.n_embd", "must be <= 65536"}, dir + "/run");
}

TEST(BadConfig, AModelLargerThanMemoryIsRefusedBeforeAllocatingWithTheEstimate) {
  const std::string dir = make_temp_dir("rel");
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r =
      train(base_config(), {"--model.n_layer=4096", "--model.n_embd=65536", "--model.n_head=64"},
            dir + "/run");
  expect_refused(
      r, {"needs about", "PB of memory", "is available (MemAvailable)", "model.n_layer=4096"},
      dir + "/run");
  // Refused from the config alone: no allocation, no page faults, well under a second.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

TEST(BadConfig, AMissingConfigFileIsNamed) {
  const std::string dir = make_temp_dir("rel");
  expect_refused(train(dir + "/nope.json", {}, dir + "/run"),
                 {"config file not found", dir + "/nope.json"}, dir + "/run");
}

TEST(BadConfig, AnEndlessBaseConfigIsRefusedInsteadOfReadForever) {
  const std::string dir = make_temp_dir("rel");
  write_text(dir + "/endless.json", R"({"extends": "/dev/zero"})");
  const RunResult r = run_stacklab({"validate", dir + "/endless.json"});
  EXPECT_EQ(r.exit_code, 1) << r;
  // refused from its type before it is opened (it was read up to the 16 MiB cap)
  EXPECT_TRUE(contains(r.output,
                       "config file '/dev/zero': is a character device, not a regular "
                       "file"))
      << r;
}

// ---- text data ------------------------------------------------------------------------------

std::vector<std::string> text_args(const std::string& path) {
  return {"--data.source=text", "--data.path=" + path};
}

TEST(BadText, AnEmptyFileIsNamedAndCreatesNoRunDir) {
  const std::string dir = make_temp_dir("rel");
  write_text(dir + "/empty.txt", "");
  expect_refused(train(base_config(), text_args(dir + "/empty.txt"), dir + "/run"),
                 {dir + "/empty.txt", "file is empty"}, dir + "/run");
}

TEST(BadText, ATextShorterThanTheContextNamesBlockSizeAndTheSplit) {
  const std::string dir = make_temp_dir("rel");
  write_text(dir + "/short.txt", "just a few words here");
  expect_refused(train(base_config(), text_args(dir + "/short.txt"), dir + "/run"),
                 {dir + "/short.txt", "text too short for block_size 16"}, dir + "/run");
}

TEST(BadText, InvalidUtf8NamesTheByteOffset) {
  const std::string dir = make_temp_dir("rel");
  write_text(dir + "/latin1.txt",
             std::string(200, 'a') + "caf\xe9 au lait" + std::string(200, 'b'));
  expect_refused(train(base_config(), text_args(dir + "/latin1.txt"), dir + "/run"),
                 {dir + "/latin1.txt", "invalid UTF-8 at byte offset 203"}, dir + "/run");
}

TEST(BadText, AMissingTextFileIsNamed) {
  const std::string dir = make_temp_dir("rel");
  expect_refused(train(base_config(), text_args(dir + "/gone.txt"), dir + "/run"),
                 {dir + "/gone.txt", "no such file", "scripts/get_data.py"}, dir + "/run");
}

// ---- checkpoints and resume -----------------------------------------------------------------

// A completed tiny run to resume from (each test gets its own copy).
std::string trained_run(const std::vector<std::string>& extra = {}) {
  const std::string dir = make_temp_dir("rel") + "/run";
  const RunResult r =
      train(base_config(), concat({"--train.max_iters=12", "--train.eval_interval=6"}, extra), dir);
  EXPECT_EQ(r.exit_code, 0) << r;
  return dir;
}

TEST(BadCheckpoint, ATruncatedCheckpointFailsNamingTheFileAndLeavesTheRunUntouched) {
  const std::string run = trained_run(), ckpt = run + "/checkpoints/latest.safetensors";
  for (double keep : {0.0, 0.001, 0.3, 0.99}) {
    const std::string full = read_text(ckpt);
    write_text(ckpt, full.substr(0, static_cast<size_t>(static_cast<double>(full.size()) * keep)));
    const auto before = snapshot(run);
    const RunResult r = run_stacklab({"train", "--resume", run});
    EXPECT_EQ(r.exit_code, 1) << "kept " << keep << ": " << r;
    EXPECT_TRUE(contains(r.output, "stacklab train: error: ")) << r;
    EXPECT_TRUE(contains(r.output, ckpt)) << r;
    EXPECT_EQ(snapshot(run), before) << "kept " << keep;
    write_text(ckpt, full);
  }
}

TEST(BadCheckpoint, EveryFlippedBitIsDetectedNamingTheFile) {
  const std::string run = trained_run(), ckpt = run + "/checkpoints/latest.safetensors";
  const std::string good = read_text(ckpt);
  // Positions across the length field, the JSON header (names, shapes, offsets, metadata) and
  // the tensor data; a bit anywhere must not resume silently from a corrupt state.
  std::vector<size_t> positions = {0,
                                   3,
                                   7,
                                   8,
                                   20,
                                   100,
                                   good.size() / 20,
                                   good.size() / 8,
                                   good.size() / 3,
                                   good.size() / 2,
                                   good.size() - 50,
                                   good.size() - 1};
  uint64_t header = 0;
  for (int i = 0; i < 8; ++i)
    header |= static_cast<uint64_t>(static_cast<unsigned char>(good[static_cast<size_t>(i)]))
              << (8 * i);
  for (size_t p : {header / 2, header + 4, header + 8 - 1})
    positions.push_back(p);  // metadata, data start
  const auto before = snapshot(run);
  for (size_t pos : positions) {
    for (int bit : {0, 5}) {
      std::string bad = good;
      bad[pos] = static_cast<char>(bad[pos] ^ (1 << bit));
      write_text(ckpt, bad);
      const RunResult r = run_stacklab({"train", "--resume", run});
      EXPECT_EQ(r.exit_code, 1) << "byte " << pos << " bit " << bit << ": " << r;
      EXPECT_TRUE(contains(r.output, ckpt)) << "byte " << pos << " bit " << bit << ": " << r;
    }
  }
  write_text(ckpt, good);
  EXPECT_EQ(snapshot(run), before);
  // And the intact file still resumes (here: an already completed run finishes at once).
  EXPECT_EQ(run_stacklab({"train", "--resume", run}).exit_code, 0);
}

TEST(BadCheckpoint, ADataBitFlipSaysTheChecksumDoesNotMatch) {
  const std::string run = trained_run(), ckpt = run + "/checkpoints/latest.safetensors";
  std::string bad = read_text(ckpt);
  bad[bad.size() - 7] = static_cast<char>(bad[bad.size() - 7] ^ 0x10);
  write_text(ckpt, bad);
  const RunResult r = run_stacklab({"train", "--resume", run});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, ckpt + ": checksum mismatch")) << r;
}

TEST(BadCheckpoint, ACheckpointFromAnotherConfigNamesTheDifferingKey) {
  const std::string a = trained_run(), b = trained_run({"--model.n_embd=32"});
  fs::copy_file(b + "/checkpoints/latest.safetensors", a + "/checkpoints/latest.safetensors",
                fs::copy_options::overwrite_existing);
  const auto before = snapshot(a);
  const RunResult r = run_stacklab({"train", "--resume", a});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(
      r.output, "written with a different config: 'model.n_embd' is 32 in the checkpoint but 16"))
      << r;
  EXPECT_EQ(snapshot(a), before);
}

TEST(BadCheckpoint, ResumingARunWhoseConfigWasEditedNamesTheKey) {
  const std::string run = trained_run();
  json cfg = read_json(run + "/config.json");
  cfg["optim"]["learning_rate"] = 0.5;
  write_text(run + "/config.json", cfg.dump(2));
  const auto before = snapshot(run);
  const RunResult r = run_stacklab({"train", "--resume", run});
  EXPECT_EQ(r.exit_code, 1) << r;
  // provenance.json (what the run was made from) catches it first, with stored -> now
  EXPECT_TRUE(contains(r.output, "optim.learning_rate: 0.001 -> 0.5")) << r;
  EXPECT_EQ(snapshot(run), before);
}

TEST(BadCheckpoint, ResumingSomethingThatIsNotARunIsRefused) {
  const std::string dir = make_temp_dir("rel");
  const RunResult r = run_stacklab({"train", "--resume", dir});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, "not a run directory (no config.json)")) << r;
}

// ---- where the output goes ------------------------------------------------------------------

TEST(BadOutput, AnOutputPathUnderARegularFileFailsEvenForRoot) {
  const std::string dir = make_temp_dir("rel");
  write_text(dir + "/file.txt", "not a directory");
  const RunResult r = train(base_config(), {}, dir + "/file.txt/run");
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(contains(r.output, "cannot create directory '" + dir + "/file.txt/run")) << r;
  EXPECT_EQ(read_text(dir + "/file.txt"), "not a directory");
}

// fork + exec `stacklab args` with files limited to `max_file_bytes` (a full disk as the writer
// sees it: write(2) fails with EFBIG instead of raising SIGXFSZ, which the child ignores).
RunResult run_with_file_size_limit(const std::vector<std::string>& args, rlim_t max_file_bytes) {
  const std::string log = make_temp_dir("fsize") + "/output.txt";
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{max_file_bytes, max_file_bytes};
    setrlimit(RLIMIT_FSIZE, &lim);
    std::vector<char*> argv{const_cast<char*>(testing::kStacklab.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(testing::kStacklab.c_str(), argv.data());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  RunResult r;
  if (WIFEXITED(st)) r.exit_code = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) r.term_signal = WTERMSIG(st);
  r.output = read_text(log);
  return r;
}

TEST(BadOutput, AFullDiskWhileCheckpointingKeepsThePreviousCheckpointAndFails) {
  // A run stopped cleanly at step k (SIGTERM: checkpoint written), then resumed on a "disk" that
  // holds metrics but not a whole checkpoint: the next checkpoint write fails.
  const std::string run = make_temp_dir("rel") + "/run";
  testing::Child child(concat(concat({"train", base_config()}, tiny_model_args()),
                              {"--train.max_iters=100000", "--train.ckpt_interval=4",
                               "--log.layer_interval=100000", "--log.params=false", "--out", run}));
  const std::string ckpt = run + "/checkpoints/latest.safetensors";
  ASSERT_TRUE(testing::wait_until([&] { return fs::exists(ckpt); })) << "no checkpoint appeared";
  child.signal(SIGTERM);
  ASSERT_EQ(child.wait().exit_code, 143);
  const std::string good = read_text(ckpt);
  const int64_t stopped_at = read_json(run + "/summary.json").at("steps").get<int64_t>();

  const RunResult r = run_with_file_size_limit({"train", "--resume", run}, good.size() / 2);
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(
      contains(r.output, "stacklab train: error: [fs] cannot write '" + ckpt + "': File too large"))
      << r;
  EXPECT_EQ(read_text(ckpt), good) << "the previous checkpoint changed";
  for (const auto& e : fs::directory_iterator(run + "/checkpoints"))
    EXPECT_TRUE(e.path().filename() == "latest.safetensors" ||
                e.path().filename() == "best.safetensors")
        << "temp file left behind: " << e.path();
  // Every metrics line is whole, and the run still resumes from the intact checkpoint.
  EXPECT_EQ(read_text(run + "/metrics.jsonl").back(), '\n');
  const auto summary_time = fs::last_write_time(run + "/summary.json");
  testing::Child again({"train", "--resume", run});
  // summary.json is rewritten ("running") once the resumed run is set up and handles SIGTERM.
  ASSERT_TRUE(testing::wait_until(
      [&] { return fs::last_write_time(run + "/summary.json") != summary_time; }));
  again.signal(SIGTERM);
  const RunResult resumed = again.wait();
  EXPECT_EQ(resumed.exit_code, 143) << resumed;
  EXPECT_TRUE(contains(resumed.output, "resuming at step " + std::to_string(stopped_at)))
      << resumed;
}

// ---- what summary.json says about runs that did not finish -------------------------------------

std::vector<std::string> slow_run(const std::string& out) {
  return concat(concat({"train", base_config()}, tiny_model_args()),
                {"--train.max_iters=100000", "--train.eval_interval=5", "--out", out});
}

TEST(HonestSummary, AnInterruptedRunSaysInterruptedWithItsLastEvalStep) {
  const std::string run = make_temp_dir("rel") + "/run";
  testing::Child child(slow_run(run));
  ASSERT_TRUE(testing::wait_until(
      [&] { return records_of(read_jsonl(run + "/metrics.jsonl"), "eval").size() >= 2; }));
  child.signal(SIGTERM);
  ASSERT_EQ(child.wait().exit_code, 143);
  const json s = read_json(run + "/summary.json");
  EXPECT_EQ(s.at("status"), "interrupted");
  EXPECT_LT(s.at("steps").get<int64_t>(), 100000);
  ASSERT_TRUE(s.at("final_eval_step").is_number()) << s;
  EXPECT_LE(s.at("final_eval_step").get<int64_t>(), s.at("steps").get<int64_t>());
}

// The summary is rewritten at every eval: after SIGKILL at about step 35 it used to say steps 0
// and best_val_loss null although evals 0-30 were in metrics.jsonl.
TEST(HonestSummary, AKilledRunSaysRunningWithTheStepsAndLossesOfItsLastEval) {
  const std::string run = make_temp_dir("rel") + "/run";
  testing::Child child(slow_run(run));
  auto summary_step = [&] {
    try {
      return read_json(run + "/summary.json").at("steps").get<int64_t>();
    } catch (const std::exception&) {
      return int64_t{-1};  // not written yet, or mid-rename
    }
  };
  ASSERT_TRUE(testing::wait_until([&] { return summary_step() >= 10; }))
      << "summary.json never moved past step " << summary_step();
  child.signal(SIGKILL);
  child.wait();
  const json s = read_json(run + "/summary.json");
  EXPECT_EQ(s.at("status"), "running") << s;
  const int64_t step = s.at("final_eval_step").get<int64_t>();
  EXPECT_EQ(s.at("steps").get<int64_t>(), step) << "written at the eval, before its step";
  EXPECT_EQ(step % 5, 0) << s;
  EXPECT_TRUE(s.at("best_val_loss").is_number()) << s;
  bool found = false;
  for (const json& e : records_of(read_jsonl(run + "/metrics.jsonl"), "eval"))
    if (e.at("step") == step) {
      found = true;
      EXPECT_EQ(e.at("val_loss"), s.at("final_val_loss")) << "the losses of that eval";
    }
  EXPECT_TRUE(found) << "no eval record of step " << step;
}

TEST(HonestSummary, ARunWhoseCheckpointCannotBeWrittenSaysFailedWithTheError) {
  // A file where the checkpoints directory was: the next checkpoint fails (ENOTDIR, which stops
  // root too), after the run has said "running".
  const std::string run = make_temp_dir("rel") + "/run";
  testing::Child child(slow_run(run));
  ASSERT_TRUE(testing::wait_until(
      [&] { return !records_of(read_jsonl(run + "/metrics.jsonl"), "train").empty(); }));
  // The directory and a file swapped in one step (renameat2's RENAME_EXCHANGE), not removed file by
  // file: the running trainer may be creating a checkpoint's temp file in it at this moment, which
  // would make a removal fail half done; and a rename followed by a write would leave an instant
  // with no "checkpoints" at all, where the write fails with ENOENT instead (seen under load).
  write_text(run + "/checkpoints.file", "not a directory");
  const bool swapped = renameat2(AT_FDCWD, (run + "/checkpoints.file").c_str(), AT_FDCWD,
                                 (run + "/checkpoints").c_str(), RENAME_EXCHANGE) == 0;
  if (!swapped) {  // a file system without RENAME_EXCHANGE: the two steps, and ENOENT allowed below
    fs::rename(run + "/checkpoints", run + "/checkpoints.moved");
    fs::rename(run + "/checkpoints.file", run + "/checkpoints");
  }
  child.signal(SIGTERM);
  const RunResult r = child.wait();
  EXPECT_EQ(r.exit_code, 1) << r;
  // The next checkpoint fails: best.safetensors at a new best val loss, or latest at the stop.
  // Which step of the atomic write fails depends on when the rename lands: creating the temp file
  // (after it), or renaming it over the target or opening the directory (a temp file opened in the
  // old directory just before it). Each names the checkpoint's path and ENOTDIR.
  const size_t at = r.output.find("stacklab train: error:");
  ASSERT_NE(at, std::string::npos) << r;
  const std::string error_line = r.output.substr(at);
  EXPECT_TRUE(contains(error_line, "stacklab train: error: [fs] cannot ")) << r;
  EXPECT_TRUE(contains(error_line, " '" + run + "/checkpoints/")) << r;
  EXPECT_TRUE(contains(error_line, "': Not a directory") ||
              (!swapped && contains(error_line, "': No such file or directory")))
      << r;
  const json s = read_json(run + "/summary.json");
  EXPECT_EQ(s.at("status"), "failed") << s;
  ASSERT_TRUE(s.at("error").is_string()) << s;
  EXPECT_TRUE(contains(s.at("error").get<std::string>(), run + "/checkpoints/")) << s;
  EXPECT_FALSE(fs::exists(run + "/train.lock")) << "a failed run releases its run directory";
}

// ---- determinism ----------------------------------------------------------------------------

// step/kind/loss/val_loss/train_loss/grad_norm of every train and eval record.
json losses(const std::string& dir) {
  json out = json::array();
  for (const auto& r : read_jsonl(dir + "/metrics.jsonl")) {
    const std::string kind = r.at("kind");
    if (kind != "train" && kind != "eval") continue;
    out.push_back({r.at("step"), kind, r.value("loss", json()), r.value("val_loss", json()),
                   r.value("train_loss", json()), r.value("grad_norm", json())});
  }
  return out;
}

TEST(Determinism, SameConfigSeedAndThreadsGiveBitIdenticalLosses) {
  for (const char* threads : {"--train.threads=1", "--train.threads=2"}) {
    const std::string base = make_temp_dir("det");
    const std::vector<std::string> extra = {"--train.max_iters=30", "--log.log_interval=1",
                                            "--train.eval_interval=10", threads};
    ASSERT_EQ(train(base_config(), extra, base + "/a").exit_code, 0);
    ASSERT_EQ(train(base_config(), extra, base + "/b").exit_code, 0);
    const json a = losses(base + "/a"), b = losses(base + "/b");
    EXPECT_EQ(a.size(), 34u) << threads;  // 30 train + 4 eval records
    EXPECT_EQ(a, b) << threads;
  }
}

}  // namespace
}  // namespace sl
