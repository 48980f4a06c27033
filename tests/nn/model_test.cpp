// The whole model: causality, loss at init, gradient check on a sample of parameters, names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "core/ops.h"
#include "core/rng.h"
#include "nn/model.h"
#include "nn/toyblock.h"
#include "nn/wiring.h"
#include "support/gradcheck.h"

namespace sl {
namespace {

ModelConfig tiny(int n_layer = 2) {
  ModelConfig c;
  c.n_layer = n_layer;
  c.n_embd = 8;
  c.n_head = 2;
  c.block_size = 6;
  c.vocab_size = 7;
  return c;
}

std::vector<int32_t> tokens(int n, uint64_t seed, int V) {
  Rng r(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& v : t) v = static_cast<int32_t>(r.below(static_cast<uint64_t>(V)));
  return t;
}

// The model's loss on a fixed (2, 5) batch of tiny()'s 7 symbols, checked against finite
// differences in `params` (at most max_elements entries of each).
::testing::AssertionResult loss_grads_match(Model& m, const std::vector<Tensor>& params,
                                            int64_t max_elements) {
  std::vector<int32_t> x = tokens(2 * 5, 7, 7), y = tokens(2 * 5, 8, 7);
  testing::GradCheck opt;
  opt.max_elements = max_elements;
  return testing::grad_check(
             [&](const std::vector<Tensor>&) {
               return Model::loss(m.forward(x, 2, 5, ForwardMode::eval()), y);
             },
             params, opt)
             ? ::testing::AssertionSuccess()
             : ::testing::AssertionFailure();
}

TEST(Model, FutureTokensDoNotChangePastLogits) {
  for (NormPosition pos : all_choices<NormPosition>()) {
    ModelConfig c = tiny();
    c.norm_position = pos;
    c.init_std = 0.5;
    Model m(c);
    m.init_weights(1);
    NoGradGuard ng;
    std::vector<int32_t> a = tokens(6, 2, 7), b = a;
    b[4] = (b[4] + 1) % 7;
    b[5] = (b[5] + 3) % 7;
    Tensor la = m.forward(a, 1, 6, ForwardMode::eval()),
           lb = m.forward(b, 1, 6, ForwardMode::eval());
    for (int i = 0; i < 4 * 7; ++i)
      EXPECT_EQ(la.data()[i], lb.data()[i]) << name_of(pos) << " logit " << i;
    bool later_changed = false;
    for (int i = 4 * 7; i < 6 * 7; ++i) later_changed |= la.data()[i] != lb.data()[i];
    EXPECT_TRUE(later_changed) << "the test must be able to fail";
  }
}

TEST(Model, LossAtInitIsNearLnV) {
  ModelConfig c = tiny(4);
  c.vocab_size = 32;
  c.n_embd = 32;
  c.block_size = 16;
  Model m(c);
  m.init_weights(3);
  NoGradGuard ng;
  std::vector<int32_t> x = tokens(4 * 16, 4, 32), y = tokens(4 * 16, 5, 32);
  const float loss = Model::loss(m.forward(x, 4, 16, ForwardMode::eval()), y).item();
  EXPECT_NEAR(loss, std::log(32.0), 0.05);
}

TEST(Model, GradientsOfASampleOfParametersMatchFiniteDifferences) {
  for (bool tied : {false, true}) {
    ModelConfig c = tiny();
    c.tie_weights = tied;
    c.init_std = 0.3;
    Model m(c);
    m.init_weights(6);
    std::vector<Tensor> params;
    for (auto& p : m.parameters()) params.push_back(p.tensor);
    EXPECT_TRUE(loss_grads_match(m, params, 12)) << "tied=" << tied;
  }
}

TEST(Model, ParameterNamesAreStableDottedPaths) {
  ModelConfig c = tiny(2);
  Model m(c);
  std::vector<std::string> names;
  for (auto& p : m.parameters()) names.push_back(p.name);
  EXPECT_EQ(names.front(), "tok_emb.weight");
  EXPECT_EQ(names[1], "pos_emb.weight");
  EXPECT_EQ(names[2], "blocks.0.norm1.weight");
  EXPECT_NE(std::find(names.begin(), names.end(), "blocks.1.attn.qkv.weight"), names.end());
  EXPECT_EQ(names[names.size() - 3], "norm_f.weight");
  EXPECT_EQ(names.back(), "head.weight");
  EXPECT_EQ(m.parameters()[5].tensor.name(), names[5]) << "tensors carry their names";
  EXPECT_EQ(m.block_of("blocks.1.mlp.fc.weight"), 1);
  EXPECT_EQ(m.block_of("head.weight"), -1);
  c.tie_weights = true;
  c.norm_position = NormPosition::Post;
  Model tied(c);
  EXPECT_EQ(tied.parameters().back().name, "blocks.1.mlp.proj.bias")
      << "post-norm: no final norm; tied: no head";
}

// Init, decay and grouping follow the declared role: a DyT alpha named norm1.alpha does not
// start at 1 like a gain because its name contains "norm", and a LayerScale vector is no Weight.
TEST(Model, NewParametersStartAtTheirDeclaredValuesAndRolesNotTheirNames) {
  ModelConfig c = tiny(2);
  c.norm = NormKind::DyT;
  c.dyt_alpha_init = 0.7;
  c.residual_scale = ResidualScale::LayerScale;
  c.layerscale_init = 0.05;
  c.qk_norm = true;
  Model m(c);
  m.init_weights(3);
  int alphas = 0, scales = 0;
  for (const auto& p : m.parameters()) {
    const float* v = p.tensor.data();
    if (p.name.ends_with(".alpha")) {
      EXPECT_EQ(p.info.role, ParamRole::NormScalar) << p.name;
      EXPECT_FLOAT_EQ(v[0], 0.7f) << p.name;
      ++alphas;
    }
    if (p.name.ends_with("_scale")) {
      EXPECT_EQ(p.info.role, ParamRole::Gate) << p.name;
      EXPECT_EQ(p.tensor.numel(), c.n_embd) << p.name;
      for (int64_t i = 0; i < p.tensor.numel(); ++i) EXPECT_FLOAT_EQ(v[i], 0.05f) << p.name;
      ++scales;
    }
    if (p.name.find("q_norm.weight") != std::string::npos) {
      EXPECT_FLOAT_EQ(v[0], 1.0f) << p.name;
    }
    EXPECT_EQ(p.info.decays(), p.info.role == ParamRole::Weight) << p.name;
    EXPECT_EQ(p.info.role == ParamRole::Weight,
              p.tensor.ndim() == 2 && p.name.find("emb") == std::string::npos)
        << p.name;
    EXPECT_EQ(p.info.block, p.name.rfind("blocks.", 0) == 0 ? std::stoi(p.name.substr(7)) : -1)
        << p.name;
  }
  // norm1, norm2 per block (2 blocks), q_norm and k_norm per block, norm_f.
  EXPECT_EQ(alphas, 2 * 2 + 2 * 2 + 1);
  EXPECT_EQ(scales, 2 * 2);
}

// Shaped attention's alpha, beta, gamma: one per head, role AttnScalar, 1 at init, never decayed
// and counted by model_param_count; the query rows of qkv start at 0 and every other weight is
// drawn exactly as under softmax attention (the zeroing comes after the draw).
TEST(Model, ShapedAttentionScalarsArePerHeadStartAtOneAndTheQueryRowsAtZero) {
  ModelConfig soft = tiny(2);
  soft.init_std = 0.3;
  ModelConfig shaped = soft;
  shaped.attention_kind = AttentionKind::Shaped;
  Model a(soft), b(shaped);
  a.init_weights(5);
  b.init_weights(5);
  EXPECT_EQ(b.num_parameters(), model_param_count(shaped));
  EXPECT_EQ(b.num_parameters(), a.num_parameters() + 2 * 3 * shaped.n_head);
  std::map<std::string, Tensor> by_name;
  for (const auto& p : a.parameters()) by_name[p.name] = p.tensor;
  int scalars = 0;
  const int64_t C = shaped.n_embd;
  for (const auto& p : b.parameters()) {
    const std::vector<float> v = p.tensor.to_vector();
    if (p.info.role == ParamRole::AttnScalar) {
      EXPECT_TRUE(p.name.ends_with("attn.alpha") || p.name.ends_with("attn.beta") ||
                  p.name.ends_with("attn.gamma"))
          << p.name;
      EXPECT_EQ(p.tensor.shape(), Shape{shaped.n_head}) << p.name;
      EXPECT_EQ(v, std::vector<float>(static_cast<size_t>(shaped.n_head), 1.0f)) << p.name;
      EXPECT_FALSE(p.info.decays()) << p.name;
      EXPECT_EQ(p.info.group(), GradGroup::Attn) << p.name;
      ++scalars;
      continue;
    }
    const std::vector<float> drawn = by_name.at(p.name).to_vector();
    if (p.name.ends_with("attn.qkv.weight")) {
      for (int64_t i = 0; i < C * C; ++i) ASSERT_EQ(v[static_cast<size_t>(i)], 0.0f) << p.name;
      EXPECT_TRUE(std::equal(v.begin() + C * C, v.end(), drawn.begin() + C * C)) << p.name;
      EXPECT_NE(drawn[0], 0.0f) << "softmax attention draws its queries";
    } else {
      EXPECT_EQ(v, drawn) << p.name;
    }
  }
  EXPECT_EQ(scalars, 2 * 3);
  ModelConfig control = soft;
  control.attention_kind = AttentionKind::ShapedNoIdentity;
  EXPECT_EQ(Model(control).num_parameters(), a.num_parameters() + 2 * control.n_head)
      << "the control has beta only";
}

// The op names a loss's graph records, for checking which ops a model builds.
std::set<std::string> graph_ops(const Tensor& root) {
  std::set<std::string> ops;
  std::vector<TensorImpl*> todo{root.impl()};
  std::set<TensorImpl*> seen;
  while (!todo.empty()) {
    TensorImpl* t = todo.back();
    todo.pop_back();
    if (!t || !seen.insert(t).second || !t->node) continue;
    ops.insert(t->node->op);
    for (const Tensor& in : t->node->inputs) todo.push_back(in.impl());
  }
  return ops;
}

// model.attention_kind "softmax", the default, is the attention stacklab had before the key:
// the fused op alone, no running mean, no per-head scaling, the queries drawn.
TEST(Model, TheDefaultAttentionKindBuildsTheFusedOpAloneAndShapedAddsTheRunningMean) {
  auto ops_of = [](AttentionKind kind) {
    ModelConfig c = tiny(2);
    c.attention_kind = kind;
    Model m(c);
    m.init_weights(1);
    std::vector<int32_t> x = tokens(2 * 5, 2, 7), y = tokens(2 * 5, 3, 7);
    return graph_ops(Model::loss(m.forward(x, 2, 5, ForwardMode::eval()), y));
  };
  EXPECT_EQ(ModelConfig{}.attention_kind, AttentionKind::Softmax);
  const std::set<std::string> soft = ops_of(AttentionKind::Softmax);
  EXPECT_TRUE(soft.contains("causal_attention"));
  for (const char* op : {"causal_mean", "matmul", "sub", "mul"})
    EXPECT_FALSE(soft.contains(op)) << op << " in the default model's graph";
  const std::set<std::string> shaped = ops_of(AttentionKind::Shaped);
  for (const char* op : {"causal_attention", "causal_mean", "matmul", "sub", "mul"})
    EXPECT_TRUE(shaped.contains(op)) << op << " missing from the shaped model's graph";
  const std::set<std::string> control = ops_of(AttentionKind::ShapedNoIdentity);
  EXPECT_FALSE(control.contains("causal_mean"));
  EXPECT_TRUE(control.contains("mul"));
}

TEST(Model, ShapedAttentionGradientsMatchFiniteDifferencesAwayFromInit) {
  for (AttentionKind kind : {AttentionKind::Shaped, AttentionKind::ShapedNoIdentity})
    for (bool residual : {true, false}) {
      ModelConfig c = tiny();
      c.attention_kind = kind;
      c.residual = residual;
      c.init_std = 0.3;
      Model m(c);
      m.init_weights(6);
      Rng r(9);
      for (auto& p : m.parameters())  // queries and scalars away from their init
        if (p.info.role == ParamRole::AttnScalar || p.name.ends_with("qkv.weight"))
          for (int64_t i = 0; i < p.tensor.numel(); ++i)
            p.tensor.data()[i] = (p.info.role == ParamRole::AttnScalar ? 1.0f : 0.0f) +
                                 static_cast<float>(r.normal() * 0.3);
      std::vector<Tensor> params;
      for (auto& p : m.parameters()) params.push_back(p.tensor);
      EXPECT_TRUE(loss_grads_match(m, params, 12)) << name_of(kind) << " residual=" << residual;
    }
}

TEST(Model, ScaledInitShrinksOutputProjectionsByRootTwoN) {
  ModelConfig c = tiny(8);
  c.n_embd = 64;
  c.init = InitScheme::Scaled;
  Model m(c);
  m.init_weights(1);
  auto rms = [](const Tensor& t) {
    double s = 0;
    for (int64_t i = 0; i < t.numel(); ++i) s += static_cast<double>(t.data()[i]) * t.data()[i];
    return std::sqrt(s / static_cast<double>(t.numel()));
  };
  EXPECT_NEAR(rms(m.blocks[0]->attn->qkv.weight), 0.02, 0.002);
  EXPECT_NEAR(rms(m.blocks[0]->attn->proj.weight), 0.02 / 4.0, 0.0005);
}

// ---- model.emb_scale -------------------------------------------------------------------------

double rms_of(const Tensor& t) {
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i) s += static_cast<double>(t.data()[i]) * t.data()[i];
  return std::sqrt(s / static_cast<double>(t.numel()));
}

ModelConfig wide(EmbScale e, PosEmb pos, bool tied = false) {
  ModelConfig c = tiny(2);
  c.n_embd = 64;
  c.n_head = 4;
  c.vocab_size = 64;
  c.block_size = 64;
  c.emb_scale = e;
  c.pos_emb = pos;
  c.tie_weights = tied;
  return c;
}

TEST(Model, EmbeddingTablesAreDrawnAtInitStdByDefaultAndAtOneOverRootCUnderUnit) {
  for (EmbScale e : all_choices<EmbScale>()) {
    Model m(wide(e, PosEmb::Learned));
    m.init_weights(2);
    const double want = e == EmbScale::Unit ? 1.0 / 8.0 : 0.02;              // C = 64
    EXPECT_NEAR(rms_of(m.tok_emb.weight), want, 0.06 * want) << name_of(e);  // 4096 draws
    EXPECT_NEAR(rms_of(m.pos_emb->weight), want, 0.06 * want) << name_of(e);
    EXPECT_NEAR(rms_of(m.blocks[0]->attn->qkv.weight), 0.02, 0.002)
        << name_of(e) << ": the Linear weights follow model.init, not model.emb_scale";
  }
}

// Pins today's default bit for bit: the first entries of tok_emb.weight of tiny(2) drawn with
// seed 6 before model.emb_scale existed (stacklab e93f6ac), and an embedding output that is the
// plain sum tok_emb[id] + pos_emb[t] (no factor op: not even a multiplication by 1).
TEST(Model, DefaultEmbScaleDrawsAndComputesExactlyAsBeforeTheKeyExisted) {
  ModelConfig c = tiny();
  EXPECT_EQ(c.emb_scale, EmbScale::InitStd);
  Model m(c);
  m.init_weights(6);
  const float want_tok[3] = {0x1.bb9ff2p-7f, 0x1.a3673ap-8f, 0x1.1f3186p-5f};  // 0.0135, ...
  for (int i = 0; i < 3; ++i) EXPECT_EQ(m.tok_emb.weight.data()[i], want_tok[i]) << i;
  NoGradGuard ng;
  const std::vector<int32_t> ids = tokens(6, 2, 7);
  ForwardTrace trace;
  m.forward(ids, 1, 6, ForwardMode::eval(), &trace);
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t i = 0; i < 8; ++i)
      EXPECT_EQ(trace.stream[0].data()[t * 8 + i],
                m.tok_emb.weight.data()[ids[static_cast<size_t>(t)] * 8 + i] +
                    m.pos_emb->weight.data()[t * 8 + i])
          << t << " " << i;
}

