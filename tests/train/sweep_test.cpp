// Sweep expansion (train/sweep.h) as a unit: the cross product and its order, variants, seeds,
// run ids, what each run's config resolves to, the keys the sweep sets itself (train.seed,
// train.name, train.out_dir) refused elsewhere, and the errors, each naming the sweep file and
// the key in it.
#include "train/sweep.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "config/config.h"

namespace sl {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Writes `sweep` (with name and base filled in) to a fresh temp file and returns its path.
std::string sweep_file(json sweep) {
  static int n = 0;
  const std::string dir = ::testing::TempDir() + "/sweep_test_" + std::to_string(getpid()) + "_" + std::to_string(n++);
  fs::create_directories(dir);
  if (!sweep.contains("name")) sweep["name"] = "s";
  if (!sweep.contains("base")) sweep["base"] = std::string(STACKLAB_SOURCE_DIR) + "/configs/base.json";
  std::ofstream(dir + "/sweep.json") << sweep.dump(2);
  return dir + "/sweep.json";
}

std::vector<std::string> ids(const SweepPlan& p) {
  std::vector<std::string> out;
  for (const auto& r : p.runs) out.push_back(r.id);
  return out;
}

std::string error_of(const json& sweep) {
  const std::string path = sweep_file(sweep);
  try {
    expand_sweep(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ExpandSweep, TheGridIsTheCrossProductInTheOrderTheKeysAreWritten) {
  const SweepPlan p = expand_sweep(sweep_file({{"grid", {{"model.n_layer", {1, 2}}, {"model.residual", {true, false}}}}}));
  EXPECT_EQ(ids(p), (std::vector<std::string>{"L1-pre-layernorm-res-s0", "L1-pre-layernorm-nores-s0",
                                              "L2-pre-layernorm-res-s0", "L2-pre-layernorm-nores-s0"}));
  EXPECT_EQ(p.runs[1].overrides, (std::vector<std::string>{"--model.n_layer=1", "--model.residual=false"}));
  EXPECT_EQ(p.runs[3].config.model.n_layer, 2);
  EXPECT_FALSE(p.runs[3].config.model.residual);
}

TEST(ExpandSweep, SeedsMultiplyTrainRunsAndSetEachRunsSeedButNotProbes) {
  const SweepPlan t = expand_sweep(sweep_file({{"seeds", {3, 5}}}));
  EXPECT_EQ(ids(t), (std::vector<std::string>{"L4-pre-layernorm-res-s3", "L4-pre-layernorm-res-s5"}));
  EXPECT_EQ(t.runs[1].config.train.seed, 5u);
  EXPECT_EQ(t.runs[1].config.train.threads, 1) << "sweep children run single-threaded";
  const SweepPlan p = expand_sweep(sweep_file({{"seeds", {3, 5}}, {"mode", "probe"}}));
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0].id, "L4-pre-layernorm-res");
  EXPECT_EQ(p.runs[0].seeds, (std::vector<uint64_t>{3, 5}));
  EXPECT_EQ(p.runs[0].run_info.at("probe_seeds"), json({3, 5}));
}

TEST(ExpandSweep, NonWiringGridKeysAndVariantNamesEnterTheIdsOnlyWhereNeeded) {
  const SweepPlan p = expand_sweep(sweep_file({{"grid", {{"optim.learning_rate", {0.01}}}},
                                               {"variants", {{{"name", "a"}, {"model.init", "scaled"}},
                                                             {{"name", "b"}, {"model.init", "xavier"}}}}}));
  EXPECT_EQ(ids(p), (std::vector<std::string>{"L4-pre-layernorm-res-learning_rate0.01-a-s0",
                                              "L4-pre-layernorm-res-learning_rate0.01-b-s0"}));
  EXPECT_EQ(to_json(p.runs[1].config).at("model").at("init"), "xavier");
  const SweepPlan q = expand_sweep(sweep_file({{"variants", {{{"name", "pre"}}, {{"name", "post"}, {"model.norm_position", "post"}}}}}));
  EXPECT_EQ(ids(q), (std::vector<std::string>{"L4-pre-layernorm-res-s0", "L4-post-layernorm-res-s0"}))
      << "the wiring alone tells them apart";
}

TEST(ExpandSweep, CommonOverridesApplyToEveryPointAndOutDirDefaultsToRunsName) {
  const SweepPlan p = expand_sweep(sweep_file({{"name", "deep"}, {"overrides", {{"train.max_iters", 7}}}}));
  EXPECT_EQ(p.out_dir, "runs/deep");
  EXPECT_EQ(p.runs.at(0).dir, "runs/deep/L4-pre-layernorm-res-s0");
  EXPECT_EQ(p.runs.at(0).config.train.max_iters, 7);
}

TEST(ExpandSweep, ErrorsNameTheSweepFileAndTheKeyInIt) {
  EXPECT_NE(error_of({{"grid", {{"model.n_layr", {1}}}}}).find("grid: override '--model.n_layr=1'"), std::string::npos);
  EXPECT_NE(error_of({{"grid", {{"model.n_layer", {1, 1}}}}}).find("grid.model.n_layer: the value 1 appears twice"),
            std::string::npos);
  EXPECT_NE(error_of({{"base", "nope.json"}}).find("base: config file"), std::string::npos);
  EXPECT_NE(error_of({{"variants", {{{"name", 7}}}}}).find("variants[0].name: expected a string"), std::string::npos);
  EXPECT_NE(error_of({{"variants", {{{"name", "../x"}}}}}).find("variants[0].name: '../x' contains '/'"),
            std::string::npos);
  EXPECT_NE(error_of({{"name", "a/b"}}).find("name: 'a/b' contains '/'"), std::string::npos);
  EXPECT_NE(error_of({{"seeds", {1, 1}}}).find("seeds: 1 appears twice"), std::string::npos);
  EXPECT_NE(error_of({{"mode", 3}}).find("mode: expected"), std::string::npos);
  EXPECT_NE(error_of({{"overrides", {{"model.n_embd", 30}, {"model.n_head", 4}}}}).find("the point with"),
            std::string::npos);
  EXPECT_NE(error_of({{"variants", {json::object(), json::object()}}}).find("give the variants distinct"),
            std::string::npos);
  EXPECT_NE(error_of({{"gird", json::object()}}).find("did you mean 'grid'"), std::string::npos);
}

TEST(ExpandSweep, EveryErrorStartsWithTheSweepFilesPath) {
  const std::string path = sweep_file({{"grid", {{"model.n_layr", {1}}}}});
  try {
    expand_sweep(path);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path, 0), 0u) << e.what();
  }
}


