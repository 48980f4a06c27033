// The training loop. Per step s (0-based): evaluate when s % eval_interval == 0 (a new best
// val loss also writes best.safetensors); draw grad_accum_steps batches from the training rng,
// forward and backward each (losses scaled by 1/grad_accum_steps, gradients summed); measure the
// gradient norm (before clipping) and stop on a loss out of range (the divergence rule, below)
// or a non-finite norm; an eval's losses are judged by the same rule; on layer steps (and the
// last step) record a "layers" record; clip; update with the scheduled learning rate; log;
// checkpoint every ckpt_interval steps. At the end a final eval, a checkpoint and summary.json.
// One class, one method per phase: open the run directory, restore or initialise, announce,
// then per step evaluate / accumulate / check / update / log / checkpoint, then finish.
#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <thread>
#include <tuple>

#include "core/blas.h"
#include "core/error.h"
#include "core/fpmode.h"
#include "core/fsutil.h"
#include "core/json_read.h"
#include "core/ops.h"
#include "data/text.h"
#include "nn/dropout.h"
#include "nn/model.h"
#include "train/checkpoint.h"
#include "train/layer_stats.h"
#include "train/optimizer.h"
#include "train/provenance.h"
#include "train/records.h"
#include "train/schedule.h"
#include "train/setup.h"

namespace sl {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// What fixes this run's arithmetic besides its config: the matrix-product path of the build, the
// kernels OpenBLAS picked for this CPU, the clone of the vector loops, the thread count, and
// whether subnormals are flushed to zero (read back from this thread's control register).
nlohmann::json numeric_path_json() {
  return {{"matmul", matmul_path()},
          {"openblas_core", openblas_core()},
          {"vector_loops", simd_clone()},
          {"threads", num_threads()},
          {"flush_subnormals", flush_subnormals_on()}};
}

nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

std::string format_eta(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[32];
  const long t = std::lround(s);
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  return buf;
}

// optim.decay_exempt: only Linear weights decay (not biases, norm parameters, embeddings, gates).
bool decays(const ParamInfo& info, const OptimConfig& o) {
  return !o.decay_exempt || info.decays();
}

nlohmann::json rng_to_json(const Rng::State& s) {
  nlohmann::json a = nlohmann::json::array();
  for (uint64_t w : s)
    a.push_back(std::to_string(w));  // strings: JSON numbers lose 64-bit precision
  return a;
}

Rng::State rng_from_json(const nlohmann::json& a, const std::string& file,
                         const std::string& field = "train_state.rng") {
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
    } catch (const std::logic_error&) {
      throw Error(file + ": field '" + field + "[" + std::to_string(i) +
                  "]' is out of range: " + w);
    }
  }
  return s;
}

// The divergence rule, in one place: a loss (train or val) ends the run when it is non-finite or
// above 10 x ln(vocab_size), ten times the loss of a uniform guess that an initialised model
// starts near; no run that is learning gets there, and one that does is not a result to compare.
double divergence_limit(const ModelConfig& m) {
  return 10.0 * std::log(static_cast<double>(m.vocab_size));
}

// Why `loss` (named by `which`: "train loss", "val loss", ...) ends the run, or "" when it does
// not.
std::string loss_out_of_range(const std::string& which, double loss, double limit) {
  char buf[160];
  if (!std::isfinite(loss)) return "non-finite " + which;
  if (loss <= limit) return "";
  std::snprintf(buf, sizeof buf, "%s %.6g above 10 x ln(vocab_size) = %.4f", which.c_str(), loss,
                limit);
  return buf;
}

