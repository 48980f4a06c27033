// Learning-rate schedules: the rate for a given 0-based iteration from optim.schedule
// ("constant", "warmup_constant", "cosine"). A pure function of the config and the step, so a
// resumed run gets the same rates. Not here: applying the rate (Optimizer::step takes it).
#pragma once
#include <cstdint>

#include "config/config.h"

namespace sl {

// step is the 0-based iteration; max_iters stands in for optim.lr_decay_iters when that is 0.
//   constant:         lr
//   warmup_constant:  lr*(step+1)/warmup_iters while step < warmup_iters, then lr
//   cosine:           the same warmup, then min_lr + 0.5*(1 + cos(pi*r))*(lr - min_lr) with
//                     r = (step - warmup_iters)/(lr_decay_iters - warmup_iters), then min_lr
//                     from lr_decay_iters on (also when lr_decay_iters <= warmup_iters).
// Throws sl::Error for an unknown schedule name or a negative step.
double learning_rate_at(const OptimConfig& cfg, int64_t step, int64_t max_iters);

}  // namespace sl
