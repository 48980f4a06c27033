// Sweep expansion (sweep/plan.h) as a unit: the cross product and its order, variants, seeds,
// run ids (the study's pinned), what each run's config resolves to (also over random grids), the
// keys the sweep sets itself (train.seed, train.name, train.out_dir, train.threads) refused
// elsewhere, a key set where another place replaces it refused, and the errors, each naming the
// sweep file and the key in it.
#include "sweep/plan.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "config/config.h"
#include "nn/wiring.h"

namespace sl {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Writes `sweep` (with name and base filled in) to a fresh temp file and returns its path.
std::string sweep_file(json sweep) {
  static int n = 0;
  const std::string dir =
      ::testing::TempDir() + "/sweep_test_" + std::to_string(getpid()) + "_" + std::to_string(n++);
  fs::create_directories(dir);
  if (!sweep.contains("name")) sweep["name"] = "s";
  if (!sweep.contains("base"))
    sweep["base"] = std::string(STACKLAB_SOURCE_DIR) + "/configs/base.json";
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

TEST(ExpandSweep, TheGridIsTheCrossProductOverTheKeysInSortedOrder) {
  const SweepPlan p = expand_sweep(
      sweep_file({{"grid", {{"model.n_layer", {1, 2}}, {"model.residual", {true, false}}}}}));
  EXPECT_EQ(ids(p),
            (std::vector<std::string>{"L1-pre-layernorm-res-s0", "L1-pre-layernorm-nores-s0",
                                      "L2-pre-layernorm-res-s0", "L2-pre-layernorm-nores-s0"}));
  EXPECT_EQ(p.runs[1].overrides,
            (std::vector<std::string>{"--model.n_layer=1", "--model.residual=false"}));
  EXPECT_EQ(p.runs[3].config.model.n_layer, 2);
  EXPECT_FALSE(p.runs[3].config.model.residual);
}

TEST(ExpandSweep, SeedsMultiplyTrainRunsAndSetEachRunsSeedButNotProbes) {
  const SweepPlan t = expand_sweep(sweep_file({{"seeds", {3, 5}}}));
  EXPECT_EQ(ids(t),
            (std::vector<std::string>{"L4-pre-layernorm-res-s3", "L4-pre-layernorm-res-s5"}));
  EXPECT_EQ(t.runs[1].config.train.seed, 5u);
  EXPECT_EQ(t.runs[1].config.train.threads, 1) << "sweep children run single-threaded";
  const SweepPlan p = expand_sweep(sweep_file({{"seeds", {3, 5}}, {"mode", "probe"}}));
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0].id, "L4-pre-layernorm-res");
  EXPECT_EQ(p.runs[0].seeds, (std::vector<uint64_t>{3, 5}));
  EXPECT_EQ(p.runs[0].run_info.at("probe_seeds"), json({3, 5}));
}

TEST(ExpandSweep, NonWiringGridKeysAndVariantNamesEnterTheIdsOnlyWhereNeeded) {
  const SweepPlan p = expand_sweep(sweep_file(
      {{"grid", {{"optim.learning_rate", {0.01}}}},
       {"variants",
        {{{"name", "a"}, {"model.init", "scaled"}}, {{"name", "b"}, {"model.init", "xavier"}}}}}));
  EXPECT_EQ(ids(p), (std::vector<std::string>{"L4-pre-layernorm-res-learning_rate0.01-a-s0",
                                              "L4-pre-layernorm-res-learning_rate0.01-b-s0"}));
  EXPECT_EQ(to_json(p.runs[1].config).at("model").at("init"), "xavier");
  const SweepPlan q = expand_sweep(sweep_file(
      {{"variants", {{{"name", "pre"}}, {{"name", "post"}, {"model.norm_position", "post"}}}}}));
  EXPECT_EQ(ids(q),
            (std::vector<std::string>{"L4-pre-layernorm-res-s0", "L4-post-layernorm-res-s0"}))
      << "the wiring alone tells them apart";
}

TEST(ExpandSweep, CommonOverridesApplyToEveryPointAndOutDirDefaultsToRunsName) {
  const SweepPlan p =
      expand_sweep(sweep_file({{"name", "deep"}, {"overrides", {{"train.max_iters", 7}}}}));
  EXPECT_EQ(p.out_dir, "runs/deep");
  EXPECT_EQ(p.runs.at(0).dir, "runs/deep/L4-pre-layernorm-res-s0");
  EXPECT_EQ(p.runs.at(0).config.train.max_iters, 7);
}

