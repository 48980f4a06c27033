// The rules of `stacklab train --resume` (see resume.h).
#include "train/resume.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>

#include "config/loader.h"
#include "core/safetensors.h"
#include "data/source.h"
#include "train/escape_stop.h"
#include "train/milestones.h"
#include "train/provenance.h"
#include "train/run_state.h"
#include "train/schedule.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/json_read.h"

namespace sl {
namespace {

// Whether the learning rate of `kind` falls to optim.min_lr at optim.lr_decay_iters.
bool schedule_decays(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::Cosine:
      return true;
    case ScheduleKind::Constant:
    case ScheduleKind::WarmupConstant:
      return false;
  }
  return false;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The first step below `trained` whose learning rate differs between the schedules of `a` and
// `b` (each at its own train.max_iters), or -1 when none does.
int64_t first_rate_difference(const Config& a, const Config& b, int64_t trained) {
  for (int64_t s = 0; s < trained; ++s)
    if (learning_rate_at(a.optim, s, a.train.max_iters) !=
        learning_rate_at(b.optim, s, b.train.max_iters))
      return s;
  return -1;
}

// "steps 0-49" (or "step 0") of a run that trained `n` > 0 steps.
std::string steps_text(int64_t n) { return n == 1 ? "step 0" : "steps 0-" + std::to_string(n - 1); }

// "stacklab train RUN/config.json --train.max_iters=N ... --out NEW_DIR": the longer run from
// step 0.
std::string fresh_command(const std::string& run_dir, const Config& cfg, const std::string& more) {
  return "stacklab train " + run_dir +
         "/config.json --train.max_iters=" + std::to_string(cfg.train.max_iters) + more +
         " --out NEW_DIR";
}

// An extension past the decay horizon of a decaying schedule would run every new step at
// optim.min_lr (0 by default: the new steps would change nothing). Refused unless the user says
// where the decay ends now (--optim.lr_decay_iters, also to keep it where it was). Whether the
// run has decayed already is `so_far`'s: only a run trained to the horizon is told it has.
void check_extended_decay(const Config& started, const Config& cfg, bool decay_set,
                          const TrainedSoFar& so_far, const std::string& run_dir) {
  const int horizon = resolved_lr_decay_iters(started);
  if (decay_set || !schedule_decays(cfg.optim.schedule) || cfg.train.max_iters <= horizon) return;
  const std::string min_lr = number(cfg.optim.min_lr), n = std::to_string(cfg.train.max_iters);
  const std::string head =
      "--train.max_iters=" + n +
      ": the run's learning rate (optim.schedule=" + name_of(cfg.optim.schedule) + ") " +
      (so_far.step >= horizon ? "has decayed" : "decays") + " to optim.min_lr=" + min_lr +
      " at optim.lr_decay_iters=" + std::to_string(horizon) +
      (so_far.step >= horizon ? "" : " (the run is at step " + std::to_string(so_far.step) + ")") +
      ", so every step from " + std::to_string(horizon) + " on would run at lr " + min_lr + "; ";
  const std::string keep = "pass --optim.lr_decay_iters=" + std::to_string(horizon) +
                           " to keep it and train those steps at optim.min_lr";
  Config moved = started;
  moved.train.max_iters = cfg.train.max_iters;
  moved.optim.lr_decay_iters = cfg.train.max_iters;
  if (first_rate_difference(started, moved, so_far.step) < 0)
    throw Error(head + "extend the decay too with --optim.lr_decay_iters=" + n + " (or " + keep +
                ")");
  throw Error(head + keep + "; a decay to " + n +
              " would change the rate of steps the run has trained, so that schedule is a new "
              "run: " +
              fresh_command(run_dir, cfg, " --optim.lr_decay_iters=" + n));
}

// "note: the learning-rate decay now ends at ... (was ...)".
std::string decay_note(int now, int was) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "note: the learning-rate decay now ends at optim.lr_decay_iters=%d (was %d); the "
                "steps from here on follow the new schedule",
                now, was);
  return buf;
}