// Under "unit" the embedding entering block 0 is sqrt(C) (tok_emb[id] + pos_emb[t]) with a
// learned table, sqrt(C) tok_emb[id] + PE[t] with the sinusoid, sqrt(C) tok_emb[id] without.
TEST(Model, UnitEmbScaleMultipliesTheLookupByRootCAndAddsTheSinusoidAfter) {
  const std::vector<int32_t> ids = tokens(2 * 5, 3, 64);
  for (PosEmb pos : all_choices<PosEmb>()) {
    Model m(wide(EmbScale::Unit, pos));
    m.init_weights(4);
    NoGradGuard ng;
    ForwardTrace trace;
    m.forward(ids, 2, 5, ForwardMode::eval(), &trace);
    const Tensor& x = trace.stream.at(0);  // (2, 5, 64)
    const std::vector<float> pe = sinusoid_table(5, 64);
    double worst = 0.0, ms = 0.0;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t t = 0; t < 5; ++t)
        for (int64_t i = 0; i < 64; ++i) {
          const int32_t id = ids[static_cast<size_t>(b * 5 + t)];
          double lookup = m.tok_emb.weight.data()[id * 64 + i];
          if (pos == PosEmb::Learned) lookup += m.pos_emb->weight.data()[t * 64 + i];
          double want = 8.0 * lookup;
          if (pos == PosEmb::Sinusoidal) want += pe[static_cast<size_t>(t * 64 + i)];
          const double got = x.data()[(b * 5 + t) * 64 + i];
          worst = std::max(worst, std::abs(got - want));
          ms += 64.0 * lookup * lookup / (2 * 5 * 64);
        }
    EXPECT_LT(worst, 1e-5) << name_of(pos);
    // Unit-scale entries: each drawn table contributes mean square 1 after the factor.
    EXPECT_NEAR(ms, pos == PosEmb::Learned ? 2.0 : 1.0, 0.3) << name_of(pos);
  }
}

