// Tests for train/layer_stats: rank_ratio and rms on hand cases, the grouping of per-block
// gradient norms by sub-layer, update ratios, and the residual-stream gradient norms that the
// hooks record, checked against dL/dx computed by hand at both ends of the stack.
#include "train/layer_stats.h"

#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "core/blas.h"
#include "core/rng.h"
#include "nn/model.h"
#include "nn/wiring.h"

namespace sl {
namespace {

ModelConfig two_blocks() {
  set_num_threads(1);  // tiny matrices: threads only add overhead (and contend on a busy machine)
  ModelConfig c;
  c.n_layer = 2;
  c.n_embd = 8;
  c.n_head = 2;
  c.block_size = 4;
  c.vocab_size = 11;
  c.init_std = 0.3;  // large enough that every block gets a clearly non-zero gradient
  return c;
}

std::vector<int32_t> tokens(int n, uint64_t seed, int V) {
  Rng r(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& v : t) v = static_cast<int32_t>(r.below(static_cast<uint64_t>(V)));
  return t;
}

double norm_of(const Tensor& g) {
  double s = 0.0;
  for (int64_t i = 0; i < g.numel(); ++i) s += static_cast<double>(g.data()[i]) * static_cast<double>(g.data()[i]);
  return std::sqrt(s);
}

std::map<std::string, double> grad_norms_by_name(const Model& m) {
  std::map<std::string, double> out;
  for (const auto& p : m.parameters()) out[p.name] = p.tensor.has_grad() ? norm_of(p.tensor.grad()) : 0.0;
  return out;
}

TEST(RankRatio, IsZeroWhenEveryPositionHoldsTheSameVector) {
  // (B=1, T=5, C=3), every row [1, -2, 0.5]
  std::vector<float> v;
  for (int t = 0; t < 5; ++t) v.insert(v.end(), {1.0f, -2.0f, 0.5f});
  EXPECT_NEAR(rank_ratio(Tensor::from(Shape{1, 5, 3}, v)), 0.0, 1e-12);
}

TEST(RankRatio, IsSqrtOfOneMinusOneOverTForOrthogonalOneHotRows) {
  // X = I_T: the mean row is 1/T everywhere, ||X - 1 mean^T||^2 = T - 1 and ||X||^2 = T.
  for (int T : {2, 4, 7}) {
    std::vector<float> v(static_cast<size_t>(T * T), 0.0f);
    for (int t = 0; t < T; ++t) v[static_cast<size_t>(t * T + t)] = 1.0f;
    EXPECT_NEAR(rank_ratio(Tensor::from(Shape{1, T, T}, v)), std::sqrt(1.0 - 1.0 / T), 1e-9) << "T=" << T;
  }
}

TEST(RankRatio, AveragesOverTheBatch) {
  // batch 0: collapsed (ratio 0); batch 1: one-hot rows with T = 4 (ratio sqrt(3/4)).
  std::vector<float> v = {2, 1, 0, 0, 2, 1, 0, 0, 2, 1, 0, 0, 2, 1, 0, 0,
                          1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  EXPECT_NEAR(rank_ratio(Tensor::from(Shape{2, 4, 4}, v)), 0.5 * std::sqrt(0.75), 1e-9);
}

TEST(Rms, IsTheRootMeanSquareOfTheEntries) {
  EXPECT_NEAR(rms(Tensor::from(Shape{2, 2}, {3.0f, -4.0f, 0.0f, 0.0f})), 2.5, 1e-12);  // sqrt(25 / 4)
  EXPECT_NEAR(rms(Tensor::from(Shape{3}, {-2.0f, -2.0f, -2.0f})), 2.0, 1e-12);
}

// One forward/backward of a 2-block model with the stream hooks installed.
struct Measured {
  LayerStats stats;
  std::map<std::string, double> by_name;
};

Measured measure_once(const ModelConfig& c, const std::vector<double>& update_norms = {}) {
  Model m(c);
  m.init_weights(5);
  if (c.residual_scale == ResidualScale::ReZero)  // gates start at 0, which would zero the branches' gradients
    for (auto& p : m.parameters())
      if (p.name.find("_gate") != std::string::npos) p.tensor.data()[0] = 0.7f;
  const int B = 2, T = 4;
  ForwardTrace trace;
  std::vector<double> stream;
  Tensor loss = Model::loss(m.forward(tokens(B * T, 1, c.vocab_size), B, T, &trace), tokens(B * T, 2, c.vocab_size));
  hook_stream_grads(trace, stream);
  loss.backward();
  Measured out;
  out.stats = measure_layers(m, trace, stream, update_norms);
  out.by_name = grad_norms_by_name(m);
  return out;
}

TEST(MeasureLayers, PutsAttentionParametersIntoAttnGradNorm) {
  const Measured r = measure_once(two_blocks());
  ASSERT_EQ(r.stats.attn_grad_norm.size(), 2u);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    double attn = 0.0, mlp = 0.0, norm = 0.0;
    for (const char* n : {"attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias"})
      attn += std::pow(r.by_name.at(p + n), 2);
    for (const char* n : {"mlp.fc.weight", "mlp.fc.bias", "mlp.proj.weight", "mlp.proj.bias"})
      mlp += std::pow(r.by_name.at(p + n), 2);
    for (const char* n : {"norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"})
      norm += std::pow(r.by_name.at(p + n), 2);
    ASSERT_GT(attn, 0.0) << "a zero gradient would make this test unable to fail";
    EXPECT_NEAR(r.stats.attn_grad_norm[static_cast<size_t>(l)], std::sqrt(attn), 1e-9 * (1 + std::sqrt(attn)));
    EXPECT_NEAR(r.stats.mlp_grad_norm[static_cast<size_t>(l)], std::sqrt(mlp), 1e-9 * (1 + std::sqrt(mlp)));
    EXPECT_NEAR(r.stats.norm_grad_norm[static_cast<size_t>(l)], std::sqrt(norm), 1e-9 * (1 + std::sqrt(norm)));
  }
}

TEST(MeasureLayers, BlockTotalIsTheRootSumOfSquaresOfItsSubLayerGroups) {
  ModelConfig rezero = two_blocks();
  rezero.residual_scale = ResidualScale::ReZero;  // adds attn_gate / mlp_gate, which belong to their branch
  ModelConfig sandwich = two_blocks();
  sandwich.norm_position = NormPosition::Sandwich;  // adds norm1_out / norm2_out
  for (const ModelConfig& c : {two_blocks(), rezero, sandwich}) {
    const Measured r = measure_once(c);
    ASSERT_EQ(r.stats.grad_norm.size(), 2u);
    for (size_t l = 0; l < 2; ++l) {
      const double a = r.stats.attn_grad_norm[l], m = r.stats.mlp_grad_norm[l], n = r.stats.norm_grad_norm[l];
      EXPECT_GT(a * m * n, 0.0) << wiring_id(c) << " block " << l;
      EXPECT_NEAR(r.stats.grad_norm[l], std::sqrt(a * a + m * m + n * n), 1e-9) << wiring_id(c) << " block " << l;
    }
  }
}

TEST(MeasureLayers, ReportsEveryParameterAndTheStreamAtEveryBoundary) {
  const Measured r = measure_once(two_blocks());
  ASSERT_EQ(r.stats.params.size(), r.by_name.size());
  for (const auto& [name, v] : r.stats.params) EXPECT_DOUBLE_EQ(v, r.by_name.at(name)) << name;
  EXPECT_EQ(r.stats.act_rms.size(), 3u);
  EXPECT_EQ(r.stats.rank_ratio.size(), 3u);
  EXPECT_EQ(r.stats.stream_grad_norm.size(), 3u);
  EXPECT_TRUE(r.stats.update_ratio.empty()) << "no optimizer step yet";
  const nlohmann::json j = to_json(r.stats, true);
  EXPECT_TRUE(j.at("update_ratio").is_null());
  EXPECT_EQ(j.at("params").size(), r.by_name.size());
  EXPECT_FALSE(to_json(r.stats, false).contains("params"));
}

TEST(MeasureLayers, UpdateRatioIsTheBlocksUpdateNormOverItsWeightNorm) {
  const ModelConfig c = two_blocks();
  Model m(c);
  m.init_weights(5);
  const auto params = m.parameters();
  std::vector<double> updates(params.size());
  double du0 = 0.0, w0 = 0.0;
  for (size_t i = 0; i < params.size(); ++i) {
    updates[i] = 0.001 * static_cast<double>(i + 1);
    if (params[i].info.block == 0) {
      du0 += updates[i] * updates[i];
      w0 += std::pow(norm_of(params[i].tensor), 2);
    }
  }
  const Measured r = measure_once(c, updates);  // same seed, so the same weights
  ASSERT_EQ(r.stats.update_ratio.size(), 2u);
  EXPECT_NEAR(r.stats.update_ratio[0], std::sqrt(du0 / w0), 1e-9);
}

// dL/dlogits of the mean cross-entropy over N rows: (softmax(z) - onehot(y)) / N.
std::vector<double> dloss_dlogits(const Tensor& logits, const std::vector<int32_t>& y) {
  const int64_t V = logits.size(-1), N = logits.numel() / V;
  std::vector<double> d(static_cast<size_t>(N * V));
  for (int64_t n = 0; n < N; ++n) {
    const float* z = logits.data() + n * V;
    double mx = -INFINITY, sum = 0.0;
    for (int64_t v = 0; v < V; ++v) mx = std::max(mx, static_cast<double>(z[v]));
    for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(z[v]) - mx);
    for (int64_t v = 0; v < V; ++v) {
      const double p = std::exp(static_cast<double>(z[v]) - mx) / sum;
      d[static_cast<size_t>(n * V + v)] = (p - (v == y[static_cast<size_t>(n)] ? 1.0 : 0.0)) / static_cast<double>(N);
    }
  }
  return d;
}

TEST(HookStreamGrads, LastBoundaryMatchesTheGradientThroughAnUntiedHeadWithoutFinalNorm) {
  ModelConfig c = two_blocks();
  c.final_norm = false;  // logits = x_L W^T, so dL/dx_L = dL/dlogits W
  Model m(c);
  m.init_weights(9);
  const int B = 2, T = 4, C = c.n_embd, V = c.vocab_size;
  const std::vector<int32_t> x = tokens(B * T, 3, V), y = tokens(B * T, 4, V);
  ForwardTrace trace;
  std::vector<double> stream;
  Tensor logits = m.forward(x, B, T, &trace);
  Tensor loss = Model::loss(logits, y);
  hook_stream_grads(trace, stream);
  loss.backward();
  ASSERT_EQ(stream.size(), 3u);

  const std::vector<double> dz = dloss_dlogits(logits, y);
  const float* W = m.head->weight.data();  // (V, C)
  double sq = 0.0;
  for (int n = 0; n < B * T; ++n)
    for (int k = 0; k < C; ++k) {
      double g = 0.0;
      for (int v = 0; v < V; ++v) g += dz[static_cast<size_t>(n * V + v)] * static_cast<double>(W[v * C + k]);
      sq += g * g;
    }
  ASSERT_GT(sq, 0.0);
  EXPECT_NEAR(stream[2], std::sqrt(sq), 1e-5 * std::sqrt(sq));
}

TEST(HookStreamGrads, FirstBoundaryMatchesTheEmbeddingGradientWhenEveryTokenIsDistinct) {
  // Without position embeddings x_0 = tok_emb[ids]; with every id used once, tok_emb's
  // gradient rows are exactly the rows of dL/dx_0 (untied head: no other path into tok_emb).
  ModelConfig c = two_blocks();
  c.pos_emb = PosEmb::None;
  c.vocab_size = 8;
  Model m(c);
  m.init_weights(9);
  const int B = 2, T = 4;
  const std::vector<int32_t> x = {3, 0, 6, 1, 7, 2, 5, 4};
  ForwardTrace trace;
  std::vector<double> stream;
  Tensor loss = Model::loss(m.forward(x, B, T, &trace), tokens(B * T, 4, c.vocab_size));
  hook_stream_grads(trace, stream);
  loss.backward();
  const double want = norm_of(m.tok_emb.weight.grad());
  ASSERT_GT(want, 0.0);
  EXPECT_NEAR(stream[0], want, 1e-6 * want);
}

}  // namespace
}  // namespace sl