// "note: train.threads ... -> ...".
std::string threads_note(int was, int now) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "note: train.threads %d -> %d; losses are bit-identical to an uninterrupted run "
                "only at the same thread count",
                was, now);
  return buf;
}

// "--train.stop_at=m2", "--train.stop_below_unigram=0.1" or "--train.stop_at=" (no rule): the
// flag that sets `t`'s stop rule.
std::string stop_rule_flag(const TrainConfig& t) {
  if (t.stop_below_unigram > 0)
    return "--train.stop_below_unigram=" + nlohmann::json(t.stop_below_unigram).dump();
  return "--train.stop_at=" + name_of(t.stop_at);
}

// The reference losses of `cfg`'s val batches (data/source.h measure_on_batches), as the run in
// `run_dir` measures them at its start (a text run with its saved vocabulary): the lines of its
// milestones. Made once per data setting and process (a sweep asks for many runs of one chain).
nlohmann::json on_val_references(const Config& cfg, const std::string& run_dir) {
  std::error_code ec;
  const std::string vocab = run_dir + "/vocab.json";
  const bool text = cfg.data.source == SourceKind::Text;
  const std::string vocab_path = text && std::filesystem::exists(vocab, ec) ? vocab : "";
  const nlohmann::json c = to_json(cfg);
  const std::string key =
      nlohmann::json{c.at("data"),         cfg.model.vocab_size, cfg.model.block_size,
                     cfg.train.batch_size, cfg.train.eval_iters, vocab_path}
          .dump();
  static std::map<std::string, nlohmann::json> cache;
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  const auto data = make_data_source(name_of(cfg.data.source), cfg.model.vocab_size, cfg.data.order,
                                     cfg.data.alpha, cfg.data.seed, cfg.data.path,
                                     cfg.data.val_fraction, vocab_path);
  const std::vector<Batch> val =
      data->eval_batches(cfg.train.eval_iters, cfg.train.batch_size, cfg.model.block_size, false);
  ReferenceLosses refs = data->reference_losses(cfg.model.block_size);
  measure_on_batches(refs, *data, val);
  return cache[key] = to_json(refs);
}

// Why continuing the run in `run_dir` (trained as `so_far` under `started`'s stop rule) under
// `cfg`'s other stop rule would not be the run `cfg` names, or "": the new rule is judged on
// every eval the run has logged up to its checkpoint. Met before it, the run trained past where
// `cfg` stops; met at it, the resumed run evaluates that state again and stops there, training
// nothing. A rule met by none (a later milestone, or none) goes on as the uninterrupted run would.
std::string stop_rule_problem(const Config& started, const Config& cfg, const TrainedSoFar& so_far,
                              const std::string& run_dir) {
  const Milestones lines(on_val_references(cfg, run_dir), cfg.train);
  for (const auto& [step, val] : logged_evals(run_dir, so_far.step)) {
    if (step >= cfg.train.max_iters || !stop_rule_met(cfg, lines, val)) continue;
    char loss[48];
    std::snprintf(loss, sizeof loss, "val loss %.4f", val);
    const std::string rule = stop_rule_flag(cfg.train), was = stop_rule_text(started.train);
    if (step < so_far.step)
      return rule + ": " + run_dir + " trained past its eval at step " + std::to_string(step) +
             " (" + loss + "), where " + rule +
             " stops a run: its config.json would name a rule it did not follow. Keep " + was +
             ", or train the new rule from step 0: " + "stacklab train " + run_dir +
             "/config.json " + rule + " --out NEW_DIR";
    return rule + ": " + run_dir + " is at step " + std::to_string(step) + ", whose eval (" + loss +
           ") already meets " + rule +
           ": resumed, it evaluates that state again and stops there, so it would train nothing. "
           "Continue it to a later milestone (--train.stop_at=m2 or m3) or without a stop rule "
           "(--train.stop_at= --train.stop_below_unigram=0)";
  }
  return "";
}

