// Config <-> JSON and validation. Each section's keys are listed once, in a visit_* function that
// a Writer (to JSON) and a Reader (strict, typed, from JSON) both walk, so the two cannot drift.
// Validation (ranges, cross-field rules) and the wiring names live at the bottom.
#include "config/config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace sl {
namespace {

using json = nlohmann::json;
using Choices = std::vector<std::string>;

const Choices kSections{"model", "data", "optim", "train", "log"};

// S is the section struct, const or not; V is a Writer or a Reader.
template <class S, class V>
void visit_model(S& m, V& v) {
  v("n_layer", m.n_layer);
  v("n_head", m.n_head);
  v("n_embd", m.n_embd);
  v("block_size", m.block_size);
  v("vocab_size", m.vocab_size);
  v("bias", m.bias);
  v("residual", m.residual);
  v.choice("norm", m.norm);
  v("norm_eps", m.norm_eps);
  v.choice("norm_position", m.norm_position);
  v.choice("residual_scale", m.residual_scale);
  v("final_norm", m.final_norm);
  v("attention", m.attention);
  v("mlp", m.mlp);
  v("mlp_ratio", m.mlp_ratio);
  v.choice("activation", m.activation);
  v.choice("init", m.init);
  v("init_std", m.init_std);
  v.choice("pos_emb", m.pos_emb);
  v.choice("emb_scale", m.emb_scale);
  v("tie_weights", m.tie_weights);
  v("dyt_alpha_init", m.dyt_alpha_init);
  v.choice("norm_scaling", m.norm_scaling);
  v("layerscale_init", m.layerscale_init);
  v("qk_norm", m.qk_norm);
  v("dropout", m.dropout);
}
template <class S, class V>
void visit_data(S& d, V& v) {
  v.choice("source", d.source);
  v("order", d.order);
  v("alpha", d.alpha);
  v("seed", d.seed);
  v("path", d.path);
  v("val_fraction", d.val_fraction);
}
template <class S, class V>
void visit_optim(S& o, V& v) {
  v.choice("name", o.name);
  v("learning_rate", o.learning_rate);
  v("weight_decay", o.weight_decay);
  v("decay_exempt", o.decay_exempt);
  v("decay_embeddings", o.decay_embeddings);
  v("beta1", o.beta1);
  v("beta2", o.beta2);
  v("eps", o.eps);
  v("momentum", o.momentum);
  v("nesterov", o.nesterov);
  v("grad_clip", o.grad_clip);
  v.choice("schedule", o.schedule);
  v("warmup_iters", o.warmup_iters);
  v("lr_decay_iters", o.lr_decay_iters);
  v("min_lr", o.min_lr);
}
template <class S, class V>
void visit_train(S& t, V& v) {
  v("name", t.name);
  v("out_dir", t.out_dir);
  v("batch_size", t.batch_size);
  v("max_iters", t.max_iters);
  v("eval_interval", t.eval_interval);
  v("eval_iters", t.eval_iters);
  v("seed", t.seed);
  v("ckpt_interval", t.ckpt_interval);
  v("save_best", t.save_best);
  v("threads", t.threads);
  v("grad_accum_steps", t.grad_accum_steps);
  v("flush_subnormals", t.flush_subnormals);
}
template <class S, class V>
void visit_log(S& l, V& v) {
  v("log_interval", l.log_interval);
  v("layer_interval", l.layer_interval);
  v("params", l.params);
}

struct Writer {
  json& out;
  template <class T>
  void operator()(const char* key, const T& value) {
    out[key] = value;
  }
  void operator()(const char* key, const std::optional<bool>& value) {
    out[key] = value ? json(*value) : json(nullptr);
  }
  template <class E>
  void choice(const char* key, const E& value) {
    out[key] = name_of(value);
  }
};

// `string "8"`, `number 8.5`, `boolean true`, `null`, `an array`, `an object`.
std::string describe_value(const json& j) {
  if (j.is_string()) return "string " + j.dump();
  if (j.is_boolean()) return "boolean " + j.dump();
  if (j.is_number()) return "number " + j.dump();
  if (j.is_null()) return "null";
  return j.is_array() ? "an array" : "an object";
}

std::string quoted_list(const Choices& choices) {
  std::string s;
  for (const auto& c : choices) s += (s.empty() ? "\"" : ", \"") + c + "\"";
  return s;
}

std::vector<std::string> keys_of(const json& obj) {
  std::vector<std::string> keys;
  for (const auto& item : obj.items()) keys.push_back(item.key());
  return keys;
}

// Reads the keys present in one section, leaving the others at their defaults.
struct Reader {
  const json& obj;
  std::string prefix;  // "origin: model."