// Pins: a relative data.path written in a sweep file is the file's (as base is), not the working
// directory's; before, `stacklab sweep configs/experiments/text_train.json` read
// ../../data/... from wherever it was started.
TEST(ExpandSweep, ARelativeDataPathIsResolvedAgainstTheSweepFilesFolder) {
  const std::string path =
      sweep_file({{"overrides", {{"data.source", "text"}, {"data.path", "../corpus/input.txt"}}}});
  const fs::path want = (fs::path(path).parent_path() / "../corpus/input.txt").lexically_normal();
  const SweepPlan p = expand_sweep(path);
  EXPECT_EQ(p.runs.at(0).config.data.path, want.string());
  EXPECT_NE(std::find(p.runs[0].overrides.begin(), p.runs[0].overrides.end(),
                      "--data.path=" + want.string()),
            p.runs[0].overrides.end());
  const SweepPlan abs_plan = expand_sweep(
      sweep_file({{"overrides", {{"data.source", "text"}, {"data.path", "/srv/text.txt"}}}}));
  EXPECT_EQ(abs_plan.runs.at(0).config.data.path, "/srv/text.txt");  // an absolute path stays
}

TEST(ExpandSweep, ErrorsNameTheSweepFileAndTheKeyInIt) {
  EXPECT_NE(error_of({{"grid", {{"model.n_layr", {1}}}}}).find("grid: override '--model.n_layr=1'"),
            std::string::npos);
  EXPECT_NE(error_of({{"grid", {{"model.n_layer", {1, 1}}}}})
                .find("grid.model.n_layer: the value 1 appears twice"),
            std::string::npos);
  EXPECT_NE(error_of({{"base", "nope.json"}}).find("base: config file"), std::string::npos);
  EXPECT_NE(error_of({{"variants", {{{"name", 7}}}}}).find("variants[0].name: expected a string"),
            std::string::npos);
  EXPECT_NE(
      error_of({{"variants", {{{"name", "../x"}}}}}).find("variants[0].name: '../x' contains '/'"),
      std::string::npos);
  EXPECT_NE(error_of({{"name", "a/b"}}).find("name: 'a/b' contains '/'"), std::string::npos);
  EXPECT_NE(error_of({{"seeds", {1, 1}}}).find("seeds: 1 appears twice"), std::string::npos);
  EXPECT_NE(error_of({{"mode", 3}}).find("mode: expected"), std::string::npos);
  EXPECT_NE(
      error_of({{"overrides", {{"model.n_embd", 30}, {"model.n_head", 4}}}}).find("the point with"),
      std::string::npos);
  EXPECT_NE(
      error_of({{"variants", {json::object(), json::object()}}}).find("give the variants distinct"),
      std::string::npos);
  EXPECT_NE(error_of({{"gird", json::object()}}).find("did you mean 'grid'"), std::string::npos);
}

TEST(ExpandSweep, AnUnknownModeIsRefusedNamingTheFileTheKeyAndTheModes) {
  const std::string path = sweep_file({{"mode", "trian"}});
  try {
    expand_sweep(path);
    FAIL() << "mode \"trian\" was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": mode: expected \"train\" or \"probe\", got \"trian\"");
  }
}

TEST(ExpandSweep, TheModeIsParsedOnceIntoItsEnum) {
  EXPECT_EQ(expand_sweep(sweep_file(json::object())).mode, SweepMode::Train) << "the default";
  EXPECT_EQ(expand_sweep(sweep_file({{"mode", "probe"}})).mode, SweepMode::Probe);
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
    const std::string var = error_of(
        {{"mode", mode}, {"variants", {{{"name", "a"}}, {{"name", "b"}, {"train.seed", 4}}}}});
    EXPECT_NE(var.find(": variants[1].train.seed: "), std::string::npos) << var;
  }
}

TEST(ExpandSweep, RefusesTrainNameAndOutDirWhichTheSweepSetsForEachRun) {
  for (const std::string key : {"train.name", "train.out_dir"}) {
    const std::string over = error_of({{"overrides", {{key, "mine"}}}});
    EXPECT_NE(over.find(": overrides." + key + ": "), std::string::npos) << over;
    EXPECT_NE(over.find("<out_dir>/<run id>"), std::string::npos) << over;
    EXPECT_NE(error_of({{"grid", {{key, {"a", "b"}}}}}).find(": grid." + key + ": "),
              std::string::npos);
    EXPECT_NE(error_of({{"variants", {{{key, "a"}}}}}).find(": variants[0]." + key + ": "),
              std::string::npos);
  }
}

