// Config <-> JSON. Each section's keys are listed once, in a visit_* function that a Writer (to
// JSON) and a Reader (strict, typed, from JSON) both walk, so the two cannot drift. Not here:
// ranges and cross-field rules (validate.cpp), the "did you mean" of an unknown key (suggest.cpp).
#include "config/config.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "config/suggest.h"
#include "config/validate.h"

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
  v.choice("attention_kind", m.attention_kind);
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
  v("stop_below_unigram", t.stop_below_unigram);
  v.choice("stop_at", t.stop_at);
  v("milestone_margin", t.milestone_margin);
  v("near_optimum", t.near_optimum);
  v.choice("keep_final", t.keep_final);
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

}  // namespace sl
