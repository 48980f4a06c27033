// The registry entries of wiring.h, one block per axis. Each *_spec function is a switch with no
// default: a new enum value does not build until it has an entry here.
#include "nn/wiring.h"

#include <cmath>
#include <cstdio>

#include "core/ops.h"
#include "nn/layers.h"
#include "util/error.h"
#include "util/markdown.h"

namespace sl {

int64_t count(const std::vector<ParamDecl>& decls) {
  int64_t n = 0;
  for (const auto& d : decls) n += d.shape.numel();
  return n;
}

namespace {

ParamInfo constant(ParamRole role, double v) {
  ParamInfo i;
  i.role = role;
  i.init_value = static_cast<float>(v);
  return i;
}

// ---- norm types ------------------------------------------------------------------------------

std::vector<ParamDecl> gain_and_bias(const ModelConfig& m, int64_t C) {
  std::vector<ParamDecl> p{{"weight", Shape{C}, constant(ParamRole::NormGain, 1.0)}};
  if (m.bias) p.push_back({"bias", Shape{C}, constant(ParamRole::NormBias, 0.0)});
  return p;
}

const NormSpec kLayerNorm{
    NormKind::LayerNorm, "gamma (x - mean(x)) / sqrt(var(x) + eps) + beta (beta with model.bias)",
    gain_and_bias, [](const Tensor& x, const std::vector<Tensor>& p, float eps) {
      return layer_norm(x, p[0], p.size() > 1 ? p[1] : Tensor(), eps);
    }};

const NormSpec kRmsNorm{
    NormKind::RmsNorm, "gamma x / sqrt(mean(x^2) + eps) (no mean subtracted, no bias)",
    [](const ModelConfig&, int64_t C) {
      return std::vector<ParamDecl>{{"weight", Shape{C}, constant(ParamRole::NormGain, 1.0)}};
    },
    [](const Tensor& x, const std::vector<Tensor>& p, float eps) {
      return rms_norm(x, p[0], eps);
    }};

// Dynamic Tanh (Zhu, Chen, He, LeCun, Liu 2025): no statistics, a learnable squashing.
const NormSpec kDyT{
    NormKind::DyT, "gamma tanh(alpha x) + beta, alpha one learnable scalar (model.dyt_alpha_init)",
    [](const ModelConfig& m, int64_t C) {
      std::vector<ParamDecl> p = gain_and_bias(m, C);
      p.push_back({"alpha", Shape{1}, constant(ParamRole::NormScalar, m.dyt_alpha_init)});
      return p;
    },
    [](const Tensor& x, const std::vector<Tensor>& p, float) {
      return dyt(x, p.back(), p[0],
                 p.size() > 2 ? p[1] : Tensor());  // the fused kernel of core/ops/norm.h
    }};

const NormSpec kNoNorm{NormKind::None, "x (no norm modules are created)",
                       [](const ModelConfig&, int64_t) { return std::vector<ParamDecl>{}; },
                       [](const Tensor& x, const std::vector<Tensor>&, float) { return x; }};

// ---- placements ------------------------------------------------------------------------------

Tensor scaled_branch(const Sublayer& s, const Tensor& branch) {
  return s.gate.defined() ? mul(branch, s.gate) : branch;  // (B, T, C) * (1) or (C)
}

// The branch as it enters the sum (g f, or f without residual), handed to the trace if any.
Tensor traced(const Sublayer& s, Tensor branch) {
  if (s.trace_branch) *s.trace_branch = branch;
  return branch;
}

Tensor apply_pre(const Sublayer& s, const Tensor& x) {
  Tensor h = s.norm_in ? s.norm_in->forward(x) : x;
  Tensor branch = s.f(h);
  if (!s.residual) return traced(s, branch);           // f(norm(x))
  return add(x, traced(s, scaled_branch(s, branch)));  // x + g f(norm(x))
}

Tensor apply_post(const Sublayer& s, const Tensor& x) {
  if (!s.norm_in) return apply_pre(s, x);  // norm "none": x + g f(x) | f(x)
  Tensor branch = s.f(x);
  if (!s.residual) return s.norm_in->forward(traced(s, branch));  // norm(f(x))
  Tensor skip = s.skip != 1.0f ? scale(x, s.skip) : x;
  return s.norm_in->forward(add(skip, traced(s, scaled_branch(s, branch))));  // norm(a x + g f(x))
}

Tensor apply_sandwich(const Sublayer& s, const Tensor& x) {
  if (!s.norm_in) return apply_pre(s, x);
  Tensor branch = s.norm_out->forward(s.f(s.norm_in->forward(x)));
  if (!s.residual) return traced(s, branch);           // norm_out(f(norm(x)))
  return add(x, traced(s, scaled_branch(s, branch)));  // x + g norm_out(f(norm(x)))
}

const PlacementSpec kPre{NormPosition::Pre, "pre-norm", "x + {g}f({N}(x))", "f({N}(x))", 1, true,
                         apply_pre};
const PlacementSpec kPost{
    NormPosition::Post, "post-norm", "{N}({a}x + {g}f(x))", "{N}(f(x))", 1, false, apply_post};
const PlacementSpec kSandwich{NormPosition::Sandwich, "sandwich", "x + {g}{N}2(f({N}1(x)))",
                              "{N}2(f({N}1(x)))",     2,          true,
                              apply_sandwich};

// ---- residual scalings -----------------------------------------------------------------------

double one(const ModelConfig&) { return 1.0; }
std::string no_note(const ModelConfig&) { return ""; }
std::vector<ParamDecl> no_params(const ModelConfig&, const std::string&) { return {}; }

const ResidualScaleSpec kNoScale{ResidualScale::None, "", "x + f", no_params, one, one, no_note};

// ReZero (Bachlechner et al. 2020): one scalar per sub-layer, starting at 0.
const ResidualScaleSpec kReZero{
    ResidualScale::ReZero,
    "a*",
    "x + a f, a one learnable scalar per sub-layer starting at 0",
    [](const ModelConfig&, const std::string& sub) {
      return std::vector<ParamDecl>{{sub + "_gate", Shape{1}, constant(ParamRole::Gate, 0.0)}};
    },
    one,
    one,
    [](const ModelConfig&) { return std::string(", a=0 at init"); }};

// DeepNorm (Wang et al. 2022, post-norm only): up-weights x, down-scales the branch init.
const ResidualScaleSpec kDeepNorm{
    ResidualScale::DeepNorm,
    "",
    "norm(alpha x + f), alpha = (2N)^(1/4), branch init scaled by (8N)^(-1/4)",
    no_params,
    [](const ModelConfig& m) { return std::pow(2.0 * m.n_layer, 0.25); },
    [](const ModelConfig& m) { return std::pow(8.0 * m.n_layer, -0.25); },
    [](const ModelConfig& m) {
      char buf[64];
      std::snprintf(buf, sizeof buf, ", alpha=(2N)^(1/4)=%.3f for N=%d",
                    std::pow(2.0 * m.n_layer, 0.25), m.n_layer);
      return std::string(buf);
    }};

// LayerScale (Touvron et al. 2021, CaiT): a per-channel scale of the branch.
const ResidualScaleSpec kLayerScale{
    ResidualScale::LayerScale,
    "diag(lambda)*",
    "x + diag(lambda) f, lambda per channel starting at model.layerscale_init",
    [](const ModelConfig& m, const std::string& sub) {
      return std::vector<ParamDecl>{
          {sub + "_scale", Shape{m.n_embd}, constant(ParamRole::Gate, m.layerscale_init)}};
    },
    one,
    one,
    [](const ModelConfig& m) {
      char buf[64];
      std::snprintf(buf, sizeof buf, ", lambda=%g at init", m.layerscale_init);
      return std::string(buf);
    }};

// ---- norm scalings ---------------------------------------------------------------------------

const NormScalingSpec kNoNormScaling{NormScaling::None, "norm(x)", [](int) { return 1.0; }};
// LayerNorm Scaling (Sun et al. 2025, "The Curse of Depth"): l = block + 1, 1-based.
const NormScalingSpec kDepthScaling{
    NormScaling::Depth, "norm(x) / sqrt(l), l the 1-based block index",
    [](int block) { return 1.0 / std::sqrt(static_cast<double>(block + 1)); }};

// ---- activations -----------------------------------------------------------------------------

const ActivationSpec kGelu{
    Activation::Gelu, "x Phi(x) (exact, erf)", [](const Tensor& x) { return gelu(x, false); },
    [](const Tensor& x, const Tensor& w, const Tensor& b) { return linear_gelu(x, w, b, false); }};
const ActivationSpec kGeluTanh{
    Activation::GeluTanh, "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))",
    [](const Tensor& x) { return gelu(x, true); },
    [](const Tensor& x, const Tensor& w, const Tensor& b) { return linear_gelu(x, w, b, true); }};
const ActivationSpec kRelu{Activation::Relu, "max(x, 0)", [](const Tensor& x) { return relu(x); },
                           nullptr};
const ActivationSpec kTanh{Activation::Tanh, "tanh(x)", [](const Tensor& x) { return tanh(x); },
                           nullptr};

// ---- position embeddings ---------------------------------------------------------------------

const PosEmbSpec kLearned{PosEmb::Learned, "x_t = tok_emb[id_t] + pos_emb[t] (learned table)", true,
                          false};
const PosEmbSpec kSinusoidal{
    PosEmb::Sinusoidal,
    "x_t = tok_emb[id_t] + PE[t], PE[t,2i] = sin(t/10000^(2i/C)), PE[t,2i+1] = cos(...)", false,
    true};
const PosEmbSpec kNoPos{PosEmb::None,
                        "x_t = tok_emb[id_t] (no position information but the causal mask)", false,
                        false};

// ---- embedding scales ------------------------------------------------------------------------

const EmbScaleSpec kInitStdEmb{
    EmbScale::InitStd,
    "tok_emb, pos_emb ~ N(0, model.init_std); x_t = tok_emb[id_t] + pos_emb[t] (or + PE[t])",
    [](const ModelConfig& m) { return m.init_std; }, [](const ModelConfig&) { return 1.0; }};
// fairseq's transformer (Vaswani et al. 2017, 3.4): the table N(0, C^-1/2), the lookup times
// sqrt(C) (embed_scale), so every entry of x starts near unit size. A learned position table is
// drawn and scaled as the token table (fairseq adds its own unscaled; here tokens and positions
// keep the equal footing they have under init_std); the sinusoid is added after the factor.
const EmbScaleSpec kUnitEmb{
    EmbScale::Unit,
    "tok_emb, pos_emb ~ N(0, C^-1/2); x_t = sqrt(C) (tok_emb[id_t] + pos_emb[t]), or sqrt(C) "
    "tok_emb[id_t] + PE[t]: unit-scale entries (fairseq); a tied head reads tok_emb as drawn",
    [](const ModelConfig& m) { return 1.0 / std::sqrt(static_cast<double>(m.n_embd)); },
    [](const ModelConfig& m) { return std::sqrt(static_cast<double>(m.n_embd)); }};

// ---- attention kinds -------------------------------------------------------------------------

// s (NH) -> (C): each head's scalar over its HS channels (s as a column times a row of ones), so
// that mul() scales a heads-merged (B, T, C) tensor head by head.
Tensor per_head(const Tensor& s, int64_t HS) {
  const int64_t NH = s.numel();
  const Tensor ones = Tensor::from(Shape{1, HS}, std::vector<float>(static_cast<size_t>(HS), 1.0f));
  return reshape(matmul(reshape(s, Shape{NH, 1}), ones), Shape{NH * HS});  // (NH, HS) -> (C)
}

std::vector<ParamDecl> per_head_scalars(const ModelConfig& m, std::vector<std::string> names) {
  std::vector<ParamDecl> p;
  for (auto& n : names)
    p.push_back({std::move(n), Shape{m.n_head}, constant(ParamRole::AttnScalar, 1.0)});
  return p;
}

const AttentionKindSpec kSoftmaxAttention{
    AttentionKind::Softmax,
    "A = softmax(q k^T / sqrt(HS) + causal mask)",
    false,
    0,
    [](const ModelConfig&) { return std::vector<ParamDecl>{}; },
    [](const Tensor& qkv, int64_t n_head, const Tensor& drop, const std::vector<Tensor>&) {
      return causal_attention(qkv, n_head, drop);
    }};

// Shaped attention (Noci et al. 2023), as He & Hofmann 2024 ("Simplifying Transformer Blocks",
// eq. 5) use it to drop the attention skip: alpha, beta, gamma one learnable scalar each per head
// (the authors' code: attn_mat_skip_gain, attn_mat_resid_gain, centre_attn_gain, shape (1, NH, 1,
// 1)), all 1 at init, with the query weights 0 (query_init_std 0) so the softmax starts uniform,
// = C, and A = I. Composed as alpha v + beta softmax(...) v - gamma (C v), C v the running mean.
const AttentionKindSpec kShapedAttention{
    AttentionKind::Shaped,
    "A = alpha I + beta softmax(q k^T / sqrt(HS) + causal mask) - gamma C, C_ts = 1/(t+1) for s "
    "<= t (uniform causal); alpha, beta, gamma learnable per head, 1 at init, query weights 0 at "
    "init: A = I at init (He & Hofmann 2024)",
    true,
    6,
    [](const ModelConfig& m) {
      return per_head_scalars(m, {"alpha", "beta", "gamma"});
    },
    [](const Tensor& qkv, int64_t n_head, const Tensor& drop, const std::vector<Tensor>& p) {
      const int64_t C = qkv.size(2) / 3, HS = C / n_head;
      const Tensor v = slice_last(qkv, 2 * C, C);  // (B, T, C), the heads' values side by side
      const Tensor identity = mul(v, per_head(p[0], HS));
      const Tensor soft = mul(causal_attention(qkv, n_head, drop), per_head(p[1], HS));
      const Tensor centre = mul(causal_mean(v), per_head(p[2], HS));
      return sub(add(identity, soft), centre);  // (B, T, C)
    }};

// The control of shaped: its zero-query init and learnable beta without alpha I - gamma C.
const AttentionKindSpec kShapedNoIdentity{
    AttentionKind::ShapedNoIdentity,
    "A = beta softmax(q k^T / sqrt(HS) + causal mask); beta learnable per head, 1 at init, query "
    "weights 0 at init: A = C at init (shaped with alpha = gamma = 0)",
    true,
    1,
    [](const ModelConfig& m) { return per_head_scalars(m, {"beta"}); },
    [](const Tensor& qkv, int64_t n_head, const Tensor& drop, const std::vector<Tensor>& p) {
      const int64_t HS = qkv.size(2) / 3 / n_head;
      return mul(causal_attention(qkv, n_head, drop), per_head(p[0], HS));  // (B, T, C)
    }};

}  // namespace

const AttentionKindSpec& attention_kind_spec(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::Softmax:
      return kSoftmaxAttention;
    case AttentionKind::Shaped:
      return kShapedAttention;
    case AttentionKind::ShapedNoIdentity:
      return kShapedNoIdentity;
  }
  SL_CHECK(false, "attention_kind_spec: an enum value outside AttentionKind");
}