  const json* find(const char* key) const {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }
  [[noreturn]] void fail(const char* key, const std::string& msg) const {
    throw ConfigError(prefix + key + ": " + msg);
  }
  // Integers may be written as 8 or 8.0 (or 1e3), never 8.5.
  long double integral(const char* key, const json& j) const {
    if (j.is_number_unsigned()) return static_cast<long double>(j.get<std::uint64_t>());
    if (j.is_number_integer()) return static_cast<long double>(j.get<std::int64_t>());
    if (j.is_number_float()) {
      double d = j.get<double>();
      if (std::isfinite(d) && std::floor(d) == d) return static_cast<long double>(d);
    }
    fail(key, "expected an integer, got " + describe_value(j));
  }
  void operator()(const char* key, int& value) const {
    const json* j = find(key);
    if (!j) return;
    long double v = integral(key, *j);
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      fail(key, "integer " + j->dump() + " is out of range");
    value = static_cast<int>(v);
  }
  void operator()(const char* key, std::uint64_t& value) const {
    const json* j = find(key);
    if (!j) return;
    long double v = integral(key, *j);
    if (v < 0 || v > static_cast<long double>(std::numeric_limits<std::uint64_t>::max()))
      fail(key, "expected a non-negative integer, got " + j->dump());
    value = j->is_number_unsigned() ? j->get<std::uint64_t>() : static_cast<std::uint64_t>(v);
  }
  void operator()(const char* key, double& value) const {
    const json* j = find(key);
    if (!j) return;
    if (!j->is_number()) fail(key, "expected a number, got " + describe_value(*j));
    value = j->get<double>();
    if (!std::isfinite(value)) fail(key, "expected a finite number, got " + j->dump());
  }
  void operator()(const char* key, bool& value) const {
    const json* j = find(key);
    if (!j) return;
    if (!j->is_boolean()) fail(key, "expected true or false, got " + describe_value(*j));
    value = j->get<bool>();
  }
  void operator()(const char* key, std::string& value) const {
    const json* j = find(key);
    if (!j) return;
    if (!j->is_string()) fail(key, "expected a string, got " + describe_value(*j));
    value = j->get<std::string>();
  }
  void operator()(const char* key, std::optional<bool>& value) const {
    const json* j = find(key);
    if (!j) return;
    if (j->is_null())
      value.reset();
    else if (j->is_boolean())
      value = j->get<bool>();
    else
      fail(key, "expected true, false or null (auto), got " + describe_value(*j));
  }
  template <class E>
  void choice(const char* key, E& value) const {
    const json* j = find(key);
    if (!j) return;
    const Choices choices = choice_names<E>();
    if (!j->is_string())
      fail(key, "expected one of " + quoted_list(choices) + ", got " + describe_value(*j));
    const std::string s = j->get<std::string>();
    const std::optional<E> parsed = parse_choice<E>(s);
    if (!parsed) {
      std::string near = closest_key(s, choices);
      fail(key, "expected one of " + quoted_list(choices) + ", got \"" + s + "\"" +
                    (near.empty() ? "" : "; did you mean '" + near + "'?"));
    }
    value = *parsed;
  }
};

template <class S, class Visit>
void read_section(const json& top, const char* name, const std::string& origin, S& section,
                  Visit visit) {
  auto it = top.find(name);
  if (it == top.end()) return;
  const std::string prefix = origin + ": " + name + ".";
  if (!it->is_object())
    throw ConfigError(origin + ": " + name + ": expected an object, got " + describe_value(*it));
  const std::vector<std::string> known = keys_of(config_schema().at(name));
  for (const auto& item : it->items())
    if (std::find(known.begin(), known.end(), item.key()) == known.end())
      throw ConfigError(prefix + item.key() + ": " + unknown_key_message(item.key(), known));
  Reader reader{*it, prefix};
  visit(section, reader);
}

}  // namespace

