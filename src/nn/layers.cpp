// Linear, Norm, attention and MLP forwards, composed from core ops (autograd does backward).
#include "nn/layers.h"

#include <cmath>

#include "core/ops.h"

namespace sl {

Linear::Linear(int64_t in, int64_t out, bool with_bias) {
  weight = add_param("weight", Shape{out, in});
  if (with_bias) bias = add_param("bias", Shape{out});
}

Tensor Linear::forward(const Tensor& x) const { return linear(x, weight, bias); }

Norm::Norm(const std::string& kind_, int64_t C, float eps_, bool with_bias) : kind(kind_), eps(eps_) {
  weight = add_param("weight", Shape{C});
  if (kind == "layernorm" && with_bias) bias = add_param("bias", Shape{C});
}

Tensor Norm::forward(const Tensor& x) const {
  if (kind == "rmsnorm") return rms_norm(x, weight, eps);
  return layer_norm(x, weight, bias, eps);
}

CausalSelfAttention::CausalSelfAttention(int64_t C, int64_t n_head_, bool bias)
    : n_head(n_head_), qkv(C, 3 * C, bias), proj(C, C, bias) {
  add_child("qkv", &qkv);
  add_child("proj", &proj);
}

Tensor CausalSelfAttention::forward(const Tensor& x) const {
  // One fused op (core/ops/attention.h) in place of the composition
  //   q, k, v = split_heads(slice_last(qkv(x), 0 | C | 2C, C))      (B, NH, T, HS) each
  //   y = merge_heads(softmax(q k^T / sqrt(HS), causal) v)           (B, T, C)
  // which tests/core/attention_test.cpp keeps as the reference it is checked against.
  return proj.forward(causal_attention(qkv.forward(x), n_head));  // (B, T, 3C) -> (B, T, C) -> (B, T, C)
}

Tensor activate(const Tensor& x, const std::string& activation) {
  if (activation == "gelu") return gelu(x, false);
  if (activation == "gelu_tanh") return gelu(x, true);
  if (activation == "relu") return relu(x);
  if (activation == "tanh") return tanh(x);
  throw Error("model.activation: unknown activation '" + activation + "'");
}

Mlp::Mlp(int64_t C, int64_t ratio, const std::string& activation_, bool bias)
    : activation(activation_), fc(C, ratio * C, bias), proj(ratio * C, C, bias) {
  add_child("fc", &fc);
  add_child("proj", &proj);
}

Tensor Mlp::forward(const Tensor& x) const { return proj.forward(activate(fc.forward(x), activation)); }

}  // namespace sl

namespace sl {

Embedding::Embedding(int64_t V, int64_t C) { weight = add_param("weight", Shape{V, C}); }

Tensor Embedding::forward(const std::vector<int32_t>& ids, const Shape& ids_shape) const {
  return embedding(weight, ids, ids_shape);
}

}  // namespace sl