const NormSpec& norm_spec(NormKind kind) {
  switch (kind) {
    case NormKind::LayerNorm:
      return kLayerNorm;
    case NormKind::RmsNorm:
      return kRmsNorm;
    case NormKind::DyT:
      return kDyT;
    case NormKind::None:
      return kNoNorm;
  }
  SL_CHECK(false, "norm_spec: an enum value outside NormKind");
}

const PlacementSpec& placement_spec(NormPosition position) {
  switch (position) {
    case NormPosition::Pre:
      return kPre;
    case NormPosition::Post:
      return kPost;
    case NormPosition::Sandwich:
      return kSandwich;
  }
  SL_CHECK(false, "placement_spec: an enum value outside NormPosition");
}

const ResidualScaleSpec& residual_scale_spec(ResidualScale kind) {
  switch (kind) {
    case ResidualScale::None:
      return kNoScale;
    case ResidualScale::ReZero:
      return kReZero;
    case ResidualScale::DeepNorm:
      return kDeepNorm;
    case ResidualScale::LayerScale:
      return kLayerScale;
  }
  SL_CHECK(false, "residual_scale_spec: an enum value outside ResidualScale");
}

const NormScalingSpec& norm_scaling_spec(NormScaling kind) {
  switch (kind) {
    case NormScaling::None:
      return kNoNormScaling;
    case NormScaling::Depth:
      return kDepthScaling;
  }
  SL_CHECK(false, "norm_scaling_spec: an enum value outside NormScaling");
}