bool ModelConfig::resolved_final_norm() const {
  if (norm == NormKind::None) return false;
  return final_norm.value_or(norm_position != NormPosition::Post);
}

const json& config_schema() {
  static const json schema = to_json(Config{});
  return schema;
}

json to_json(const Config& cfg) {
  json j = json::object();
  j["description"] = cfg.description;
  Writer m{j["model"]}, d{j["data"]}, o{j["optim"]}, t{j["train"]}, l{j["log"]};
  visit_model(cfg.model, m);
  visit_data(cfg.data, d);
  visit_optim(cfg.optim, o);
  visit_train(cfg.train, t);
  visit_log(cfg.log, l);
  return j;
}

Config parse_config(const json& j, const std::string& origin) {
  if (!j.is_object())
    throw ConfigError(origin + ": expected a JSON object, got " + describe_value(j));
  std::vector<std::string> top = kSections;
  top.push_back("description");
  for (const auto& item : j.items()) {
    if (item.key() == "extends")
      throw ConfigError(origin + ": extends: only load_config resolves 'extends'");
    if (item.key() == "derived") {  // a run's config.json: read back and checked by load_config
      if (!item.value().is_object())
        throw ConfigError(origin + ": derived: expected an object, got " +
                          describe_value(item.value()));
      continue;
    }
    if (std::find(top.begin(), top.end(), item.key()) == top.end()) {
      std::vector<std::string> valid = top;
      valid.insert(valid.end(), {"extends", "derived"});
      throw ConfigError(origin + ": " + item.key() + ": " + unknown_key_message(item.key(), valid));
    }
  }
  Config cfg;
  if (auto it = j.find("description"); it != j.end()) {
    if (!it->is_string())
      throw ConfigError(origin + ": description: expected a string, got " + describe_value(*it));
    cfg.description = it->get<std::string>();
  }
  read_section(j, "model", origin, cfg.model, [](auto& s, auto& v) { visit_model(s, v); });
  read_section(j, "data", origin, cfg.data, [](auto& s, auto& v) { visit_data(s, v); });
  read_section(j, "optim", origin, cfg.optim, [](auto& s, auto& v) { visit_optim(s, v); });
  read_section(j, "train", origin, cfg.train, [](auto& s, auto& v) { visit_train(s, v); });
  read_section(j, "log", origin, cfg.log, [](auto& s, auto& v) { visit_log(s, v); });
  return cfg;
}

Config config_from_json(const json& j, const std::string& origin) {
  Config cfg = parse_config(j, origin);
  validate_config(cfg, origin, nullptr);
  return cfg;
}

int resolved_lr_decay_iters(const Config& cfg) {
  return cfg.optim.lr_decay_iters == 0 ? cfg.train.max_iters : cfg.optim.lr_decay_iters;
}

// ---- validation ---------------------------------------------------------------------------

namespace {

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

// ---- key suggestions --------------------------------------------------------------------------

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_key(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(key, c);
    if (d < best_d) best_d = d, best = c;
  }
  // Plausible only if most of the key survives: up to a third of its letters, at least 2.
  const std::size_t limit = std::max<std::size_t>(2, key.size() / 3);
  return best_d <= limit ? best : "";
}

std::string unknown_key_message(const std::string& key,
                                const std::vector<std::string>& candidates) {
  std::string near = closest_key(key, candidates);
  if (!near.empty()) return "unknown key; did you mean '" + near + "'?";
  std::string list;
  for (const auto& c : candidates) list += (list.empty() ? "" : ", ") + c;
  return "unknown key; valid keys: " + list;
}

}  // namespace sl
