// Tests for src/config/config.cpp: defaults, the JSON round trip, strict parsing (unknown keys,
// types), validation messages, and the wiring names. File loading is in loader_test.cpp.
#include "config/config.h"

#include <gtest/gtest.h>

#include <functional>

namespace sl {
namespace {

using json = nlohmann::json;

// The message of the ConfigError that `f` throws; a test failure if it throws none.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return "";
}

std::string parse_error(const json& j) {
  return error_of([&] { config_from_json(j, "cfg.json"); });
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "message: " << (text)

TEST(Config, DefaultsAreTheDocumentedValues) {
  const Config c;
  EXPECT_EQ(c.model.n_layer, 4);
  EXPECT_EQ(c.model.norm, NormKind::LayerNorm);
  EXPECT_EQ(c.model.norm_position, NormPosition::Pre);
  EXPECT_EQ(c.model.emb_scale, EmbScale::InitStd);
  EXPECT_FALSE(c.model.final_norm.has_value());
  EXPECT_EQ(c.data.seed, 1234u);
  EXPECT_EQ(c.optim.beta2, 0.95);
  EXPECT_EQ(c.train.max_iters, 300);
  EXPECT_EQ(c.log.layer_interval, 50);
  EXPECT_NO_THROW(validate_config(c, "defaults"));
}

TEST(Config, DefaultsRoundTripThroughJson) {
  const json j = to_json(Config{});
  EXPECT_TRUE(j["model"]["final_norm"].is_null());
  EXPECT_EQ(config_from_json(j, "cfg.json"), Config{});
  EXPECT_EQ(to_json(config_from_json(j, "cfg.json")), j);
}

TEST(Config, NonDefaultValuesRoundTripThroughJson) {
  Config c;
  c.model.n_layer = 12;
  c.model.norm = NormKind::RmsNorm;
  c.model.final_norm = false;
  c.model.init_std = 0.125;
  c.data.seed = 18446744073709551615ull;
  c.optim.name = OptimizerKind::Sgd;
  c.train.name = "deep";
  c.description = "twelve layers";
  const Config back = config_from_json(to_json(c), "cfg.json");
  EXPECT_EQ(back, c);
  EXPECT_EQ(back.model.final_norm, std::optional<bool>(false));
}

TEST(Config, MissingKeysKeepTheirDefaults) {
  const Config c = config_from_json({{"model", {{"n_layer", 2}}}}, "cfg.json");
  EXPECT_EQ(c.model.n_layer, 2);
  EXPECT_EQ(c.model.n_embd, 64);
}

TEST(Config, UnknownKeyIsRejectedWithTheClosestKeySuggested) {
  EXPECT_EQ(parse_error({{"model", {{"n_layers", 8}}}}),
            "cfg.json: model.n_layers: unknown key; did you mean 'n_layer'?");
  EXPECT_EQ(parse_error({{"optm", json::object()}}),
            "cfg.json: optm: unknown key; did you mean 'optim'?");
}

TEST(Config, UnknownKeyFarFromAnyListsTheValidKeys) {
  const std::string msg = parse_error({{"log", {{"verbosity", 2}}}});
  EXPECT_CONTAINS(msg, "cfg.json: log.verbosity: unknown key; valid keys: ");
  EXPECT_CONTAINS(msg, "layer_interval");
}

TEST(Config, StringForAnIntegerIsATypeError) {
  EXPECT_EQ(parse_error({{"model", {{"n_layer", "8"}}}}),
            "cfg.json: model.n_layer: expected an integer, got string \"8\"");
}

TEST(Config, FractionalNumberForAnIntegerIsATypeError) {
  EXPECT_EQ(parse_error({{"model", {{"n_layer", 8.5}}}}),
            "cfg.json: model.n_layer: expected an integer, got number 8.5");
  EXPECT_EQ(config_from_json({{"model", {{"n_layer", 8.0}}}}, "cfg.json").model.n_layer, 8);
}

TEST(Config, IntegerForAFloatKeyIsAccepted) {
  EXPECT_EQ(config_from_json({{"optim", {{"learning_rate", 1}}}}, "cfg.json").optim.learning_rate,
            1.0);
}

TEST(Config, OtherWrongTypesNameTheKeyAndTheExpectedType) {
  EXPECT_EQ(parse_error({{"model", {{"bias", 1}}}}),
            "cfg.json: model.bias: expected true or false, got number 1");
  EXPECT_EQ(parse_error({{"model", {{"final_norm", "auto"}}}}),
            "cfg.json: model.final_norm: expected true, false or null (auto), got string \"auto\"");
  EXPECT_EQ(parse_error({{"data", {{"seed", -1}}}}),
            "cfg.json: data.seed: expected a non-negative integer, got -1");
  EXPECT_EQ(parse_error({{"model", 3}}), "cfg.json: model: expected an object, got number 3");
}

TEST(Config, ChoiceOutsideItsValuesIsRejectedWithASuggestion) {
  EXPECT_EQ(
      parse_error({{"model", {{"norm", "layrnorm"}}}}),
      "cfg.json: model.norm: expected one of \"layernorm\", \"rmsnorm\", \"dyt\", \"none\", got "
      "\"layrnorm\"; did you mean 'layernorm'?");
}

TEST(Config, EmbScaleIsSpelledInitStdOrUnit) {
  EXPECT_EQ(to_json(Config{})["model"]["emb_scale"], "init_std");
  const Config c = config_from_json({{"model", {{"emb_scale", "unit"}}}}, "cfg.json");
  EXPECT_EQ(c.model.emb_scale, EmbScale::Unit);
  const std::string e = parse_error({{"model", {{"emb_scale", "units"}}}});
  EXPECT_CONTAINS(e, "cfg.json: model.emb_scale: expected one of \"init_std\", \"unit\"");
  EXPECT_CONTAINS(e, "did you mean 'unit'?");
}

TEST(Config, OutOfRangeValuesNameTheKeyAndTheBound) {
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
TEST(Config, AValFractionOnTheMarkovSourceIsRefusedNamingTheKey) {
  EXPECT_CONTAINS(parse_error({{"data", {{"val_fraction", 0.2}}}}),
                  "cfg.json: data.val_fraction: 0.2 is set but data.source is \"markov\"");
  EXPECT_NO_THROW(config_from_json({{"data", {{"val_fraction", 0.1}}}}, "cfg.json"));  // default
  EXPECT_NO_THROW(config_from_json(
      {{"data", {{"source", "text"}, {"path", "t.txt"}, {"val_fraction", 0.2}}}}, "cfg.json"));
}

TEST(Config, EmbeddingWidthNotDivisibleByHeadsNamesBothValues) {
  const std::string msg = parse_error({{"model", {{"n_embd", 64}, {"n_head", 5}}}});
  EXPECT_CONTAINS(msg, "cfg.json: model.n_embd:");
  EXPECT_CONTAINS(msg, "n_embd 64");
  EXPECT_CONTAINS(msg, "n_head 5");
}

TEST(Config, CrossFieldRulesAreEnforced) {
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

TEST(Config, ADataPathIsRefusedUnlessTheSourceIsText) {
  const std::string msg = parse_error({{"data", {{"path", "/data/corpus.txt"}}}});
  EXPECT_CONTAINS(msg, "cfg.json: data.path:");
  EXPECT_CONTAINS(msg, "data.source is \"markov\"");
  EXPECT_NO_THROW(
      config_from_json({{"data", {{"path", "/data/corpus.txt"}, {"source", "text"}}}}, "cfg.json"));
}

TEST(Config, AWarmupLongerThanTheRunIsRefused) {
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

TEST(Config, AWarmupWithTheConstantScheduleIsRefusedAsIgnored) {
  const std::string msg = parse_error({{"optim", {{"warmup_iters", 50}}}});
  EXPECT_CONTAINS(msg, "cfg.json: optim.warmup_iters:");
  EXPECT_CONTAINS(msg, "optim.schedule \"constant\"");
}

TEST(Config, ACosineThatEndsItsDecayBeforeItsWarmupIsRefused) {
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

TEST(Config, ExtendsIsOnlyUnderstoodByTheLoader) {
  EXPECT_CONTAINS(parse_error({{"extends", "base.json"}}), "cfg.json: extends:");
}

TEST(Config, ErrorsNameTheOriginRecordedForTheKey) {
  Config c;
  c.model.n_layer = 0;
  const Provenance where{{"model.n_layer", "base.json"}};
  EXPECT_EQ(error_of([&] { validate_config(c, "child.json", &where); }),
            "base.json: model.n_layer: must be >= 1, got 0");
}

// The optimizer computes in float32: 1e-50 passed the "> 0" check, was 0 there, and the log said
// 1e-50 while the loss never moved.
TEST(Config, ARateThatFloat32CannotHoldIsRefusedNamingTheKey) {
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

TEST(Config, FinalNormIsAutoUnlessSet) {
  ModelConfig m;
  EXPECT_TRUE(m.resolved_final_norm());  // pre
  m.norm_position = NormPosition::Sandwich;
  EXPECT_TRUE(m.resolved_final_norm());
  m.norm_position = NormPosition::Post;
  EXPECT_FALSE(m.resolved_final_norm());
  m.final_norm = true;
  EXPECT_TRUE(m.resolved_final_norm());
  m.norm = NormKind::None;
  m.final_norm.reset();
  EXPECT_FALSE(m.resolved_final_norm());
}

TEST(Config, ClosestKeyIgnoresFarCandidates) {
  EXPECT_EQ(closest_key("n_layers", {"n_layer", "n_head"}), "n_layer");
  EXPECT_EQ(closest_key("banana", {"n_layer", "n_head"}), "");
}

}  // namespace
}  // namespace sl
