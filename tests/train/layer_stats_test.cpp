// Tests for train/layer_stats: rank_ratio, rms, mean_cosine and the attention statistics on hand
// cases, the grouping of per-block gradient norms by sub-layer, update ratios, the
// residual-stream gradient norms that the hooks record (checked against dL/dx computed by hand at
// both ends of the stack), and the registry: lengths of every key, the fixture (the README table
// is checked against `stacklab registry --markdown` in tests/cli/docs_tables_test.cpp).
#include "train/layer_stats.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "core/blas.h"
#include "core/ops.h"
#include "core/rng.h"
#include "core/sums.h"
#include "nn/model.h"
#include "nn/wiring.h"
#include "util/error.h"

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
  for (int64_t i = 0; i < g.numel(); ++i)
    s += static_cast<double>(g.data()[i]) * static_cast<double>(g.data()[i]);
  return std::sqrt(s);
}

std::map<std::string, double> grad_norms_by_name(const Model& m) {
  std::map<std::string, double> out;
  for (const auto& p : m.parameters())
    out[p.name] = p.tensor.has_grad() ? norm_of(p.tensor.grad()) : 0.0;
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
    EXPECT_NEAR(rank_ratio(Tensor::from(Shape{1, T, T}, v)), std::sqrt(1.0 - 1.0 / T), 1e-9)
        << "T=" << T;
  }
}

TEST(RankRatio, AveragesOverTheBatch) {
  // batch 0: collapsed (ratio 0); batch 1: one-hot rows with T = 4 (ratio sqrt(3/4)).
  std::vector<float> v = {2, 1, 0, 0, 2, 1, 0, 0, 2, 1, 0, 0, 2, 1, 0, 0,
                          1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  EXPECT_NEAR(rank_ratio(Tensor::from(Shape{2, 4, 4}, v)), 0.5 * std::sqrt(0.75), 1e-9);
}

TEST(Rms, IsTheRootMeanSquareOfTheEntries) {
  EXPECT_NEAR(rms(Tensor::from(Shape{2, 2}, {3.0f, -4.0f, 0.0f, 0.0f})), 2.5,
              1e-12);  // sqrt(25 / 4)
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
  if (c.residual_scale ==
      ResidualScale::ReZero)  // gates start at 0, which would zero the branches' gradients
    for (auto& p : m.parameters())
      if (p.name.find("_gate") != std::string::npos) p.tensor.data()[0] = 0.7f;
  const int B = 2, T = 4;
  ForwardTrace trace;
  std::vector<double> stream;
  Tensor loss =
      Model::loss(m.forward(tokens(B * T, 1, c.vocab_size), B, T, ForwardMode::eval(), &trace),
                  tokens(B * T, 2, c.vocab_size));
  hook_stream_grads(trace, stream);
  loss.backward();
  Measured out;
  out.stats = measure_layers(m, trace, stream, update_norms);
  out.by_name = grad_norms_by_name(m);
  return out;
}

TEST(MeasureLayers, PutsAttentionParametersIntoAttnGradNorm) {
  const Measured r = measure_once(two_blocks());
  ASSERT_EQ(r.stats.at("attn_grad_norm").size(), 2u);
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
    EXPECT_NEAR(r.stats.at("attn_grad_norm")[static_cast<size_t>(l)], std::sqrt(attn),
                1e-9 * (1 + std::sqrt(attn)));
    EXPECT_NEAR(r.stats.at("mlp_grad_norm")[static_cast<size_t>(l)], std::sqrt(mlp),
                1e-9 * (1 + std::sqrt(mlp)));
    EXPECT_NEAR(r.stats.at("norm_grad_norm")[static_cast<size_t>(l)], std::sqrt(norm),
                1e-9 * (1 + std::sqrt(norm)));
  }
}

