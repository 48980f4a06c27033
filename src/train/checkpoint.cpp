// Checkpoint files: model + optimizer tensors, config and train state in the metadata.
#include "train/checkpoint.h"

#include "core/error.h"
#include "core/safetensors.h"
#include "nn/weights.h"

namespace sl {

namespace {
const char* kOptimPrefix = "optim.";

std::string value_at(const nlohmann::json& j, const std::string& dotted) {
  const nlohmann::json* cur = &j;
  size_t start = 0;
  while (start <= dotted.size()) {
    const size_t dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object() || !cur->contains(key)) return "(absent)";
    cur = &cur->at(key);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur->dump();
}
}  // namespace

std::string first_config_difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& prefix) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : a.items()) {
      const std::string key = prefix.empty() ? k : prefix + "." + k;
      if (!b.contains(k)) return key;
      std::string d = first_config_difference(v, b.at(k), key);
      if (!d.empty()) return d;
    }
    for (const auto& [k, v] : b.items())
      if (!a.contains(k)) return prefix.empty() ? k : prefix + "." + k;
    return "";
  }
  return a == b ? "" : (prefix.empty() ? "(root)" : prefix);
}

void save_checkpoint(const std::string& path, const Model& model, const Optimizer& opt, const nlohmann::json& config,
                     const nlohmann::json& train_state) {
  NamedTensors tensors = module_state(model);
  for (auto& [name, t] : opt.state_tensors()) tensors.emplace_back(kOptimPrefix + name, t);
  save_safetensors(path, tensors, {{"format", "stacklab.checkpoint.v1"}, {"config", config.dump()},
                                   {"train_state", train_state.dump()}});
}

Checkpoint load_checkpoint(const std::string& path, Model& model, Optimizer& opt, const nlohmann::json& expected_config) {
  TensorFile file = load_safetensors(path);
  auto meta = [&](const char* key) -> nlohmann::json {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end()) throw Error(path + ": not a stacklab checkpoint (no '" + std::string(key) + "' metadata)");
    try {
      return nlohmann::json::parse(it->second);
    } catch (const nlohmann::json::exception& e) {
      throw Error(path + ": metadata '" + key + "' is not valid JSON: " + e.what());
    }
  };
  Checkpoint c;
  c.config = meta("config");
  c.train_state = meta("train_state");
  const std::string diff = first_config_difference(expected_config, c.config);
  if (!diff.empty())
    throw Error(path + ": written with a different config: '" + diff + "' is " + value_at(c.config, diff) +
                " in the checkpoint but " + value_at(expected_config, diff) + " in the run's config");
  load_module_state(model, file, path, kOptimPrefix);
  StateTensors state;
  for (const auto& [name, t] : file.tensors)
    if (name.rfind(kOptimPrefix, 0) == 0) state.emplace_back(name.substr(6), t);
  if (!c.train_state.contains("optimizer_steps")) throw Error(path + ": train_state has no 'optimizer_steps'");
  opt.load_state_tensors(state, c.train_state.at("optimizer_steps").get<int64_t>());
  return c;
}

}  // namespace sl
