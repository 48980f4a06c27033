// Linear, Norm, attention and MLP forwards, composed from core ops (autograd does backward).
// Norms and activations come from their registry entries (nn/wiring.h).
#include "nn/layers.h"

#include <cmath>

#include "core/ops.h"
#include "nn/dropout.h"
#include "nn/wiring.h"

namespace sl {

Linear::Linear(int64_t in, int64_t out, bool with_bias, ParamInfo weight_info) {
  weight_info.role = ParamRole::Weight;
  weight = add_param("weight", Shape{out, in}, weight_info);
  if (with_bias) {
    ParamInfo b;
    b.role = ParamRole::Bias;
    bias = add_param("bias", Shape{out}, b);
  }
}

Tensor Linear::forward(const Tensor& x) const { return linear(x, weight, bias); }

Norm::Norm(const ModelConfig& m, int64_t C, float out_scale_)
    : kind(m.norm), eps(static_cast<float>(m.norm_eps)), out_scale(out_scale_) {
  for (const ParamDecl& d : norm_spec(kind).params(m, C))
    params.push_back(add_param(d.name, d.shape, d.info));
}

Tensor Norm::forward(const Tensor& x) const {
  Tensor y = norm_spec(kind).forward(x, params, eps);
  return out_scale != 1.0f ? scale(y, out_scale) : y;
}

namespace {

ParamInfo out_projection(int64_t deepnorm_from) {
  ParamInfo i;
  i.out_proj = true;
  i.deepnorm_from = deepnorm_from;
  return i;
}

ParamInfo deepnorm_rows_from(int64_t from) {
  ParamInfo i;
  i.deepnorm_from = from;
  return i;
}

// qkv's weight: DeepNorm scales the value rows (from row 2C); the query rows (the first C) start
// at 0 when the attention kind says so (its bias starts at 0 as every bias does).
ParamInfo qkv_weight(const ModelConfig& m) {
  const int64_t C = m.n_embd;
  ParamInfo i = deepnorm_rows_from(2 * C * C);
  if (attention_kind_spec(m.attention_kind).zero_query) i.zero_first = C * C;
  return i;
}

}  // namespace

// DeepNorm scales the value rows of qkv (from row 2C), attn.proj, mlp.fc and mlp.proj.
CausalSelfAttention::CausalSelfAttention(const ModelConfig& m)
    : n_head(m.n_head),
      kind(m.attention_kind),
      qkv(m.n_embd, 3 * m.n_embd, m.bias, qkv_weight(m)),
      proj(m.n_embd, m.n_embd, m.bias, out_projection(0)) {
  add_child("qkv", &qkv);
  add_child("proj", &proj);
  if (m.qk_norm) {
    q_norm = std::make_unique<Norm>(m, m.n_embd / m.n_head);
    k_norm = std::make_unique<Norm>(m, m.n_embd / m.n_head);
    add_child("q_norm", q_norm.get());
    add_child("k_norm", k_norm.get());
  }
  for (const ParamDecl& d : attention_kind_spec(kind).params(m))
    kind_params.push_back(add_param(d.name, d.shape, d.info));
}

Tensor CausalSelfAttention::forward(const Tensor& x, const ForwardMode& mode,
                                    Tensor* qkv_out) const {
  // One fused op (core/ops/attention.h) in place of the composition
  //   q, k, v = split_heads(slice_last(qkv(x), 0 | C | 2C, C))      (B, NH, T, HS) each
  //   y = merge_heads(softmax(q k^T / sqrt(HS), causal) v)           (B, T, C)
  // which tests/core/attention_test.cpp keeps as the reference it is checked against; the
  // attention kind's entry (nn/wiring.h) builds A v around it (softmax: the op alone).
  Tensor a = qkv.forward(x);  // (B, T, 3C)
  if (q_norm) {
    // QK-norm: the norm over each head's HS entries of q and of k, before their dot product.
    const int64_t B = a.size(0), T = a.size(1), C = a.size(2) / 3, HS = C / n_head;
    auto per_head = [&](const Norm& n, int64_t start) {
      Tensor h = reshape(slice_last(a, start, C), Shape{B, T, n_head, HS});  // (B, T, NH, HS)
      return reshape(n.forward(h), Shape{B, T, C});
    };
    a = concat_last({per_head(*q_norm, 0), per_head(*k_norm, C), slice_last(a, 2 * C, C)});
  }
  if (qkv_out) *qkv_out = a;
  // model.dropout (nn/dropout.h): on the softmax's probabilities inside the op, and on the output.
  const Tensor drop =
      mode.dropout_mask(Shape{x.size(0), n_head, x.size(1), x.size(1)});  // (B, NH, T, T) or none
  const Tensor y = attention_kind_spec(kind).forward(a, n_head, drop, kind_params);  // (B, T, C)
  return mode.dropout(proj.forward(y));                                              // (B, T, C)
}

Mlp::Mlp(const ModelConfig& m)
    : activation(m.activation),
      fc(m.n_embd, int64_t{m.mlp_ratio} * m.n_embd, m.bias, deepnorm_rows_from(0)),
      proj(int64_t{m.mlp_ratio} * m.n_embd, m.n_embd, m.bias, out_projection(0)) {
  add_child("fc", &fc);
  add_child("proj", &proj);
}

Tensor Mlp::forward(const Tensor& x, const ForwardMode& mode) const {
  const ActivationSpec& act = activation_spec(activation);
  const Tensor h = act.linear_forward ? act.linear_forward(x, fc.weight, fc.bias)
                                      : act.forward(fc.forward(x));  // (B, T, C) -> (B, T, 4C)
  return mode.dropout(proj.forward(h));                              // (B, T, 4C) -> (B, T, C)
}

}  // namespace sl

namespace sl {

Embedding::Embedding(int64_t V, int64_t C) {
  ParamInfo i;
  i.role = ParamRole::Embedding;
  weight = add_param("weight", Shape{V, C}, i);
}

Tensor Embedding::forward(const std::vector<int32_t>& ids, const Shape& ids_shape) const {
  return embedding(weight, ids, ids_shape);
}

}  // namespace sl
