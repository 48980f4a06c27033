// Learning-rate schedules, following nanoGPT's get_lr (train.py) with one deliberate difference:
// nanoGPT now warms up with lr*(it+1)/(warmup_iters+1), which never reaches lr during warmup;
// here it is lr*(step+1)/warmup_iters (as in llm.c and build-nanogpt), so the last warmup step
// runs at exactly lr and the cosine then starts from lr at step warmup_iters.
#include "train/schedule.h"

#include <cmath>
#include <numbers>
#include <string>

#include "util/error.h"

namespace sl {

namespace {

// lr*(step+1)/warmup_iters, for step < warmup_iters.
double warmup_rate(const OptimConfig& cfg, int64_t step) {
  return cfg.learning_rate * static_cast<double>(step + 1) / static_cast<double>(cfg.warmup_iters);
}

}  // namespace

double learning_rate_at(const OptimConfig& cfg, int64_t step, int64_t max_iters) {
  if (step < 0) throw Error("[learning_rate_at] step " + std::to_string(step) + " is negative");
  switch (cfg.schedule) {
    case ScheduleKind::Constant:
      return cfg.learning_rate;
    case ScheduleKind::WarmupConstant:
      return step < cfg.warmup_iters ? warmup_rate(cfg, step) : cfg.learning_rate;
    case ScheduleKind::Cosine:
      break;
  }

  if (step < cfg.warmup_iters) return warmup_rate(cfg, step);
  const int64_t decay_iters = cfg.lr_decay_iters == 0 ? max_iters : cfg.lr_decay_iters;
  if (step >= decay_iters)
    return cfg.min_lr;  // nanoGPT: it > lr_decay_iters; equal at == (coeff 0)
  const double ratio = static_cast<double>(step - cfg.warmup_iters) /
                       static_cast<double>(decay_iters - cfg.warmup_iters);  // in [0, 1)
  const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * ratio));     // 1 -> 0
  return cfg.min_lr + coeff * (cfg.learning_rate - cfg.min_lr);
}

}  // namespace sl