TEST(MeasureLayers, BlockTotalIsTheRootSumOfSquaresOfItsSubLayerGroups) {
  ModelConfig rezero = two_blocks();
  rezero.residual_scale =
      ResidualScale::ReZero;  // adds attn_gate / mlp_gate, which belong to their branch
  ModelConfig sandwich = two_blocks();
  sandwich.norm_position = NormPosition::Sandwich;  // adds norm1_out / norm2_out
  for (const ModelConfig& c : {two_blocks(), rezero, sandwich}) {
    const Measured r = measure_once(c);
    ASSERT_EQ(r.stats.at("grad_norm").size(), 2u);
    for (size_t l = 0; l < 2; ++l) {
      const double a = r.stats.at("attn_grad_norm")[l], m = r.stats.at("mlp_grad_norm")[l],
                   n = r.stats.at("norm_grad_norm")[l];
      EXPECT_GT(a * m * n, 0.0) << wiring_id(c) << " block " << l;
      EXPECT_NEAR(r.stats.at("grad_norm")[l], std::sqrt(a * a + m * m + n * n), 1e-9)
          << wiring_id(c) << " block " << l;
    }
  }
}

TEST(MeasureLayers, ReportsEveryParameterAndTheStreamAtEveryBoundary) {
  const Measured r = measure_once(two_blocks());
  ASSERT_EQ(r.stats.params.size(), r.by_name.size());
  for (const auto& [name, v] : r.stats.params) EXPECT_DOUBLE_EQ(v, r.by_name.at(name)) << name;
  EXPECT_EQ(r.stats.at("act_rms").size(), 3u);
  EXPECT_EQ(r.stats.at("rank_ratio").size(), 3u);
  EXPECT_EQ(r.stats.at("stream_grad_norm").size(), 3u);
  EXPECT_TRUE(r.stats.at("update_ratio").empty()) << "no optimizer step yet";
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
  ASSERT_EQ(r.stats.at("update_ratio").size(), 2u);
  EXPECT_NEAR(r.stats.at("update_ratio")[0], std::sqrt(du0 / w0), 1e-9);
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
      d[static_cast<size_t>(n * V + v)] =
          (p - (v == y[static_cast<size_t>(n)] ? 1.0 : 0.0)) / static_cast<double>(N);
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
  Tensor logits = m.forward(x, B, T, ForwardMode::eval(), &trace);
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
      for (int v = 0; v < V; ++v)
        g += dz[static_cast<size_t>(n * V + v)] * static_cast<double>(W[v * C + k]);
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
  Tensor loss =
      Model::loss(m.forward(x, B, T, ForwardMode::eval(), &trace), tokens(B * T, 4, c.vocab_size));
  hook_stream_grads(trace, stream);
  loss.backward();
  const double want = norm_of(m.tok_emb.weight.grad());
  ASSERT_GT(want, 0.0);
  EXPECT_NEAR(stream[0], want, 1e-6 * want);
}

// qkv (B, T, 3C) from per-position q and k rows (C each); v is filled with junk it must ignore.
Tensor pack_qkv(int64_t B, int64_t T, int64_t C, const std::vector<float>& q,
                const std::vector<float>& k) {
  std::vector<float> v(static_cast<size_t>(B * T * 3 * C));
  for (int64_t n = 0; n < B * T; ++n)
    for (int64_t c = 0; c < C; ++c) {
      v[static_cast<size_t>(n * 3 * C + c)] = q[static_cast<size_t>(n * C + c)];
      v[static_cast<size_t>(n * 3 * C + C + c)] = k[static_cast<size_t>(n * C + c)];
      v[static_cast<size_t>(n * 3 * C + 2 * C + c)] = 7.0f * static_cast<float>(c + 1);
    }
  return Tensor::from(Shape{B, T, 3 * C}, v);
}

TEST(AttentionStats, UniformAttentionHasEntropyLnOfTPlusOneAveragedOverPositions) {
  // q = 0: every logit is 0, so query t attends uniformly to its t + 1 causal positions.
  const int64_t B = 2, T = 5, C = 4;
  std::vector<float> q(static_cast<size_t>(B * T * C), 0.0f), k(q.size());
  Rng r(3);
  for (auto& x : k) x = static_cast<float>(r.normal());
  const AttentionStats s = attention_stats(pack_qkv(B, T, C, q, k), /*n_head=*/2);
  double want = 0.0;
  for (int t = 0; t < T; ++t) want += std::log(t + 1.0);
  EXPECT_NEAR(s.entropy, want / T, 1e-12);  // (ln 1 + ln 2 + ... + ln 5) / 5
  EXPECT_EQ(s.logit_max, 0.0);
}