// A tied head reads the table as drawn (N(0, C^-1/2)), not the table times sqrt(C): its logits
// stay near unit scale after the final norm, where a table drawn N(0, 1) would give about sqrt(C).
TEST(Model, UnitEmbScaleWithATiedHeadKeepsTheLogitsNearUnitScale) {
  Model m(wide(EmbScale::Unit, PosEmb::Learned, /*tied=*/true));
  m.init_weights(5);
  NoGradGuard ng;
  const Tensor logits = m.forward(tokens(4 * 16, 6, 64), 4, 16, ForwardMode::eval());
  EXPECT_GT(rms_of(logits), 0.5);
  EXPECT_LT(rms_of(logits), 2.0) << "sqrt(C) = 8 would mean the head saw the scaled table";
}

// The factor is an op in the graph: the tables' gradients carry it (and the sinusoid none).
TEST(Model, UnitEmbScaleGradientsMatchFiniteDifferences) {
  for (PosEmb pos : all_choices<PosEmb>())
    for (bool tied : {false, true}) {
      ModelConfig c = tiny();
      c.emb_scale = EmbScale::Unit;
      c.pos_emb = pos;
      c.tie_weights = tied;
      c.init_std = 0.3;
      Model m(c);
      m.init_weights(6);
      std::vector<Tensor> params;
      for (auto& p : m.parameters())
        if (p.info.role == ParamRole::Embedding || p.name == "blocks.0.attn.qkv.weight")
          params.push_back(p.tensor);
      EXPECT_TRUE(loss_grads_match(m, params, 24)) << name_of(pos) << " tied=" << tied;
    }
}