// "train.stop_at \"m1\" -> \"m2\"": the stop keys that differ between `a` and `b`, for notes.
std::string stop_rule_change(const TrainConfig& a, const TrainConfig& b) {
  std::string s;
  if (a.stop_below_unigram != b.stop_below_unigram)
    s += "train.stop_below_unigram " + nlohmann::json(a.stop_below_unigram).dump() + " -> " +
         nlohmann::json(b.stop_below_unigram).dump();
  if (a.stop_at != b.stop_at)
    s += std::string(s.empty() ? "" : ", ") + "train.stop_at \"" + name_of(a.stop_at) + "\" -> \"" +
         name_of(b.stop_at) + "\"";
  return s;
}

}  // namespace

bool stop_rule_changes(const Config& started, const Config& cfg) {
  return !same_stop_rule(started.train, cfg.train);
}

TrainedSoFar trained_so_far(const std::string& run_dir) {
  TrainedSoFar t;
  std::error_code ec;
  if (std::filesystem::exists(run_dir + "/summary.json", ec))
    t.summary = nlohmann::json::parse(read_file(run_dir + "/summary.json"), nullptr, false);
  if (t.summary.is_discarded()) t.summary = nullptr;
  const std::string latest = run_dir + "/checkpoints/latest.safetensors";
  if (!std::filesystem::exists(latest, ec)) return t;
  const auto meta = read_safetensors_metadata(latest);
  const auto it = meta.find("train_state");
  const nlohmann::json st =
      it == meta.end() ? nlohmann::json() : nlohmann::json::parse(it->second, nullptr, false);
  const nlohmann::json step =
      st.is_object() ? st.value("step", nlohmann::json()) : nlohmann::json();
  if (!step.is_number_integer() || step.get<int64_t>() < 0)
    throw Error(latest +
                ": its train_state has no step to resume at; restore the file, or start "
                "the run over");
  t.step = step.get<int64_t>();
  return t;
}

std::string extension_problem(const Config& started, const Config& cfg, const TrainedSoFar& so_far,
                              const std::string& run_dir) {
  const bool rule_changed = stop_rule_changes(started, cfg);
  if (cfg.train.max_iters <= started.train.max_iters && !rule_changed) return "";
  const std::string n = std::to_string(cfg.train.max_iters);
  if (rule_changed) {
    if (std::string why = stop_rule_problem(started, cfg, so_far, run_dir); !why.empty())
      return why;
  } else if (stopped_by_its_rule(so_far.summary, cfg) &&
             so_far.summary.at("stopped").value("reason", "") == "milestone") {
    const nlohmann::json& st = so_far.summary.at("stopped");
    return run_dir + " stopped at milestone " + st.value("milestone", std::string("?")) +
           " at step " + st.at("step").dump() +
           " (train.stop_at): resumed at any horizon it evaluates that state again and stops "
           "there, so an extension to train.max_iters=" +
           n +
           " would train nothing and only relabel the run. To train past it, continue it to a "
           "later milestone or without a stop rule: stacklab train --resume " +
           run_dir + " --train.stop_at=m3 (or --train.stop_at=)";
  } else if (stopped_on_escape(so_far.summary, cfg)) {
    const nlohmann::json& st = so_far.summary.at("stopped");
    char why[160];
    std::snprintf(why, sizeof why, "val loss %.4f <= unigram on val %.4f - %g",
                  st.value("val_loss", 0.0), st.value("unigram_on_val", 0.0),
                  st.value("margin", 0.0));
    const std::string decay = std::to_string(cfg.optim.lr_decay_iters);
    return run_dir + " stopped on its escape rule at step " + st.at("step").dump() + " (" + why +
           ", train.stop_below_unigram): resumed at any horizon it evaluates that state again " +
           "and stops there, so an extension to train.max_iters=" + n +
           " would train nothing and only relabel the run. Under the same schedule it is " +
           "already that run's result (a sweep counts it done); to train past its escape, " +
           "continue it to a later milestone: stacklab train --resume " + run_dir +
           " --train.stop_below_unigram=0 --train.stop_at=m2 (or --train.stop_at= for no stop "
           "rule), or start a new run without the rule: " +
           fresh_command(run_dir, cfg,
                         " --optim.lr_decay_iters=" + decay + " --train.stop_below_unigram=0");
  }
  if (cfg.train.max_iters <= started.train.max_iters) return "";
  if (const int64_t s = first_rate_difference(started, cfg, so_far.step); s >= 0) {
    const std::string was = std::to_string(resolved_lr_decay_iters(started)),
                      now = std::to_string(resolved_lr_decay_iters(cfg));
    const double rate_was = learning_rate_at(started.optim, s, started.train.max_iters);
    const double rate_now = learning_rate_at(cfg.optim, s, cfg.train.max_iters);
    return "--optim.lr_decay_iters=" + now + ": " + run_dir + " trained " +
           steps_text(so_far.step) + " under optim.lr_decay_iters=" + was +
           " (optim.schedule=" + name_of(cfg.optim.schedule) +
           "), and the new decay changes the learning rate of step " + std::to_string(s) + " (" +
           number(rate_was) + " -> " + number(rate_now) +
           "): its config.json would name a schedule it never trained under. Keep the decay " +
           "(--optim.lr_decay_iters=" + was + "), or train the new schedule from step 0: " +
           fresh_command(run_dir, cfg, " --optim.lr_decay_iters=" + now);
  }
  return "";
}

