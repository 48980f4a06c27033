// The train state of a checkpoint, to and from JSON (see train_state.h).
#include "train/train_state.h"

#include <cmath>

#include "util/error.h"
#include "util/json_read.h"

namespace sl {
namespace {

nlohmann::json rng_to_json(const Rng::State& s) {
  nlohmann::json a = nlohmann::json::array();
  for (uint64_t w : s) a.push_back(std::to_string(w));
  return a;
}

Rng::State rng_from_json(const nlohmann::json& a, const std::string& file,
                         const std::string& field) {
  Rng::State s{};
  if (!a.is_array() || a.size() != 4)
    throw Error(file + ": field '" + field + "' must be 4 strings");
  for (size_t i = 0; i < 4; ++i) {
    const std::string w = a[i].is_string() ? a[i].get<std::string>() : "";
    if (w.empty() || w.size() > 20 || w.find_first_not_of("0123456789") != std::string::npos)
      throw Error(file + ": field '" + field + "[" + std::to_string(i) +
                  "]' must be a decimal string, got " + a[i].dump());
    try {
      s[i] = std::stoull(w);
    } catch (const std::out_of_range&) {
      throw Error(file + ": field '" + field + "[" + std::to_string(i) +
                  "]' is out of range: " + w);
    }
  }
  return s;
}

}  // namespace

nlohmann::json to_json(const TrainState& s) {
  return {{"step", s.step},
          {"optimizer_steps", s.optimizer_steps},
          {"rng", rng_to_json(s.rng)},
          {"dropout_rng", rng_to_json(s.dropout_rng)},
          {"best_val_loss", std::isfinite(s.best_val_loss) ? nlohmann::json(s.best_val_loss)
                                                           : nlohmann::json(nullptr)},
          {"wall_seconds", s.wall_seconds},
          {"last_update_norms", s.last_update_norms}};
}

TrainState train_state_from_json(const nlohmann::json& st, const std::string& file,
                                 int64_t max_iters, size_t n_params) {
  TrainState s;
  s.step = json_int(st, file, "step", 0, max_iters, "train_state");
  s.rng = rng_from_json(json_field(st, file, "rng", "train_state"), file, "train_state.rng");
  s.dropout_rng = rng_from_json(json_field(st, file, "dropout_rng", "train_state"), file,
                                "train_state.dropout_rng");
  const nlohmann::json& best = json_field(st, file, "best_val_loss", "train_state");
  s.best_val_loss = best.is_null() ? std::numeric_limits<double>::infinity()
                                   : json_number(st, file, "best_val_loss", "train_state");
  s.wall_seconds = json_number(st, file, "wall_seconds", "train_state");
  for (const auto& v : json_array(st, file, "last_update_norms", "train_state")) {
    if (!v.is_number())
      throw Error(file + ": field 'train_state.last_update_norms' must hold numbers");
    s.last_update_norms.push_back(v.get<double>());
  }
  if (!s.last_update_norms.empty() &&
      s.last_update_norms.size() != n_params)  // read per parameter by update_ratio
    throw Error(file + ": field 'train_state.last_update_norms' has " +
                std::to_string(s.last_update_norms.size()) + " entries, the model has " +
                std::to_string(n_params) + " parameters");
  if (st.contains("optimizer_steps"))
    s.optimizer_steps = json_int(st, file, "optimizer_steps", 0, INT64_MAX, "train_state");
  return s;
}

}  // namespace sl