TEST(ToyBlock, PreNormReproducesTheSourceTextsTable) {
  ToyBlockResult r = run_toy_block({1, -1, 2, 0}, 0.8f, 1e-5f, "pre");
  EXPECT_NEAR(r.mean, 0.500, 5e-4);
  EXPECT_NEAR(r.variance, 1.250, 5e-4);
  const std::vector<float> norm = {0.447f, -1.342f, 1.342f, -0.447f},
                           f = {-0.107f, -0.306f, 0.468f, -0.107f},
                           out = {0.893f, -1.306f, 2.468f, -0.107f};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(r.f_input[i], norm[i], 5e-4);
    EXPECT_NEAR(r.f[i], f[i], 5e-4);
    EXPECT_NEAR(r.output[i], out[i], 5e-4);
  }
}

TEST(ToyBlock, PreNormJacobianIsIdentityPlusBranchAndPostNormNormalizesTheSum) {
  ToyBlockResult pre = run_toy_block({1, -1, 2, 0}, 0.0f, 1e-5f, "pre");  // F = 0: pure skip
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_FLOAT_EQ(pre.jacobian[i][j], i == j ? 1.0f : 0.0f);
  ToyBlockResult post = run_toy_block({1, -1, 2, 0}, 0.8f, 1e-5f, "post");
  double m = 0;
  for (float v : post.output) m += v;
  EXPECT_NEAR(m, 0.0, 1e-5);
  EXPECT_NEAR(post.mean, (1.233 - 1.0 + 2.667 + 0.233) / 4, 1e-3);
}

}  // namespace
}  // namespace sl
