// The escape rule as a way to end a run (train.stop_below_unigram = margin in nats, 0 = off): a
// run has escaped the plateau at the first eval whose val loss is at least `margin` below the
// unigram predictor's loss on the same val batches (reference_losses.unigram_on_val). This is
// the definition of configs/experiments/escape_law_rules.json's "escaped" and of
// scripts/stacklab/studies/escape/fit.py; with margin 0.1 it is convergence_rules.json's, measured
// against the val batches' unigram loss. The trainer stops there (summary.json "stopped"); the
// sweep then counts the run as done at any longer horizon, and `train --resume` refuses to extend
// it (train/resume.h: it would stop at the same eval, training nothing) unless the stop rule moves
// to a later milestone (train.stop_at, train/milestones.h, which generalises this rule).
// Not here: the training loop (trainer.cpp), the fit of escape steps (escape_law.py).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"

namespace sl {

// Whether `val_loss` is escaped by the rule: margin > 0 and val_loss <= unigram_on_val - margin.
bool escaped(double val_loss, double unigram_on_val, double margin);

// summary.json's "stopped" of a run ended by the rule at eval `step`:
// {"reason": "escaped", "step", "val_loss", "unigram_on_val", "margin"}.
nlohmann::json escape_stop_record(int64_t step, double val_loss, double unigram_on_val,
                                  double margin);

// Whether a run whose summary.json is `summary` ended by the rule with the margin `expected`
// still asks for (> 0): status completed, "stopped" naming "escaped" at a step below
// expected.train.max_iters, with expected.train.stop_below_unigram as its margin. Such a run is
// done at any horizon past its stop, since it would stop at the same eval again.
bool stopped_on_escape(const nlohmann::json& summary, const Config& expected);

// Whether `changes` (provenance_changes' "key: old -> new" lines) change only what cannot alter a
// run stopped on escape before its stop: train.max_iters, and optim.lr_decay_iters under a
// schedule that does not read it (constant, warmup_constant). Under cosine a new horizon moves the
// decay of every step, so the run is not the same run.
bool only_horizon_changes(const std::vector<std::string>& changes, const OptimConfig& expected);

}  // namespace sl