const ActivationSpec& activation_spec(Activation kind) {
  switch (kind) {
    case Activation::Gelu:
      return kGelu;
    case Activation::GeluTanh:
      return kGeluTanh;
    case Activation::Relu:
      return kRelu;
    case Activation::Tanh:
      return kTanh;
  }
  SL_CHECK(false, "activation_spec: an enum value outside Activation");
}

const PosEmbSpec& pos_emb_spec(PosEmb kind) {
  switch (kind) {
    case PosEmb::Learned:
      return kLearned;
    case PosEmb::Sinusoidal:
      return kSinusoidal;
    case PosEmb::None:
      return kNoPos;
  }
  SL_CHECK(false, "pos_emb_spec: an enum value outside PosEmb");
}

const EmbScaleSpec& emb_scale_spec(EmbScale kind) {
  switch (kind) {
    case EmbScale::InitStd:
      return kInitStdEmb;
    case EmbScale::Unit:
      return kUnitEmb;
  }
  SL_CHECK(false, "emb_scale_spec: an enum value outside EmbScale");
}

std::vector<float> sinusoid_table(int64_t T, int64_t C) {
  std::vector<float> pe(static_cast<size_t>(T * C));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < C; ++i) {
      const double freq =
          std::pow(10000.0, -static_cast<double>(i - i % 2) / static_cast<double>(C));
      const double a = static_cast<double>(t) * freq;
      pe[static_cast<size_t>(t * C + i)] = static_cast<float>(i % 2 ? std::cos(a) : std::sin(a));
    }
  return pe;
}

