// Block: one transformer layer whose wiring comes from the config. For each sub-layer f
// (attention, then MLP; either can be switched off), with g the residual scaling of the branch
// (ReZero's scalar a, LayerScale's diag(lambda), 1 otherwise) and a = (2N)^(1/4) for DeepNorm
// (1 otherwise):
//
//   norm_position  residual: true                    residual: false
//   pre            x + g * f(norm(x))                 f(norm(x))
//   post           norm(a * x + g * f(x))             norm(f(x))
//   sandwich       x + g * norm_out(f(norm(x)))       norm_out(f(norm(x)))
//   norm "none"    x + g * f(x)                       f(x)
//
// The placements, norms and scalings are registry entries (nn/wiring.h); this class only
// creates the modules they declare and hands each sub-layer to its placement. A pre-norm GPT
// block is x = x + attn(ln1(x)); x = x + mlp(ln2(x)); the original Transformer was post-norm.
// Norm parameters are norm1/norm2 (and norm1_out/norm2_out for sandwich).
#pragma once
#include <memory>

#include "config/config.h"
#include "nn/layers.h"

namespace sl {

// What a traced forward pass records of one block (train/layer_stats reads it).
struct BlockTrace {
  Tensor attn_qkv;      // (B, T, 3C): attention's input after QK-norm; undefined without attention
  Tensor branch[2];     // (B, T, C) per sub-layer (attention, MLP): the branch as it enters the sum
  Tensor sub_input[2];  // (B, T, C) per sub-layer: the stream that sub-layer reads (its x)
};

class Block : public Module {
 public:
  // index: 0-based position in the stack (model.norm_scaling reads it).
  explicit Block(const ModelConfig& cfg, int index = 0);
  // (B, T, C) -> (B, T, C); `trace`, when given, receives what BlockTrace lists (sub-layers
  // that are switched off leave their slots undefined).
  Tensor forward(const Tensor& x, const ForwardMode& mode, BlockTrace* trace = nullptr) const;

  std::unique_ptr<CausalSelfAttention> attn;
  std::unique_ptr<Mlp> mlp;
  std::unique_ptr<Norm> norm1, norm2, norm1_out, norm2_out;
  Tensor attn_gate, mlp_gate;  // the residual scaling's parameter per sub-layer, if it has one

 private:
  // The residual scaling's parameter for sub-layer `sub` ("attn" or "mlp"), or undefined.
  Tensor make_gate(const ModelConfig& cfg, const std::string& sub);
  bool residual_;
  NormPosition position_;
  float skip_;
};

}  // namespace sl