// issue 31 item 9: train.threads in overrides was replaced by 1 without a word.
TEST(ExpandSweep, RefusesTrainThreadsWhichTheExecutorSetsForEachRun) {
  const std::string over = error_of({{"overrides", {{"train.threads", 4}}}});
  EXPECT_NE(over.find(": overrides.train.threads: the sweep sets each run's threads itself"),
            std::string::npos)
      << over;
  EXPECT_NE(over.find("--slurm-cpus-per-task"), std::string::npos) << over;
  EXPECT_NE(error_of({{"grid", {{"train.threads", {1, 2}}}}}).find(": grid.train.threads: "),
            std::string::npos);
  EXPECT_NE(
      error_of({{"variants", {{{"train.threads", 2}}}}}).find(": variants[0].train.threads: "),
      std::string::npos);
}

// issue 31 item 8: a variant's value replaced the grid's at every point (the grid's values were
// never trained), without a word. Each clash is refused naming the key.
TEST(ExpandSweep, RefusesAKeySetByTheGridAndAVariantOrTheGridAndOverrides) {
  const std::string gv =
      error_of({{"grid", {{"model.init", {"normal", "scaled"}}}},
                {"variants", {{{"name", "a"}}, {{"name", "b"}, {"model.init", "xavier"}}}}});
  EXPECT_NE(gv.find(": variants[1].model.init: also a grid key"), std::string::npos) << gv;
  EXPECT_NE(gv.find("[\"normal\", \"scaled\"]"), std::string::npos) << gv;
  const std::string og =
      error_of({{"overrides", {{"model.n_layer", 2}}}, {"grid", {{"model.n_layer", {1, 3}}}}});
  EXPECT_NE(og.find(": grid.model.n_layer: also set in overrides"), std::string::npos) << og;
  const std::string ov = error_of(
      {{"overrides", {{"model.init", "normal"}}},
       {"variants",
        {{{"name", "a"}, {"model.init", "scaled"}}, {{"name", "b"}, {"model.init", "xavier"}}}}});
  EXPECT_NE(ov.find(": overrides.model.init: every variant sets model.init"), std::string::npos)
      << ov;
}

// A key in overrides that some variants set is a default the others keep (the study's train_grid
// sets model.norm "layernorm" and its no-norm variants "none"), so it is not a clash.
TEST(ExpandSweep, AVariantMayReplaceAnOverrideTheOtherVariantsKeep) {
  const SweepPlan p = expand_sweep(
      sweep_file({{"overrides", {{"model.init", "normal"}}},
                  {"variants", {{{"name", "a"}}, {{"name", "b"}, {"model.init", "xavier"}}}}}));
  ASSERT_EQ(p.runs.size(), 2u);
  EXPECT_EQ(to_json(p.runs[0].config).at("model").at("init"), "normal");
  EXPECT_EQ(to_json(p.runs[1].config).at("model").at("init"), "xavier");
  EXPECT_EQ(p.runs[0].variant, "a");  // manifest.json "variant"
  EXPECT_EQ(p.runs[1].variant, "b");
}

// Issue 31 item 8: variant "b" with model.init xavier ran as "L1-pre-layernorm-res-s0", named like
// the plain wiring; a name the id does not already show now stays in the id.
TEST(ExpandSweep, AVariantNameTheIdDoesNotShowStaysInTheId) {
  const SweepPlan p =
      expand_sweep(sweep_file({{"overrides", {{"model.n_layer", 1}}},
                               {"variants", {{{"name", "b"}, {"model.init", "xavier"}}}}}));
  EXPECT_EQ(ids(p), (std::vector<std::string>{"L1-pre-layernorm-res-b-s0"}));
  const SweepPlan q = expand_sweep(sweep_file(
      {{"variants",
        {{{"name", "pre-res"}}, {{"name", "post-res"}, {"model.norm_position", "post"}}}}}));
  EXPECT_EQ(ids(q),
            (std::vector<std::string>{"L4-pre-layernorm-res-s0", "L4-post-layernorm-res-s0"}))
      << "every word of the name is in the id already";
}

