// The memory estimate and the check against /proc/meminfo (formula in memory.h).
#include "train/memory.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "nn/wiring.h"
#include "util/error.h"

namespace sl {
namespace {

constexpr double kFloat = 4.0;

// First number after `key` in a "key: value" file such as /proc/meminfo, or nullopt.
std::optional<double> read_field(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    std::istringstream ss(line.substr(key.size()));
    double v = 0;
    if (ss >> v) return v;
  }
  return std::nullopt;
}

// A cgroup v2 file holding one number (or "max"): nullopt when absent or unlimited.
std::optional<double> read_cgroup_number(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s == "max") return std::nullopt;
  try {
    return std::stod(s);
  } catch (const std::logic_error&) {  // not a number, or out of range
    return std::nullopt;
  }
}

}  // namespace

double count_parameters(const ModelConfig& m) { return static_cast<double>(model_param_count(m)); }

MemoryEstimate estimate_memory(const Config& cfg) {
  const ModelConfig& m = cfg.model;
  const double B = cfg.train.batch_size, T = m.block_size, C = m.n_embd, V = m.vocab_size;
  const double NH = m.n_head, L = m.n_layer, r = m.mlp_ratio;
  MemoryEstimate e;
  e.parameters = count_parameters(m);
  const double moments = cfg.optim.name == OptimizerKind::Sgd ? 1 : 2;
  e.weight_bytes = e.parameters * (2 + moments) * kFloat;
  double per_layer = 0;
  if (m.attention)
    per_layer +=
        B * T * C * 6 + B * NH * T * T * 3;  // norm, q, k, v, y, proj; scores, probs, dprobs
  if (m.attention)  // what the attention kind adds around the fused op (shaped: v, C v, ...)
    per_layer += B * T * C * attention_kind_spec(m.attention_kind).extra_activations;
  if (m.mlp)
    per_layer += B * T * C * 6 + B * T * C * r * 3;  // norm, proj, residual; fc out, act, dact
  e.activation_bytes =
      (2 * L * per_layer + B * T * V * 3) * kFloat;  // x2: the gradients flowing back
  e.data_bytes = 2.0 * cfg.train.eval_iters * B * T * 2 * 4;
  return e;
}

double estimate_memory_bytes(const Config& cfg) { return estimate_memory(cfg).total_bytes(); }

std::optional<double> available_memory_bytes() {
  std::optional<double> avail;
  if (auto kb = read_field("/proc/meminfo", "MemAvailable:")) avail = *kb * 1024.0;
  if (auto max = read_cgroup_number("/sys/fs/cgroup/memory.max")) {
    const double used = read_cgroup_number("/sys/fs/cgroup/memory.current").value_or(0.0);
    const double left = *max > used ? *max - used : 0.0;
    if (!avail || left < *avail) avail = left;
  }
  return avail;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) bytes /= 1024.0, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

void check_memory_fits(const Config& cfg, std::optional<double> available) {
  if (!available) return;
  const MemoryEstimate e = estimate_memory(cfg);
  if (e.total_bytes() <= *available) return;
  const ModelConfig& m = cfg.model;
  std::ostringstream msg;
  msg << "this config needs about " << format_bytes(e.total_bytes()) << " of memory but only "
      << format_bytes(*available)
      << " is available (MemAvailable); refusing before allocating. Estimate: "
      << format_bytes(e.weight_bytes) << " for " << static_cast<double>(e.parameters)
      << " parameters with grads and optimizer state, " << format_bytes(e.activation_bytes)
      << " of activations (model.n_layer=" << m.n_layer << ", model.n_embd=" << m.n_embd
      << ", model.n_head=" << m.n_head << ", model.block_size=" << m.block_size
      << ", model.vocab_size=" << m.vocab_size << ", train.batch_size=" << cfg.train.batch_size
      << "); shrink one of them (formula in src/train/memory.h)";
  throw Error(msg.str());
}

}  // namespace sl