// ---- counts, names and listings --------------------------------------------------------------

int64_t model_param_count(const ModelConfig& m) {
  const int64_t C = m.n_embd, V = m.vocab_size, T = m.block_size,
                R = static_cast<int64_t>(m.mlp_ratio) * C;
  const int64_t b = m.bias ? 1 : 0;
  const int64_t norm = count(norm_spec(m.norm).params(m, C));
  const int64_t norms =
      m.norm == NormKind::None ? 0 : placement_spec(m.norm_position).norms_per_sublayer * norm;
  const ResidualScaleSpec& rs = residual_scale_spec(m.residual_scale);
  int64_t block = 0;
  if (m.attention) {
    block += 3 * C * C + 3 * C * b + C * C + C * b + norms + count(rs.params(m, "attn"));
    if (m.qk_norm) block += 2 * count(norm_spec(m.norm).params(m, C / m.n_head));
    block += count(attention_kind_spec(m.attention_kind).params(m));
  }
  if (m.mlp) block += R * C + R * b + C * R + C * b + norms + count(rs.params(m, "mlp"));
  int64_t total = V * C + (pos_emb_spec(m.pos_emb).learned_table ? T * C : 0) + m.n_layer * block;
  if (m.resolved_final_norm()) total += norm;
  if (!m.tie_weights) total += V * C;
  return total;
}