// The study's run ids are its run directories: reproduce.sh and earlier results depend on them,
// so a change to how ids are built must leave these as they are.
TEST(ExpandSweep, TheStudysRunIdsStayAsTheyAre) {
  const std::string exp = std::string(STACKLAB_SOURCE_DIR) + "/configs/experiments/";
  const auto has = [](const SweepPlan& p, const std::string& id) {
    return std::any_of(p.runs.begin(), p.runs.end(), [&](const SweepRun& r) { return r.id == id; });
  };
  const std::map<std::string, std::vector<std::string>> pinned = {
      {"train_grid.json",
       {"L1-pre-layernorm-res-s0", "L32-none-nores-s2", "L32-post-layernorm-nores-s1"}},
      {"probe_grid.json", {"L1-pre-layernorm-res", "L96-none-res"}},
      {"stability_map.json",
       {"L8-pre-layernorm-res-initscaled-learning_rate0.001-s0",
        "L32-post-layernorm-res-initxavier-learning_rate0.03-post-warmup-s2",
        "L32-post-layernorm-res-deepnorm-initxavier-learning_rate0.01-s1"}},
      {"claims_train.json", {"L96-none-res-rezero-s0", "L8-pre-layernorm-res-qknorm-s2"}},
      // res-attn's id was "L2-pre-layernorm-res", named like the full block though the variant has
      // no MLP: since variant names stay in ids where the id does not show them, it is the one
      // study id that changed.
      {"claims_probe_rank.json",
       {"L2-pre-layernorm-res-res-attn", "L8-pre-layernorm-nores-nores-attn"}},
      {"new_wirings.json", {"L32-pre-dyt-res-s0", "L8-pre-layernorm-res-layerscale-s0"}},
  };
  for (const auto& [file, want] : pinned) {
    const SweepPlan p = expand_sweep(exp + file);
    for (const auto& id : want) EXPECT_TRUE(has(p, id)) << file << ": no run " << id;
  }
}

TEST(ExpandSweep, EachTrainRunResolvesToItsOwnSeedAndName) {
  const SweepPlan p =
      expand_sweep(sweep_file({{"seeds", {1, 2}}, {"overrides", {{"train.max_iters", 3}}}}));
  ASSERT_EQ(p.runs.size(), 2u);
  for (const SweepRun& r : p.runs) {
    EXPECT_EQ("-s" + std::to_string(r.config.train.seed), r.id.substr(r.id.rfind("-s"))) << r.id;
    EXPECT_EQ(r.config.train.name, r.id) << "the child runs with --train.name=<run id>";
  }
}

// ---- property: random small grids ----------------------------------------------------------

// The values a random sweep may draw for each key (all valid in any combination over base.json).
const std::vector<std::pair<std::string, json>> kPool = {
    {"model.n_layer", {1, 2, 3}},
    {"model.norm", {"layernorm", "rmsnorm", "dyt"}},
    {"model.norm_position", {"pre", "post"}},
    {"model.residual", {true, false}},
    {"model.n_embd", {16, 32}},
    {"optim.learning_rate", {0.001, 0.003, 0.01}},
    {"train.batch_size", {2, 4, 8}},
    {"train.max_iters", {5, 7}},
    {"model.init", {"normal", "scaled", "xavier"}},
    {"train.seed", {1, 2}},
};

// A random subset of `values` (at least one), in their order.
json some_of(const json& values, std::mt19937& rng) {
  json out = json::array();
  while (out.empty())
    for (const auto& v : values)
      if (rng() % 2) out.push_back(v);
  return out;
}

// The value at dotted key `key` of the run's resolved config.
json value_at(const Config& cfg, const std::string& key) {
  const size_t dot = key.find('.');
  return to_json(cfg).at(key.substr(0, dot)).at(key.substr(dot + 1));
}

// A key of the pool, then its value text as an id writes it ("learning_rate0.003").
std::string token(const std::string& key, const json& v) {
  const std::string text =
      v.is_string() ? v.get<std::string>() : v.dump();  // dump: true, 0.003, 16
  return key.substr(key.find('.') + 1) + text;
}

const std::set<std::string> kWiring = {"model.n_layer", "model.residual", "model.norm",
                                       "model.norm_position"};

