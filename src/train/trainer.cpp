// The training loop. Per step s (0-based): evaluate when s % eval_interval == 0 (a new best
// val loss also writes best.safetensors); draw grad_accum_steps batches from the training rng,
// forward and backward each (losses scaled by 1/grad_accum_steps, gradients summed); measure the
// gradient norm (before clipping) and stop on a loss out of range (the divergence rule, below)
// or a non-finite norm; an eval's losses are judged by the same rule; on layer steps (and the
// last step) record a "layers" record; clip; update with the scheduled learning rate; log;
// checkpoint every ckpt_interval steps. At the end a final eval, a checkpoint and summary.json.
// Every eval is judged against the run's milestones (train/milestones.h: the lines drawn from the
// reference predictors' losses on the val batches), recorded in summary.json. With
// train.stop_at (or the older train.stop_below_unigram, the escape rule of train/escape_stop.h)
// an eval that meets the rule ends the run there instead: a checkpoint of the state it evaluated,
// and summary.json's "stopped".
// One class, one method per phase: open the run directory, restore or initialise, announce,
// then per step evaluate / accumulate / check / update / log / checkpoint, then finish. What it
// saves is train/train_state.h; what it writes to the log and console is train/run_log.h.
#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <thread>
#include <tuple>

#include "core/blas.h"
#include "core/fpmode.h"
#include "core/ops.h"
#include "data/known_data.h"
#include "data/text.h"
#include "nn/dropout.h"
#include "nn/model.h"
#include "train/checkpoint.h"
#include "train/escape_stop.h"
#include "train/keep.h"
#include "train/layer_stats.h"
#include "train/milestones.h"
#include "train/optimizer.h"
#include "train/provenance.h"
#include "train/records.h"
#include "train/resume.h"
#include "train/run_log.h"
#include "train/schedule.h"
#include "train/setup.h"
#include "train/train_state.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/fsutil.h"

namespace sl {
namespace {

using Clock = std::chrono::steady_clock;

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
    total += static_cast<double>(
        Model::loss(model.forward(b.x, b.B, b.T, ForwardMode::eval()), b.y).item());
  return batches.empty() ? 0.0 : total / static_cast<double>(batches.size());
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

std::vector<std::string> run_entries_in(const std::string& dir) {
  static const char* const kEntries[] = {
      "config.json",     "metrics.jsonl", "metrics.jsonl.damaged", "summary.json",
      "provenance.json", "vocab.json",    "checkpoints",           "plots"};
  std::vector<std::string> present;
  std::error_code ec;
  for (const char* e : kEntries)
    if (std::filesystem::exists(dir + "/" + e, ec)) present.emplace_back(e);
  return present;
}

std::vector<std::string> clear_run_entries(const std::string& dir) {
  const std::vector<std::string> present = run_entries_in(dir);
  for (const std::string& e : present) std::filesystem::remove_all(dir + "/" + e);
  return present;
}

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
        dropout_rng_(cfg_.train.seed ^ 0xd409c0ffee5eedULL),
        log_(cfg_, dir_, opt.command_line, opt.progress_tty) {}

  RunState run() {
    open_run_dir();
    restore_or_init();
    log_.start(start_step_, resumed_, model_->num_parameters(), refs_json_, data_check_);
    t_start_ = Clock::now();
    write_summary(RunState::Running, start_step_);
    try {
      return train_and_finish();
    } catch (const std::exception& e) {
      record_failure(e.what());
      throw;
    }
  }

 private:
  // From here on the run has said "running": whatever ends it, its summary says how it ended.
  RunState train_and_finish() {
    int64_t& step = step_;
    for (step = start_step_; step < max_iters_ && status_ == RunState::Completed; ++step) {
      if (step % cfg_.train.eval_interval == 0 && !evaluate(step))
        break;  // diverged before this step
      if (!outcome_.stopped.is_null()) {
        checkpoint(latest_, step);  // stopped by its rule: the state just evaluated
        break;
      }
      if (!train_step(step)) break;  // diverged: this step is not applied
      if (cfg_.train.ckpt_interval > 0 && (step + 1) % cfg_.train.ckpt_interval == 0 &&
          step + 1 < max_iters_)
        checkpoint(latest_, step + 1);
      if (opt_.stop && opt_.stop->load() != 0) {
        checkpoint(latest_, step + 1);
        status_ = RunState::Interrupted;
      }
    }
    if (status_ == RunState::Completed && outcome_.stopped.is_null()) {
      step = max_iters_;
      if (evaluate(max_iters_)) checkpoint(latest_, max_iters_);
    }
    write_summary(status_, step);  // Completed, Diverged or Interrupted
    if (status_ == RunState::Completed || status_ == RunState::Diverged) keep_final_checkpoints();
    log_.finish(status_, step, outcome_);
    return status_;
  }

