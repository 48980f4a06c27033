// What every command that builds a model from a config shares: the data source made from
// the `data` section (which fixes model.vocab_size for text data), and the printed wiring.
#pragma once
#include <memory>
#include <string>

#include "config/config.h"
#include "data/source.h"
#include "nn/wiring.h"

namespace sl {

// The data source of cfg.data. For text data, sets cfg.model.vocab_size to the corpus's.
// Then refuses (sl::Error) a config whose memory estimate exceeds the machine's available
// memory (train/memory.h), so every command that builds a model checks it before allocating.
std::unique_ptr<DataSource> make_data(Config& cfg, const std::string& vocab_path = "");

// "model: 4 layers x 64 wide, 4 heads, ... | block: pre-norm residual: x + f(layernorm(x))"
std::string describe_model(const Config& cfg, int64_t n_params);

// A run's config.json carries a "derived" section (final_norm, wiring, ...); read back as a
// config, those values must agree with what its keys derive now (they would not after a hand
// edit). A ConfigError naming the file and derived.<key> otherwise; nothing for a plain config.
void check_derived_section(const std::string& config_path);

}  // namespace sl
