// Checkpoint files: model + optimizer tensors, config and train state in the metadata.
#include "train/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/safetensors.h"
#include "nn/weights.h"
#include "util/error.h"
#include "util/hash.h"

namespace sl {

namespace {
const char* kOptimPrefix = "optim.";
const char* kChecksumKey = "checksum";
const char* kFormatV1 = "stacklab.checkpoint.v1";  // before checksums: still read
const char* kFormatV2 = "stacklab.checkpoint.v2";  // v1 + a required checksum
const char* kKeptKey = "kept";  // "weights": the optimizer state was dropped (absent: all kept)
const char* kKeptWeights = "weights";

// FNV-1a 64 over every metadata entry but the checksum and every tensor's name, shape and
// bytes, in name order: safetensors has no integrity check of its own, and a flipped bit in the
// data or in train_state would otherwise resume silently from a corrupt state.
std::string checkpoint_checksum(const NamedTensors& tensors,
                                const std::map<std::string, std::string>& metadata) {
  uint64_t h = kFnvBasis;
  auto mix = [&h](const void* p, size_t n) { h = fnv1a64(h, p, n); };
  auto mix_str = [&mix](const std::string& s) { mix(s.data(), s.size() + 1); };  // with its NUL
  for (const auto& [k, v] : metadata)
    if (k != kChecksumKey) mix_str(k), mix_str(v);
  std::vector<const std::pair<std::string, Tensor>*> order;
  for (const auto& nt : tensors) order.push_back(&nt);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->first < b->first; });
  for (const auto* nt : order) {
    mix_str(nt->first);
    mix_str(nt->second.shape().str());
    if (nt->second.numel() > 0)
      mix(nt->second.data(), static_cast<size_t>(nt->second.numel()) * sizeof(float));
  }
  return hex64(h);
}

std::string value_at(const nlohmann::json& j, const std::string& dotted) {
  const nlohmann::json* cur = &j;
  size_t start = 0;
  while (start <= dotted.size()) {
    const size_t dot = dotted.find('.', start);
    const std::string key =
        dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object() || !cur->contains(key)) return "(absent)";
    cur = &cur->at(key);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur->dump();
}
// A config key the checkpoint lacks was added to stacklab after it was written. A new key's
// default keeps the old behaviour (keys are extended, never changed: the rule provenance.cpp
// applies to run fingerprints), so the run had the default and resumes under it.
nlohmann::json with_added_keys(nlohmann::json stored) {
  if (!stored.is_object()) return stored;
  for (const auto& [section, keys] : config_schema().items()) {
    auto it = stored.find(section);
    if (it == stored.end() || !it->is_object() || !keys.is_object()) continue;
    for (const auto& [key, value] : keys.items())
      if (!it->contains(key)) (*it)[key] = value;
  }
  return stored;
}

// What must not change between a checkpoint and the run resuming it: everything but
// train.max_iters (a run may be extended), train.threads, the stop rule (train.stop_at,
// train.stop_below_unigram: a run stopped at one milestone goes on to a later one, as
// train/resume.h allows), and optim.lr_decay_iters as written
// (compared resolved: an extension pins a 0 to the old max_iters) and the derived section, and
// the dotted keys of `may_differ` (an extension that moves the decay: optim.lr_decay_iters).
nlohmann::json resume_invariant(nlohmann::json c, const std::vector<std::string>& may_differ) {
  if (!c.is_object()) return c;
  c.erase("derived");
  for (const std::string& key : may_differ) {
    const size_t dot = key.find('.');
    auto section = c.find(key.substr(0, dot));
    if (dot != std::string::npos && section != c.end() && section->is_object())
      section->erase(key.substr(dot + 1));
  }
  auto train = c.find("train");
  auto optim = c.find("optim");
  if (train == c.end() || !train->is_object() || optim == c.end() || !optim->is_object()) return c;
  const nlohmann::json max_iters = train->value("max_iters", nlohmann::json());
  auto decay = optim->find("lr_decay_iters");
  if (decay != optim->end() && *decay == 0) *decay = max_iters;
  train->erase("max_iters");
  train->erase("threads");
  train->erase("stop_at");
  train->erase("stop_below_unigram");
  return c;
}

}  // namespace

std::vector<std::string> config_differences(const nlohmann::json& a, const nlohmann::json& b,
                                            const std::string& prefix) {
  std::vector<std::string> out;
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : a.items()) {
      const std::string key = prefix.empty() ? k : prefix + "." + k;
      if (!b.contains(k)) {
        out.push_back(key);
        continue;
      }
      for (std::string& d : config_differences(v, b.at(k), key)) out.push_back(std::move(d));
    }
    for (const auto& [k, v] : b.items())
      if (!a.contains(k)) out.push_back(prefix.empty() ? k : prefix + "." + k);
    return out;
  }
  if (a != b) out.push_back(prefix.empty() ? "(root)" : prefix);
  return out;
}

nlohmann::json checkpoint_metadata(const TensorFile& file, const std::string& path,
                                   const std::string& key) {
  auto it = file.metadata.find(key);
  if (it == file.metadata.end())
    throw Error(path + ": not a stacklab checkpoint (no '" + key + "' metadata)");
  try {
    return nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": metadata '" + key + "' is not valid JSON: " + e.what());
  }
}

const std::vector<std::string>& reader_may_differ() {
  static const std::vector<std::string> keys = {"optim.lr_decay_iters", "train.name",
                                                "train.out_dir"};
  return keys;
}

