// Checkpoint config checks (train/checkpoint.h) at library level: a checkpoint written before a
// config key existed resumes under that key's default, and under no other value. The command-level
// checks (corrupt files, edited configs) are in tests/cli/reliability_test.cpp.
#include "train/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/error.h"

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

}  // namespace
}  // namespace sl
