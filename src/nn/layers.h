// The small modules a block is made of: Linear, Norm (LayerNorm / RMSNorm), the causal
// multi-head self-attention, and the MLP. Shapes: B batch, T time, C channels (n_embd),
// NH heads, HS = C / NH head size.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "nn/dropout.h"
#include "nn/module.h"

namespace sl {

// torch.nn.Linear: weight (out, in), bias (out) or none.
class Linear : public Module {
 public:
  // weight_info: the weight's role flags (out_proj, deepnorm_from); its role is Weight.
  Linear(int64_t in, int64_t out, bool bias, ParamInfo weight_info = {});
  Tensor forward(const Tensor& x) const;  // (..., in) -> (..., out)
  Tensor weight, bias;
};

// model.norm over the last dim of width C: the parameters and forward of its registry entry
// (nn/wiring.h), times out_scale (model.norm_scaling; 1 otherwise).
class Norm : public Module {
 public:
  Norm(const ModelConfig& m, int64_t C, float out_scale = 1.0f);
  Tensor forward(const Tensor& x) const;  // (..., C) -> (..., C)
  NormKind kind;
  float eps, out_scale;
  std::vector<Tensor> params;  // in the registry entry's params() order
};

class CausalSelfAttention : public Module {
 public:
  explicit CausalSelfAttention(const ModelConfig& m);
  // (B, T, C) -> (B, T, C); qkv_out, when given, receives the (B, T, 3C) tensor fed to the
  // attention op (after QK-norm when on).
  Tensor forward(const Tensor& x, const ForwardMode& mode, Tensor* qkv_out = nullptr) const;
  int64_t n_head;
  AttentionKind kind;                    // model.attention_kind: the attention matrix A
  Linear qkv, proj;                      // qkv: (3C, C), rows q | k | v; proj: (C, C)
  std::unique_ptr<Norm> q_norm, k_norm;  // model.qk_norm: over the head size HS, shared by heads
  std::vector<Tensor> kind_params;       // the attention kind's (alpha, beta, gamma: (NH) each)
};

class Mlp : public Module {
 public:
  explicit Mlp(const ModelConfig& m);
  Tensor forward(const Tensor& x, const ForwardMode& mode) const;  // (B, T, C) -> (B, T, C)
  Activation activation;
  Linear fc, proj;  // fc: (ratio*C, C); proj: (C, ratio*C)
};

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