double eval_loss(const Model& model, const std::vector<Batch>& batches) {
  NoGradGuard no_grad;
  double total = 0.0;
  for (const Batch& b : batches)
    total += static_cast<double>(Model::loss(model.forward(b.x, b.B, b.T), b.y).item());
  return batches.empty() ? 0.0 : total / static_cast<double>(batches.size());
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

// Rewinds metrics.jsonl to a checkpoint at `step`: keeps the records of the steps before it and
// the history of earlier resumes (their "resume" records, up to `step`); the records from `step`
// on are cut (the resumed run writes them again), with a note naming their lines. A line that
// is not a JSON record (damaged on disk, or torn by a crash mid-write) is never lost silently:
// a warning names the file and line, and the line is appended to metrics.jsonl.damaged.
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

// A process killed inside write_file_atomic leaves its "<file>.tmp.<pid>" behind; the file
// itself is intact (the rename never happened), so the leftover is only clutter to remove.
void remove_stale_temp_files(const std::string& dir) {
  for (const std::string& d : {dir, dir + "/checkpoints"}) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(d, ec)) {
      const std::string name = e.path().filename().string();
      const size_t at = name.rfind(".tmp");
      if (at == std::string::npos || at == 0) continue;
      const std::string tail = name.substr(at + 4);  // "" (vocab.json.tmp) or ".<pid>"
      const bool ours =
          tail.empty() || (tail.size() > 1 && tail[0] == '.' &&
                           tail.find_first_not_of("0123456789", 1) == std::string::npos);
      if (ours && e.is_regular_file(ec)) std::filesystem::remove(e.path(), ec);
    }
  }
}

}  // namespace

nlohmann::json run_config_json(const Config& cfg) {
  nlohmann::json j = to_json(cfg);
  j["derived"] = derived_json(cfg);
  return j;
}

std::string default_run_dir(const Config& cfg) { return cfg.train.out_dir + "/" + cfg.train.name; }

namespace {

// One training run from start (or resume) to its summary. Members hold what the phases share.
class Run {
 public:
  Run(Config cfg, const TrainOptions& opt)
      : cfg_(std::move(cfg)),
        opt_(opt),
        dir_(opt.run_dir),
        latest_(dir_ + "/checkpoints/latest.safetensors"),
        best_path_(dir_ + "/checkpoints/best.safetensors"),
        B_(cfg_.train.batch_size),
        T_(cfg_.model.block_size),
        accum_(cfg_.train.grad_accum_steps),
        max_iters_(cfg_.train.max_iters),
        rng_(cfg_.train.seed),
        dropout_rng_(cfg_.train.seed ^ 0xd409c0ffee5eedULL) {}

  RunStatus run() {
    open_run_dir();
    restore_or_init();
    announce();
    write_summary("running", start_step_);
    try {
      return train_and_finish();
    } catch (const std::exception& e) {
      record_failure(e.what());
      throw;
    }
  }

 private:
  // From here on the run has said "running": whatever ends it, its summary says how it ended.
  RunStatus train_and_finish() {
    int64_t& step = step_;
    for (step = start_step_; step < max_iters_ && status_ == RunStatus::kCompleted; ++step) {
      if (step % cfg_.train.eval_interval == 0 && !evaluate(step))
        break;                       // diverged before this step
      if (!train_step(step)) break;  // diverged: this step is not applied
      if (cfg_.train.ckpt_interval > 0 && (step + 1) % cfg_.train.ckpt_interval == 0 &&
          step + 1 < max_iters_)
        checkpoint(latest_, step + 1);
      if (opt_.stop && opt_.stop->load() != 0) {
        checkpoint(latest_, step + 1);
        status_ = RunStatus::kInterrupted;
      }
    }
    if (status_ == RunStatus::kCompleted) {
      step = max_iters_;
      if (evaluate(max_iters_)) checkpoint(latest_, max_iters_);
    }
    finish(step);
    return status_;
  }

  // An error after the run started (a full disk, an unwritable checkpoint): summary.json says
  // "failed" with the message, if it can still be written; the error then goes on to the CLI.
  void record_failure(const std::string& what) noexcept {
    try {
      error_ = what;
      write_summary("failed", step_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "warning: %s/summary.json could not be marked failed: %s\n",
                   dir_.c_str(), e.what());
    }
  }

  // Data first: bad data leaves no run directory behind.
  void open_run_dir() {
    const int threads = cfg_.train.threads > 0
                            ? cfg_.train.threads
                            : static_cast<int>(std::thread::hardware_concurrency());
    set_num_threads(threads);                           // BLAS and the OpenMP kernels alike
    set_flush_subnormals(cfg_.train.flush_subnormals);  // on the threads just set (core/fpmode.h)
    const bool reuse_vocab = opt_.resume && cfg_.data.source == SourceKind::Text &&
                             std::filesystem::exists(dir_ + "/vocab.json");
    data_ = make_data(cfg_, reuse_vocab ? dir_ + "/vocab.json" : "");
    limit_ = divergence_limit(cfg_.model);  // text data has just set vocab_size
    make_dirs(dir_ + "/checkpoints");
    remove_stale_temp_files(dir_);
    config_json_ = run_config_json(cfg_);
    model_ = std::make_unique<Model>(cfg_.model);
    for (const auto& p : model_->parameters())
      refs_.push_back({p.name, p.tensor, decays(p.info, cfg_.optim)});
    optimizer_ = make_optimizer(cfg_.optim, refs_);
  }