TEST(ExpandSweep, EveryRunOfRandomGridsResolvesToTheValuesItsIdNames) {
  std::mt19937 rng(20261201);  // fixed: the same 50 sweeps every time
  int expanded = 0, refused = 0;
  for (int trial = 0; trial < 50; ++trial) {
    // 1 to 3 grid keys, maybe a common override and two variants, 1 to 3 seeds, train or probe.
    std::vector<size_t> order(kPool.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    const size_t n_grid = 1 + rng() % 3;
    json grid = json::object(), overrides = json::object();
    for (size_t k = 0; k < n_grid; ++k)
      grid[kPool[order[k]].first] = some_of(kPool[order[k]].second, rng);
    std::vector<std::pair<std::string, json>>
        axes;  // the grid, its keys in order (a JSON object's: sorted)
    for (const auto& [key, values] : grid.items()) axes.emplace_back(key, values);
    std::map<std::string, json> fixed;  // keys every point has (common overrides)
    if (rng() % 2) {
      const auto& [key, values] = kPool[order[n_grid]];
      overrides[key] = values[rng() % values.size()];
      fixed[key] = overrides[key];
    }
    const json seeds = some_of({0, 3, 11}, rng);
    const bool probe = rng() % 4 == 0;
    json sweep = {{"grid", grid}, {"seeds", seeds}, {"mode", probe ? "probe" : "train"}};
    if (!overrides.empty()) sweep["overrides"] = overrides;
    const bool has_variants = rng() % 3 == 0;
    if (has_variants)
      sweep["variants"] = {{{"name", "va"}, {"optim.weight_decay", 0.0}},
                           {{"name", "vb"}, {"optim.weight_decay", 0.1}}};
    std::ostringstream what;
    what << "trial " << trial << ": " << sweep.dump();

    const bool sets_seed = grid.contains("train.seed") || overrides.contains("train.seed");
    if (sets_seed) {
      const std::string e = error_of(sweep);
      EXPECT_NE(
          e.find(grid.contains("train.seed") ? "grid.train.seed: " : "overrides.train.seed: "),
          std::string::npos)
          << what.str() << "\n"
          << e;
      ++refused;
      continue;
    }
    const SweepPlan plan = expand_sweep(sweep_file(sweep));
    ++expanded;
    // The expected runs: the grid's cross product in order, times variants, times seeds (train).
    size_t points = 1;
    for (const auto& a : axes) points *= a.second.size();
    const size_t n_var = has_variants ? 2 : 1, n_seeds = probe ? 1 : seeds.size();
    ASSERT_EQ(plan.runs.size(), points * n_var * n_seeds) << what.str();
    for (size_t i = 0; i < plan.runs.size(); ++i) {
      const SweepRun& r = plan.runs[i];
      std::map<std::string, json> want = fixed;
      size_t rest = i / (n_var * n_seeds);
      for (size_t a = axes.size(); a-- > 0;) {
        want[axes[a].first] = axes[a].second[rest % axes[a].second.size()];
        rest /= axes[a].second.size();
      }
      if (has_variants) want["optim.weight_decay"] = (i / n_seeds) % 2 ? 0.1 : 0.0;
      for (const auto& [key, v] : want)
        EXPECT_EQ(value_at(r.config, key), v) << what.str() << "\n" << r.id << ": " << key;
      EXPECT_EQ(
          r.id.rfind("L" + std::to_string(r.config.model.n_layer) + "-" + wiring_id(r.config.model),
                     0),
          0u)
          << what.str() << "\n"
          << r.id;
      for (const auto& [key, values] : axes) {
        if (kWiring.count(key)) continue;
        EXPECT_NE(r.id.find("-" + token(key, want[key])), std::string::npos) << what.str() << "\n"
                                                                             << r.id;
      }
      if (probe) {
        EXPECT_EQ(json(r.seeds), seeds) << what.str();
        EXPECT_EQ(r.run_info.at("probe_seeds"), seeds) << what.str();
        continue;
      }
      const uint64_t seed = seeds[i % n_seeds].get<uint64_t>();
      EXPECT_EQ(r.config.train.seed, seed) << what.str() << "\n" << r.id;
      EXPECT_EQ(r.id.substr(r.id.rfind('-')), "-s" + std::to_string(seed)) << what.str();
      EXPECT_EQ(r.config.train.name, r.id) << what.str();
      EXPECT_EQ(r.dir, plan.out_dir + "/" + r.id);
    }
  }
  EXPECT_GT(expanded, 25);
  EXPECT_GT(refused, 3);
}

}  // namespace
}  // namespace sl
