// The milestones of a run and the stop rules read on them (see milestones.h).
#include "train/milestones.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <string_view>

#include "train/escape_stop.h"
#include "train/records.h"
#include "train/run_state.h"
#include "util/error.h"
#include "util/fsutil.h"

namespace sl {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

const std::vector<MilestoneKind>& milestone_kinds() {
  static const std::vector<MilestoneKind> kinds = {
      {StopAt::M1, "m1", "unigram_on_val", false, "train.milestone_margin", "leaves the plateau"},
      {StopAt::M2, "m2", "bigram_on_val", false, "train.milestone_margin",
       "learns beyond symbol pairs"},
      {StopAt::M3, "m3", "optimum_on_val", true, "train.near_optimum", "near the optimum"},
  };
  return kinds;
}

const MilestoneKind& milestone_kind(StopAt id) {
  for (const MilestoneKind& k : milestone_kinds())
    if (k.id == id) return k;
  throw InternalError("milestone_kind: no milestone for train.stop_at \"" + name_of(id) + "\"");
}

double milestone_margin(const MilestoneKind& kind, const TrainConfig& t) {
  return kind.above ? t.near_optimum : t.milestone_margin;
}

Milestones::Milestones(const nlohmann::json& refs, const TrainConfig& t) {
  for (const MilestoneKind& k : milestone_kinds()) {
    Entry e;
    e.kind = &k;
    e.margin = milestone_margin(k, t);
    const nlohmann::json ref =
        refs.is_object() ? refs.value(k.reference, nlohmann::json()) : nlohmann::json();
    e.reference = ref.is_number() ? ref.get<double>() : kNaN;
    e.line = e.reference + (k.above ? e.margin : -e.margin);
    entries_.push_back(e);
  }
}

std::vector<const MilestoneKind*> Milestones::record(int64_t step, double val_loss) {
  std::vector<const MilestoneKind*> first;
  for (Entry& e : entries_)
    if (e.step < 0 && meets(e.kind->id, val_loss)) {
      e.step = step;
      e.val_loss = val_loss;
      first.push_back(e.kind);
    }
  return first;
}

bool Milestones::meets(StopAt id, double val_loss) const {
  const double l = line(id);
  return std::isfinite(l) && std::isfinite(val_loss) && val_loss <= l;
}

double Milestones::line(StopAt id) const {
  for (const Entry& e : entries_)
    if (e.kind->id == id) return e.line;
  return kNaN;
}

double Milestones::reference(StopAt id) const {
  for (const Entry& e : entries_)
    if (e.kind->id == id) return e.reference;
  return kNaN;
}

bool Milestones::reached(StopAt id) const {
  for (const Entry& e : entries_)
    if (e.kind->id == id) return e.step >= 0;
  return false;
}

nlohmann::json Milestones::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const Entry& e : entries_)
    j[e.kind->name] = {
        {"line", finite_or_null(e.line)},
        {"reference", e.kind->reference},
        {"margin", e.margin},
        {"step", e.step < 0 ? nlohmann::json(nullptr) : nlohmann::json(e.step)},
        {"val_loss", e.step < 0 ? nlohmann::json(nullptr) : finite_or_null(e.val_loss)}};
  return j;
}

nlohmann::json Milestones::stop_record(StopAt id, int64_t step, double val_loss) const {
  const MilestoneKind& k = milestone_kind(id);
  double margin = 0.0;
  for (const Entry& e : entries_)
    if (e.kind == &k) margin = e.margin;
  return {{"reason", "milestone"},
          {"milestone", k.name},
          {"step", step},
          {"val_loss", val_loss},
          {"line", finite_or_null(line(id))},
          {"reference", k.reference},
          {"margin", margin}};
}

bool stop_rule_met(const Config& cfg, const Milestones& m, double val_loss) {
  const TrainConfig& t = cfg.train;
  if (t.stop_below_unigram > 0) {
    // The escape rule: m1's reference with a margin of its own.
    return escaped(val_loss, m.reference(StopAt::M1), t.stop_below_unigram);
  }
  return t.stop_at != StopAt::Off && m.meets(t.stop_at, val_loss);
}

bool same_stop_rule(const TrainConfig& a, const TrainConfig& b) {
  if (a.stop_below_unigram != b.stop_below_unigram || a.stop_at != b.stop_at) return false;
  return a.stop_at == StopAt::Off || milestone_margin(milestone_kind(a.stop_at), a) ==
                                         milestone_margin(milestone_kind(b.stop_at), b);
}

std::string stop_rule_text(const TrainConfig& t) {
  if (t.stop_below_unigram > 0)
    return "train.stop_below_unigram " + nlohmann::json(t.stop_below_unigram).dump();
  if (t.stop_at != StopAt::Off) return "train.stop_at \"" + name_of(t.stop_at) + "\"";
  return "no stop rule";
}

bool stopped_by_its_rule(const nlohmann::json& summary, const Config& expected) {
  if (stopped_on_escape(summary, expected)) return true;
  const StopAt at = expected.train.stop_at;
  if (at == StopAt::Off || !summary.is_object() ||
      parse_choice<RunState>(summary.value("status", "")) != RunState::Completed)
    return false;
  const auto it = summary.find("stopped");
  if (it == summary.end() || !it->is_object() || it->value("reason", "") != "milestone" ||
      it->value("milestone", "") != name_of(at))
    return false;
  const nlohmann::json step = it->value("step", nlohmann::json());
  const nlohmann::json margin = it->value("margin", nlohmann::json());
  return step.is_number_integer() && step.get<int64_t>() < expected.train.max_iters &&
         margin.is_number() &&
         margin.get<double>() == milestone_margin(milestone_kind(at), expected.train);
}

std::vector<std::pair<int64_t, double>> logged_evals(const std::string& run_dir, int64_t up_to) {
  std::vector<std::pair<int64_t, double>> evals;
  const std::string path = run_dir + "/metrics.jsonl";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return evals;
  const std::string text = read_file(path);
  for (size_t start = 0; start < text.size();) {
    const size_t nl = text.find('\n', start);
    const std::string_view line =
        std::string_view(text).substr(start, nl == std::string::npos ? nl : nl - start);
    start = nl == std::string::npos ? text.size() : nl + 1;
    if (line.find("\"eval\"") == std::string_view::npos) continue;  // only eval records parsed
    const nlohmann::json rec = nlohmann::json::parse(line, nullptr, false);
    if (!rec.is_object() || rec.value("kind", "") != "eval") continue;
    const nlohmann::json step = rec.value("step", nlohmann::json());
    const nlohmann::json val = rec.value("val_loss", nlohmann::json());
    if (step.is_number_integer() && step.get<int64_t>() <= up_to && val.is_number())
      evals.emplace_back(step.get<int64_t>(), val.get<double>());
  }
  return evals;
}

}  // namespace sl
