// Checkpoint config checks (train/checkpoint.h) at library level: a checkpoint written before a
// config key existed resumes under that key's default, and under no other value. The command-level
// checks (corrupt files, edited configs) are in tests/cli/reliability_test.cpp. The comparison's
// cases are shared with the Python package (tests/fixtures/checkpoint_config_cases.json).
#include "train/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "config/loader.h"
#include "util/error.h"

namespace sl {
namespace {
namespace fs = std::filesystem;

struct Tiny {
  Config cfg;
  std::unique_ptr<Model> model;
  std::unique_ptr<Optimizer> opt;
  explicit Tiny(const Config& c) : cfg(c) {
    model = std::make_unique<Model>(c.model);
    model->init_weights(1);
    std::vector<ParamRef> refs;
    for (const auto& p : model->parameters()) refs.push_back({p.name, p.tensor, true});
    opt = make_optimizer(c.optim, refs);
  }
};

Config tiny_config() {
  Config c;
  c.model.n_layer = 1;
  c.model.n_embd = 8;
  c.model.n_head = 2;
  c.model.block_size = 4;
  c.model.vocab_size = 5;
  return c;
}

// The train state load_checkpoint reads back (the trainer's schema is not checked here).
const nlohmann::json kTrainState = {{"optimizer_steps", 0}};

// Pins: a config key added after a checkpoint was written (model.emb_scale, whose default
// "init_std" is how every earlier run drew its embeddings) used to make the checkpoint "written
// with a different config" ('model.emb_scale' absent), so no earlier run could be resumed.
TEST(Checkpoint, AKeyAddedAfterTheCheckpointWasWrittenCountsAsItsDefault) {
  const std::string path =
      (fs::path(::testing::TempDir()) / "stacklab_checkpoint_added_key.safetensors").string();
  Tiny a(tiny_config());
  nlohmann::json old_config = to_json(a.cfg);
  old_config["model"].erase("emb_scale");  // as written before the key existed
  save_checkpoint(path, *a.model, *a.opt, old_config, kTrainState);

  Tiny b(tiny_config());
  EXPECT_NO_THROW(load_checkpoint(path, *b.model, *b.opt, to_json(b.cfg)));

  Config unit = tiny_config();
  unit.model.emb_scale = EmbScale::Unit;
  Tiny c(unit);
  try {
    load_checkpoint(path, *c.model, *c.opt, to_json(c.cfg));
    ADD_FAILURE()
        << "a checkpoint from before the key resumed under a value other than its default";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'model.emb_scale' is (absent) in the checkpoint but "
                                         "\"unit\""),
              std::string::npos)
        << e.what();
  }
  fs::remove(path);
}

// A dotted key ("model.qk_norm") of a config: set (objects made on the way) or removed.
void set_dotted(nlohmann::json& j, const std::string& dotted, const nlohmann::json& value) {
  nlohmann::json* cur = &j;
  size_t start = 0;
  for (size_t dot = dotted.find('.'); dot != std::string::npos; dot = dotted.find('.', start)) {
    cur = &(*cur)[dotted.substr(start, dot - start)];
    start = dot + 1;
  }
  (*cur)[dotted.substr(start)] = value;
}

void erase_dotted(nlohmann::json& j, const std::string& dotted) {
  const size_t dot = dotted.find('.');
  if (dot == std::string::npos) {
    j.erase(dotted);
    return;
  }
  erase_dotted(j.at(dotted.substr(0, dot)), dotted.substr(dot + 1));
}

// stacklab's defaults (train.name "run") with a case's dotted keys set.
nlohmann::json case_config(const nlohmann::json& keys) {
  nlohmann::json j = config_schema();
  j["train"]["name"] = "run";
  for (const auto& [k, v] : keys.items()) set_dotted(j, k, v);
  return j;
}

const std::string kCasesPath =
    std::string(STACKLAB_SOURCE_DIR) + "/tests/fixtures/checkpoint_config_cases.json";