  void restore_or_init() {
    resumed_ = opt_.resume && std::filesystem::exists(latest_);
    if (opt_.resume && !resumed_) {
      // A Slurm task resumes every run, also one that never started: say which of the two it is.
      std::error_code ec;
      const bool started = std::filesystem::file_size(dir_ + "/metrics.jsonl", ec) > 0 && !ec;
      std::printf(started ? "%s: no checkpoint yet (the run stopped before its first one); "
                            "starting from step 0\n"
                          : "%s: a new run (nothing trained yet); starting from step 0\n",
                  dir_.c_str());
    }
    if (resumed_) {
      restore();
    } else {
      model_->init_weights(cfg_.train.seed);
      const std::string metrics = dir_ + "/metrics.jsonl";
      if (opt_.resume && std::filesystem::exists(metrics))
        rewind_metrics(metrics, 0);  // says what it cuts
      else
        write_file_atomic(metrics, "");
      if (auto* text = dynamic_cast<TextSource*>(data_.get()))
        text->save_vocab(dir_ + "/vocab.json");
    }
    // Written after a restore too: an extended run's config.json and fingerprint say what it now
    // is.
    write_file_atomic(dir_ + "/config.json", config_json_.dump(2) + "\n");
    write_provenance(dir_, cfg_);
    metrics_ = std::make_unique<LineLog>(dir_ + "/metrics.jsonl");
    refs_json_ = to_json(data_->reference_losses(T_));
    val_batches_ = data_->eval_batches(cfg_.train.eval_iters, B_, T_, false);
    train_eval_batches_ = data_->eval_batches(cfg_.train.eval_iters, B_, T_, true);
  }

  // The checkpoint's weights, optimizer and train state; metrics after it are cut off.
  void restore() {
    const std::vector<std::string> may_differ =
        opt_.decay_changed ? std::vector<std::string>{"optim.lr_decay_iters"}
                           : std::vector<std::string>{};
    Checkpoint c = load_checkpoint(latest_, *model_, *optimizer_, config_json_, may_differ);
    const nlohmann::json& st = c.train_state;
    const std::string file = latest_;
    start_step_ = json_int(st, file, "step", 0, max_iters_, "train_state");
    rng_.set_state(rng_from_json(json_field(st, file, "rng", "train_state"), file));
    if (st.contains("dropout_rng"))  // absent in checkpoints from before model.dropout
      dropout_rng_.set_state(rng_from_json(st.at("dropout_rng"), file, "train_state.dropout_rng"));
    const nlohmann::json& best = json_field(st, file, "best_val_loss", "train_state");
    best_val_ = best.is_null() ? kInf : json_number(st, file, "best_val_loss", "train_state");
    wall_before_ =
        st.contains("wall_seconds") ? json_number(st, file, "wall_seconds", "train_state") : 0.0;
    update_norms_.clear();
    for (const auto& v : json_array(st, file, "last_update_norms", "train_state")) {
      if (!v.is_number())
        throw Error(file + ": field 'train_state.last_update_norms' must hold numbers");
      update_norms_.push_back(v.get<double>());
    }
    if (!update_norms_.empty() &&
        update_norms_.size() != refs_.size())  // read per parameter by update_ratio
      throw Error(file + ": field 'train_state.last_update_norms' has " +
                  std::to_string(update_norms_.size()) + " entries, the model has " +
                  std::to_string(refs_.size()) + " parameters");
    rewind_metrics(dir_ + "/metrics.jsonl", start_step_);
  }

