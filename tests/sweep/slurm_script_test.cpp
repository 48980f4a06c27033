// The job-array script's text, its task body run by bash without Slurm, and sbatch/squeue parsing.
#include "sweep/slurm_script.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/fsutil.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

std::string temp_dir() {
  std::string pattern = ::testing::TempDir() + "/slurm_script_XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
  return pattern;
}

SlurmOptions options() {
  SlurmOptions o;
  o.partition = "gpu";
  o.time = "02:00:00";
  o.mem = "4G";
  o.cpus_per_task = 2;
  o.max_parallel = 3;
  o.extra = {"--account=lab", "--qos=low"};
  return o;
}

TEST(SlurmArrayScript, HasOneTaskPerRunAndTheRequestedResources) {
  const std::vector<SlurmTask> tasks = {{"L1-s0", "/r/L1-s0", {"train", "--resume", "/r/L1-s0"}},
                                        {"L2-s0", "/r/L2 s0", {"train", "--resume", "/r/L2 s0"}}};
  const std::string s =
      slurm_array_script("grid", "/x/grid.json", tasks, options(), "/bin/stacklab", "/r/slurm");
  for (const char* line :
       {"#SBATCH --job-name=stacklab-grid\n", "#SBATCH --array=0-1%3", "#SBATCH --partition=gpu\n",
        "#SBATCH --time=02:00:00", "#SBATCH --cpus-per-task=2", "#SBATCH --mem=4G",
        "#SBATCH --requeue", "#SBATCH --signal=B:USR1@120", "#SBATCH --output=/r/slurm/%A_%a.out",
        "  1)  # L2-s0\n    RUN='/r/L2 s0'\n    ARGS=('train' '--resume' '/r/L2 s0') ;;"})
    EXPECT_NE(s.find(line), std::string::npos) << "missing: " << line << "\n" << s;
  EXPECT_EQ(s.find("#SBATCH --account"), std::string::npos)
      << "--slurm-extra goes on sbatch's command line";
}

TEST(SlurmArrayScript, LeavesOutWhatWasNotAskedFor) {
  const std::string s = slurm_array_script("g", "/g.json", {{"a", "/r/a", {"train"}}},
                                           SlurmOptions{}, "/b", "/r/slurm");
  EXPECT_NE(s.find("#SBATCH --array=0-0  #"), std::string::npos) << s;
  for (const char* absent : {"--partition", "--time", "--mem"})
    EXPECT_EQ(s.find(absent), std::string::npos) << absent;
}

// sbatch ends an #SBATCH value at a space or '#', and a newline in a comment starts a command.
TEST(SlurmArrayScript, NamesCannotBreakItsDirectivesOrInjectLines) {
  const std::string s =
      slurm_array_script("my grid #2", "/x/g.json", {{"a\nrm -rf /", "/r/a", {"train"}}},
                         SlurmOptions{}, "/b", "/r/slurm");
  EXPECT_NE(s.find("#SBATCH --job-name=stacklab-my_grid__2\n"), std::string::npos) << s;
  EXPECT_EQ(s.find("\nrm -rf /"), std::string::npos) << "a label's newline became a command:\n"
                                                     << s;
  EXPECT_THROW(slurm_array_script("g", "/g.json", {{"a", "/r/a", {"train"}}}, SlurmOptions{}, "/b",
                                  "/my runs/slurm"),
               Error)
      << "an --output path with a space";
}

TEST(SlurmArrayScript, RefusesAnEmptyArray) {
  EXPECT_THROW(slurm_array_script("g", "/g.json", {}, SlurmOptions{}, "/b", "/r"), Error);
}

// The task body, run by bash as Slurm would run task 1 (with /bin/echo standing in for stacklab):
// the run's log gets the command's output, task.json records the exit.
TEST(SlurmArrayScript, ATaskRunsItsCommandInItsRunDirectoryAndRecordsTheExit) {
  const std::string dir = temp_dir();
  const std::vector<SlurmTask> tasks = {{"a", dir + "/a", {"never"}},
                                        {"b", dir + "/b", {"hello", "it's"}}};
  write_file_atomic(dir + "/task.sh",
                    slurm_array_script("g", "/g.json", tasks, SlurmOptions{}, "/bin/echo", dir));
  const std::string cmd =
      "cd " + dir +
      " && SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_JOB_ID=9 SLURM_JOB_ID=11 bash task.sh > out.txt 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(dir + "/out.txt");
  EXPECT_NE(read_file(dir + "/b/log.txt").find("hello it's\n"), std::string::npos)
      << read_file(dir + "/b/log.txt");
  const auto rec = nlohmann::json::parse(read_file(dir + "/b/task.json"));
  EXPECT_EQ(rec["state"], "exited");
  EXPECT_EQ(rec["exit"], 0);
  EXPECT_EQ(rec["job"], "9_1");
  EXPECT_FALSE(fs::exists(dir + "/a")) << "task 1 touched task 0's run";
  fs::remove_all(dir);
}

TEST(ShellQuote, QuotesSingleQuotesAndSpaces) {
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

TEST(ParseSbatchJobId, TakesTheIdBeforeTheClusterName) {
  EXPECT_EQ(parse_sbatch_job_id("1234\n"), "1234");
  EXPECT_EQ(parse_sbatch_job_id("1234;cluster\n"), "1234");
  EXPECT_THROW(parse_sbatch_job_id("sbatch: error: Batch job submission failed\n"), Error);
  EXPECT_THROW(parse_sbatch_job_id(""), Error);
}

TEST(ParseSqueueTasks, MapsTaskIndicesOfTheJobToTheirStates) {
  const auto t =
      parse_squeue_tasks("12", "12_0 RUNNING\n12_3 PENDING\n120_1 RUNNING\n12_[4-5%2] PENDING\n");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.at(0), "RUNNING");
  EXPECT_EQ(t.at(3), "PENDING");
}

}  // namespace
}  // namespace sl