nlohmann::json last_numeric_path(const std::string& run_dir) {
  const std::string path = run_dir + "/metrics.jsonl";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return nullptr;
  const std::string text = read_file(path);
  nlohmann::json last = nullptr;
  for (size_t start = 0; start < text.size();) {
    const size_t nl = text.find('\n', start);
    const std::string_view line =
        std::string_view(text).substr(start, nl == std::string::npos ? nl : nl - start);
    start = nl == std::string::npos ? text.size() : nl + 1;
    // Only the start and resume records hold it: the other lines are not parsed.
    if (line.find("\"numeric_path\"") == std::string_view::npos) continue;
    const nlohmann::json rec = nlohmann::json::parse(line, nullptr, false);
    if (!rec.is_object()) continue;
    const std::string kind = rec.value("kind", "");
    if ((kind == "start" || kind == "resume") && rec.contains("numeric_path") &&
        rec["numeric_path"].is_object())
      last = rec["numeric_path"];
  }
  return last;
}

std::vector<std::string> numeric_path_notes(const nlohmann::json& was, const nlohmann::json& now) {
  std::vector<std::string> notes;
  if (!was.is_object() || !now.is_object()) return notes;
  static const char* const kParts[][2] = {{"matmul", "matrix-product path"},
                                          {"openblas_core", "OpenBLAS kernels"},
                                          {"vector_loops", "vector-loop clone"}};
  for (const auto& [key, what] : kParts) {
    const nlohmann::json a = was.value(key, nlohmann::json()), b = now.value(key, nlohmann::json());
    if (!a.is_string() || !b.is_string() || a == b) continue;
    notes.push_back("note: numeric_path." + std::string(key) + " " + a.get<std::string>() + " -> " +
                    b.get<std::string>() +
                    " (the run's last start or resume record); losses are bit-identical to an "
                    "uninterrupted run only on the same " +
                    what);
  }
  return notes;
}

bool extension_started(const std::string& run_dir, const Config& cfg) {
  std::error_code ec;
  if (!std::filesystem::exists(run_dir + "/summary.json", ec)) return false;
  const nlohmann::json s =
      nlohmann::json::parse(read_file(run_dir + "/summary.json"), nullptr, false);
  if (!s.is_object()) return false;
  const nlohmann::json iters = s.value("max_iters", nlohmann::json());
  return s.value("status", "") == spell(RunState::Running) && iters.is_number_integer() &&
         iters.get<int64_t>() == cfg.train.max_iters;
}

Config load_run_config(const std::string& run_dir) {
  const std::string path = run_dir + "/config.json";
  if (!std::filesystem::exists(path))
    throw Error(run_dir + ": not a run directory (no config.json)");
  nlohmann::json j = read_json_file(path);
  if (j.is_object()) j.erase("derived");
  Config cfg = config_from_json(j, path);
  cfg.source_path = path;
  return cfg;
}