  void announce() {
    std::printf("%s\n%s%s -> %s\n", describe_model(cfg_, model_->num_parameters()).c_str(),
                resumed_ ? "resuming at step " : "training",
                resumed_ ? std::to_string(start_step_).c_str() : "", dir_.c_str());
    std::printf("reference losses: uniform %.4f, unigram %.4f, optimal %s\n",
                refs_json_["uniform"].get<double>(), refs_json_["unigram"].get<double>(),
                refs_json_["optimal"].is_null()
                    ? "unknown"
                    : std::to_string(refs_json_["optimal"].get<double>()).c_str());
    std::fflush(stdout);
    metrics_->write_line(checked_record(nlohmann::json{{"step", start_step_},
                                                       {"kind", resumed_ ? "resume" : "start"},
                                                       {"n_layer", cfg_.model.n_layer},
                                                       {"n_params", model_->num_parameters()},
                                                       {"wiring", wiring_id(cfg_.model)},
                                                       {"formula", describe_wiring(cfg_.model)},
                                                       {"reference_losses", refs_json_},
                                                       {"tokens_per_step", B_ * T_ * accum_},
                                                       {"numeric_path", numeric_path_json()},
                                                       {"layer_metrics", layer_metrics_json()}})
                             .dump());
    t_start_ = window_start_ = Clock::now();
  }

  const char* line_start() const { return opt_.progress_tty ? "\r\033[K" : ""; }

  // False when a loss is out of range (the divergence rule): the run ends here as diverged.
  bool evaluate(int64_t step) {
    last_eval_step_ = step;
    last_val_ = eval_loss(*model_, val_batches_);
    last_train_eval_ = eval_loss(*model_, train_eval_batches_);
    metrics_->write_line(
        checked_record(nlohmann::json{{"step", step},
                                      {"kind", "eval"},
                                      {"val_loss", finite_or_null(last_val_)},
                                      {"train_loss", finite_or_null(last_train_eval_)}})
            .dump());
    std::printf("%sstep %lld/%lld | eval: val loss %.4f, train loss %.4f\n", line_start(),
                static_cast<long long>(step), static_cast<long long>(max_iters_), last_val_,
                last_train_eval_);
    std::fflush(stdout);
    for (const auto& [key, which, loss] :
         {std::tuple{"val_loss", "val loss", last_val_},
          std::tuple{"train_loss", "eval train loss", last_train_eval_}}) {
      const std::string why = loss_out_of_range(which, loss, limit_);
      if (!why.empty()) return diverge(step, why, nlohmann::json::array(), key, loss);
    }
    if (last_val_ < best_val_) {
      best_val_ = last_val_;
      if (cfg_.train.save_best)
        checkpoint(best_path_, step);  // the state just evaluated, resumable like latest
    }
    return true;
  }

  // Forward and backward over grad_accum_steps micro-batches; gradients add up in the leaves.
  // On layer steps the first micro-batch is traced for the residual-stream measurements.
  double accumulate(bool layer_step, ForwardTrace& trace, std::vector<double>& stream_grads) {
    double loss_sum = 0.0;
    const DropoutScope dropout_on(static_cast<float>(cfg_.model.dropout),
                                  dropout_rng_);  // off in evals
    for (int m = 0; m < accum_; ++m) {
      Batch batch = data_->train_batch(B_, T_, rng_);
      const bool traced = layer_step && m == 0;
      Tensor loss =
          Model::loss(model_->forward(batch.x, B_, T_, traced ? &trace : nullptr), batch.y);
      if (traced) hook_stream_grads(trace, stream_grads);
      loss_sum += static_cast<double>(loss.item());
      if (accum_ > 1)
        loss = scale(loss, 1.0f / static_cast<float>(accum_));  // mean over all micro-batches
      loss.backward();
    }
    return loss_sum / accum_;
  }

  // One optimizer step; false when the loss is out of range or the gradient non-finite (nothing
  // applied).
  bool train_step(int64_t step) {
    const auto t0 = Clock::now();
    const bool layer_step = step % cfg_.log.layer_interval == 0 || step == max_iters_ - 1;
    ForwardTrace trace;
    std::vector<double> stream_grads;
    last_train_loss_ = accumulate(layer_step, trace, stream_grads);
    const double gnorm = global_grad_norm(refs_);
    std::string why = loss_out_of_range("train loss", last_train_loss_, limit_);
    if (why.empty() && !std::isfinite(gnorm)) why = "non-finite gradient norm";
    if (layer_step || !why.empty()) {
      if (!layer_step) trace = ForwardTrace{};  // re-measure what we can for the divergence report
      const LayerStats stats = measure_layers(*model_, trace, stream_grads, update_norms_);
      nlohmann::json rec = to_json(stats, cfg_.log.params);
      rec["step"] = step;
      rec["kind"] = "layers";
      rec["loss"] = finite_or_null(last_train_loss_);
      metrics_->write_line(checked_record(rec).dump());
      if (!why.empty())
        return diverge(step, why, non_finite_blocks(stats), "loss", last_train_loss_);
    }
    if (cfg_.optim.grad_clip > 0) clip_grad_norm(refs_, cfg_.optim.grad_clip);
    const double lr = learning_rate_at(cfg_.optim, step, max_iters_);
    optimizer_->step(static_cast<float>(lr));
    update_norms_ = optimizer_->last_update_norms();
    optimizer_->zero_grad();
    log_step(step, lr, gnorm, 1000.0 * seconds_since(t0));
    return true;
  }

