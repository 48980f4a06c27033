// The train state a checkpoint carries besides the weights and the optimizer moments (its
// "train_state" metadata): the step to resume at, the two RNG streams, the best val loss, the
// wall time so far and the last update's norms. to_json / train_state_from_json are the one
// place its on-disk form is spelled. Not here: the weights or moments (train/checkpoint.h).
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/rng.h"

namespace sl {

struct TrainState {
  int64_t step = 0;             // the step the run resumes at
  int64_t optimizer_steps = 0;  // written for readers; the optimizer restores its own count
  Rng::State rng{};             // training batches
  Rng::State dropout_rng{};     // dropout masks (a stream of its own: dropout 0 draws nothing)
  double best_val_loss = std::numeric_limits<double>::infinity();  // null on disk when infinite
  double wall_seconds = 0.0;                                       // summed over resumes
  std::vector<double> last_update_norms;  // per parameter (model order), empty before any update
};

// RNG words are decimal strings: JSON numbers lose 64-bit precision.
nlohmann::json to_json(const TrainState& s);

// Reads what to_json wrote, from the checkpoint `file` (named in every error with the field):
// `step` must lie in [0, max_iters], `last_update_norms` hold 0 or `n_params` numbers.
TrainState train_state_from_json(const nlohmann::json& j, const std::string& file,
                                 int64_t max_iters, size_t n_params);

}  // namespace sl