namespace {

std::string replace_all(const std::string& s, const std::string& from, const std::string& to) {
  std::string out;
  size_t start = 0;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, start)) {
    out.append(s, start, at - start).append(to);
    start = at + from.size();
  }
  return out.append(s, start, std::string::npos);
}

// A placement's formula with {N} the norm, {g} the branch scale and {a} the skip factor.
std::string fill_formula(const std::string& f, const std::string& norm, const std::string& g,
                         const std::string& a) {
  return replace_all(replace_all(replace_all(f, "{N}", norm), "{g}", g), "{a}", a);
}

}  // namespace

std::string describe_wiring(const ModelConfig& m) {
  const bool none = m.norm == NormKind::None;
  const PlacementSpec& place = placement_spec(m.norm_position);
  const ResidualScaleSpec& rs = residual_scale_spec(m.residual_scale);
  std::string label = none ? "no-norm" : place.label;
  std::string f = none ? (m.residual ? "x + {g}f(x)" : "f(x)")
                       : (m.residual ? place.with_residual : place.without_residual);
  f = fill_formula(f, name_of(m.norm), rs.branch,
                   m.residual_scale == ResidualScale::DeepNorm ? "alpha*" : "");
  label += m.residual ? " residual" : ", no residual";
  if (m.residual && m.residual_scale != ResidualScale::None)
    label += " (" + name_of(m.residual_scale) + ")";
  std::string out = label + ": " + f;
  if (m.residual) out += rs.note(m);
  if (m.norm_scaling != NormScaling::None)
    out += ", norm outputs " + std::string(norm_scaling_spec(m.norm_scaling).formula);
  if (m.qk_norm) out += ", qk-norm: " + name_of(m.norm) + " on q and k per head";
  if (m.attention_kind != AttentionKind::Softmax)
    out += ", attention " + name_of(m.attention_kind) + ": " +
           attention_kind_spec(m.attention_kind).formula;
  return out;
}