  nlohmann::json non_finite_blocks(const LayerStats& stats) const {
    nlohmann::json blocks = nlohmann::json::array();
    for (int l = 0; l < cfg_.model.n_layer; ++l)
      if (!std::isfinite(stats.at("grad_norm")[static_cast<size_t>(l)])) blocks.push_back(l);
    return blocks;
  }

  // Ends the run as diverged at `step`: `loss_key` names the record field of the loss that was
  // checked ("loss" of the training batch, or an eval's "val_loss" / "train_loss") and `loss` its
  // value.
  bool diverge(int64_t step, const std::string& reason, const nlohmann::json& blocks,
               const char* loss_key, double loss) {
    divergence_ = {{"step", step},
                   {"reason", reason},
                   {"blocks", blocks},
                   {"loss", loss_key},
                   {"value", finite_or_null(loss)},
                   {"limit", limit_}};
    nlohmann::json rec = divergence_;
    rec["kind"] = "diverged";
    metrics_->write_line(checked_record(rec).dump());
    const std::string where = blocks.empty() ? ""
                                             : ", " + std::to_string(blocks.size()) + " block" +
                                                   (blocks.size() == 1 ? "" : "s") +
                                                   " with a non-finite gradient";
    std::printf("%sstep %lld: diverged (%s%s); the run stops here without applying this step\n",
                line_start(), static_cast<long long>(step), reason.c_str(), where.c_str());
    status_ = RunStatus::kDiverged;
    return false;
  }

  void log_step(int64_t step, double lr, double gnorm, double ms) {
    ms_avg_ =
        window_steps_ == 0 ? ms : ms_avg_ + (ms - ms_avg_) / static_cast<double>(window_steps_ + 1);
    ++window_steps_;
    if (step % cfg_.log.log_interval == 0 || step == max_iters_ - 1) {
      const double tok_s =
          static_cast<double>(window_steps_) * B_ * T_ * accum_ / seconds_since(window_start_);
      metrics_->write_line(checked_record(nlohmann::json{{"step", step},
                                                         {"kind", "train"},
                                                         {"loss", last_train_loss_},
                                                         {"lr", lr},
                                                         {"grad_norm", gnorm},
                                                         {"tokens_per_sec", tok_s},
                                                         {"ms_per_step", ms_avg_}})
                               .dump());
      std::printf(
          "%sstep %lld/%lld | loss %.4f | lr %.2e | grad norm %.3g | %.1f ms/step | %.0f tok/s | "
          "ETA %s\n",
          line_start(), static_cast<long long>(step), static_cast<long long>(max_iters_),
          last_train_loss_, lr, gnorm, ms_avg_, tok_s,
          format_eta(static_cast<double>(max_iters_ - step - 1) * ms_avg_ / 1000.0).c_str());
      std::fflush(stdout);
      window_start_ = Clock::now();
      window_steps_ = 0;
    } else if (opt_.progress_tty) {
      std::printf("\r\033[Kstep %lld/%lld | loss %.4f | %.1f ms/step", static_cast<long long>(step),
                  static_cast<long long>(max_iters_), last_train_loss_, ms_avg_);
      std::fflush(stdout);
    }
  }

  // `next_step` is the step the state resumes at.
  void checkpoint(const std::string& path, int64_t next_step) {
    nlohmann::json st = {{"step", next_step},
                         {"optimizer_steps", optimizer_->steps()},
                         {"rng", rng_to_json(rng_.state())},
                         {"dropout_rng", rng_to_json(dropout_rng_.state())},
                         {"best_val_loss", finite_or_null(best_val_)},
                         {"wall_seconds", wall_before_ + seconds_since(t_start_)},
                         {"last_update_norms", update_norms_}};
    save_checkpoint(path, *model_, *optimizer_, config_json_, st);
  }

