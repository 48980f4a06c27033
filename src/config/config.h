// Config: the typed run configuration (model, data, optim, train, log) with its defaults and
// strict conversion from and to JSON. Enumerated fields are enums whose JSON spellings are listed
// once, in config/choices.h. Not here: ranges and cross-field rules (validate.h), the "did you
// mean" of an unknown key (suggest.h), reading files, `extends` and `--key=value` overrides
// (loader.h), what a wiring choice does and its formula text (the registries of nn/wiring.h).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config/choices.h"
#include "util/error.h"

namespace sl {

// A bad config value; the message starts with the origin (a file path) and names the JSON path.
struct ConfigError : Error {
  using Error::Error;
};

// The enum fields' JSON spellings: config/choices.h; what each choice does: nn/wiring.h.
struct ModelConfig {
  int n_layer = 4;
  int n_head = 4;
  int n_embd = 64;
  int block_size = 64;
  int vocab_size = 32;  // text data: the trainer overwrites it with the corpus's
  bool bias = true;
  bool residual = true;
  NormKind norm = NormKind::LayerNorm;
  double norm_eps = 1e-5;
  NormPosition norm_position = NormPosition::Pre;
  ResidualScale residual_scale = ResidualScale::None;
  std::optional<bool> final_norm;  // unset = auto, see resolved_final_norm()
  bool attention = true;
  AttentionKind attention_kind = AttentionKind::Softmax;  // the attention matrix (nn/wiring.h)
  bool mlp = true;
  int mlp_ratio = 4;
  Activation activation = Activation::Gelu;
  InitScheme init = InitScheme::Normal;
  double init_std = 0.02;
  PosEmb pos_emb = PosEmb::Learned;
  EmbScale emb_scale = EmbScale::InitStd;
  bool tie_weights = false;
  double dyt_alpha_init = 0.5;  // dyt: the learnable alpha of tanh(alpha x) starts here
  NormScaling norm_scaling = NormScaling::None;
  double layerscale_init = 0.1;  // layerscale: the per-channel lambda starts here
  bool qk_norm = false;          // model.norm applied per head to queries and keys
  double dropout = 0.0;          // training only: attention probs, sub-layer outputs, embeddings

  // final_norm if set; otherwise true for pre and sandwich, false for post; always false for
  // norm "none" (there is no norm to apply).
  bool resolved_final_norm() const;
  bool operator==(const ModelConfig&) const = default;
};

struct DataConfig {
  SourceKind source = SourceKind::Markov;
  int order = 2;              // markov: context length, 1..3
  double alpha = 0.5;         // markov: Dirichlet concentration of the transitions
  std::uint64_t seed = 1234;  // the data source's own seed
  std::string path;           // text: the corpus; the loader makes it absolute
  double val_fraction = 0.1;
  bool operator==(const DataConfig&) const = default;
};

struct OptimConfig {
  OptimizerKind name = OptimizerKind::AdamW;
  double learning_rate = 1e-3;
  double weight_decay = 0.0;
  bool decay_exempt = true;       // no decay on biases, norm gains and embeddings
  bool decay_embeddings = false;  // with decay_exempt: embeddings decay too (nanoGPT: dim >= 2)
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double momentum = 0.9;   // sgd
  bool nesterov = false;   // sgd
  double grad_clip = 0.0;  // global grad-norm clip; 0 = off
  ScheduleKind schedule = ScheduleKind::Constant;
  int warmup_iters = 0;
  int lr_decay_iters = 0;  // 0 = train.max_iters
  double min_lr = 0.0;
  bool operator==(const OptimConfig&) const = default;
};

struct TrainConfig {
  std::string name;  // run name; the loader fills in the config file's stem
  std::string out_dir = "runs";
  int batch_size = 8;
  int max_iters = 300;
  int eval_interval = 100;
  int eval_iters = 10;
  std::uint64_t seed = 1337;
  int ckpt_interval = 100;       // 0 = only at the end
  bool save_best = true;         // write checkpoints/best.safetensors at each new best val loss
  int threads = 0;               // 0 = all cores
  int grad_accum_steps = 1;      // micro-batches of batch_size summed into one update
  bool flush_subnormals = true;  // FTZ + DAZ on every compute thread (core/fpmode.h)
  // > 0: end the run after the first eval whose val loss is at least this many nats below the
  // unigram loss on the val batches (train/escape_stop.h); 0 = off.
  double stop_below_unigram = 0.0;
  // The milestones every run records (train/milestones.h): m1 and m2 are `milestone_margin` nats
  // below the unigram and bigram losses on the val batches, m3 `near_optimum` nats above the
  // optimum there. stop_at ends the run at the first eval that reaches the named one ("" = off;
  // not together with stop_below_unigram, its older spelling for m1 with a margin of its own).
  StopAt stop_at = StopAt::Off;
  double milestone_margin = 0.1;
  double near_optimum = 0.15;
  // What the run keeps of its checkpoints once it has completed or diverged (train/keep.h):
  // full (weights and optimizer state: resumable, extendable), weights (what sample and load_run
  // read), none. Not part of the run's identity (provenance.h), like save_best.
  KeepKind keep_final = KeepKind::Full;
  bool operator==(const TrainConfig&) const = default;
};

struct LogConfig {
  int log_interval = 10;
  int layer_interval = 50;
  bool params = true;  // per-parameter grad norms
  bool operator==(const LogConfig&) const = default;
};

struct Config {
  ModelConfig model;
  DataConfig data;
  OptimConfig optim;
  TrainConfig train;
  LogConfig log;
  std::string description;
  std::string source_path;  // the file it was loaded from; not part of the JSON
  bool operator==(const Config&) const = default;
};

// Which origin set each leaf ("model.n_layer" -> "configs/base.json"), for error messages.
using Provenance = std::map<std::string, std::string>;

// Every key with its default: the schema that strictness and override typing are checked against.
const nlohmann::json& config_schema();

// The full config, every key present; final_norm is null when unset so the round trip is exact.
nlohmann::json to_json(const Config& cfg);
// Keys and types only, no ranges: missing keys keep their defaults. Throws ConfigError.
Config parse_config(const nlohmann::json& j, const std::string& origin);
// parse_config then validate_config (validate.h).
Config config_from_json(const nlohmann::json& j, const std::string& origin);

// train.lr_decay_iters with 0 meaning train.max_iters.
int resolved_lr_decay_iters(const Config& cfg);

}  // namespace sl