std::string wiring_id(const ModelConfig& m) {
  std::string id =
      m.norm == NormKind::None ? "none" : name_of(m.norm_position) + "-" + name_of(m.norm);
  id += m.residual ? "-res" : "-nores";
  if (m.residual && m.residual_scale != ResidualScale::None)
    id.append("-").append(name_of(m.residual_scale));
  if (m.norm_scaling != NormScaling::None) id += "-lns";
  if (m.qk_norm) id += "-qknorm";
  if (m.attention_kind != AttentionKind::Softmax) id += "-" + name_of(m.attention_kind);
  return id;
}

nlohmann::json derived_json(const Config& cfg) {
  return {{"final_norm", cfg.model.resolved_final_norm()},
          {"wiring", wiring_id(cfg.model)},
          {"formula", describe_wiring(cfg.model)},
          {"lr_decay_iters", resolved_lr_decay_iters(cfg)}};
}

namespace {

nlohmann::json decls_json(const std::vector<ParamDecl>& decls) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& d : decls) a.push_back({{"name", d.name}, {"shape", d.shape.to_vector()}});
  return a;
}

template <class E, class Fn>
nlohmann::json listing(Fn entry) {
  nlohmann::json a = nlohmann::json::array();
  for (E v : all_choices<E>()) {
    nlohmann::json e = entry(v);
    e["name"] = name_of(v);
    a.push_back(e);
  }
  return a;
}

}  // namespace

nlohmann::json registry_json() {
  ModelConfig m;  // defaults: C = n_embd, bias on
  nlohmann::json j;
  j["norm"] = listing<NormKind>([&](NormKind k) {
    return nlohmann::json{{"formula", norm_spec(k).formula},
                          {"params", decls_json(norm_spec(k).params(m, m.n_embd))}};
  });
  j["norm_position"] = listing<NormPosition>([](NormPosition p) {
    const PlacementSpec& s = placement_spec(p);
    return nlohmann::json{{"formula", fill_formula(s.with_residual, "norm", "g*", "a*")},
                          {"formula_no_residual", fill_formula(s.without_residual, "norm", "", "")},
                          {"norms_per_sublayer", s.norms_per_sublayer},
                          {"final_norm_default", s.final_norm_default}};
  });
  j["residual_scale"] = listing<ResidualScale>([&](ResidualScale r) {
    return nlohmann::json{{"formula", residual_scale_spec(r).formula},
                          {"params", decls_json(residual_scale_spec(r).params(m, "attn"))}};
  });
  j["norm_scaling"] = listing<NormScaling>([](NormScaling n) {
    return nlohmann::json{{"formula", norm_scaling_spec(n).formula}};
  });
  j["activation"] = listing<Activation>([](Activation a) {
    return nlohmann::json{{"formula", activation_spec(a).formula}};
  });
  j["pos_emb"] = listing<PosEmb>([](PosEmb p) {
    return nlohmann::json{{"formula", pos_emb_spec(p).formula}};
  });
  j["emb_scale"] = listing<EmbScale>([](EmbScale e) {
    return nlohmann::json{{"formula", emb_scale_spec(e).formula}};
  });
  j["attention_kind"] = listing<AttentionKind>([&](AttentionKind k) {
    return nlohmann::json{{"formula", attention_kind_spec(k).formula},
                          {"params", decls_json(attention_kind_spec(k).params(m))}};
  });
  return j;
}

std::string registry_markdown() {
  std::string md =
      "| key | value | formula | parameters it adds (per norm / per sub-layer) |\n"
      "|---|---|---|---|\n";
  const nlohmann::json registry = registry_json();  // a local: items() of a temporary would dangle
  for (const auto& [axis, entries] : registry.items())
    for (const auto& e : entries) {
      std::string params;
      if (e.contains("params"))
        for (const auto& p : e["params"])
          params += (params.empty() ? "" : ", ") + p["name"].get<std::string>();
      md += "| `model." + axis + "` | `\"" + e["name"].get<std::string>() + "\"` | `" +
            markdown_cell(e["formula"].get<std::string>()) + "` | " + params + " |\n";
    }
  return md;
}

}  // namespace sl
