// model.dropout: off in ForwardMode::eval() (evaluation, probes, sampling), on in
// ForwardMode::train(p, rng), drawn from its Rng (deterministic), and gradient-checked through the
// whole model with the masks held fixed (the same Rng state for every evaluation of the loss).
#include <gtest/gtest.h>

#include "core/ops.h"
#include "nn/dropout.h"
#include "nn/model.h"
#include "support/gradcheck.h"

namespace sl {
namespace {

ModelConfig tiny(double p) {
  ModelConfig m;
  m.n_layer = 2;
  m.n_head = 2;
  m.n_embd = 8;
  m.block_size = 6;
  m.vocab_size = 7;
  m.dropout = p;
  return m;
}

const std::vector<int32_t> kIds = {1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5};  // (2, 6)

std::vector<float> logits(const Model& model, const ForwardMode& mode = ForwardMode::eval()) {
  return model.forward(kIds, 2, 6, mode).to_vector();
}

TEST(Dropout, IsOffInEvalModeSoEvalMatchesAModelWithoutDropout) {
  Model a(tiny(0.5)), b(tiny(0.0));
  a.init_weights(3);
  b.init_weights(3);
  EXPECT_EQ(logits(a), logits(b));
}

TEST(Dropout, TrainModeChangesTheOutputDeterministicallyForAnRngState) {
  Model model(tiny(0.3));
  model.init_weights(3);
  const std::vector<float> eval = logits(model);
  Rng r1(9), r2(9), r3(10);
  const std::vector<float> a = logits(model, ForwardMode::train(0.3f, r1));
  const std::vector<float> b = logits(model, ForwardMode::train(0.3f, r2));
  const std::vector<float> c = logits(model, ForwardMode::train(0.3f, r3));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, eval);
  EXPECT_EQ(logits(model), eval) << "an eval pass after a training pass has no dropout";
}

TEST(Dropout, TrainModeWithPZeroDrawsNothingAndMatchesEval) {
  Model model(tiny(0.0));
  model.init_weights(3);
  Rng rng(9);
  const Rng::State before = rng.state();
  EXPECT_EQ(logits(model, ForwardMode::train(0.0f, rng)), logits(model));
  EXPECT_EQ(rng.state(), before);
}

TEST(Dropout, AMaskKeepsAboutOneMinusPOfTheEntriesScaledByItsInverse) {
  Rng rng(5);
  const Tensor m = ForwardMode::train(0.25f, rng).dropout_mask(Shape{100, 100});
  int64_t kept = 0;
  for (int64_t i = 0; i < m.numel(); ++i) {
    const float v = m.data()[i];
    ASSERT_TRUE(v == 0.0f || std::abs(v - 1.0f / 0.75f) < 1e-6f) << v;
    kept += v != 0.0f;
  }
  EXPECT_NEAR(static_cast<double>(kept) / 10000.0, 0.75, 0.02);
}

TEST(Dropout, TheModelsGradientMatchesFiniteDifferencesWithFixedMasks) {
  Model model(tiny(0.2));
  model.init_weights(4);
  std::vector<Tensor> params;
  for (const auto& p : model.parameters())
    if (p.name == "blocks.0.attn.qkv.weight" || p.name == "blocks.1.mlp.fc.weight" ||
        p.name == "tok_emb.weight")
      params.push_back(p.tensor);
  ASSERT_EQ(params.size(), 3u);
  auto f = [&model](const std::vector<Tensor>&) {
    Rng rng(17);  // the same masks at every evaluation: dropout as a fixed linear map
    return Model::loss(model.forward(kIds, 2, 6, ForwardMode::train(0.2f, rng)), kIds);
  };
  testing::GradCheck opt;
  opt.max_elements = 24;
  EXPECT_TRUE(testing::grad_check(f, params, opt));
}

}  // namespace
}  // namespace sl
