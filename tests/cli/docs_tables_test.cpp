// The documentation tables generated from the registries: every block between
// <!-- registry:NAME --> and <!-- /registry:NAME --> in README.md and docs/*.md must equal the
// block of that name `stacklab registry --markdown` prints, and the wirings and layer_metrics
// tables must appear somewhere.
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "support/cli.h"

namespace sl {
namespace {

using testing::kSourceDir;
using testing::read_text;
using testing::run_stacklab;
namespace fs = std::filesystem;

// (NAME, the lines between its markers) in the order they appear. A marker is a line of its
// own ("<!-- registry:NAME -->"), so text that mentions one is not a block. A start marker
// without its end marker is reported as a failure naming `where`.
std::vector<std::pair<std::string, std::string>> marked_blocks(const std::string& text,
                                                               const std::string& where) {
  std::vector<std::pair<std::string, std::string>> blocks;
  const std::string open = "<!-- registry:", tail = " -->";
  std::string name, body;
  bool inside = false;
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const bool marker = line.size() > open.size() + tail.size() &&
                        line.compare(line.size() - tail.size(), tail.size(), tail) == 0;
    if (!inside && marker && line.rfind(open, 0) == 0) {
      name = line.substr(open.size(), line.size() - open.size() - tail.size());
      body.clear();
      inside = true;
    } else if (inside && line == "<!-- /registry:" + name + tail) {
      blocks.emplace_back(name, body);
      inside = false;
    } else if (inside) {
      body += line + "\n";
    }
  }
  if (inside)
    ADD_FAILURE() << where << ": block '" << name << "' has no line <!-- /registry:" << name
                  << " -->";
  return blocks;
}

TEST(DocsTables, EveryMarkedBlockInTheDocsEqualsTheGeneratedOne) {
  const auto r = run_stacklab({"registry", "--markdown"});
  ASSERT_EQ(r.exit_code, 0) << r;
  std::map<std::string, std::string> generated;
  for (const auto& [name, body] : marked_blocks(r.out, "stacklab registry --markdown"))
    generated[name] = body;
  ASSERT_EQ(generated.size(), 3u) << r.out;

  std::vector<std::string> docs = {kSourceDir + "/README.md"};
  for (const auto& e : fs::directory_iterator(kSourceDir + "/docs"))
    if (e.path().extension() == ".md") docs.push_back(e.path().string());
  std::set<std::string> seen;
  for (const std::string& path : docs) {
    const std::string rel = fs::relative(path, kSourceDir).string();
    for (const auto& [name, body] : marked_blocks(read_text(path), rel)) {
      seen.insert(name);
      const auto it = generated.find(name);
      if (it == generated.end()) {
        ADD_FAILURE() << rel << ": block '" << name
                      << "' is not one stacklab generates (wirings, layer_metrics, records)";
        continue;
      }
      EXPECT_EQ(body, it->second) << rel << ": block '" << name
                                  << "' differs from the registry's; regenerate with: "
                                     "build/stacklab registry --markdown";
    }
  }
  for (const char* name : {"wirings", "layer_metrics"})
    EXPECT_TRUE(seen.count(name)) << "no doc (README.md, docs/*.md) holds the '" << name
                                  << "' block; paste it from: build/stacklab registry --markdown";
}

TEST(DocsTables, ABlockIsFoundBetweenItsMarkers) {
  const auto blocks = marked_blocks(
      "text, mentioning `<!-- registry:NAME -->`\n<!-- registry:a -->\n| x |\n"
      "<!-- /registry:a -->\nmore\n<!-- registry:b -->\n<!-- /registry:b -->\n",
      "inline");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0], (std::pair<std::string, std::string>{"a", "| x |\n"}));
  EXPECT_EQ(blocks[1], (std::pair<std::string, std::string>{"b", ""}));
}

}  // namespace
}  // namespace sl
