// The escape rule as a stopping rule (see escape_stop.h).
#include "train/escape_stop.h"

#include <cmath>

#include "train/run_state.h"

namespace sl {

bool escaped(double val_loss, double unigram_on_val, double margin) {
  return margin > 0 && std::isfinite(val_loss) && std::isfinite(unigram_on_val) &&
         val_loss <= unigram_on_val - margin;
}

nlohmann::json escape_stop_record(int64_t step, double val_loss, double unigram_on_val,
                                  double margin) {
  return {{"reason", "escaped"},
          {"step", step},
          {"val_loss", val_loss},
          {"unigram_on_val", unigram_on_val},
          {"margin", margin}};
}

bool stopped_on_escape(const nlohmann::json& summary, const Config& expected) {
  const double margin = expected.train.stop_below_unigram;
  if (!(margin > 0) || !summary.is_object() ||
      parse_choice<RunState>(summary.value("status", "")) != RunState::Completed)
    return false;
  const auto it = summary.find("stopped");
  if (it == summary.end() || !it->is_object() || it->value("reason", "") != "escaped") return false;
  const nlohmann::json step = it->value("step", nlohmann::json());
  const nlohmann::json m = it->value("margin", nlohmann::json());
  return step.is_number_integer() && step.get<int64_t>() < expected.train.max_iters &&
         m.is_number() && m.get<double>() == margin;
}

bool only_horizon_changes(const std::vector<std::string>& changes, const OptimConfig& expected) {
  const bool decay_unread = expected.schedule != ScheduleKind::Cosine;
  for (const std::string& c : changes) {
    const bool horizon =
        c.rfind("train.max_iters:", 0) == 0 || c.rfind("config.json: train.max_iters:", 0) == 0;
    const bool decay = c.rfind("optim.lr_decay_iters:", 0) == 0 ||
                       c.rfind("config.json: optim.lr_decay_iters:", 0) == 0;
    if (!horizon && !(decay && decay_unread)) return false;
    // A cosine decaying to max_iters (lr_decay_iters 0) moves with the horizon.
    if (horizon && expected.schedule == ScheduleKind::Cosine && expected.lr_decay_iters == 0)
      return false;
  }
  return true;
}

}  // namespace sl
