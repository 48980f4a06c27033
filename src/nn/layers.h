// The small modules a block is made of: Linear, Norm (LayerNorm / RMSNorm), the causal
// multi-head self-attention, and the MLP. Shapes: B batch, T time, C channels (n_embd),
// NH heads, HS = C / NH head size.
#pragma once
#include <memory>
#include <string>

#include "nn/module.h"

namespace sl {

// torch.nn.Linear: weight (out, in), bias (out) or none.
class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, bool bias);
  Tensor forward(const Tensor& x) const;  // (..., in) -> (..., out)
  Tensor weight, bias;
};

// "layernorm" (weight, bias when `bias`) or "rmsnorm" (weight only), over the last dim.
class Norm : public Module {
 public:
  Norm(const std::string& kind, int64_t C, float eps, bool bias);
  Tensor forward(const Tensor& x) const;
  std::string kind;
  float eps;
  Tensor weight, bias;
};

class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(int64_t C, int64_t n_head, bool bias);
  Tensor forward(const Tensor& x) const;  // (B, T, C) -> (B, T, C)
  int64_t n_head;
  Linear qkv, proj;  // qkv: (3C, C), rows q | k | v; proj: (C, C)
};

class Mlp : public Module {
 public:
  Mlp(int64_t C, int64_t ratio, const std::string& activation, bool bias);
  Tensor forward(const Tensor& x) const;  // (B, T, C) -> (B, T, C)
  std::string activation;
  Linear fc, proj;  // fc: (ratio*C, C); proj: (C, ratio*C)
};

// The activation named in model.activation.
Tensor activate(const Tensor& x, const std::string& activation);

}  // namespace sl

namespace sl {

// Token or position table: weight (V, C); ids (B, T) -> (B, T, C).
class Embedding : public Module {
 public:
  Embedding(int64_t V, int64_t C);
  Tensor forward(const std::vector<int32_t>& ids, const Shape& ids_shape) const;
  Tensor weight;
};

}  // namespace sl
