// The block wirings of block.h, one function for every sub-layer.
#include "nn/block.h"

#include <cmath>

#include "core/ops.h"

namespace sl {

Block::Block(const ModelConfig& cfg)
    : residual_(cfg.residual),
      position_(cfg.norm_position),
      alpha_(cfg.residual_scale == "deepnorm" ? static_cast<float>(std::pow(2.0 * cfg.n_layer, 0.25)) : 1.0f) {
  const bool has_norm = cfg.norm != "none";
  const auto eps = static_cast<float>(cfg.norm_eps);
  auto make_norm = [&](const char* name, std::unique_ptr<Norm>& slot) {
    slot = std::make_unique<Norm>(cfg.norm, cfg.n_embd, eps, cfg.bias);
    add_child(name, slot.get());
  };
  // Registration order fixes the order of parameters in checkpoints and of init draws.
  if (cfg.attention) {
    if (has_norm) make_norm("norm1", norm1);
    attn = std::make_unique<CausalSelfAttention>(cfg.n_embd, cfg.n_head, cfg.bias);
    add_child("attn", attn.get());
    if (has_norm && position_ == "sandwich") make_norm("norm1_out", norm1_out);
    if (cfg.residual_scale == "rezero") attn_gate = add_param("attn_gate", Shape{1});
  }
  if (cfg.mlp) {
    if (has_norm) make_norm("norm2", norm2);
    mlp = std::make_unique<Mlp>(cfg.n_embd, cfg.mlp_ratio, cfg.activation, cfg.bias);
    add_child("mlp", mlp.get());
    if (has_norm && position_ == "sandwich") make_norm("norm2_out", norm2_out);
    if (cfg.residual_scale == "rezero") mlp_gate = add_param("mlp_gate", Shape{1});
  }
}

Tensor Block::sublayer(const Tensor& x, const std::function<Tensor(const Tensor&)>& f, const Norm* norm_in,
                       const Norm* norm_out, const Tensor& gate) const {
  auto gated = [&](const Tensor& branch) { return gate.defined() ? mul(branch, gate) : branch; };
  if (norm_in && position_ == "post") {
    Tensor branch = gated(f(x));
    Tensor skip = alpha_ != 1.0f ? scale(x, alpha_) : x;
    return norm_in->forward(residual_ ? add(skip, branch) : branch);  // norm(a x + g f(x)) | norm(f(x))
  }
  Tensor h = norm_in ? norm_in->forward(x) : x;  // pre and sandwich; identity for norm "none"
  Tensor branch = f(h);
  if (norm_out) branch = norm_out->forward(branch);
  branch = gated(branch);
  return residual_ ? add(x, branch) : branch;  // x + g f(norm(x)) | f(norm(x))
}

Tensor Block::forward(const Tensor& x) const {
  Tensor y = x;
  if (attn)
    y = sublayer(y, [this](const Tensor& h) { return attn->forward(h); }, norm1.get(), norm1_out.get(), attn_gate);
  if (mlp)
    y = sublayer(y, [this](const Tensor& h) { return mlp->forward(h); }, norm2.get(), norm2_out.get(), mlp_gate);
  return y;
}

}  // namespace sl