void check_resume_provenance(const std::string& run_dir, const nlohmann::json& stored,
                             const Config& started) {
  if (stored.is_null()) return;
  // An extension writes summary.json ("running", with the new max_iters), then config.json, then
  // provenance.json: stopped between the last two, the fingerprint still holds the old horizon.
  // That difference is the extension's own, not a changed run, but only with the summary's word
  // for it: a config.json edited by hand has none and is refused as before.
  nlohmann::json expected = stored;
  if (extension_started(run_dir, started) && expected.contains("config") &&
      expected["config"].is_object()) {
    nlohmann::json& c = expected["config"];
    const nlohmann::json had = c.contains("train") && c["train"].is_object()
                                   ? c["train"].value("max_iters", nlohmann::json())
                                   : nlohmann::json();
    if (had.is_number_integer() && had.get<int64_t>() < started.train.max_iters) {
      c["train"]["max_iters"] = started.train.max_iters;
      if (c.contains("optim") && c["optim"].is_object())
        c["optim"]["lr_decay_iters"] = started.optim.lr_decay_iters;
    }
    // A continuation to another stop rule writes config.json, then provenance.json, the same way.
    if (c.contains("train") && c["train"].is_object()) {
      const nlohmann::json now = to_json(started).at("train");
      for (const char* k : {"stop_at", "stop_below_unigram"}) c["train"][k] = now.at(k);
    }
  }
  const std::vector<std::string> changes = provenance_changes(expected, make_provenance(started));
  if (changes.empty()) return;
  std::string list;
  for (const auto& c : changes) list += "\n  " + c;
  throw Error(run_dir +
              ": cannot resume: what the run was made from has changed since it started (" +
              run_dir + "/provenance.json):" + list +
              "\nrestore the data file (or config.json), or start a new run");
}

ResumedConfig resumed_config(const Config& started, const std::vector<std::string>& overrides,
                             const std::string& run_dir, const TrainedSoFar& so_far) {
  nlohmann::json j = to_json(started);
  std::string refused;
  bool decay_set = false;
  for (const auto& kv : overrides) {
    const std::string key = apply_override(j, kv, run_dir + "/config.json");
    decay_set = decay_set || key == "optim.lr_decay_iters";
    if (key != "train.max_iters" && key != "train.threads" && key != "optim.lr_decay_iters" &&
        key != "train.stop_at" && key != "train.stop_below_unigram")
      refused += (refused.empty() ? "" : ", ") + kv;
  }
  if (!refused.empty())
    throw Error("--resume: config overrides (" + refused +
                ") are not accepted; a resumed run keeps the config it started with (only "
                "--train.max_iters=N, "
                "to extend it, with --optim.lr_decay_iters=D to move its decay, "
                "--train.stop_at=M (with --train.stop_below_unigram=0) to go on to a later "
                "milestone, and --train.threads=T may change)");
  ResumedConfig r;
  Config& cfg = r.cfg;
  cfg = config_from_json(j, run_dir + "/config.json (with the --resume overrides)");
  cfg.source_path = started.source_path;
  if (cfg.train.max_iters < started.train.max_iters)
    throw Error("--train.max_iters=" + std::to_string(cfg.train.max_iters) +
                ": a resumed run can be extended, not "
                "shortened (it was started with train.max_iters=" +
                std::to_string(started.train.max_iters) + ")");
  // A repeat of the extension config.json already holds (a requeued Slurm task, a sweep run
  // again after a kill) is a resume of that extension: the same horizon and the same decay.
  const bool repeat = cfg.train.max_iters == started.train.max_iters &&
                      cfg.optim.lr_decay_iters == started.optim.lr_decay_iters;
  if (decay_set && cfg.train.max_iters == started.train.max_iters && !repeat)
    throw Error(
        "--optim.lr_decay_iters: a resumed run keeps its schedule; its decay can move only with an "
        "extension "
        "(--train.max_iters=N above " +
        std::to_string(started.train.max_iters) + ")");
  if (cfg.train.max_iters > started.train.max_iters) {
    if (!decay_set && started.optim.lr_decay_iters == 0)
      cfg.optim.lr_decay_iters = started.train.max_iters;  // the horizon it was trained under
    // A run stopped by its rule first: any horizon stops it at the same eval again.
    if (stopped_by_its_rule(so_far.summary, cfg) && !stop_rule_changes(started, cfg))
      throw Error(extension_problem(started, cfg, so_far, run_dir));
    check_extended_decay(started, cfg, decay_set, so_far, run_dir);
    if (const std::string why = extension_problem(started, cfg, so_far, run_dir); !why.empty())
      throw Error(why);
    r.decay_changed = resolved_lr_decay_iters(cfg) != resolved_lr_decay_iters(started);
    if (r.decay_changed)
      r.notes.push_back(decay_note(resolved_lr_decay_iters(cfg), resolved_lr_decay_iters(started)));
    r.notes.push_back("extending " + run_dir + " from " + std::to_string(started.train.max_iters) +
                      " to " + std::to_string(cfg.train.max_iters) + " steps");
  }
  if (stop_rule_changes(started, cfg)) {
    if (cfg.train.max_iters == started.train.max_iters)  // else checked with the extension
      if (const std::string why = extension_problem(started, cfg, so_far, run_dir); !why.empty())
        throw Error(why);
    r.notes.push_back("note: the stop rule changes (" + stop_rule_change(started.train, cfg.train) +
                      "): no eval the run has made meets it, so it goes on from step " +
                      std::to_string(so_far.step) + " as a run under it from step 0 would");
  }
  if (cfg.train.threads != started.train.threads)
    r.notes.push_back(threads_note(started.train.threads, cfg.train.threads));
  return r;
}

