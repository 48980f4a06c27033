// Every block wiring: finite-difference gradients, and a zeroed branch makes a residual block
// the identity.
#include <gtest/gtest.h>

#include "core/ops.h"
#include "core/rng.h"
#include "nn/block.h"
#include "support/gradcheck.h"

namespace sl {
namespace {
using testing::grad_check;
using testing::randn;

struct Wiring {
  std::string norm, position, scale;
  bool residual;
};

std::vector<Wiring> all_wirings() {
  std::vector<Wiring> w;
  for (bool res : {true, false})
    for (std::string pos : {"pre", "post", "sandwich"})
      for (std::string norm : {"layernorm", "rmsnorm"}) w.push_back({norm, pos, "none", res});
  w.push_back({"none", "pre", "none", true});
  w.push_back({"none", "pre", "none", false});
  w.push_back({"layernorm", "pre", "rezero", true});
  w.push_back({"layernorm", "post", "deepnorm", true});
  return w;
}

ModelConfig block_config(const Wiring& w) {
  ModelConfig c;
  c.n_layer = 2;
  c.n_embd = 8;
  c.n_head = 2;
  c.block_size = 4;
  c.norm = w.norm;
  c.norm_position = w.position;
  c.residual_scale = w.scale;
  c.residual = w.residual;
  return c;
}

// Random weights (gains near 1, gates non-zero) so every path carries a signal.
void randomize(Module& m, uint64_t seed) {
  Rng rng(seed);
  for (auto& p : m.parameters()) {
    const bool gain = p.name.find("norm") != std::string::npos && p.name.find("weight") != std::string::npos;
    for (int64_t i = 0; i < p.tensor.numel(); ++i)
      p.tensor.data()[i] = gain ? 1.0f + rng.normal(0.0f, 0.2f) : rng.normal(0.0f, 0.3f);
  }
}

std::string label(const Wiring& w) {
  return w.position + "-" + w.norm + (w.residual ? "-res" : "-nores") + "-" + w.scale;
}

TEST(Block, EveryWiringBackwardMatchesFiniteDifferences) {
  for (const Wiring& w : all_wirings()) {
    Block block(block_config(w));
    randomize(block, 3);
    std::vector<Tensor> inputs = {randn({2, 4, 8}, 4)};
    for (auto& p : block.parameters()) inputs.push_back(p.tensor);
    testing::GradCheck opt;
    opt.max_elements = 48;
    opt.eps = 3e-3;
    EXPECT_TRUE(grad_check([&](const std::vector<Tensor>& in) { return block.forward(in[0]); }, inputs, opt))
        << label(w);
  }
}

TEST(Block, ResidualBlockWithZeroedBranchOutputIsTheIdentity) {
  for (const Wiring& w : all_wirings()) {
    if (!w.residual || w.position == "post" || w.scale == "deepnorm") continue;  // post-norm normalizes the sum
    Block block(block_config(w));
    randomize(block, 5);
    for (auto& p : block.parameters())
      if (p.name.find(".proj.") != std::string::npos && p.name.find("norm") == std::string::npos)
        std::fill(p.tensor.data(), p.tensor.data() + p.tensor.numel(), 0.0f);
    if (w.position == "sandwich") continue;  // norm_out(0) = its bias: checked below with bias zeroed
    Tensor x = randn({2, 4, 8}, 6);
    Tensor y = block.forward(x);
    EXPECT_EQ(y.to_vector(), x.to_vector()) << label(w);
    Tensor upstream = randn({2, 4, 8}, 7, 1.0f, false);
    sum(mul(y, upstream)).backward();
    EXPECT_EQ(x.grad().to_vector(), upstream.to_vector()) << "dL/dinput = dL/doutput for " << label(w);
  }
}

TEST(Block, PostNormNormalizesTheResidualSum) {
  Wiring w{"layernorm", "post", "none", true};
  Block block(block_config(w));
  randomize(block, 8);
  for (auto& p : block.parameters())
    if (p.name.find("norm") != std::string::npos)
      std::fill(p.tensor.data(), p.tensor.data() + p.tensor.numel(), p.name.find("weight") != std::string::npos ? 1.0f : 0.0f);
  Tensor y = block.forward(randn({1, 4, 8}, 9, 3.0f, false));
  for (int t = 0; t < 4; ++t) {
    double m = 0;
    for (int i = 0; i < 8; ++i) m += y.data()[t * 8 + i];
    EXPECT_NEAR(m / 8, 0.0, 1e-5);
  }
}

TEST(Block, ParameterNamesFollowTheWiring) {
  auto names = [](const Wiring& w) {
    Block b(block_config(w));
    std::vector<std::string> n;
    for (auto& p : b.parameters()) n.push_back(p.name);
    return n;
  };
  std::vector<std::string> pre = names({"layernorm", "pre", "none", true});
  EXPECT_EQ(pre, (std::vector<std::string>{"norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.qkv.bias",
                                           "attn.proj.weight", "attn.proj.bias", "norm2.weight", "norm2.bias",
                                           "mlp.fc.weight", "mlp.fc.bias", "mlp.proj.weight", "mlp.proj.bias"}));
  std::vector<std::string> sandwich = names({"rmsnorm", "sandwich", "rezero", true});
  EXPECT_NE(std::find(sandwich.begin(), sandwich.end(), "norm1_out.weight"), sandwich.end());
  EXPECT_NE(std::find(sandwich.begin(), sandwich.end(), "attn_gate"), sandwich.end());
  EXPECT_EQ(std::find(sandwich.begin(), sandwich.end(), "norm1.bias"), sandwich.end()) << "RMSNorm has no bias";
  EXPECT_EQ(names({"none", "pre", "none", true}).size(), 8u) << "no norm parameters without a norm";
}

}  // namespace
}  // namespace sl
