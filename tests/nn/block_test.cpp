// Every block wiring the registries define (tests/support/wirings.h): finite-difference
// gradients, a zeroed branch makes a residual block the identity, post-norm normalizes the sum,
// the parameters each wiring declares, and shaped attention's sub-layer (the identity at init).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/ops.h"
#include "core/rng.h"
#include "nn/block.h"
#include "nn/model.h"
#include "support/gradcheck.h"
#include "support/wirings.h"

namespace sl {
namespace {
using testing::grad_check;
using testing::label;
using testing::randn;

ModelConfig small() {
  ModelConfig c;
  c.n_layer = 2;
  c.n_embd = 8;
  c.n_head = 2;
  c.block_size = 4;
  return c;
}

// Random weights (gains near 1, gates, DyT alpha and shaped attention's alpha, beta, gamma away
// from 0) so every path carries a signal.
void randomize(Module& m, uint64_t seed) {
  Rng rng(seed);
  for (auto& p : m.parameters()) {
    const bool near_one = p.info.role == ParamRole::NormGain ||
                          p.info.role == ParamRole::NormScalar || p.info.role == ParamRole::Gate ||
                          p.info.role == ParamRole::AttnScalar;
    for (int64_t i = 0; i < p.tensor.numel(); ++i)
      p.tensor.data()[i] = near_one ? 1.0f + rng.normal(0.0f, 0.2f) : rng.normal(0.0f, 0.3f);
  }
}

TEST(Block, TheRegistriesDefineEveryWiringUnderTest) {
  const auto all = testing::every_wiring(small());
  auto has = [&](const std::string& id) {
    return std::any_of(all.begin(), all.end(),
                       [&](const ModelConfig& m) { return label(m) == id; });
  };
  EXPECT_GE(all.size(), 40u);
  for (const char* id :
       {"pre-layernorm-res", "post-rmsnorm-nores", "sandwich-dyt-res-layerscale",
        "post-layernorm-res-deepnorm", "none-res", "pre-dyt-res-lns", "pre-rmsnorm-res-qknorm",
        "post-layernorm-nores-shaped", "none-nores-shaped_no_identity"})
    EXPECT_TRUE(has(id)) << id;
}

TEST(Block, EveryWiringBackwardMatchesFiniteDifferences) {
  for (const ModelConfig& c : testing::every_wiring(small())) {
    Block block(c, /*index=*/1);  // index 1: LayerNorm Scaling's factor is 1/sqrt(2), not 1
    randomize(block, 3);
    std::vector<Tensor> inputs = {randn({2, 4, 8}, 4)};
    for (auto& p : block.parameters()) inputs.push_back(p.tensor);
    testing::GradCheck opt;
    opt.max_elements = 48;
    opt.eps = 3e-3;
    EXPECT_TRUE(grad_check(
        [&](const std::vector<Tensor>& in) { return block.forward(in[0], ForwardMode::eval()); },
        inputs, opt))
        << label(c);
  }
}

// Zeroing each branch's output projection (and, for sandwich, the output norm's shift) makes
// every branch exactly 0, so x + g * 0 = x whatever g, the norm or the placement before it.
TEST(Block, ResidualBlockWithZeroedBranchOutputIsTheIdentity) {
  int checked = 0;
  for (const ModelConfig& c : testing::every_wiring(small())) {
    const bool normalizes_sum = c.norm != NormKind::None && c.norm_position == NormPosition::Post;
    if (!c.residual || normalizes_sum) continue;
    Block block(c, 1);
    randomize(block, 5);
    for (auto& p : block.parameters()) {
      const bool out_weight = p.info.role == ParamRole::Weight && p.info.out_proj;
      const bool out_bias =
          p.info.role == ParamRole::Bias && p.name.find(".proj.") != std::string::npos;
      const bool out_norm_shift =
          p.info.role == ParamRole::NormBias && p.name.find("_out.") != std::string::npos;
      if (out_weight || out_bias || out_norm_shift)
        std::fill(p.tensor.data(), p.tensor.data() + p.tensor.numel(), 0.0f);
    }
    Tensor x = randn({2, 4, 8}, 6);
    Tensor y = block.forward(x, ForwardMode::eval());
    EXPECT_EQ(y.to_vector(), x.to_vector()) << label(c);
    Tensor upstream = randn({2, 4, 8}, 7, 1.0f, false);
    sum(mul(y, upstream)).backward();
    EXPECT_EQ(x.grad().to_vector(), upstream.to_vector())
        << "dL/dinput = dL/doutput for " << label(c);
    ++checked;
  }
  EXPECT_GE(checked, 20) << "sandwich, no-norm, ReZero and LayerScale wirings are all among them";
}

TEST(Block, PostNormNormalizesTheResidualSum) {
  ModelConfig c = small();
  c.norm_position = NormPosition::Post;
  Block block(c);
  randomize(block, 8);
  for (auto& p : block.parameters())
    if (p.info.is_norm())
      std::fill(p.tensor.data(), p.tensor.data() + p.tensor.numel(),
                p.info.role == ParamRole::NormGain ? 1.0f : 0.0f);
  Tensor y = block.forward(randn({1, 4, 8}, 9, 3.0f, false), ForwardMode::eval());
  for (int t = 0; t < 4; ++t) {
    double m = 0;
    for (int i = 0; i < 8; ++i) m += y.data()[t * 8 + i];
    EXPECT_NEAR(m / 8, 0.0, 1e-5);
  }
}

TEST(Block, LayerNormScalingDividesTheNormOutputsOfBlockLByRootL) {
  ModelConfig c = small();
  c.residual = false;  // y = f(norm(x)): compare the norm's output through the norm module itself
  c.norm_scaling = NormScaling::Depth;
  for (int index : {0, 3}) {
    Block block(c, index);
    EXPECT_FLOAT_EQ(block.norm1->out_scale, 1.0f / std::sqrt(static_cast<float>(index + 1)));
    Tensor x = randn({1, 4, 8}, 10, 1.0f, false);
    Tensor plain = layer_norm(x, block.norm1->params[0], block.norm1->params[1], 1e-5f);
    Tensor scaled = block.norm1->forward(x);
    for (int64_t i = 0; i < x.numel(); ++i)
      EXPECT_NEAR(scaled.data()[i], plain.data()[i] / std::sqrt(index + 1.0), 1e-6);
  }
}

TEST(Block, ParameterNamesFollowTheWiring) {
  auto names = [](NormKind norm, NormPosition pos, ResidualScale scale, bool qk = false) {
    ModelConfig c = small();
    c.norm = norm;
    c.norm_position = pos;
    c.residual_scale = scale;
    c.qk_norm = qk;
    Block b(c);
    std::vector<std::string> n;
    for (auto& p : b.parameters()) n.push_back(p.name);
    return n;
  };
  auto has = [](const std::vector<std::string>& v, const char* name) {
    return std::find(v.begin(), v.end(), name) != v.end();
  };
  std::vector<std::string> pre = names(NormKind::LayerNorm, NormPosition::Pre, ResidualScale::None);
  EXPECT_EQ(pre, (std::vector<std::string>{"norm1.weight", "norm1.bias", "attn.qkv.weight",
                                           "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias",
                                           "norm2.weight", "norm2.bias", "mlp.fc.weight",
                                           "mlp.fc.bias", "mlp.proj.weight", "mlp.proj.bias"}));
  std::vector<std::string> sandwich =
      names(NormKind::RmsNorm, NormPosition::Sandwich, ResidualScale::ReZero);
  EXPECT_TRUE(has(sandwich, "norm1_out.weight"));
  EXPECT_TRUE(has(sandwich, "attn_gate"));
  EXPECT_FALSE(has(sandwich, "norm1.bias")) << "RMSNorm has no bias";
  EXPECT_EQ(names(NormKind::None, NormPosition::Pre, ResidualScale::None).size(), 8u)
      << "no norm parameters without a norm";
  std::vector<std::string> dyt =
      names(NormKind::DyT, NormPosition::Pre, ResidualScale::LayerScale, true);
  for (const char* n : {"norm1.weight", "norm1.bias", "norm1.alpha", "attn_scale", "mlp_scale",
                        "attn.q_norm.alpha", "attn.k_norm.weight"})
    EXPECT_TRUE(has(dyt, n)) << n;
}

TEST(Block, EveryParameterDeclaresItsSubLayer) {
  for (const ModelConfig& c : testing::every_wiring(small())) {
    Block b(c);
    for (const auto& p : b.parameters()) {
      const bool mlp_name = p.name.rfind("mlp", 0) == 0 || p.name.rfind("norm2", 0) == 0;
      EXPECT_EQ(p.info.sublayer, mlp_name ? SubLayer::Mlp : SubLayer::Attn)
          << label(c) << " " << p.name;
    }
  }
}

// Shaped attention (nn/wiring.h) at init: the query rows are 0, so the softmax is the uniform
// causal matrix C, and alpha = beta = gamma = 1 make A = I + C - C = I: the sub-layer is proj(v).
// The control has A = C: proj of the running mean of v.
TEST(Block, ShapedAttentionAtInitPassesTheValuesStraightToTheProjection) {
  for (AttentionKind kind : {AttentionKind::Shaped, AttentionKind::ShapedNoIdentity}) {
    ModelConfig c = small();
    c.attention_kind = kind;
    c.init_std = 0.5;  // a softmax far from uniform, were the queries not 0
    Model model(c);
    model.init_weights(11);
    const CausalSelfAttention& attn = *model.blocks[1]->attn;
    NoGradGuard ng;
    Tensor x = randn({2, 4, 8}, 12, 1.0f, false);
    const Tensor v = slice_last(attn.qkv.forward(x), 16, 8);  // (B, T, C)
    const Tensor want =
        attn.proj.forward(kind == AttentionKind::Shaped ? v : causal_mean(v));  // (B, T, C)
    const std::vector<float> got = attn.forward(x, ForwardMode::eval()).to_vector(),
                             ref = want.to_vector();
    float scale = 0.0f;
    for (float r : ref) scale = std::max(scale, std::fabs(r));
    ASSERT_GT(scale, 0.1f);
    for (size_t i = 0; i < ref.size(); ++i)
      EXPECT_NEAR(got[i], ref[i], 1e-6f * scale) << name_of(kind) << " " << i;
  }
}

// The softmax term matters once the queries move: with random queries and scalars the output is
// alpha v + beta softmax(...) v - gamma C v, head by head, against the fused op and causal_mean.
TEST(Block, ShapedAttentionMixesItsThreeTermsHeadByHead) {
  ModelConfig c = small();
  c.attention_kind = AttentionKind::Shaped;
  CausalSelfAttention attn(c);
  randomize(attn, 13);
  NoGradGuard ng;
  Tensor x = randn({2, 4, 8}, 14, 1.0f, false);
  const Tensor a = attn.qkv.forward(x);
  const std::vector<float> sm = causal_attention(a, 2).to_vector(),
                           v = slice_last(a, 16, 8).to_vector(),
                           cv = causal_mean(slice_last(a, 16, 8)).to_vector();
  std::vector<float> mixed(sm.size());
  for (size_t i = 0; i < mixed.size(); ++i) {
    const size_t h = (i % 8) / 4;  // channel i % 8 of head size 4
    mixed[i] = attn.kind_params[0].data()[h] * v[i] + attn.kind_params[1].data()[h] * sm[i] -
               attn.kind_params[2].data()[h] * cv[i];
  }
  const std::vector<float> want = attn.proj.forward(Tensor::from({2, 4, 8}, mixed)).to_vector(),
                           got = attn.forward(x, ForwardMode::eval()).to_vector();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
}

}  // namespace
}  // namespace sl
