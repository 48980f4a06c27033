// Milestones: what a run has learned, read on its own val batches. Each is a line the val loss
// crosses, drawn from a reference predictor's loss on the same batches (data/source.h
// ReferenceLosses' *_on_val), and a run reaches it at the first eval at or below the line:
//   m1  leaves the plateau          unigram_on_val - train.milestone_margin  (the escape)
//   m2  learns beyond symbol pairs  bigram_on_val  - train.milestone_margin  (needs token mixing)
//   m3  near the optimum            optimum_on_val + train.near_optimum      (synthetic data only)
// Every run records them (summary.json "milestones"); train.stop_at ends a run at one of them.
// Not here: the older escape rule train.stop_below_unigram (train/escape_stop.h), the loop.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"

namespace sl {

// One milestone, declared once: listings, records, docs and the stop rule iterate over these.
struct MilestoneKind {
  StopAt id;
  const char* name;        // "m1", as train.stop_at and summary.json spell it
  const char* reference;   // the reference_losses key the line is drawn from
  bool above;              // the line is the reference + the margin (m3), else - the margin
  const char* margin_key;  // the config key of the margin
  const char* meaning;     // "leaves the plateau"
};
const std::vector<MilestoneKind>& milestone_kinds();  // m1, m2, m3 in order
const MilestoneKind& milestone_kind(StopAt id);       // InternalError for StopAt::Off

// The margin of `kind` under `t` (train.milestone_margin or train.near_optimum), in nats.
double milestone_margin(const MilestoneKind& kind, const TrainConfig& t);

// A run's milestones: the lines, and the first eval at or below each.
class Milestones {
 public:
  Milestones() = default;
  // The lines from `refs` (to_json of ReferenceLosses with the *_on_val keys; a key absent or
  // null gives no line: that milestone is never reached) and the margins of `t`.
  Milestones(const nlohmann::json& refs, const TrainConfig& t);

  // Judges the eval at `step` with `val_loss`; returns the milestones first reached at it.
  std::vector<const MilestoneKind*> record(int64_t step, double val_loss);

  // Whether `val_loss` is at or below the line of `id` (false without a line).
  bool meets(StopAt id, double val_loss) const;
  double line(StopAt id) const;       // NaN without one
  double reference(StopAt id) const;  // the reference loss the line is drawn from, or NaN
  bool reached(StopAt id) const;

  // {"m1": {"line": x|null, "reference": "unigram_on_val", "margin": d, "step": s|null,
  //  "val_loss": v|null}, "m2": ..., "m3": ...}
  nlohmann::json to_json() const;

  // summary.json's "stopped" of a run ended by train.stop_at = `id` at the eval `step`:
  // {"reason": "milestone", "milestone", "step", "val_loss", "line", "reference", "margin"}.
  nlohmann::json stop_record(StopAt id, int64_t step, double val_loss) const;

 private:
  struct Entry {
    const MilestoneKind* kind = nullptr;
    double margin = 0.0, reference = 0.0, line = 0.0;  // NaN when the reference is unknown
    int64_t step = -1;                                 // -1: not reached
    double val_loss = 0.0;
  };
  std::vector<Entry> entries_;
};

// Whether cfg's stop rule (train.stop_below_unigram's escape, or train.stop_at's milestone) ends
// a run at an eval with `val_loss` before its horizon, the lines being `m`'s (m1's reference is
// the escape rule's unigram_on_val).
bool stop_rule_met(const Config& cfg, const Milestones& m, double val_loss);

// Whether two configs stop by the same rule: stop_below_unigram, stop_at, and the margin of the
// milestone stop_at names.
bool same_stop_rule(const TrainConfig& a, const TrainConfig& b);

// "train.stop_at \"m2\"", "train.stop_below_unigram 0.1" or "no stop rule": how a message names
// cfg's rule.
std::string stop_rule_text(const TrainConfig& t);

// Whether a run whose summary.json is `summary` ended by the stop rule `expected` still has, at a
// step below expected.train.max_iters: the escape rule with its margin (escape_stop.h
// stopped_on_escape), or the milestone of train.stop_at with its margin. Such a run is done at any
// horizon past its stop, since it would stop at the same eval again.
bool stopped_by_its_rule(const nlohmann::json& summary, const Config& expected);

// The (step, val_loss) of the eval records of RUN_DIR/metrics.jsonl with a step at most
// `up_to` (a finite val_loss; other lines skipped), in file order.
std::vector<std::pair<int64_t, double>> logged_evals(const std::string& run_dir, int64_t up_to);

}  // namespace sl