TEST(AttentionStats, KnownQueriesAndKeysGiveTheKnownLogitMaxAndEntropy) {
  // B=1, T=2, C=4, two heads of size 2. Head 0 is all zero (uniform). Head 1: q0=(1,0),
  // q1=(0,2), k0=(-3,0), k1=(5,1). Causal logits / sqrt(2): t=0: -3; t=1: 0 and 2. The
  // non-causal q0.k1 = 5 must not count, and |-3| must: the max is 3 / sqrt(2).
  const std::vector<float> q = {0, 0, 1, 0, /**/ 0, 0, 0, 2};
  const std::vector<float> k = {0, 0, -3, 0, /**/ 0, 0, 5, 1};
  const AttentionStats s = attention_stats(pack_qkv(1, 2, 4, q, k), 2);
  EXPECT_NEAR(s.logit_max, 3.0 / std::sqrt(2.0), 1e-12);
  const double a = 0.0, b = 2.0 / std::sqrt(2.0);  // head 1, query 1
  const double pa = std::exp(a) / (std::exp(a) + std::exp(b)), pb = 1.0 - pa;
  const double h11 = -pa * std::log(pa) - pb * std::log(pb);
  // (head 0: 0 and ln 2; head 1: 0 and h11) over 4 (head, query) pairs
  EXPECT_NEAR(s.entropy, (std::log(2.0) + h11) / 4.0, 1e-12);
}

TEST(AttentionStats, ANonFiniteScoreMakesBothStatisticsNaN) {
  // A diverging run: one NaN key in sequence 1. max() alone would skip it and report a finite max.
  const int64_t B = 2, T = 3, C = 2;
  std::vector<float> q(static_cast<size_t>(B * T * C), 0.5f), k(q.size(), 0.25f);
  k[static_cast<size_t>((1 * T + 0) * C)] = NAN;  // b = 1, position 0: every query there sees it
  const AttentionStats s = attention_stats(pack_qkv(B, T, C, q, k), 1);
  EXPECT_TRUE(std::isnan(s.logit_max));
  EXPECT_TRUE(std::isnan(s.entropy));
  const AttentionStats ok =
      attention_stats(pack_qkv(B, T, C, q, std::vector<float>(q.size(), 0.25f)), 1);
  EXPECT_NEAR(ok.logit_max, 2 * 0.5 * 0.25 / std::sqrt(2.0), 1e-12);  // q.k = 0.25 over HS = 2
}

TEST(MeanCosine, IsOneForEqualMinusOneForNegatedAndZeroForOrthogonalTokens) {
  const Tensor x = Tensor::from(Shape{1, 2, 2}, {1, 2, 3, -1});
  EXPECT_NEAR(mean_cosine(x, x), 1.0, 1e-12);
  EXPECT_NEAR(mean_cosine(x, Tensor::from(Shape{1, 2, 2}, {-2, -4, -3, 1})), -1.0, 1e-12);
  EXPECT_NEAR(mean_cosine(x, Tensor::from(Shape{1, 2, 2}, {-2, 1, 1, 3})), 0.0, 1e-12);
  // token 0: cos 1; token 1: output zero, left out
  EXPECT_NEAR(mean_cosine(x, Tensor::from(Shape{1, 2, 2}, {2, 4, 0, 0})), 1.0, 1e-12);
  EXPECT_TRUE(std::isnan(mean_cosine(x, Tensor::zeros(Shape{1, 2, 2}))));
}

// One eval forward pass of a freshly initialised model (seed 5) on a (2, 4) batch, traced, and
// its measurements (no gradients: the gradient metrics are 0).
struct TracedEval {
  std::unique_ptr<Model> model;
  ForwardTrace trace;
  LayerStats stats;
};
TracedEval traced_eval(const ModelConfig& c) {
  TracedEval t{std::make_unique<Model>(c), {}, {}};
  t.model->init_weights(5);
  const int B = 2, T = 4;
  t.model->forward(tokens(B * T, 1, c.vocab_size), B, T, ForwardMode::eval(), &t.trace);
  t.stats = measure_layers(*t.model, t.trace, {}, {});
  return t;
}

