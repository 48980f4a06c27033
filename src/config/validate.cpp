// Validation of a parsed Config. One validate_* function per section (plus the rules that span
// two), each check a line; a Validator reports the path with the origin that set it.
#include "config/validate.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace sl {
namespace {

using json = nlohmann::json;

// Reports a path with the origin that set it (from `where`) or the config's own origin.
struct Validator {
  const std::string& origin;
  const Provenance* where;

  [[noreturn]] void fail(const std::string& path, const std::string& msg) const {
    const std::string* from = &origin;
    if (where) {
      auto it = where->find(path);
      if (it != where->end()) from = &it->second;
    }
    throw ConfigError(*from + ": " + path + ": " + msg);
  }
  void at_least(const std::string& path, long long v, long long lo) const {
    if (v < lo) fail(path, "must be >= " + std::to_string(lo) + ", got " + std::to_string(v));
  }
  void at_most(const std::string& path, long long v, long long hi, const char* why) const {
    if (v > hi)
      fail(path,
           "must be <= " + std::to_string(hi) + ", got " + std::to_string(v) + " (" + why + ")");
  }
  void positive(const std::string& path, double v) const {
    if (!(v > 0)) fail(path, "must be > 0, got " + json(v).dump());
  }
  // A rate the optimizer applies in float32: one that rounds to 0 (or to a subnormal, which the
  // flushed kernels treat as 0) or to infinity there would train nothing, or NaN, while the log
  // shows the value as written.
  void float32_rate(const std::string& path, double v, bool zero_ok) const {
    if (zero_ok && v == 0) return;
    if (!(v > 0)) fail(path, "must be > 0, got " + json(v).dump());
    if (v < static_cast<double>(std::numeric_limits<float>::min()))
      fail(path, json(v).dump() + " is below float32's normal range (smallest " +
                     json(static_cast<double>(std::numeric_limits<float>::min())).dump() +
                     "): the optimizer, which computes in float32, would apply 0");
    if (v > static_cast<double>(std::numeric_limits<float>::max()))
      fail(path, json(v).dump() + " is infinite in float32, in which the optimizer computes");
  }
  void non_negative(const std::string& path, double v) const {
    if (!(v >= 0)) fail(path, "must be >= 0, got " + json(v).dump());
  }
  void unit(const std::string& path, double v) const {  // [0, 1)
    if (!(v >= 0 && v < 1)) fail(path, "must be in [0, 1), got " + json(v).dump());
  }
};

void validate_model(const ModelConfig& m, const Validator& v) {
  v.at_least("model.n_layer", m.n_layer, 1);
  v.at_least("model.n_head", m.n_head, 1);
  v.at_least("model.n_embd", m.n_embd, 1);
  v.at_least("model.block_size", m.block_size, 1);
  v.at_least("model.vocab_size", m.vocab_size, 1);
  v.at_least("model.mlp_ratio", m.mlp_ratio, 1);
  // Sanity limits: far above any toy run, low enough that sizes multiply without overflow.
  v.at_most("model.n_layer", m.n_layer, 4096, "a sanity limit; a typo?");
  v.at_most("model.n_embd", m.n_embd, 65536, "a sanity limit; a typo?");
  v.at_most("model.block_size", m.block_size, 65536, "a sanity limit; a typo?");
  v.at_most("model.vocab_size", m.vocab_size, 1 << 24, "a sanity limit; a typo?");
  v.at_most("model.mlp_ratio", m.mlp_ratio, 64, "a sanity limit; a typo?");
  v.positive("model.norm_eps", m.norm_eps);
  v.positive("model.init_std", m.init_std);
  if (m.n_embd % m.n_head != 0)
    v.fail("model.n_embd", "n_embd " + std::to_string(m.n_embd) + " is not divisible by n_head " +
                               std::to_string(m.n_head) + " (each head gets n_embd / n_head dims)");
  if (!m.attention && !m.mlp)
    v.fail("model.attention", "model.attention and model.mlp are both false; a block needs one");
  if (m.residual_scale != ResidualScale::None && !m.residual)
    v.fail("model.residual_scale", "\"" + name_of(m.residual_scale) +
                                       "\" scales the residual stream but model.residual is false");
  if (m.residual_scale == ResidualScale::DeepNorm && m.norm_position != NormPosition::Post)
    v.fail("model.residual_scale", "\"deepnorm\" needs model.norm_position \"post\", got \"" +
                                       name_of(m.norm_position) + "\"");
  if (m.residual_scale == ResidualScale::DeepNorm && m.norm == NormKind::None)
    v.fail("model.residual_scale", "\"deepnorm\" needs a model.norm other than \"none\"");
  if (!(m.dropout >= 0 && m.dropout < 1))
    v.fail("model.dropout", "must be in [0, 1), got " + json(m.dropout).dump());
  if (m.final_norm.value_or(false) && m.norm == NormKind::None)
    v.fail("model.final_norm", "true needs a model.norm other than \"none\"");
  if (m.norm_scaling != NormScaling::None && m.norm == NormKind::None)
    v.fail("model.norm_scaling",
           "\"" + name_of(m.norm_scaling) + "\" scales norm outputs but model.norm is \"none\"");
  if (m.qk_norm && m.norm == NormKind::None)
    v.fail("model.qk_norm",
           "true applies model.norm to queries and keys, but model.norm is \"none\"");
  if (m.qk_norm && !m.attention) v.fail("model.qk_norm", "true needs model.attention true");
  if (m.attention_kind != AttentionKind::Softmax && !m.attention)
    v.fail("model.attention_kind",
           "\"" + name_of(m.attention_kind) +
               "\" shapes the attention matrix but model.attention is false");
  // Zero queries make the softmax uniform at init; QK-norm would rescale the first nonzero
  // queries to unit size (its gradient at q = 0 is 1/sqrt(eps) times the input's), undoing that.
  if (m.attention_kind != AttentionKind::Softmax && m.qk_norm)
    v.fail("model.attention_kind",
           "\"" + name_of(m.attention_kind) +
               "\" starts the queries at 0 so the softmax is uniform at init; model.qk_norm would "
               "scale the first nonzero queries up to unit size and undo that: set "
               "model.qk_norm false");
  v.positive("model.dyt_alpha_init", m.dyt_alpha_init);
  v.non_negative("model.layerscale_init", m.layerscale_init);
}

void validate_data(const DataConfig& d, const Validator& v) {
  if (d.order < 1 || d.order > 3)
    v.fail("data.order", "must be in 1..3, got " + std::to_string(d.order));
  v.positive("data.alpha", d.alpha);
  if (d.source == SourceKind::Text && d.path.empty())
    v.fail("data.path", "required when data.source is \"text\"");
  if (d.source != SourceKind::Text &&
      !d.path.empty())  // else the file would be ignored without a word
    v.fail("data.path",
           "'" + d.path + "' is set but data.source is \"" + name_of(d.source) +
               "\", which does not read it; to train on the file set data.source \"text\" "
               "(--data.source=text), else remove data.path");
  if (!(d.val_fraction > 0 && d.val_fraction < 1))
    v.fail("data.val_fraction", "must be in (0, 1), got " + json(d.val_fraction).dump());
  if (d.source != SourceKind::Text &&
      d.val_fraction != DataConfig{}.val_fraction)  // else ignored, yet part of the run's identity
    v.fail("data.val_fraction",
           json(d.val_fraction).dump() + " is set but data.source is \"" + name_of(d.source) +
               "\", which samples its validation batches from the chain and does not read it; "
               "remove data.val_fraction (it splits a text file: data.source \"text\")");
}

void validate_optim(const OptimConfig& o, const Validator& v) {
  v.float32_rate("optim.learning_rate", o.learning_rate, false);
  v.non_negative("optim.weight_decay", o.weight_decay);
  v.unit("optim.beta1", o.beta1);
  v.unit("optim.beta2", o.beta2);
  v.positive("optim.eps", o.eps);
  v.unit("optim.momentum", o.momentum);
  if (o.name == OptimizerKind::Sgd && o.nesterov && o.momentum == 0.0)
    v.fail("optim.nesterov", "true needs optim.momentum > 0");
  v.non_negative("optim.grad_clip", o.grad_clip);
  v.at_least("optim.warmup_iters", o.warmup_iters, 0);
  v.at_least("optim.lr_decay_iters", o.lr_decay_iters, 0);
  v.float32_rate("optim.min_lr", o.min_lr, true);
  if (o.min_lr > o.learning_rate)
    v.fail("optim.min_lr",
           json(o.min_lr).dump() + " is above optim.learning_rate " + json(o.learning_rate).dump());
}

// Schedules whose keys contradict each other or the run's length: the rate would never reach
// optim.learning_rate, or a key would be ignored without a word.
void validate_schedule(const OptimConfig& o, const TrainConfig& t, const Validator& v) {
  const std::string warmup = std::to_string(o.warmup_iters);
  switch (o.schedule) {
    case ScheduleKind::Constant:
      if (o.warmup_iters > 0)
        v.fail("optim.warmup_iters",
               warmup +
                   " has no effect with optim.schedule \"constant\"; use "
                   "\"warmup_constant\" or \"cosine\" to warm up, else set it to 0");
      return;
    case ScheduleKind::WarmupConstant:
    case ScheduleKind::Cosine:
      break;
  }
  if (o.warmup_iters > t.max_iters)
    v.fail("optim.warmup_iters",
           warmup + " is above train.max_iters " + std::to_string(t.max_iters) +
               ": the run would end before the rate reaches optim.learning_rate");
  if (o.schedule == ScheduleKind::Cosine && o.lr_decay_iters != 0 &&
      o.lr_decay_iters < o.warmup_iters)
    v.fail("optim.lr_decay_iters", std::to_string(o.lr_decay_iters) +
                                       " is below optim.warmup_iters " + warmup +
                                       ": the cosine would end its decay before the warm-up ends");
}

void validate_run(const TrainConfig& t, const LogConfig& l, const Validator& v) {
  if (t.out_dir.empty()) v.fail("train.out_dir", "must not be empty");
  if (!t.name.empty() && !plain_name_problem(t.name).empty())
    v.fail("train.name", shown_name(t.name) + " " + plain_name_problem(t.name) +
                             "; a run name is a plain directory name (choose the directory with "
                             "--out or train.out_dir)");
  v.at_least("train.grad_accum_steps", t.grad_accum_steps, 1);
  v.at_most("train.grad_accum_steps", t.grad_accum_steps, 65536, "a sanity limit; a typo?");
  v.at_least("train.batch_size", t.batch_size, 1);
  v.at_most("train.batch_size", t.batch_size, 65536, "a sanity limit; a typo?");
  v.at_most("train.eval_iters", t.eval_iters, 100000, "a sanity limit; a typo?");
  v.at_most("train.threads", t.threads, 1024, "a sanity limit; a typo?");
  v.at_least("train.max_iters", t.max_iters, 0);
  v.at_least("train.eval_interval", t.eval_interval, 1);
  v.at_least("train.eval_iters", t.eval_iters, 1);
  v.at_least("train.ckpt_interval", t.ckpt_interval, 0);
  v.at_least("train.threads", t.threads, 0);
  v.non_negative("train.stop_below_unigram", t.stop_below_unigram);
  if (t.stop_below_unigram > 10)
    v.fail("train.stop_below_unigram",
           json(t.stop_below_unigram).dump() +
               " nats is no escape margin (the study's is 0.1; must be <= 10, 0 = off)");
  for (const auto& [key, nats] : {std::pair{"train.milestone_margin", t.milestone_margin},
                                  std::pair{"train.near_optimum", t.near_optimum}}) {
    v.non_negative(key, nats);
    if (nats > 10)
      v.fail(key, json(nats).dump() + " nats is no milestone line (the default is " +
                      (std::string(key) == "train.near_optimum" ? "0.15" : "0.1") +
                      "; must be in [0, 10])");
  }
  if (t.stop_at != StopAt::Off && t.stop_below_unigram > 0)
    v.fail("train.stop_at",
           "\"" + name_of(t.stop_at) + "\" and train.stop_below_unigram " +
               json(t.stop_below_unigram).dump() +
               " are two stop rules; set one (train.stop_below_unigram = margin is the older "
               "spelling of stopping at m1 with that margin; 0 turns it off)");
  v.at_least("log.log_interval", l.log_interval, 1);
  v.at_least("log.layer_interval", l.layer_interval, 1);
}

// A Markov source draws a table of model.vocab_size symbols and V^(order+1) transition entries
// (data/markov.cpp checks the same bounds); checked here so that the error names the config file.
void validate_markov_vocab(const Config& cfg, const Validator& v) {
  if (cfg.data.source != SourceKind::Markov) return;
  if (cfg.model.vocab_size < 2 || cfg.model.vocab_size > 1024)
    v.fail("model.vocab_size",
           "a markov source needs 2 to 1024 symbols, got " + std::to_string(cfg.model.vocab_size));
  const double table = std::pow(static_cast<double>(cfg.model.vocab_size), cfg.data.order + 1);
  if (table > static_cast<double>(1 << 24))
    v.fail("model.vocab_size", "with data.order " + std::to_string(cfg.data.order) +
                                   ", a markov table of V^(order+1) = " +
                                   std::to_string(static_cast<long long>(table)) +
                                   " entries is more than the 2^24 allowed; lower one of them");
}

}  // namespace

