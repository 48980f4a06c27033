// Model construction, initialisation and forward.
//
// Init reads each parameter's declared role (nn/module.h), never its name. "model.init":
// "normal" draws every Weight from N(0, init_std); "scaled" additionally divides
// the std of the branches' output projections (attn.proj, mlp.proj) by sqrt(2 n_layer) as GPT-2
// does; "xavier" draws Weights from U(-a, a), a = sqrt(6 / (fan_in + fan_out)). Embeddings are
// drawn as "model.emb_scale" says: N(0, init_std), or N(0, C^-1/2) with the lookup times sqrt(C)
// in the forward (nn/wiring.h, emb_scale_spec). Every other role
// starts at its declared constant (biases 0, norm gains 1, ReZero gates 0, LayerScale lambda and
// DyT alpha at their config values, shaped attention's alpha, beta, gamma 1). DeepNorm multiplies
// the value rows of qkv, attn.proj, mlp.fc and mlp.proj by beta = (8N)^(-1/4) after drawing; a
// Weight's zero_first elements (shaped attention's query rows of qkv) are then set to 0, after
// the draw, so every other weight is drawn as it would be without them.
#include "nn/model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/ops.h"
#include "core/rng.h"
#include "nn/dropout.h"
#include "nn/wiring.h"

namespace sl {

Model::Model(const ModelConfig& cfg) : tok_emb(cfg.vocab_size, cfg.n_embd), cfg_(cfg) {
  add_child("tok_emb", &tok_emb);
  const PosEmbSpec& pos = pos_emb_spec(cfg.pos_emb);
  if (pos.learned_table) {
    pos_emb = std::make_unique<Embedding>(cfg.block_size, cfg.n_embd);
    add_child("pos_emb", pos_emb.get());
  }
  if (pos.fixed_table)
    sinusoid_ =
        Tensor::from(Shape{cfg.block_size, cfg.n_embd}, sinusoid_table(cfg.block_size, cfg.n_embd));
  for (int l = 0; l < cfg.n_layer; ++l) {
    blocks.push_back(std::make_unique<Block>(cfg, l));
    add_child("blocks." + std::to_string(l), blocks.back().get());
    blocks.back()->set_block(l);
  }
  if (cfg.resolved_final_norm()) {
    norm_f = std::make_unique<Norm>(cfg, cfg.n_embd);
    add_child("norm_f", norm_f.get());
  }
  if (!cfg.tie_weights) {
    head = std::make_unique<Linear>(cfg.n_embd, cfg.vocab_size, false);
    add_child("head", head.get());
  }
  name_parameters();
}

void Model::init_weights(uint64_t seed) {
  Rng rng(seed);
  const double std = cfg_.init_std;
  const double beta = residual_scale_spec(cfg_.residual_scale).init_beta(cfg_);
  const double emb_std = emb_scale_spec(cfg_.emb_scale).table_std(cfg_);
  for (auto& [name, t, info] : parameters()) {
    float* p = t.data();
    const int64_t n = t.numel();
    switch (info.role) {
      case ParamRole::Bias:
      case ParamRole::NormGain:
      case ParamRole::NormBias:
      case ParamRole::NormScalar:
      case ParamRole::Gate:
      case ParamRole::AttnScalar:
        std::fill(p, p + n, info.init_value);
        continue;
      case ParamRole::Embedding:
        for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(rng.normal() * emb_std);
        continue;
      case ParamRole::Weight:
        break;
    }
    if (cfg_.init == InitScheme::Xavier) {
      const double a = std::sqrt(6.0 / static_cast<double>(t.size(0) + t.size(1)));
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * a);
    } else {
      const bool scaled = cfg_.init == InitScheme::Scaled && info.out_proj;
      const double s = scaled ? std / std::sqrt(2.0 * cfg_.n_layer) : std;
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(rng.normal() * s);
    }
    if (beta != 1.0 && info.deepnorm_from >= 0)
      for (int64_t i = info.deepnorm_from; i < n; ++i)
        p[i] = static_cast<float>(static_cast<double>(p[i]) * beta);
    std::fill(p, p + std::min(info.zero_first, n), 0.0f);
  }
}

Tensor Model::forward(const std::vector<int32_t>& ids, int64_t B, int64_t T,
                      const ForwardMode& mode, ForwardTrace* trace) const {
  if (T > cfg_.block_size)
    throw ShapeError("[model] sequence length " + std::to_string(T) + " exceeds model.block_size " +
                     std::to_string(cfg_.block_size));
  Tensor x = tok_emb.forward(ids, Shape{B, T});  // (B, T, C)
  if (pos_emb) {
    std::vector<int32_t> pos(static_cast<size_t>(T));
    for (int32_t t = 0; t < T; ++t) pos[static_cast<size_t>(t)] = t;
    x = add(x, pos_emb->forward(pos, Shape{T}));  // + (T, C)
  }
  const double emb_factor = emb_scale_spec(cfg_.emb_scale).factor(cfg_);
  if (emb_factor != 1.0) x = scale(x, static_cast<float>(emb_factor));  // model.emb_scale "unit"
  if (sinusoid_.defined()) {  // added after the factor: its entries are unit-scale already
    Tensor table =
        Tensor::from(Shape{T, cfg_.n_embd},
                     std::vector<float>(sinusoid_.data(), sinusoid_.data() + T * cfg_.n_embd));
    x = add(x, table);
  }
  x = mode.dropout(x);  // model.dropout on the embedding sum, as nanoGPT; off in eval mode
  if (trace) {
    trace->stream = {x};
    trace->attn_qkv.clear();
    trace->blocks.clear();
  }
  for (const auto& block : blocks) {
    BlockTrace bt;
    x = block->forward(x, mode, trace ? &bt : nullptr);
    if (trace) {
      trace->stream.push_back(x);
      trace->attn_qkv.push_back(bt.attn_qkv);
      trace->blocks.push_back(std::move(bt));
    }
  }
  if (norm_f) x = norm_f->forward(x);
  return head ? head->forward(x) : linear(x, tok_emb.weight, Tensor());  // (B, T, V)
}

Tensor Model::loss(const Tensor& logits, const std::vector<int32_t>& targets) {
  return cross_entropy(logits, targets);
}

int Model::block_of(const std::string& name) const {
  for (const auto& p : parameters())
    if (p.name == name) return p.info.block;
  return -1;
}

}  // namespace sl