// The sweep sets each run's seed from "seeds" (train: one run per seed; probe: every seed in one
// probe), so a train.seed elsewhere in the file would be silently replaced: it is refused.
TEST(ExpandSweep, RefusesTrainSeedInTheGridOverridesOrVariantsPointingAtSeeds) {
  for (const std::string mode : {"train", "probe"}) {
    const std::string grid = error_of({{"mode", mode}, {"grid", {{"train.seed", {1, 2}}}}});
    EXPECT_NE(grid.find(": grid.train.seed: "), std::string::npos) << grid;
    EXPECT_NE(grid.find("\"seeds\""), std::string::npos) << grid;
    const std::string over = error_of({{"mode", mode}, {"overrides", {{"train.seed", 3}}}});
    EXPECT_NE(over.find(": overrides.train.seed: "), std::string::npos) << over;
    const std::string var = error_of({{"mode", mode}, {"variants", {{{"name", "a"}}, {{"name", "b"}, {"train.seed", 4}}}}});
    EXPECT_NE(var.find(": variants[1].train.seed: "), std::string::npos) << var;
  }
}

TEST(ExpandSweep, RefusesTrainNameAndOutDirWhichTheSweepSetsForEachRun) {
  for (const std::string key : {"train.name", "train.out_dir"}) {
    const std::string over = error_of({{"overrides", {{key, "mine"}}}});
    EXPECT_NE(over.find(": overrides." + key + ": "), std::string::npos) << over;
    EXPECT_NE(over.find("<out_dir>/<run id>"), std::string::npos) << over;
    EXPECT_NE(error_of({{"grid", {{key, {"a", "b"}}}}}).find(": grid." + key + ": "), std::string::npos);
    EXPECT_NE(error_of({{"variants", {{{key, "a"}}}}}).find(": variants[0]." + key + ": "), std::string::npos);
  }
}

TEST(ExpandSweep, EachTrainRunResolvesToItsOwnSeedAndName) {
  const SweepPlan p = expand_sweep(sweep_file({{"seeds", {1, 2}}, {"overrides", {{"train.max_iters", 3}}}}));
  ASSERT_EQ(p.runs.size(), 2u);
  for (const SweepRun& r : p.runs) {
    EXPECT_EQ("-s" + std::to_string(r.config.train.seed), r.id.substr(r.id.rfind("-s"))) << r.id;
    EXPECT_EQ(r.config.train.name, r.id) << "the child runs with --train.name=<run id>";
  }
}

}  // namespace
}  // namespace sl
