// Probe: the gradient-flow picture at initialisation, no training. For each seed the model is
// initialised, one forward and backward pass runs on a fixed batch, and the quantities of a
// "layers" record are measured; the result holds them per seed, their seed means (as each
// metric's registry entry says), the metric descriptors (`layer_metrics`), and the ratio of
// block 1's gradient norm to block L's.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"

namespace sl {

// cfg.train.seed is ignored: each entry of `seeds` initialises the model once. The batch is
// the first fixed training-split eval batch of the data source (the same for every seed).
nlohmann::json run_probe(Config cfg, const std::vector<uint64_t>& seeds);

}  // namespace sl