TEST(MeasureLayers, StreamCosIsOneForBlocksWhoseOutputEqualsTheirInput) {
  // ReZero gates start at 0: every block is x + 0 * f(...) = x.
  ModelConfig c = two_blocks();
  c.residual_scale = ResidualScale::ReZero;
  const TracedEval e = traced_eval(c);
  const LayerStats& s = e.stats;
  ASSERT_EQ(s.at("stream_cos").size(), 2u);
  for (double v : s.at("stream_cos")) EXPECT_NEAR(v, 1.0, 1e-12);
  // and a block that does change the stream is measured below 1 (so the check above can fail)
  const Measured changed = measure_once(c);  // gates set to 0.7
  for (double v : changed.stats.at("stream_cos")) EXPECT_LT(v, 1.0 - 1e-6);
}

TEST(MeasureLayers, AttentionMetricsAreMeasuredOnTheQkvFedToAttention) {
  ModelConfig c = two_blocks();
  const TracedEval e = traced_eval(c);
  const Model& m = *e.model;
  const ForwardTrace& trace = e.trace;
  const LayerStats& s = e.stats;
  ASSERT_EQ(trace.attn_qkv.size(), 2u);
  for (size_t l = 0; l < 2; ++l) {
    // pre-norm: qkv = norm1(x_l) W^T + b, x_l the block's input
    const Block& blk = *m.blocks[l];
    const Tensor want = blk.attn->qkv.forward(blk.norm1->forward(trace.stream[l]));
    ASSERT_EQ(trace.attn_qkv[l].shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_EQ(trace.attn_qkv[l].data()[i], want.data()[i]) << i;
    const AttentionStats a = attention_stats(want, c.n_head);
    EXPECT_EQ(s.at("attn_entropy")[l], a.entropy);
    EXPECT_EQ(s.at("attn_logit_max")[l], a.logit_max);
    EXPECT_GT(a.entropy, 0.0);
    EXPECT_LT(a.entropy, std::log(4.0));  // at most uniform over the T = 4 positions
    EXPECT_GT(a.logit_max, 0.0);
  }
}

double mean_square(const Tensor& t) { return squared_norm(t.data(), t.numel()) / t.numel(); }

TEST(MeasureLayers, BranchRatioIsEachSubLayersBranchOverItsInputStreamInMeanSquares) {
  // Pre-norm residual, g = 1: block l reads x1 = stream[l], adds b1 = attn(norm1(x1)), then
  // reads x2 = x1 + b1 and adds b2 = mlp(norm2(x2)); the metric is the mean of the two ratios.
  ModelConfig c = two_blocks();
  const TracedEval e = traced_eval(c);
  const Model& m = *e.model;
  const ForwardTrace& trace = e.trace;
  const LayerStats& s = e.stats;
  ASSERT_EQ(s.at("branch_ratio").size(), 2u);
  for (size_t l = 0; l < 2; ++l) {
    const Block& blk = *m.blocks[l];
    const Tensor x1 = trace.stream[l];
    const Tensor b1 = blk.attn->forward(blk.norm1->forward(x1), ForwardMode::eval());
    const Tensor x2 = add(x1, b1);
    const Tensor b2 = blk.mlp->forward(blk.norm2->forward(x2), ForwardMode::eval());
    const double want = (mean_square(b1) / mean_square(x1) + mean_square(b2) / mean_square(x2)) / 2;
    EXPECT_NEAR(s.at("branch_ratio")[l], want, 1e-9 * want) << l;
    EXPECT_GT(want, 0.0);
  }
}

TEST(MeasureLayers, BranchRatioIsZeroWhenReZeroGatesAreZeroAndGrowsWithTheInitScale) {
  ModelConfig c = two_blocks();
  c.residual_scale = ResidualScale::ReZero;  // a = 0 at init: every branch enters as 0
  const TracedEval e = traced_eval(c);
  const LayerStats& s = e.stats;
  ASSERT_EQ(s.at("branch_ratio").size(), 2u);
  for (double v : s.at("branch_ratio")) EXPECT_EQ(v, 0.0);
  // Post-norm: a branch drawn 10x smaller is (about) 100x smaller in mean square next to the
  // same stream; the norm after the sum keeps the stream at its scale.
  ModelConfig post = two_blocks();
  post.norm_position = NormPosition::Post;
  ModelConfig small = post;
  small.init_std = post.init_std / 10;
  const double big = measure_once(post).stats.at("branch_ratio")[1];
  const double tiny = measure_once(small).stats.at("branch_ratio")[1];
  EXPECT_GT(big / tiny, 20.0) << big << " vs " << tiny;
}

TEST(MeasureLayers, AttentionMetricsAreNullForBlocksWithoutAttention) {
  ModelConfig c = two_blocks();
  c.attention = false;
  const nlohmann::json j = to_json(measure_once(c).stats, false);
  for (const char* key : {"attn_entropy", "attn_logit_max"}) {
    ASSERT_EQ(j.at(key).size(), 2u) << key;
    for (const auto& v : j.at(key)) EXPECT_TRUE(v.is_null()) << key;
  }
  for (const auto& v : j.at("stream_cos")) EXPECT_TRUE(v.is_number());
}

TEST(MeasureLayers, EveryRegisteredMetricHasItsDocumentedLength) {
  ModelConfig no_attn = two_blocks();
  no_attn.attention = false;
  ModelConfig three = two_blocks();
  three.n_layer = 3;
  for (const ModelConfig& c : {two_blocks(), no_attn, three}) {
    const size_t n_params = Model(c).parameters().size();
    const nlohmann::json j =
        to_json(measure_once(c, std::vector<double>(n_params, 0.01)).stats, false);
    for (const LayerMetric& m : layer_metrics()) {
      ASSERT_TRUE(j.contains(m.name)) << m.name;
      ASSERT_TRUE(j.at(m.name).is_array()) << m.name;
      EXPECT_EQ(static_cast<int64_t>(j.at(m.name).size()), axis_length(m.axis, c.n_layer))
          << m.name << " " << wiring_id(c);
    }
    EXPECT_EQ(j.size(), layer_metrics().size()) << "a key that is not in the registry";
  }
}

TEST(LayerMetrics, EveryEntryHasAUniqueNameADescriptionAndALabel) {
  std::set<std::string> names;
  for (const LayerMetric& m : layer_metrics()) {
    EXPECT_TRUE(names.insert(m.name).second) << m.name;
    EXPECT_GT(std::string(m.description).size(), 10u) << m.name;
    EXPECT_GT(std::string(m.label).size(), 3u) << m.name;
    EXPECT_EQ(&layer_metric(m.name), &m);
  }
  EXPECT_THROW(layer_metric("no_such_metric"), InternalError);
  const nlohmann::json d = layer_metrics_json();
  ASSERT_EQ(d.size(), layer_metrics().size());
  EXPECT_EQ(d[0].at("name"), layer_metrics()[0].name);
}

std::string read_source_file(const std::string& rel) {
  std::ifstream f(std::string(STACKLAB_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(LayerMetrics, ThePlotFixtureDescribesItsKeysAsTheRegistryDoes) {
  // tests/fixtures/run_small is what tests/integration/check_plots.sh plots: its descriptors are
  // copied from a real run (generate.py --descriptors-from), so each must equal the registry's
  // entry of that name. A metric added later may be missing until the fixture is refreshed.
  std::stringstream lines(read_source_file("tests/fixtures/run_small/metrics.jsonl"));
  std::string line;
  std::set<std::string> described;
  int layers = 0;
  const nlohmann::json registry = layer_metrics_json();
  while (std::getline(lines, line)) {
    if (line.empty() || line.back() != '}') continue;  // the torn last line
    const nlohmann::json r = nlohmann::json::parse(line);
    if (r.at("kind") == "start") {
      for (const auto& d : r.at("layer_metrics")) {
        described.insert(d.at("name").get<std::string>());
        const auto it = std::find_if(registry.begin(), registry.end(),
                                     [&](const auto& e) { return e.at("name") == d.at("name"); });
        ASSERT_NE(it, registry.end())
            << d.at("name") << " is not registered; rerun generate.py --descriptors-from";
        EXPECT_EQ(*it, d) << "stale descriptor; rerun generate.py --descriptors-from";
      }
    }
    if (r.at("kind") != "layers") continue;
    ++layers;
    for (const std::string& name : described)
      EXPECT_TRUE(r.contains(name)) << name << " at step " << r.at("step");
  }
  EXPECT_EQ(layers, 4);
  EXPECT_GE(described.size(), 11u)
      << "the fixture should describe at least the metrics it was made with";
}

}  // namespace
}  // namespace sl
