// Data-source construction from the config, and the one-line model description.
#include "train/setup.h"

#include "config/loader.h"

#include <sstream>

#include "config/suggest.h"
#include "config/validate.h"
#include "nn/wiring.h"
#include "train/memory.h"

namespace sl {

std::unique_ptr<DataSource> make_data(Config& cfg, const std::string& vocab_path) {
  const DataConfig& d = cfg.data;
  auto src = make_data_source(name_of(d.source), cfg.model.vocab_size, d.order, d.alpha, d.seed,
                              d.path, d.val_fraction, vocab_path);
  if (d.source == SourceKind::Text) cfg.model.vocab_size = src->vocab_size();
  src->check_context_length(cfg.model.block_size);
  // Before the model, its gradients and the optimizer state are allocated: an absurd size is
  // refused with the estimate rather than ending in the OOM killer (train, probe, bench, ...).
  check_memory_fits(cfg);
  return src;
}

std::string describe_model(const Config& cfg, int64_t n_params) {
  const ModelConfig& m = cfg.model;
  std::ostringstream os;
  os << "model: " << m.n_layer << " layers, n_embd " << m.n_embd << ", " << m.n_head
     << " heads, block_size " << m.block_size << ", vocab " << m.vocab_size << ", " << n_params
     << " parameters\n"
     << "block: " << describe_wiring(m) << (m.attention ? "" : " [no attention]")
     << (m.mlp ? "" : " [no mlp]") << ", final norm " << (m.resolved_final_norm() ? "on" : "off")
     << ", init " << name_of(m.init) << ", emb_scale " << name_of(m.emb_scale);
  return os.str();
}

void check_derived_section(const std::string& path) {
  const ResolvedJson resolved = resolve_extends(path);
  if (resolved.derived.is_null()) return;
  Config own = parse_config(resolved.json, path);
  validate_config(own, path, &resolved.where);
  const nlohmann::json now = derived_json(own);
  for (const auto& [k, v] : resolved.derived.items()) {
    if (!now.contains(k)) {
      std::vector<std::string> keys;
      for (const auto& item : now.items()) keys.push_back(item.key());
      throw ConfigError(path + ": derived." + k + ": " + unknown_key_message(k, keys));
    }
    if (now.at(k) != v)
      throw ConfigError(path + ": derived." + k + ": the file says " + v.dump() +
                        " but its keys give " + now.at(k).dump() +
                        "; fix the keys or delete the \"derived\" section");
  }
}

}  // namespace sl