void check_checkpoint_not_lost(const std::string& run_dir, const Config& cfg) {
  const std::string latest = run_dir + "/checkpoints/latest.safetensors";
  std::string why;
  std::error_code ec;
  if (std::filesystem::exists(latest, ec)) return;
  if (std::filesystem::exists(run_dir + "/summary.json", ec)) {
    nlohmann::json summary;
    try {
      summary = nlohmann::json::parse(read_file(run_dir + "/summary.json"));
    } catch (const nlohmann::json::exception&) {  // torn: the log below decides
    }
    const nlohmann::json st =
        summary.is_object() ? summary.value("status", nlohmann::json()) : nullptr;
    const std::optional<RunState> state =
        st.is_string() ? parse_choice<RunState>(st.get<std::string>()) : std::nullopt;
    if (state == RunState::Completed || state == RunState::Interrupted)
      why = "its summary.json says " + spell(*state);
  }
  const std::string metrics = run_dir + "/metrics.jsonl";
  const int64_t first = cfg.train.ckpt_interval;  // the step of the first checkpoint
  if (why.empty() && first > 0 && first < cfg.train.max_iters &&
      std::filesystem::exists(metrics, ec)) {
    const std::string text = read_file(metrics);
    for (size_t start = 0; start < text.size() && why.empty();) {
      const size_t nl = text.find('\n', start);
      const std::string line = text.substr(start, nl == std::string::npos ? nl : nl - start);
      start = nl == std::string::npos ? text.size() : nl + 1;
      const nlohmann::json rec = nlohmann::json::parse(line, nullptr, false);
      if (!rec.is_object() || !rec.value("step", nlohmann::json()).is_number_integer()) continue;
      const int64_t step = rec.value("step", int64_t{0});
      if (rec.value("kind", "") == "resume" || step >= first)
        why = "its metrics.jsonl has a " + rec.value("kind", std::string("?")) +
              " record of step " + std::to_string(step) +
              ", past the first checkpoint (train.ckpt_interval=" + std::to_string(first) + ")";
    }
  }
  if (!why.empty())
    throw Error(latest + " is missing, but the run wrote it (" + why +
                "); restore the file to resume, or start the run over with stacklab train " +
                run_dir + "/config.json --out " + run_dir + " --force");
}

}  // namespace sl
