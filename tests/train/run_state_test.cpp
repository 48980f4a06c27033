// The one run-state vocabulary: its spellings (as summary.json, manifest.json and --status write
// them) round-trip, an unknown one is refused naming it, and no C++ outside the spelling table
// compares a state's spelling.
#include "train/run_state.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "util/error.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

TEST(RunState, EachStateIsSpelledAsTheFilesOnDiskHaveIt) {
  EXPECT_EQ(choice_names<RunState>(),
            (std::vector<std::string>{"new", "resumable", "queued", "running", "completed",
                                      "failed", "diverged", "interrupted", "changed"}));
}

TEST(RunState, EachSpellingRoundTrips) {
  for (const auto& [state, name] : ChoiceNames<RunState>::table) {
    EXPECT_EQ(spell(state), name);
    EXPECT_EQ(parse_run_state(spell(state)), state) << name;
  }
}

TEST(RunState, AnUnknownSpellingIsRefusedNamingItAndWhereItWasRead) {
  try {
    parse_run_state("complete", "RUN/summary.json: status");
    FAIL() << "\"complete\" was accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("RUN/summary.json: status"), std::string::npos) << m;
    EXPECT_NE(m.find("'complete'"), std::string::npos) << m;
    EXPECT_NE(m.find("completed"), std::string::npos) << "lists the known spellings: " << m;
  }
  EXPECT_THROW(parse_run_state(""), Error);
}

// A state spelling next to == or != in src/ (`state == "failed"`, `"running" != s`) is a second
// vocabulary: states are compared as RunState. Record kinds ("kind": "diverged") are not compared
// this way, so the check does not catch them.
TEST(RunState, NoStateSpellingIsComparedOutsideTheTable) {
  const std::regex compared(
      R"re(([!=]=\s*"(new|resumable|queued|running|completed|failed|diverged|interrupted|changed|exited)")|("(new|resumable|queued|running|completed|failed|diverged|interrupted|changed|exited)"\s*[!=]=))re");
  size_t files = 0;
  for (const auto& e :
       fs::recursive_directory_iterator(std::string(STACKLAB_SOURCE_DIR) + "/src")) {
    const std::string ext = e.path().extension().string();
    if (ext != ".cpp" && ext != ".h") continue;
    ++files;
    std::ifstream in(e.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      EXPECT_FALSE(std::regex_search(line, compared))
          << e.path().string() << ":" << n << ": " << line;
  }
  EXPECT_GT(files, 20u) << "the scan found the sources";
}

}  // namespace
}  // namespace sl
