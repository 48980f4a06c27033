// The block of block.h: creates what the wiring's registry entries declare, in a fixed
// registration order, and hands each sub-layer to its placement's apply().
#include "nn/block.h"

#include "core/ops.h"
#include "nn/wiring.h"

namespace sl {

Block::Block(const ModelConfig& cfg, int index)
    : residual_(cfg.residual),
      position_(cfg.norm_position),
      skip_(static_cast<float>(residual_scale_spec(cfg.residual_scale).skip(cfg))) {
  const bool has_norm = cfg.norm != NormKind::None;
  const bool sandwich = placement_spec(position_).norms_per_sublayer == 2;
  const auto out_scale = static_cast<float>(norm_scaling_spec(cfg.norm_scaling).factor(index));
  auto make_norm = [&](const char* name, std::unique_ptr<Norm>& slot, SubLayer sub) {
    slot = std::make_unique<Norm>(cfg, cfg.n_embd, out_scale);
    add_child(name, slot.get());
    slot->set_sublayer(sub);
  };
  // Registration order fixes the order of parameters in checkpoints and of init draws.
  if (cfg.attention) {
    if (has_norm) make_norm("norm1", norm1, SubLayer::Attn);
    attn = std::make_unique<CausalSelfAttention>(cfg);
    add_child("attn", attn.get());
    attn->set_sublayer(SubLayer::Attn);
    if (has_norm && sandwich) make_norm("norm1_out", norm1_out, SubLayer::Attn);
    attn_gate = make_gate(cfg, "attn");
  }
  if (cfg.mlp) {
    if (has_norm) make_norm("norm2", norm2, SubLayer::Mlp);
    mlp = std::make_unique<Mlp>(cfg);
    add_child("mlp", mlp.get());
    mlp->set_sublayer(SubLayer::Mlp);
    if (has_norm && sandwich) make_norm("norm2_out", norm2_out, SubLayer::Mlp);
    mlp_gate = make_gate(cfg, "mlp");
  }
}

Tensor Block::make_gate(const ModelConfig& cfg, const std::string& sub) {
  Tensor gate;
  for (ParamDecl d : residual_scale_spec(cfg.residual_scale).params(cfg, sub)) {
    d.info.sublayer = sub == "attn" ? SubLayer::Attn : SubLayer::Mlp;
    gate = add_param(d.name, d.shape, d.info);
  }
  return gate;
}

Tensor Block::forward(const Tensor& x, const ForwardMode& mode, BlockTrace* trace) const {
  const PlacementSpec& place = placement_spec(position_);
  Tensor y = x;
  if (attn) {
    Tensor* qkv = trace ? &trace->attn_qkv : nullptr;
    auto f = [this, &mode, qkv](const Tensor& h) { return attn->forward(h, mode, qkv); };
    if (trace) trace->sub_input[0] = y;
    y = place.apply({f, norm1.get(), norm1_out.get(), residual_, skip_, attn_gate,
                     trace ? &trace->branch[0] : nullptr},
                    y);
  }
  if (mlp) {
    auto f = [this, &mode](const Tensor& h) { return mlp->forward(h, mode); };
    if (trace) trace->sub_input[1] = y;
    y = place.apply({f, norm2.get(), norm2_out.get(), residual_, skip_, mlp_gate,
                     trace ? &trace->branch[1] : nullptr},
                    y);
  }
  return y;
}

}  // namespace sl