  // train.keep_final: what the finished run keeps of its checkpoints (train/keep.h). After its
  // summary, so that a kill before it leaves a completed run with everything, never a run that
  // reads as resumable without the state to resume from. A failure is a warning: the result
  // stands, and `stacklab prune` can drop the rest later.
  void keep_final_checkpoints() noexcept {
    if (cfg_.train.keep_final == KeepKind::Full) return;
    const std::string keep = name_of(cfg_.train.keep_final);
    try {
      const uint64_t freed = apply_keep(dir_, cfg_.train.keep_final, "train.keep_final");
      if (freed > 0)
        std::printf(
            "checkpoints: train.keep_final \"%s\": %s freed (%s)\n", keep.c_str(),
            disk_size(freed).c_str(),
            cfg_.train.keep_final == KeepKind::Weights
                ? "the optimizer state dropped: the run can no longer be resumed or extended"
                : "no checkpoint kept");
    } catch (const std::exception& e) {
      std::fprintf(stderr,
                   "warning: %s: train.keep_final \"%s\" not applied: %s (stacklab prune %s "
                   "drops it later)\n",
                   dir_.c_str(), keep.c_str(), e.what(), dir_.c_str());
    }
  }

  // An error after the run started (a full disk, an unwritable checkpoint): summary.json says
  // "failed" with the message, if it can still be written; the error then goes on to the CLI.
  void record_failure(const std::string& what) noexcept {
    try {
      outcome_.error = what;
      write_summary(RunState::Failed, step_);
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
    check_data_file();
    limit_ = divergence_limit(cfg_.model);  // text data has just set vocab_size
    make_dirs(dir_ + "/checkpoints");
    remove_stale_temp_files(dir_);
    config_json_ = run_config_json(cfg_);
    model_ = std::make_unique<Model>(cfg_.model);
    for (const auto& p : model_->parameters())
      refs_.push_back({p.name, p.tensor, param_decays(p.info, cfg_.optim)});
    optimizer_ = make_optimizer(cfg_.optim, refs_);
  }

  // A text file at a known data set's place (data/known_data.h) that fails its size or SHA-256
  // check trains on, but never silently: a warning now, data_check in the start record and
  // summary.json.
  void check_data_file() {
    if (cfg_.data.source != SourceKind::Text) return;
    data_check_ = check_known_data(cfg_.data.path);
    const std::string warning = data_check_warning(data_check_, cfg_.data.path);
    if (!warning.empty()) std::fprintf(stderr, "warning: %s\n", warning.c_str());
  }

  void restore_or_init() {
    // A finished run whose checkpoints were pruned (train.keep_final, stacklab prune) says so,
    // rather than reading as a lost file or a checkpoint without its optimizer state.
    if (opt_.resume)
      if (const std::string why = not_kept_reason(dir_); !why.empty())
        throw Error(dir_ + ": " + why);
    resumed_ = opt_.resume && std::filesystem::exists(latest_);
    if (opt_.resume && !resumed_) check_checkpoint_not_lost(dir_, cfg_);
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
      if (opt_.resume) log_.mark_running();  // before any other write (run_log.h)
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
    log_.open_metrics();
    val_batches_ = data_->eval_batches(cfg_.train.eval_iters, B_, T_, false);
    ReferenceLosses refs = data_->reference_losses(T_);
    measure_on_batches(refs, *data_, val_batches_);
    refs_json_ = to_json(refs);
    // The milestones of the evals before the checkpoint, from the log that was just rewound to
    // it: the eval at start_step_ is made again and judged by evaluate().
    milestones_ = Milestones(refs_json_, cfg_.train);
    for (const auto& [s, val] : logged_evals(dir_, start_step_ - 1)) milestones_.record(s, val);
    outcome_.milestones = milestones_.to_json();
    train_eval_batches_ = data_->eval_batches(cfg_.train.eval_iters, B_, T_, true);
  }

  // The checkpoint's weights, optimizer and train state; metrics after it are cut off.
  void restore() {
    const std::vector<std::string> may_differ =
        opt_.decay_changed || extension_in_progress()
            ? std::vector<std::string>{"optim.lr_decay_iters"}
            : std::vector<std::string>{};
    Checkpoint c = load_checkpoint(latest_, *model_, *optimizer_, config_json_, may_differ);
    // The checkpoint is whole and the run's: from here on the run changes, and its first write
    // makes it read as unfinished (run_log.h). A refused checkpoint leaves the run untouched.
    log_.mark_running();
    const TrainState st = train_state_from_json(c.train_state, latest_, max_iters_, refs_.size());
    start_step_ = st.step;
    rng_.set_state(st.rng);
    dropout_rng_.set_state(st.dropout_rng);
    outcome_.best_val = st.best_val_loss;
    wall_before_ = st.wall_seconds;
    update_norms_ = st.last_update_norms;
    rewind_metrics(dir_ + "/metrics.jsonl", start_step_);
  }

  // Whether latest_ was written under a smaller train.max_iters than the run's config.json now
  // holds: an extension whose first attempt rewrote config.json (with the decay it moved) and was
  // stopped before its next checkpoint. Its repeat (a requeued Slurm task, the sweep run again)
  // is a plain resume of that extension, so the checkpoint may differ in optim.lr_decay_iters.
  bool extension_in_progress() const {
    const nlohmann::json written =
        checkpoint_metadata(read_checkpoint_file(latest_), latest_, "config");
    const nlohmann::json had =
        written.is_object() && written.contains("train") && written["train"].is_object()
            ? written["train"].value("max_iters", nlohmann::json())
            : nlohmann::json();
    return had.is_number_integer() && had.get<int64_t>() < max_iters_ &&
           extension_started(dir_, cfg_);
  }

  // False when a loss is out of range (the divergence rule): the run ends here as diverged.
  bool evaluate(int64_t step) {
    outcome_.last_eval_step = step;
    outcome_.last_val = eval_loss(*model_, val_batches_);
    outcome_.last_train_eval = eval_loss(*model_, train_eval_batches_);
    log_.eval(step, outcome_.last_val, outcome_.last_train_eval);
    for (const auto& [key, which, loss] :
         {std::tuple{"val_loss", "val loss", outcome_.last_val},
          std::tuple{"train_loss", "eval train loss", outcome_.last_train_eval}}) {
      const std::string why = loss_out_of_range(which, loss, limit_);
      if (!why.empty()) return diverge(step, why, nlohmann::json::array(), key, loss);
    }
    if (outcome_.last_val < outcome_.best_val) {
      outcome_.best_val = outcome_.last_val;
      if (cfg_.train.save_best)
        checkpoint(best_path_, step);  // the state just evaluated, resumable like latest
    }
    for (const MilestoneKind* m : milestones_.record(step, outcome_.last_val))
      log_.milestone(*m, step, outcome_.last_val, milestones_.line(m->id));
    outcome_.milestones = milestones_.to_json();
    // The stop rule, judged at every eval before the horizon: the run ends at this step, its
    // summary saying why.
    if (step < max_iters_ && stop_rule_met(cfg_, milestones_, outcome_.last_val)) {
      const double margin = cfg_.train.stop_below_unigram;
      outcome_.stopped = margin > 0
                             ? escape_stop_record(step, outcome_.last_val,
                                                  milestones_.reference(StopAt::M1), margin)
                             : milestones_.stop_record(cfg_.train.stop_at, step, outcome_.last_val);
      log_.stopped(outcome_.stopped);
      return true;
    }
    // Still running: a run killed (SIGKILL, a lost node) between evals leaves a summary with the
    // steps and losses of its last eval, not those of its start.
    if (step < max_iters_) write_summary(RunState::Running, step);
    return true;
  }

  // Forward and backward over grad_accum_steps micro-batches; gradients add up in the leaves.
  // On layer steps the first micro-batch is traced for the residual-stream measurements.
  double accumulate(bool layer_step, ForwardTrace& trace, std::vector<double>& stream_grads) {
    double loss_sum = 0.0;
    const ForwardMode mode = ForwardMode::train(static_cast<float>(cfg_.model.dropout),
                                                dropout_rng_);  // evals run ForwardMode::eval()
    for (int m = 0; m < accum_; ++m) {
      Batch batch = data_->train_batch(B_, T_, rng_);
      const bool traced = layer_step && m == 0;
      Tensor loss =
          Model::loss(model_->forward(batch.x, B_, T_, mode, traced ? &trace : nullptr), batch.y);
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
    const double loss = outcome_.last_train_loss = accumulate(layer_step, trace, stream_grads);
    const double gnorm = global_grad_norm(refs_);
    std::string why = loss_out_of_range("train loss", loss, limit_);
    if (why.empty() && !std::isfinite(gnorm)) why = "non-finite gradient norm";
    if (layer_step || !why.empty()) {
      if (!layer_step) trace = ForwardTrace{};  // re-measure what we can for the divergence report
      const LayerStats stats = measure_layers(*model_, trace, stream_grads, update_norms_);
      log_.layers(step, to_json(stats, cfg_.log.params), loss);
      if (!why.empty()) return diverge(step, why, non_finite_blocks(stats), "loss", loss);
    }
    if (cfg_.optim.grad_clip > 0) clip_grad_norm(refs_, cfg_.optim.grad_clip);
    const double lr = learning_rate_at(cfg_.optim, step, max_iters_);
    optimizer_->step(static_cast<float>(lr));
    update_norms_ = optimizer_->last_update_norms();
    optimizer_->zero_grad();
    log_.train_step(step, loss, lr, gnorm, 1000.0 * seconds_since(t0));
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
    outcome_.divergence = {{"step", step},
                           {"reason", reason},
                           {"blocks", blocks},
                           {"loss", loss_key},
                           {"value", finite_or_null(loss)},
                           {"limit", limit_}};
    log_.diverged(outcome_.divergence);
    status_ = RunState::Diverged;
    return false;
  }

  // `next_step` is the step the state resumes at.
  void checkpoint(const std::string& path, int64_t next_step) {
    TrainState st;
    st.step = next_step;
    st.optimizer_steps = optimizer_->steps();
    st.rng = rng_.state();
    st.dropout_rng = dropout_rng_.state();
    st.best_val_loss = outcome_.best_val;
    st.wall_seconds = wall_before_ + seconds_since(t_start_);
    st.last_update_norms = update_norms_;
    save_checkpoint(path, *model_, *optimizer_, config_json_, to_json(st));
  }

  void write_summary(RunState state, int64_t steps_done) {
    log_.summary(state, steps_done, start_step_, wall_before_ + seconds_since(t_start_),
                 seconds_since(t_start_), outcome_);
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
  nlohmann::json config_json_, refs_json_;
  nlohmann::json data_check_ = nullptr;  // check_data_file()
  std::vector<Batch> val_batches_, train_eval_batches_;
  Rng rng_, dropout_rng_;  // batches; dropout masks (a stream of its own: dropout 0 draws nothing)
  RunLog log_;             // reads cfg_: declared after it
  RunOutcome outcome_;     // losses, divergence and error, for the summary
  bool resumed_ = false;
  int64_t start_step_ = 0, step_ = 0;  // step_: the step being trained
  double wall_before_ = 0.0;           // wall seconds of the run before this process
  double limit_ = std::numeric_limits<double>::infinity();  // the divergence rule's bound
  Milestones milestones_;  // the lines and the first eval at each (restore_or_init)
  std::vector<double> update_norms_;
  Clock::time_point t_start_ = Clock::now();
  RunState status_ = RunState::Completed;
};

}  // namespace

RunState train(Config cfg, const TrainOptions& opt) { return Run(std::move(cfg), opt).run(); }

}  // namespace sl