std::vector<std::string> checkpoint_config_differences(const nlohmann::json& written,
                                                       const nlohmann::json& expected,
                                                       const std::vector<std::string>& may_differ) {
  // A key the checkpoint lacks (added to stacklab after it was written) counts as its default.
  const nlohmann::json filled = with_added_keys(written);
  return config_differences(resume_invariant(expected, may_differ),
                            resume_invariant(filled, may_differ));
}

void check_checkpoint_config(const std::string& path, const nlohmann::json& written,
                             const nlohmann::json& expected,
                             const std::vector<std::string>& may_differ,
                             const std::string& expected_where) {
  const std::vector<std::string> keys =
      checkpoint_config_differences(written, expected, may_differ);
  if (keys.empty()) return;
  std::string list;
  for (const std::string& k : keys)
    list += (list.empty() ? "" : "; ") +
            ("'" + k + "' is " + value_at(written, k) + " in the checkpoint but " +
             value_at(expected, k) + " in " + expected_where);
  throw Error(path + ": written with a different config: " + list);
}

void save_checkpoint(const std::string& path, const Model& model, const Optimizer& opt,
                     const nlohmann::json& config, const nlohmann::json& train_state) {
  NamedTensors tensors = module_state(model);
  for (auto& [name, t] : opt.state_tensors()) tensors.emplace_back(kOptimPrefix + name, t);
  std::map<std::string, std::string> metadata = {
      {"format", kFormatV2}, {"config", config.dump()}, {"train_state", train_state.dump()}};
  metadata[kChecksumKey] = checkpoint_checksum(tensors, metadata);
  save_safetensors(path, tensors, metadata);
}

TensorFile read_checkpoint_file(const std::string& path) {
  TensorFile file = load_safetensors(path);
  // Checked first: a corrupt file gets this message, not a confusing config difference. The
  // format decides whether a checksum is required, so a flipped bit in the key name cannot
  // turn a v2 file into one that skips the check.
  const auto format = file.metadata.find("format");
  if (format == file.metadata.end() || (format->second != kFormatV1 && format->second != kFormatV2))
    throw Error(
        path + ": not a stacklab checkpoint (metadata 'format' is " +
        (format == file.metadata.end() ? std::string("missing") : "'" + format->second + "'") +
        ", expected '" + kFormatV2 + "'); the file is corrupt or from another program");
  if (format->second == kFormatV2) {
    const auto stored = file.metadata.find(kChecksumKey);
    if (stored == file.metadata.end())
      throw Error(path + ": corrupt checkpoint: its 'checksum' metadata is missing");
    const std::string actual = checkpoint_checksum(file.tensors, file.metadata);
    if (actual != stored->second)
      throw Error(path + ": checksum mismatch (stored " + stored->second + ", computed " + actual +
                  "): the file is corrupt (a flipped bit or a damaged copy); restore it or start "
                  "the run over");
  }
  return file;
}

bool holds_optimizer_state(const TensorFile& file) {
  const auto kept = file.metadata.find(kKeptKey);
  return kept == file.metadata.end() || kept->second != kKeptWeights;
}

uint64_t drop_optimizer_state(const std::string& path) {
  TensorFile file = read_checkpoint_file(path);
  if (!holds_optimizer_state(file)) return 0;
  std::error_code ec;
  const uintmax_t before = std::filesystem::file_size(path, ec);
  NamedTensors weights;
  for (auto& nt : file.tensors)
    if (nt.first.rfind(kOptimPrefix, 0) != 0) weights.push_back(std::move(nt));
  std::map<std::string, std::string> metadata = std::move(file.metadata);
  metadata[kKeptKey] = kKeptWeights;
  metadata["format"] = kFormatV2;  // a v1 file gains the checksum it now carries
  metadata[kChecksumKey] = checkpoint_checksum(weights, metadata);
  save_safetensors(path, weights, metadata);
  const uintmax_t after = std::filesystem::file_size(path, ec);
  return !ec && before > after ? static_cast<uint64_t>(before - after) : 0;
}

Checkpoint load_checkpoint(const std::string& path, Model& model, Optimizer& opt,
                           const nlohmann::json& expected_config,
                           const std::vector<std::string>& may_differ) {
  const TensorFile file = read_checkpoint_file(path);
  if (!holds_optimizer_state(file))
    throw Error(path +
                ": holds the weights alone: its optimizer state was not kept (train.keep_final "
                "\"weights\" or `stacklab prune`), and a run resumes or extends only from a "
                "checkpoint with it; `stacklab sample` and load_run still read the weights. To "
                "train further, train the config again (train.keep_final \"full\" keeps what an "
                "extension needs)");
  Checkpoint c;
  c.config = checkpoint_metadata(file, path, "config");
  c.train_state = checkpoint_metadata(file, path, "train_state");
  check_checkpoint_config(path, c.config, expected_config, may_differ, "the run's config");
  load_module_state(model, file, path, kOptimPrefix);
  StateTensors state;
  for (const auto& [name, t] : file.tensors)
    if (name.rfind(kOptimPrefix, 0) == 0) state.emplace_back(name.substr(6), t);
  if (!c.train_state.is_object() || !c.train_state.contains("optimizer_steps") ||
      !c.train_state.at("optimizer_steps").is_number_integer())
    throw Error(path + ": train_state has no integer 'optimizer_steps'");
  opt.load_state_tensors(state, c.train_state.at("optimizer_steps").get<int64_t>());
  return c;
}

}  // namespace sl
