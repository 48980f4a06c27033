// Tests for src/config/config.cpp: defaults, the JSON round trip, strict parsing (unknown keys,
// types, choices). Ranges and cross-field rules are in validate_test.cpp, file loading in
// loader_test.cpp.
#include "config/config.h"
#include "config/validate.h"

#include <gtest/gtest.h>

#include <functional>

#include "support/config_errors.h"

namespace sl {
namespace {

using testing::error_of;
using testing::parse_error;

using json = nlohmann::json;

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

TEST(Config, AttentionKindIsSpelledSoftmaxShapedOrShapedNoIdentity) {
  EXPECT_EQ(to_json(Config{})["model"]["attention_kind"], "softmax");
  const Config c = config_from_json({{"model", {{"attention_kind", "shaped"}}}}, "cfg.json");
  EXPECT_EQ(c.model.attention_kind, AttentionKind::Shaped);
  EXPECT_CONTAINS(parse_error({{"model", {{"attention_kind", "shapd"}}}}),
                  "cfg.json: model.attention_kind: expected one of \"softmax\", \"shaped\", "
                  "\"shaped_no_identity\"");
}

TEST(Config, ExtendsIsOnlyUnderstoodByTheLoader) {
  EXPECT_CONTAINS(parse_error({{"extends", "base.json"}}), "cfg.json: extends:");
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

}  // namespace
}  // namespace sl
