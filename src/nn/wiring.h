// The wiring registries: one per axis of a block's wiring (norm types, norm placements,
// residual scalings, norm scalings, activations, position embeddings, embedding scales, attention
// kinds). An entry
// is the one definition of its choice: its formula text (the printed wiring, `stacklab registry`,
// the README tables), the parameters it adds with their roles and init, and its forward. Parameter
// counts (memory estimate) come from the same declarations; the PyTorch mirror of each entry is
// in scripts/stacklab/runs/torch_model.py under the same name, and tests/parity/torch_parity.py
// builds its variants from `stacklab registry --json`, failing on an entry without a mirror. Adding
// a choice: its enum value and spelling in config/choices.h, its entry here (the switch in the
// *_spec function has no default, so the build fails until it exists), its mirror.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "core/tensor.h"
#include "nn/module.h"

namespace sl {

// A parameter an entry declares: its name under the module that owns it, shape and role.
struct ParamDecl {
  std::string name;
  Shape shape;
  ParamInfo info;
};
int64_t count(const std::vector<ParamDecl>& decls);

// ---- norm types ------------------------------------------------------------------------------

struct NormSpec {
  NormKind kind;
  const char* formula;  // y in terms of x, per position over the last dimension
  // The parameters of one norm over C channels (C = n_embd, or the head size for QK-norm).
  std::vector<ParamDecl> (*params)(const ModelConfig& m, int64_t C);
  // x (..., C) -> (..., C); p in params() order.
  Tensor (*forward)(const Tensor& x, const std::vector<Tensor>& p, float eps);
};
const NormSpec& norm_spec(NormKind kind);

// ---- norm placements -------------------------------------------------------------------------

// One sub-layer of a block as its placement combines it: y = wiring of x, f and the norms.
class Norm;
struct Sublayer {
  std::function<Tensor(const Tensor&)> f;  // the branch (attention or MLP)
  const Norm* norm_in = nullptr;           // null for norm "none"
  const Norm* norm_out = nullptr;          // sandwich only
  bool residual = true;
  float skip = 1.0f;  // DeepNorm's alpha on x (post only)
  Tensor gate;        // the residual scaling's parameter, undefined for none
  // When given, receives the branch as it enters the sum (g f(...), or with residual off the
  // sub-layer's output before a post-norm); a measurement reads it (train/layer_stats).
  Tensor* trace_branch = nullptr;  // (B, T, C)
};

struct PlacementSpec {
  NormPosition position;
  const char* label;  // "pre-norm"
  const char*
      with_residual;  // formula: {N} the norm, {g} the branch scale, {a} DeepNorm's factor on x
  const char* without_residual;
  int norms_per_sublayer;                               // norm modules per sub-layer
  bool final_norm_default;                              // model.final_norm when unset
  Tensor (*apply)(const Sublayer& s, const Tensor& x);  // (B, T, C) -> (B, T, C)
};
const PlacementSpec& placement_spec(NormPosition position);

// ---- residual scalings -----------------------------------------------------------------------

struct ResidualScaleSpec {
  ResidualScale kind;
  const char* branch;   // how the branch f enters the sum: "f", "a*f", "diag(lambda)*f"
  const char* formula;  // one line for docs
  // The parameter one sub-layer gets ("attn" or "mlp" prefix); empty for none and deepnorm.
  std::vector<ParamDecl> (*params)(const ModelConfig& m, const std::string& sub);
  double (*skip)(const ModelConfig& m);       // the factor on x in post-norm (DeepNorm's alpha)
  double (*init_beta)(const ModelConfig& m);  // the factor on out-projection init (DeepNorm's beta)
  std::string (*note)(const ModelConfig& m);  // appended to the printed wiring, or ""
};
const ResidualScaleSpec& residual_scale_spec(ResidualScale kind);

// ---- norm scalings (the outputs of a block's norms) -------------------------------------------

struct NormScalingSpec {
  NormScaling kind;
  const char* formula;
  double (*factor)(int block);  // block is 0-based (0 is next to the embedding)
};
const NormScalingSpec& norm_scaling_spec(NormScaling kind);

// ---- activations -----------------------------------------------------------------------------

struct ActivationSpec {
  Activation kind;
  const char* formula;
  Tensor (*forward)(const Tensor& x);
  // forward(linear(x, w, b)) as one fused op (core/ops/matmul.h), or null: the MLP's fc then
  // runs linear and forward one after the other. Same values either way.
  Tensor (*linear_forward)(const Tensor& x, const Tensor& w, const Tensor& b) = nullptr;
};
const ActivationSpec& activation_spec(Activation kind);

// ---- position embeddings ---------------------------------------------------------------------

struct PosEmbSpec {
  PosEmb kind;
  const char* formula;
  bool learned_table;  // pos_emb.weight (block_size, C), an Embedding
  bool fixed_table;    // a sinusoid table added, no parameters
};
const PosEmbSpec& pos_emb_spec(PosEmb kind);
// PE[t, 2i] = sin(t / 10000^(2i/C)), PE[t, 2i+1] = cos(t / 10000^(2i/C)); (T, C) row-major.
std::vector<float> sinusoid_table(int64_t T, int64_t C);

// ---- embedding scales ------------------------------------------------------------------------

// How large the embedding entering block 0 starts: the std the token and position tables are
// drawn with (their role, Embedding, reads it) and the factor on tok_emb[id_t] + pos_emb[t] in
// the forward. A fixed sinusoid table is added after the factor, a tied head reads the table as
// drawn: both as fairseq does.
struct EmbScaleSpec {
  EmbScale kind;
  const char* formula;
  double (*table_std)(const ModelConfig& m);
  double (*factor)(const ModelConfig& m);  // 1 leaves the forward as it was (no op is added)
};
const EmbScaleSpec& emb_scale_spec(EmbScale kind);

// ---- attention kinds (the attention matrix of each head) ---------------------------------------

// Each head h mixes its values v_h (T, HS) by a (T, T) matrix A: y_h = A v_h, then the heads are
// merged and projected (attn.proj) as usual. The kind says what A is.
struct AttentionKindSpec {
  AttentionKind kind;
  const char* formula;  // A, and what it is at init
  bool zero_query;      // the query rows of attn.qkv.weight start at 0 (the softmax starts uniform)
  int extra_activations;  // (B, T, C) tensors its forward keeps beyond the fused op's (memory)
  // The parameters of one attention sub-layer (registered under attn.), in forward's p order.
  std::vector<ParamDecl> (*params)(const ModelConfig& m);
  // qkv (B, T, 3C) -> the heads' A v merged (B, T, C); drop as causal_attention's (on the
  // softmax's probabilities only).
  Tensor (*forward)(const Tensor& qkv, int64_t n_head, const Tensor& drop,
                    const std::vector<Tensor>& p);
};
const AttentionKindSpec& attention_kind_spec(AttentionKind kind);

// ---- what the registries give the rest of the code ---------------------------------------------

// Every value of E with its spelling, for listings that loop over a registry.
template <class E>
std::vector<E> all_choices() {
  std::vector<E> out;
  for (const auto& [v, name] : ChoiceNames<E>::table) out.push_back(v);
  return out;
}

// The number of parameters of the model the config builds, from the registries' declarations
// and the fixed Linear/Embedding shapes (what the memory estimate counts; a test checks it
// against a built Model for every registry entry).
int64_t model_param_count(const ModelConfig& m);

// The block formula in words, e.g. "pre-norm residual: x + f(layernorm(x))".
std::string describe_wiring(const ModelConfig& m);
// A short id for run names, e.g. "pre-layernorm-res", "post-rmsnorm-nores-deepnorm", "none-res".
std::string wiring_id(const ModelConfig& m);
// Values derived from the config that are not themselves keys (resolved final_norm, wiring).
nlohmann::json derived_json(const Config& cfg);
// Every registry as JSON: {"norm": [{"name", "formula", "params": [...]}, ...], ...}.
nlohmann::json registry_json();
// The same as a Markdown table: key, value, formula, the parameters it adds (one row per entry).
std::string registry_markdown();

}  // namespace sl
