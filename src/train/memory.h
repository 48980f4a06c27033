// Memory estimate of a training run, checked against what the machine has BEFORE anything big
// is allocated, so an absurd config (n_layer=4096, n_embd=65536) is refused with a number
// instead of dying in the kernel's OOM killer hours into a sweep.
// Formula (float32, 4 bytes per number; C n_embd, V vocab, T block_size, B batch, NH heads,
// L layers, r mlp_ratio, P parameters counted exactly as the model builds them):
//   weights P + grads P + optimizer state (AdamW 2P, SGD P)
//   + activations saved for backward, per layer B*T*C*(12 + 3r) + attention B*NH*T*T*3 (+ the
//     attention kind's extra B*T*C tensors: shaped 6),
//     doubled for the gradients flowing back through them, plus logits B*T*V*3
//   + eval batches 2 * eval_iters * B*T*2 int32 ids.
// It is an estimate (within a small factor), meant to catch configs off by orders of magnitude.
// Not here: measuring real usage (see bench's peak RSS).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "config/config.h"

namespace sl {

struct MemoryEstimate {
  double parameters = 0;    // P, the number of trainable floats
  double weight_bytes = 0;  // weights + grads + optimizer moments
  double activation_bytes = 0;
  double data_bytes = 0;  // eval batches
  double total_bytes() const { return weight_bytes + activation_bytes + data_bytes; }
};

// The number of parameters Model(cfg.model) would have, without building it.
double count_parameters(const ModelConfig& m);
MemoryEstimate estimate_memory(const Config& cfg);
double estimate_memory_bytes(const Config& cfg);

// Memory this process may still use: MemAvailable from /proc/meminfo, lowered by a cgroup v2
// memory.max when one is set. nullopt when neither can be read (the check is then skipped).
std::optional<double> available_memory_bytes();

// "1.5 GB", "3.2 TB".
std::string format_bytes(double bytes);

// Throws sl::Error naming the model/train sizes, the estimate and the available memory when
// the estimate exceeds `available` (default: available_memory_bytes()).
void check_memory_fits(const Config& cfg,
                       std::optional<double> available = available_memory_bytes());

}  // namespace sl
