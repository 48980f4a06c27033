// Tests for src/config/validate.cpp: ranges, sanity limits and cross-field rules, each error
// naming the origin and the key.
#include "config/validate.h"

#include <gtest/gtest.h>

#include <functional>

#include "support/config_errors.h"

namespace sl {
namespace {

using testing::error_of;
using testing::parse_error;

using json = nlohmann::json;

TEST(ValidateConfig, OutOfRangeValuesNameTheKeyAndTheBound) {
  EXPECT_EQ(parse_error({{"model", {{"n_layer", 0}}}}),
            "cfg.json: model.n_layer: must be >= 1, got 0");
  EXPECT_EQ(parse_error({{"optim", {{"beta2", 1.0}}}}),
            "cfg.json: optim.beta2: must be in [0, 1), got 1.0");
  EXPECT_EQ(parse_error({{"model", {{"norm_eps", 0}}}}),
            "cfg.json: model.norm_eps: must be > 0, got 0.0");
  EXPECT_CONTAINS(parse_error({{"data", {{"val_fraction", 1}}}}),
                  "cfg.json: data.val_fraction: must be in (0, 1)");
  EXPECT_CONTAINS(parse_error({{"data", {{"order", 4}}}}),
                  "cfg.json: data.order: must be in 1..3, got 4");
  EXPECT_CONTAINS(parse_error({{"optim", {{"min_lr", 0.01}}}}), "cfg.json: optim.min_lr:");
  EXPECT_CONTAINS(parse_error({{"train", {{"threads", -1}}}}),
                  "cfg.json: train.threads: must be >= 0");
}

// issue 31 item 9: a val_fraction on the Markov source was ignored, yet part of the run's identity.
TEST(ValidateConfig, AValFractionOnTheMarkovSourceIsRefusedNamingTheKey) {
  EXPECT_CONTAINS(parse_error({{"data", {{"val_fraction", 0.2}}}}),
                  "cfg.json: data.val_fraction: 0.2 is set but data.source is \"markov\"");
  EXPECT_NO_THROW(config_from_json({{"data", {{"val_fraction", 0.1}}}}, "cfg.json"));  // default
  EXPECT_NO_THROW(config_from_json(
      {{"data", {{"source", "text"}, {"path", "t.txt"}, {"val_fraction", 0.2}}}}, "cfg.json"));
}

TEST(ValidateConfig, EmbeddingWidthNotDivisibleByHeadsNamesBothValues) {
  const std::string msg = parse_error({{"model", {{"n_embd", 64}, {"n_head", 5}}}});
  EXPECT_CONTAINS(msg, "cfg.json: model.n_embd:");
  EXPECT_CONTAINS(msg, "n_embd 64");
  EXPECT_CONTAINS(msg, "n_head 5");
}

TEST(ValidateConfig, CrossFieldRulesAreEnforced) {
  EXPECT_CONTAINS(parse_error({{"model", {{"attention", false}, {"mlp", false}}}}),
                  "model.attention");
  EXPECT_CONTAINS(parse_error({{"model", {{"residual_scale", "deepnorm"}}}}),
                  "model.residual_scale: \"deepnorm\" needs model.norm_position \"post\"");
  EXPECT_CONTAINS(
      parse_error(
          {{"model",
            {{"residual_scale", "deepnorm"}, {"norm_position", "post"}, {"norm", "none"}}}}),
      "needs a model.norm other than \"none\"");
  EXPECT_CONTAINS(parse_error({{"model", {{"residual_scale", "rezero"}, {"residual", false}}}}),
                  "model.residual is false");
  EXPECT_CONTAINS(parse_error({{"data", {{"source", "text"}}}}), "cfg.json: data.path: required");
  EXPECT_NO_THROW(config_from_json(
      {{"model", {{"residual_scale", "deepnorm"}, {"norm_position", "post"}}}}, "cfg.json"));
}

// Shaped attention needs the attention sub-layer, and refuses QK-norm, which would undo its
// zero-query init; it goes with every norm, placement and residual setting otherwise.
TEST(ValidateConfig, ShapedAttentionRefusesQkNormAndAModelWithoutAttention) {
  EXPECT_CONTAINS(parse_error({{"model", {{"attention_kind", "shaped"}, {"qk_norm", true}}}}),
                  "cfg.json: model.attention_kind: \"shaped\" starts the queries at 0");
  EXPECT_CONTAINS(
      parse_error({{"model", {{"attention_kind", "shaped_no_identity"}, {"qk_norm", true}}}}),
      "set model.qk_norm false");
  EXPECT_CONTAINS(parse_error({{"model", {{"attention_kind", "shaped"}, {"attention", false}}}}),
                  "cfg.json: model.attention_kind: \"shaped\" shapes the attention matrix but "
                  "model.attention is false");
  EXPECT_NO_THROW(config_from_json(
      {{"model",
        {{"attention_kind", "shaped"}, {"residual", false}, {"norm", "none"}, {"dropout", 0.1}}}},
      "cfg.json"));
}

TEST(ValidateConfig, ADataPathIsRefusedUnlessTheSourceIsText) {
  const std::string msg = parse_error({{"data", {{"path", "/data/corpus.txt"}}}});
  EXPECT_CONTAINS(msg, "cfg.json: data.path:");
  EXPECT_CONTAINS(msg, "data.source is \"markov\"");
  EXPECT_NO_THROW(
      config_from_json({{"data", {{"path", "/data/corpus.txt"}, {"source", "text"}}}}, "cfg.json"));
}

TEST(ValidateConfig, AWarmupLongerThanTheRunIsRefused) {
  for (const char* schedule : {"warmup_constant", "cosine"}) {
    const std::string msg = parse_error({{"optim", {{"schedule", schedule}, {"warmup_iters", 100}}},
                                         {"train", {{"max_iters", 2}}}});
    EXPECT_CONTAINS(msg, "cfg.json: optim.warmup_iters: 100 is above train.max_iters 2");
  }
  // A run that is all warm-up reaches the full rate at its last step: allowed.
  EXPECT_NO_THROW(
      config_from_json({{"optim", {{"schedule", "warmup_constant"}, {"warmup_iters", 2}}},
                        {"train", {{"max_iters", 2}}}},
                       "cfg.json"));
}

TEST(ValidateConfig, AWarmupWithTheConstantScheduleIsRefusedAsIgnored) {
  const std::string msg = parse_error({{"optim", {{"warmup_iters", 50}}}});
  EXPECT_CONTAINS(msg, "cfg.json: optim.warmup_iters:");
  EXPECT_CONTAINS(msg, "optim.schedule \"constant\"");
}

TEST(ValidateConfig, ACosineThatEndsItsDecayBeforeItsWarmupIsRefused) {
  const std::string msg = parse_error(
      {{"optim", {{"schedule", "cosine"}, {"warmup_iters", 50}, {"lr_decay_iters", 20}}}});
  EXPECT_CONTAINS(msg, "cfg.json: optim.lr_decay_iters: 20 is below optim.warmup_iters 50");
  // lr_decay_iters 0 means train.max_iters, checked by the warm-up rule; an equal horizon is a
  // warm-up followed by min_lr, degenerate but well defined.
  EXPECT_NO_THROW(config_from_json(
      {{"optim", {{"schedule", "cosine"}, {"warmup_iters", 50}, {"lr_decay_iters", 0}}}},
      "cfg.json"));
  EXPECT_NO_THROW(config_from_json(
      {{"optim", {{"schedule", "cosine"}, {"warmup_iters", 50}, {"lr_decay_iters", 50}}}},
      "cfg.json"));
}

TEST(ValidateConfig, ErrorsNameTheOriginRecordedForTheKey) {
  Config c;
  c.model.n_layer = 0;
  const Provenance where{{"model.n_layer", "base.json"}};
  EXPECT_EQ(error_of([&] { validate_config(c, "child.json", &where); }),
            "base.json: model.n_layer: must be >= 1, got 0");
}

TEST(ValidateConfig, APlainNameIsOneDirectoryLevel) {
  EXPECT_EQ(plain_name_problem("run-1"), "");
  EXPECT_EQ(plain_name_problem(""), "is empty");
  EXPECT_EQ(plain_name_problem(".."), "is '..'");
  EXPECT_EQ(plain_name_problem("a/b"), "contains '/'");
  EXPECT_EQ(plain_name_problem(std::string(kMaxPlainName + 1, 'x')),
            "is 201 characters long (at most 200)");
  EXPECT_EQ(shown_name(std::string(100, 'x')), "'" + std::string(80, 'x') + "...'");
}

// The optimizer computes in float32: 1e-50 passed the "> 0" check, was 0 there, and the log said
// 1e-50 while the loss never moved.
TEST(ValidateConfig, ARateThatFloat32CannotHoldIsRefusedNamingTheKey) {
  Config c;
  c.optim.learning_rate = 1e-50;
  EXPECT_CONTAINS(error_of([&] { validate_config(c, "cfg.json"); }),
                  "cfg.json: optim.learning_rate: 1e-50 is below float32's normal range");
  c.optim.learning_rate = 1e39;
  EXPECT_CONTAINS(error_of([&] { validate_config(c, "cfg.json"); }),
                  "cfg.json: optim.learning_rate: 1e+39 is infinite in float32");
  c.optim.learning_rate = 1e-3;
  c.optim.min_lr = 1e-45;
  EXPECT_CONTAINS(error_of([&] { validate_config(c, "cfg.json"); }),
                  "cfg.json: optim.min_lr: 1e-45 is below float32's normal range");
  c.optim.min_lr = 0;  // 0 stays a rate of its own: the decay ends at 0
  EXPECT_NO_THROW(validate_config(c, "cfg.json"));
  c.optim.learning_rate = 1e-30;  // small, but a float32 normal
  EXPECT_NO_THROW(validate_config(c, "cfg.json"));
}

}  // namespace
}  // namespace sl
