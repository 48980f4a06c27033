// Model construction, initialisation and forward.
//
// Init ("model.init"): "normal" draws every Linear and embedding weight from N(0, init_std);
// "scaled" additionally divides the std of the output projections (attn.proj, mlp.proj) by
// sqrt(2 n_layer) as GPT-2 does; "xavier" draws Linear weights from U(-a, a),
// a = sqrt(6 / (fan_in + fan_out)). Biases start at 0, norm gains at 1, ReZero gates at 0.
// DeepNorm multiplies the value part of qkv, attn.proj, mlp.fc and mlp.proj by
// beta = (8N)^(-1/4) after drawing.
#include "nn/model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/ops.h"
#include "core/rng.h"

namespace sl {

Model::Model(const ModelConfig& cfg) : tok_emb(cfg.vocab_size, cfg.n_embd), cfg_(cfg) {
  add_child("tok_emb", &tok_emb);
  if (cfg.pos_emb == "learned") {
    pos_emb = std::make_unique<Embedding>(cfg.block_size, cfg.n_embd);
    add_child("pos_emb", pos_emb.get());
  } else if (cfg.pos_emb == "sinusoidal") {
    sinusoid_ = Tensor::empty(Shape{cfg.block_size, cfg.n_embd});
    for (int t = 0; t < cfg.block_size; ++t)
      for (int i = 0; i < cfg.n_embd; ++i) {
        const double freq = std::pow(10000.0, -static_cast<double>(i - i % 2) / cfg.n_embd);
        sinusoid_.data()[t * cfg.n_embd + i] = static_cast<float>(i % 2 ? std::cos(t * freq) : std::sin(t * freq));
      }
  }
  for (int l = 0; l < cfg.n_layer; ++l) {
    blocks.push_back(std::make_unique<Block>(cfg));
    add_child("blocks." + std::to_string(l), blocks.back().get());
  }
  if (cfg.resolved_final_norm()) {
    norm_f = std::make_unique<Norm>(cfg.norm, cfg.n_embd, static_cast<float>(cfg.norm_eps), cfg.bias);
    add_child("norm_f", norm_f.get());
  }
  if (!cfg.tie_weights) {
    head = std::make_unique<Linear>(cfg.n_embd, cfg.vocab_size, false);
    add_child("head", head.get());
  }
  name_parameters();
}

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

void Model::init_weights(uint64_t seed) {
  Rng rng(seed);
  const double std = cfg_.init_std;
  const double beta = std::pow(8.0 * cfg_.n_layer, -0.25);
  for (auto& [name, t] : parameters()) {
    float* p = t.data();
    const int64_t n = t.numel();
    const bool is_norm = name.find("norm") != std::string::npos;
    if (ends_with(name, "_gate") || ends_with(name, ".bias")) {
      std::fill(p, p + n, 0.0f);
    } else if (is_norm) {
      std::fill(p, p + n, 1.0f);
    } else if (cfg_.init == "xavier" && t.ndim() == 2 && name.find("emb") == std::string::npos) {
      const double a = std::sqrt(6.0 / static_cast<double>(t.size(0) + t.size(1)));
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * a);
    } else {
      const bool out_proj = ends_with(name, "attn.proj.weight") || ends_with(name, "mlp.proj.weight");
      const double s = cfg_.init == "scaled" && out_proj ? std / std::sqrt(2.0 * cfg_.n_layer) : std;
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(rng.normal() * s);
    }
    if (cfg_.residual_scale == "deepnorm" && t.ndim() == 2) {
      int64_t from = 0;
      if (ends_with(name, "attn.qkv.weight")) from = 2 * cfg_.n_embd * cfg_.n_embd;  // value rows only
      else if (!ends_with(name, "attn.proj.weight") && !ends_with(name, "mlp.fc.weight") &&
               !ends_with(name, "mlp.proj.weight"))
        continue;
      for (int64_t i = from; i < n; ++i) p[i] = static_cast<float>(static_cast<double>(p[i]) * beta);
    }
  }
}

Tensor Model::forward(const std::vector<int32_t>& ids, int64_t B, int64_t T, ForwardTrace* trace) const {
  if (T > cfg_.block_size)
    throw ShapeError("[model] sequence length " + std::to_string(T) + " exceeds model.block_size " +
                     std::to_string(cfg_.block_size));
  Tensor x = tok_emb.forward(ids, Shape{B, T});  // (B, T, C)
  if (pos_emb) {
    std::vector<int32_t> pos(static_cast<size_t>(T));
    for (int32_t t = 0; t < T; ++t) pos[static_cast<size_t>(t)] = t;
    x = add(x, pos_emb->forward(pos, Shape{T}));  // + (T, C)
  } else if (sinusoid_.defined()) {
    Tensor table = Tensor::from(Shape{T, cfg_.n_embd},
                                std::vector<float>(sinusoid_.data(), sinusoid_.data() + T * cfg_.n_embd));
    x = add(x, table);
  }
  if (trace) trace->stream = {x};
  for (const auto& block : blocks) {
    x = block->forward(x);
    if (trace) trace->stream.push_back(x);
  }
  if (norm_f) x = norm_f->forward(x);
  return head ? head->forward(x) : linear(x, tok_emb.weight, Tensor());  // (B, T, V)
}

Tensor Model::loss(const Tensor& logits, const std::vector<int32_t>& targets) { return cross_entropy(logits, targets); }

int Model::block_of(const std::string& name) {
  if (name.rfind("blocks.", 0) != 0) return -1;
  return std::stoi(name.substr(7, name.find('.', 7) - 7));
}

}  // namespace sl
