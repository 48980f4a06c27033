// Block: one transformer layer whose wiring comes from the config. For each sub-layer f
// (attention, then MLP; either can be switched off), with g the ReZero gate (1 otherwise) and
// a = (2N)^(1/4) for DeepNorm (1 otherwise):
//
//   norm_position  residual: true                    residual: false
//   pre            x + g * f(norm(x))                 f(norm(x))
//   post           norm(a * x + g * f(x))             norm(f(x))
//   sandwich       x + g * norm_out(f(norm(x)))       norm_out(f(norm(x)))
//   norm "none"    x + g * f(x)                       f(x)
//
// A pre-norm GPT block is x = x + attn(ln1(x)); x = x + mlp(ln2(x)); the original Transformer
// was post-norm. Norm parameters are norm1/norm2 (and norm1_out/norm2_out for sandwich).
#pragma once
#include <functional>
#include <memory>

#include "config/config.h"
#include "nn/layers.h"

namespace sl {

class Block : public Module {
 public:
  explicit Block(const ModelConfig& cfg);
  Tensor forward(const Tensor& x) const;  // (B, T, C) -> (B, T, C)

  std::unique_ptr<CausalSelfAttention> attn;
  std::unique_ptr<Mlp> mlp;
  std::unique_ptr<Norm> norm1, norm2, norm1_out, norm2_out;
  Tensor attn_gate, mlp_gate;  // ReZero scalars (1,), initialised to 0

 private:
  Tensor sublayer(const Tensor& x, const std::function<Tensor(const Tensor&)>& f, const Norm* norm_in,
                  const Norm* norm_out, const Tensor& gate) const;
  bool residual_;
  std::string position_;
  float alpha_;
};

}  // namespace sl
