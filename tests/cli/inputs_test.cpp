// Input files that used to hang the command or read without bound (issue 31 items 10 and 11), run
// through the built binary: a FIFO or a device as data.path, a config or sweep file nested 80,000
// levels deep. Each must end at once with exit 1 and one line naming the file.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>

#include "support/cli.h"

namespace sl::testing {
namespace {

namespace fs = std::filesystem;

// `stacklab args...`, which must end within `seconds` (it is killed after, and the test fails).
RunResult run_within(const std::vector<std::string>& args, double seconds) {
  Child c(args);
  const bool ended = wait_until([&] { return !c.running(); },
                                std::chrono::milliseconds(static_cast<int>(seconds * 1000)));
  if (!ended) {
    c.signal(SIGKILL);
    ADD_FAILURE() << "still running after " << seconds << " s: stacklab " << args.at(0) << " "
                  << args.at(1);
  }
  return c.wait();
}

TEST(Inputs, AFifoOrADeviceAsDataPathIsRefusedAtOnceNamingIt) {
  const std::string dir = make_temp_dir("inputs");
  const std::string fifo = dir + "/text.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, std::string("/dev/zero"), std::string("/dev/urandom")}) {
    for (const std::string cmd : {"train", "validate"}) {
      std::vector<std::string> args = {cmd, base_config(), "--data.source=text",
                                       "--data.path=" + path};
      if (cmd == "train") args = concat(concat(args, tiny_model_args()), {"--out", dir + "/run"});
      const RunResult r = run_within(args, 10.0);
      EXPECT_EQ(r.exit_code, 1) << r;
      EXPECT_NE(r.output.find("data.path '" + path + "': is a "), std::string::npos) << r;
      EXPECT_NE(r.output.find(", not a regular file"), std::string::npos) << r;
    }
  }
  fs::remove_all(dir);
}

TEST(Inputs, ConfigAndSweepFilesNested80000DeepAreRefusedAtOnceNamingTheFile) {
  const std::string dir = make_temp_dir("inputs");
  const std::string deep = dir + "/deep.json";
  write_text(deep, std::string(80000, '['));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"validate", deep}, {"sweep", deep, "--dry-run"}}) {
    const auto t0 = std::chrono::steady_clock::now();
    const RunResult r = run_within(args, 10.0);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
    EXPECT_EQ(r.exit_code, 1) << r;
    EXPECT_NE(r.output.find(deep + ": arrays and objects nested deeper than 64 levels"),
              std::string::npos)
        << r;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sl::testing