void validate_config(const Config& cfg, const std::string& origin, const Provenance* where) {
  const Validator v{origin, where};
  validate_model(cfg.model, v);
  validate_data(cfg.data, v);
  validate_optim(cfg.optim, v);
  validate_run(cfg.train, cfg.log, v);
  validate_schedule(cfg.optim, cfg.train, v);
  validate_markov_vocab(cfg, v);
  if (cfg.train.stop_at == StopAt::M3 && cfg.data.source == SourceKind::Text)
    v.fail("train.stop_at",
           "\"m3\" (near the optimum) needs the optimum, which a text source does not know; "
           "use \"m1\" or \"m2\"");
}

std::string plain_name_problem(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name == "." || name == "..") return "is '" + name + "'";
  if (name.find('/') != std::string::npos) return "contains '/'";
  if (name.find('\\') != std::string::npos) return "contains '\\'";
  if (name.find('\0') != std::string::npos) return "contains a NUL byte";
  if (name.size() > kMaxPlainName)
    return "is " + std::to_string(name.size()) + " characters long (at most " +
           std::to_string(kMaxPlainName) + ")";
  return "";
}

std::string shown_name(const std::string& name) {
  constexpr size_t kShown = 80;
  return "'" + (name.size() <= kShown ? name : name.substr(0, kShown) + "...") + "'";
}

}  // namespace sl
