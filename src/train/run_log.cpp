// The run log: metrics.jsonl records, summary.json and console lines (see run_log.h).
#include "train/run_log.h"

#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/blas.h"
#include "core/fpmode.h"
#include "nn/wiring.h"
#include "train/layer_stats.h"
#include "train/records.h"
#include "train/setup.h"
#include "util/duration.h"
#include "util/fsutil.h"

namespace sl {
namespace {

using Clock = std::chrono::steady_clock;

std::string fixed4(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

// "3-5, 9": 1-based line numbers as ranges.
std::string line_ranges(const std::vector<size_t>& lines) {
  std::string s;
  for (size_t i = 0; i < lines.size();) {
    size_t j = i;
    while (j + 1 < lines.size() && lines[j + 1] == lines[j] + 1) ++j;
    s += (s.empty() ? "" : ", ") + std::to_string(lines[i]) +
         (j > i ? "-" + std::to_string(lines[j]) : "");
    i = j + 1;
  }
  return s;
}

}  // namespace

nlohmann::json numeric_path_json() {
  return {{"matmul", matmul_path()},
          {"openblas_core", openblas_core()},
          {"vector_loops", simd_clone()},
          {"threads", num_threads()},
          {"flush_subnormals", flush_subnormals_on()}};
}

RunLog::RunLog(const Config& cfg, std::string dir, std::string command_line, bool progress_tty)
    : cfg_(cfg),
      dir_(std::move(dir)),
      command_line_(std::move(command_line)),
      progress_tty_(progress_tty) {}

int64_t RunLog::tokens_per_step() const {
  return static_cast<int64_t>(cfg_.train.batch_size) * cfg_.model.block_size *
         cfg_.train.grad_accum_steps;
}

void RunLog::open_metrics() { metrics_ = std::make_unique<LineLog>(dir_ + "/metrics.jsonl"); }

void RunLog::start(int64_t step, bool resumed, int64_t n_params, const nlohmann::json& refs,
                   const nlohmann::json& data_check) {
  std::printf("%s\n%s%s -> %s\n", describe_model(cfg_, n_params).c_str(),
              resumed ? "resuming at step " : "training",
              resumed ? std::to_string(step).c_str() : "", dir_.c_str());
  std::printf("reference losses: uniform %.4f, unigram %.4f, optimal %s\n",
              refs["uniform"].get<double>(), refs["unigram"].get<double>(),
              refs["optimal"].is_null() ? "unknown"
                                        : std::to_string(refs["optimal"].get<double>()).c_str());
  // On the val batches: the references and the milestone lines drawn from them.
  std::string on_val, lines;
  for (const MilestoneKind& m : milestone_kinds()) {
    const nlohmann::json ref = refs.value(m.reference, nlohmann::json());
    const std::string ref_name(m.reference);
    const std::string name = ref_name.substr(0, ref_name.find('_'));  // "unigram"
    const double margin = milestone_margin(m, cfg_.train);
    const double r = ref.is_number() ? ref.get<double>() : 0.0;
    on_val += (on_val.empty() ? "" : ", ") + name + " " + (ref.is_number() ? fixed4(r) : "unknown");
    lines += std::string(lines.empty() ? "" : "; ") + m.name + " (" + m.meaning + ") " +
             (ref.is_number() ? "at val <= " + fixed4(m.above ? r + margin : r - margin)
                              : "never (no " + name + ")");
  }
  std::printf("on the val batches: %s%s\nmilestones: %s\n", on_val.c_str(),
              refs.contains("optimum_on_val_note")
                  ? (" (" + refs["optimum_on_val_note"].get<std::string>() + ")").c_str()
                  : "",
              lines.c_str());
  std::fflush(stdout);
  metrics_->write_line(checked_record(nlohmann::json{{"step", step},
                                                     {"kind", resumed ? "resume" : "start"},
                                                     {"n_layer", cfg_.model.n_layer},
                                                     {"n_params", n_params},
                                                     {"wiring", wiring_id(cfg_.model)},
                                                     {"formula", describe_wiring(cfg_.model)},
                                                     {"reference_losses", refs},
                                                     {"tokens_per_step", tokens_per_step()},
                                                     {"numeric_path", numeric_path_json()},
                                                     {"layer_metrics", layer_metrics_json()},
                                                     {"data_check", data_check}})
                           .dump());
  refs_ = refs;
  data_check_ = data_check;
  window_start_ = Clock::now();
}

void RunLog::eval(int64_t step, double val_loss, double train_loss) {
  metrics_->write_line(checked_record(nlohmann::json{{"step", step},
                                                     {"kind", "eval"},
                                                     {"val_loss", finite_or_null(val_loss)},
                                                     {"train_loss", finite_or_null(train_loss)}})
                           .dump());
  std::printf("%sstep %lld/%lld | eval: val loss %.4f, train loss %.4f\n", line_start(),
              static_cast<long long>(step), static_cast<long long>(cfg_.train.max_iters), val_loss,
              train_loss);
  std::fflush(stdout);
}

void RunLog::layers(int64_t step, nlohmann::json rec, double loss) {
  rec["step"] = step;
  rec["kind"] = "layers";
  rec["loss"] = finite_or_null(loss);
  metrics_->write_line(checked_record(rec).dump());
}

void RunLog::milestone(const MilestoneKind& m, int64_t step, double val_loss, double line) {
  std::printf("%sstep %lld | %s reached: %s (val loss %.4f <= %.4f)\n", line_start(),
              static_cast<long long>(step), m.name, m.meaning, val_loss, line);
  std::fflush(stdout);
}

void RunLog::stopped(const nlohmann::json& stopped) {
  if (stopped.value("reason", "") == "milestone") {
    std::printf("%sstopping at step %lld: %s reached (train.stop_at)\n", line_start(),
                static_cast<long long>(stopped.at("step").get<int64_t>()),
                stopped.at("milestone").get<std::string>().c_str());
    return;
  }
  std::printf(
      "%sescaped at step %lld: val loss %s <= unigram on val %s - %s "
      "(train.stop_below_unigram): stopping\n",
      line_start(), static_cast<long long>(stopped.at("step").get<int64_t>()),
      fixed4(stopped.at("val_loss").get<double>()).c_str(),
      fixed4(stopped.at("unigram_on_val").get<double>()).c_str(),
      stopped.at("margin").dump().c_str());
}

void RunLog::diverged(const nlohmann::json& divergence) {
  nlohmann::json rec = divergence;
  rec["kind"] = "diverged";
  metrics_->write_line(checked_record(rec).dump());
  const size_t blocks = divergence.at("blocks").size();
  const std::string where = blocks == 0
                                ? ""
                                : ", " + std::to_string(blocks) + " block" +
                                      (blocks == 1 ? "" : "s") + " with a non-finite gradient";
  std::printf("%sstep %lld: diverged (%s%s); the run stops here without applying this step\n",
              line_start(), static_cast<long long>(divergence.at("step").get<int64_t>()),
              divergence.at("reason").get<std::string>().c_str(), where.c_str());
}

void RunLog::train_step(int64_t step, double loss, double lr, double gnorm, double ms) {
  const int64_t max_iters = cfg_.train.max_iters;
  ms_avg_ =
      window_steps_ == 0 ? ms : ms_avg_ + (ms - ms_avg_) / static_cast<double>(window_steps_ + 1);
  ++window_steps_;
  if (step % cfg_.log.log_interval == 0 || step == max_iters - 1) {
    const double tok_s = static_cast<double>(window_steps_) *
                         static_cast<double>(tokens_per_step()) / seconds_since(window_start_);
    metrics_->write_line(checked_record(nlohmann::json{{"step", step},
                                                       {"kind", "train"},
                                                       {"loss", loss},
                                                       {"lr", lr},
                                                       {"grad_norm", gnorm},
                                                       {"tokens_per_sec", tok_s},
                                                       {"ms_per_step", ms_avg_}})
                             .dump());
    std::printf(
        "%sstep %lld/%lld | loss %.4f | lr %.2e | grad norm %.3g | %.1f ms/step | %.0f tok/s | "
        "ETA %s\n",
        line_start(), static_cast<long long>(step), static_cast<long long>(max_iters), loss, lr,
        gnorm, ms_avg_, tok_s,
        format_duration(static_cast<double>(max_iters - step - 1) * ms_avg_ / 1000.0).c_str());
    std::fflush(stdout);
    window_start_ = Clock::now();
    window_steps_ = 0;
  } else if (progress_tty_) {
    std::printf("\r\033[Kstep %lld/%lld | loss %.4f | %.1f ms/step", static_cast<long long>(step),
                static_cast<long long>(max_iters), loss, ms_avg_);
    std::fflush(stdout);
  }
}

void RunLog::summary(RunState state, int64_t steps, int64_t start_step, double wall_seconds,
                     double run_seconds, const RunOutcome& o) const {
  nlohmann::json s = {
      {"status", spell(state)},
      {"final_train_loss", finite_or_null(o.last_train_eval)},
      {"final_val_loss", finite_or_null(o.last_val)},
      {"final_eval_step",
       o.last_eval_step < 0 ? nlohmann::json(nullptr) : nlohmann::json(o.last_eval_step)},
      {"best_val_loss", finite_or_null(o.best_val)},
      {"last_batch_loss", finite_or_null(o.last_train_loss)},
      {"reference_losses", refs_},
      {"steps", steps},
      {"max_iters", cfg_.train.max_iters},
      {"wall_seconds", wall_seconds},
      {"tokens_per_sec", run_seconds > 0 ? static_cast<double>(steps - start_step) *
                                               static_cast<double>(tokens_per_step()) / run_seconds
                                         : 0.0},
      {"diverged", !o.divergence.is_null()},
      {"divergence", o.divergence},
      {"stopped", o.stopped},
      {"milestones", o.milestones},
      {"error", o.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.error)},
      {"wiring", wiring_id(cfg_.model)},
      {"n_layer", cfg_.model.n_layer},
      {"version", STACKLAB_VERSION},
      {"command", command_line_},
      {"data_check", data_check_}};
  write_file_atomic(dir_ + "/summary.json",
                    checked_fields(s, summary_fields(), "summary.json").dump(2) + "\n");
}

void RunLog::mark_running() const {
  const std::string path = dir_ + "/summary.json";
  if (!std::filesystem::exists(path)) return;
  nlohmann::json s = nlohmann::json::parse(read_file(path), nullptr, false);
  if (!s.is_object()) s = nlohmann::json::object();  // torn: the run rewrites it anyway
  if (s.value("status", "") == spell(RunState::Running) &&
      s.value("max_iters", int64_t{-1}) == cfg_.train.max_iters)
    return;
  s["status"] = spell(RunState::Running);
  s["max_iters"] = cfg_.train.max_iters;
  write_file_atomic(path, s.dump(2) + "\n");
}

void RunLog::finish(RunState state, int64_t steps, const RunOutcome& o) const {
  const std::string eval = o.last_eval_step < 0 ? std::string("no eval yet")
                                                : "val loss " + fixed4(o.last_val) + " at step " +
                                                      std::to_string(o.last_eval_step) + " (best " +
                                                      fixed4(o.best_val) + ")";
  if (state == RunState::Completed && !o.stopped.is_null()) {
    const std::string why = o.stopped.value("reason", "") == "milestone"
                                ? "at milestone " + o.stopped.value("milestone", std::string("?"))
                                : std::string("on escape");
    std::printf("done: stopped %s at step %lld of %lld; %s; %s/summary.json\n", why.c_str(),
                static_cast<long long>(steps), static_cast<long long>(cfg_.train.max_iters),
                eval.c_str(), dir_.c_str());
  } else if (state == RunState::Completed) {
    std::printf("done: completed after %lld step%s; %s; %s/summary.json\n",
                static_cast<long long>(steps), steps == 1 ? "" : "s", eval.c_str(), dir_.c_str());
  } else if (state == RunState::Diverged) {
    std::printf("stopped: diverged at step %lld; last %s; %s/summary.json\n",
                static_cast<long long>(steps), eval.c_str(), dir_.c_str());
  } else {
    std::printf(
        "\nstopped by signal after %lld step%s (last batch loss %.4f); checkpoint written; last "
        "%s.\n"
        "Continue with: stacklab train --resume %s\n",
        static_cast<long long>(steps), steps == 1 ? "" : "s", o.last_train_loss, eval.c_str(),
        dir_.c_str());
  }
}

void rewind_metrics(const std::string& path, int64_t step) {
  const std::string text = read_file(path);
  std::string kept, damaged;
  std::vector<size_t> cut;
  size_t line_no = 0;
  for (size_t start = 0; start < text.size();) {
    const size_t nl = text.find('\n', start);
    const bool torn = nl == std::string::npos;
    const std::string line = text.substr(start, torn ? std::string::npos : nl - start);
    start = torn ? text.size() : nl + 1;
    ++line_no;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      j = nullptr;
    }
    if (torn || !j.is_object() || !j.value("step", nlohmann::json(0)).is_number_integer()) {
      std::fprintf(
          stderr,
          "warning: %s line %zu is %s; it is dropped from the log and kept in %s.damaged: %.80s\n",
          path.c_str(), line_no,
          torn ? "torn (no newline: the process stopped while writing it)"
               : "not a JSON record with an integer step",
          path.c_str(), line.c_str());
      damaged += path + " line " + std::to_string(line_no) + ": " + line + "\n";
      continue;
    }
    const int64_t s = j.value("step", int64_t{0});
    if (j.value("kind", "") == "resume" ? s <= step : s < step)
      kept += line + "\n";
    else
      cut.push_back(line_no);
  }
  if (!damaged.empty()) {
    const std::string keep = path + ".damaged";
    std::error_code ec;
    write_file_atomic(
        keep, (std::filesystem::exists(keep, ec) ? read_file(keep) : std::string()) + damaged);
  }
  if (!cut.empty())
    std::printf(
        "note: %s: line%s %s (%zu record%s of step %lld or later) cut: the run resumes at step "
        "%lld and "
        "writes them again\n",
        path.c_str(), cut.size() == 1 ? "" : "s", line_ranges(cut).c_str(), cut.size(),
        cut.size() == 1 ? "" : "s", static_cast<long long>(step), static_cast<long long>(step));
  write_file_atomic(path, kept);
}

}  // namespace sl