  void write_summary(const char* state, int64_t steps_done) {
    const double wall = wall_before_ + seconds_since(t_start_);
    const double run_secs = seconds_since(t_start_);
    nlohmann::json s = {
        {"status", state},
        {"final_train_loss", finite_or_null(last_train_eval_)},
        {"final_val_loss", finite_or_null(last_val_)},
        {"final_eval_step",
         last_eval_step_ < 0 ? nlohmann::json(nullptr) : nlohmann::json(last_eval_step_)},
        {"best_val_loss", finite_or_null(best_val_)},
        {"last_batch_loss", finite_or_null(last_train_loss_)},
        {"reference_losses", refs_json_},
        {"steps", steps_done},
        {"max_iters", max_iters_},
        {"wall_seconds", wall},
        {"tokens_per_sec",
         run_secs > 0 ? static_cast<double>(steps_done - start_step_) * B_ * T_ * accum_ / run_secs
                      : 0.0},
        {"diverged", !divergence_.is_null()},
        {"divergence", divergence_},
        {"error", error_.empty() ? nlohmann::json(nullptr) : nlohmann::json(error_)},
        {"wiring", wiring_id(cfg_.model)},
        {"n_layer", cfg_.model.n_layer},
        {"version", STACKLAB_VERSION},
        {"command", opt_.command_line}};
    write_file_atomic(dir_ + "/summary.json",
                      checked_fields(s, summary_fields(), "summary.json").dump(2) + "\n");
  }

  // The summary, and one line that states the step of every number it prints.
  void finish(int64_t steps) {
    const bool done = status_ == RunStatus::kCompleted, diverged = status_ == RunStatus::kDiverged;
    write_summary(done ? "completed" : diverged ? "diverged" : "interrupted", steps);
    std::string eval = last_eval_step_ < 0 ? std::string("no eval yet")
                                           : "val loss " + fixed4(last_val_) + " at step " +
                                                 std::to_string(last_eval_step_) + " (best " +
                                                 fixed4(best_val_) + ")";
    if (done) {
      std::printf("done: completed after %lld step%s; %s; %s/summary.json\n",
                  static_cast<long long>(steps), steps == 1 ? "" : "s", eval.c_str(), dir_.c_str());
    } else if (diverged) {
      std::printf("stopped: diverged at step %lld; last %s; %s/summary.json\n",
                  static_cast<long long>(steps), eval.c_str(), dir_.c_str());
    } else {
      std::printf(
          "\nstopped by signal after %lld step%s (last batch loss %.4f); checkpoint written; last "
          "%s.\n"
          "Continue with: stacklab train --resume %s\n",
          static_cast<long long>(steps), steps == 1 ? "" : "s", last_train_loss_, eval.c_str(),
          dir_.c_str());
    }
  }

  static std::string fixed4(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", v);
    return buf;
  }

  Config cfg_;
  const TrainOptions& opt_;
  const std::string dir_, latest_, best_path_;
  const int B_, T_, accum_;
  const int64_t max_iters_;
  std::unique_ptr<DataSource> data_;
  std::unique_ptr<Model> model_;
  std::vector<ParamRef> refs_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<LineLog> metrics_;
  nlohmann::json config_json_, refs_json_,
      divergence_ = nullptr;  // divergence: {step, reason, blocks}
  std::vector<Batch> val_batches_, train_eval_batches_;
  Rng rng_, dropout_rng_;  // batches; dropout masks (a stream of its own: dropout 0 draws nothing)
  bool resumed_ = false;
  int64_t start_step_ = 0, step_ = 0, last_eval_step_ = -1,
          window_steps_ = 0;  // step_: the step being trained
  std::string error_;         // why the run failed (summary.json "error")
  double best_val_ = kInf, wall_before_ = 0.0, last_train_loss_ = NAN, last_val_ = NAN,
         last_train_eval_ = NAN;
  double ms_avg_ = 0.0, limit_ = kInf;  // limit_: the divergence rule's bound on a loss
  std::vector<double> update_norms_;
  Clock::time_point t_start_ = Clock::now(), window_start_ = Clock::now();
  RunStatus status_ = RunStatus::kCompleted;
};

}  // namespace

RunStatus train(Config cfg, const TrainOptions& opt) { return Run(std::move(cfg), opt).run(); }

}  // namespace sl
