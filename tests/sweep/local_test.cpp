// The local executor (sweep/local.cpp) when the sweep itself dies: a sweep killed with SIGKILL
// leaves neither a run training on as an orphan nor its out_dir locked (issue 31 item 12: the
// child inherited the lock's descriptor, so a second invocation was refused naming the dead
// sweep's pid, and the child trained on). Runs the built binary on a tiny config.
#include <sys/file.h>

#include <filesystem>
#include <fstream>

#include "support/cli.h"

namespace sl::testing {
namespace {

namespace fs = std::filesystem;

// A process that has exited: gone, or a zombie no one has reaped yet (its parent, the sweep, is
// dead, and in a container the reaper may be slow or absent).
bool exited(long long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t paren = line.rfind(')');  // the state follows the command name "(stacklab)"
  return paren == std::string::npos || line.size() < paren + 3 || line[paren + 2] == 'Z' ||
         line[paren + 2] == 'X';
}

TEST(LocalExecutor, ASweepKilledWithSigkillLeavesNoOrphanRunAndNoStuckLock) {
  const std::string dir = make_temp_dir("sweep_kill");
  const std::string sweep = dir + "/sweep.json";
  write_text(sweep, R"({"name": "t", "base": ")" + base_config() + R"(", "out_dir": ")" + dir +
                        R"(/out",
    "overrides": {"model.n_embd": 16, "model.n_head": 2, "model.block_size": 16, "train.batch_size": 4,
                  "train.max_iters": 100000, "train.eval_interval": 20},
    "grid": {"model.n_layer": [1]}})");
  const std::string run = dir + "/out/L1-pre-layernorm-res-s0";
  long long child = 0;
  {
    Child first({"sweep", sweep, "--jobs", "1"});
    ASSERT_TRUE(wait_until([&] { return fs::exists(run + "/metrics.jsonl"); }));
    child = read_json(run + "/task.json").at("pid").get<long long>();
    ASSERT_GT(child, 0);
    ASSERT_FALSE(exited(child)) << "the run is training";
    first.signal(SIGKILL);
    EXPECT_EQ(first.wait().term_signal, SIGKILL);
  }
  // The orphan gets SIGTERM from the kernel (PR_SET_PDEATHSIG), checkpoints and stops.
  EXPECT_TRUE(wait_until([&] { return exited(child); }, std::chrono::milliseconds(10000)))
      << "run pid " << child << " still training after its sweep was killed";
  // Nothing holds the out_dir lock: flock on it succeeds at once.
  const int fd = open((dir + "/out/sweep.lock").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0) << "sweep.lock is still held";
  close(fd);
  // So a second invocation runs: it resumes the run (stopped here; the refusal would be exit 1).
  Child second({"sweep", sweep, "--jobs", "1"});
  ASSERT_TRUE(wait_until([&] {
    const auto t = nlohmann::json::parse(read_text(run + "/task.json"), nullptr, false);
    return t.is_object() && t.value("pid", 0LL) != child && t.value("state", "") == "running";
  })) << "the second sweep did not start the run";
  second.signal(SIGTERM);
  const RunResult r = second.wait();
  EXPECT_EQ(r.output.find("is in use by another stacklab sweep"), std::string::npos) << r;
  EXPECT_EQ(r.exit_code, 143) << r;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sl::testing