TEST(CheckpointConfig, EveryReaderLetsTheFixturesKeysDiffer) {
  const nlohmann::json cases = read_json_file(kCasesPath);
  EXPECT_EQ(cases.at("reader_may_differ").get<std::vector<std::string>>(), reader_may_differ());
}

// The same cases pin stacklab.runs.checkpoint_config (tests/python/test_checkpoint_config.py).
TEST(CheckpointConfig, DifferencesAreTheSharedFixturesCases) {
  const nlohmann::json cases = read_json_file(kCasesPath);
  ASSERT_GE(cases.at("cases").size(), 10u);
  for (const auto& c : cases.at("cases")) {
    nlohmann::json written = case_config(c.value("written", nlohmann::json::object()));
    for (const auto& k : c.value("written_lacks", nlohmann::json::array()))
      erase_dotted(written, k.get<std::string>());
    const nlohmann::json expected = case_config(c.at("expected"));
    const std::vector<std::string> may_differ =
        c.at("may_differ") == "reader" ? reader_may_differ()
                                       : c.at("may_differ").get<std::vector<std::string>>();
    EXPECT_EQ(checkpoint_config_differences(written, expected, may_differ),
              c.at("differences").get<std::vector<std::string>>())
        << c.at("name").get<std::string>();
  }
}

// Issue 60: a finished run's checkpoint without its optimizer state (train.keep_final "weights",
// stacklab prune) holds the same weights, passes the integrity check, and is refused as a point
// to resume from, saying why.
TEST(Checkpoint, WithItsOptimizerStateDroppedItHoldsTheSameWeightsAndIsNoResumePoint) {
  const std::string path =
      (fs::path(::testing::TempDir()) / "stacklab_checkpoint_weights.safetensors").string();
  Tiny a(tiny_config());
  save_checkpoint(path, *a.model, *a.opt, to_json(a.cfg), kTrainState);
  const TensorFile full = read_checkpoint_file(path);
  ASSERT_TRUE(holds_optimizer_state(full));

  const uint64_t freed = drop_optimizer_state(path);
  EXPECT_GT(freed, 0u);
  const TensorFile weights = read_checkpoint_file(path);  // its checksum holds
  EXPECT_FALSE(holds_optimizer_state(weights));
  EXPECT_EQ(weights.metadata.at("kept"), "weights");
  size_t n_weights = 0;
  for (const auto& [name, t] : full.tensors) {
    if (name.rfind("optim.", 0) == 0) {
      EXPECT_EQ(weights.find(name), nullptr) << name;
      continue;
    }
    ++n_weights;
    const Tensor* kept = weights.find(name);
    ASSERT_NE(kept, nullptr) << name;
    EXPECT_EQ(std::vector<float>(kept->data(), kept->data() + kept->numel()),
              std::vector<float>(t.data(), t.data() + t.numel()))
        << name;
  }
  EXPECT_EQ(weights.tensors.size(), n_weights);
  EXPECT_EQ(drop_optimizer_state(path), 0u);  // nothing left to drop

  Tiny b(tiny_config());
  try {
    load_checkpoint(path, *b.model, *b.opt, to_json(b.cfg));
    ADD_FAILURE() << "a checkpoint without its optimizer state was loaded to resume from";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds the weights alone"), std::string::npos) << e.what();
  }
}

// The Python package fills a key a checkpoint lacks from its copy of the defaults: that copy is
// `stacklab validate --defaults` (Config{} without train.name), regenerated with
// `build/stacklab validate --defaults > scripts/stacklab/config_defaults.json`.
TEST(CheckpointConfig, ThePythonPackagesDefaultsAreStacklabs) {
  nlohmann::json schema = config_schema();
  schema["train"].erase("name");
  const nlohmann::json copy =
      read_json_file(std::string(STACKLAB_SOURCE_DIR) + "/scripts/stacklab/config_defaults.json");
  EXPECT_EQ(config_differences(copy, schema), std::vector<std::string>{})
      << "scripts/stacklab/config_defaults.json is not `stacklab validate --defaults`; regenerate "
         "it: build/stacklab validate --defaults > scripts/stacklab/config_defaults.json";
}

}  // namespace
}  // namespace sl
