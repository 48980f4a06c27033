// The training loop. Per step s (0-based): evaluate when s % eval_interval == 0; draw a batch
// from the training rng; forward, backward; measure the gradient norm (before clipping) and
// stop on a non-finite loss or norm; on layer steps record a "layers" record; clip; update
// with the scheduled learning rate; log; checkpoint every ckpt_interval steps. At the end a
// final eval, a checkpoint and summary.json.
#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <thread>

#include "core/blas.h"
#include "core/error.h"
#include "core/fsutil.h"
#include "core/ops.h"
#include "data/text.h"
#include "nn/model.h"
#include "train/checkpoint.h"
#include "train/layer_stats.h"
#include "train/optimizer.h"
#include "train/schedule.h"
#include "train/setup.h"

namespace sl {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::string format_eta(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[32];
  const long t = std::lround(s);
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  return buf;
}

// optim.decay_exempt: only Linear weights decay (not biases, norm parameters, embeddings, gates).
bool decays(const ParamInfo& info, const OptimConfig& o) { return !o.decay_exempt || info.decays(); }

nlohmann::json rng_to_json(const Rng::State& s) {
  nlohmann::json a = nlohmann::json::array();
  for (uint64_t w : s) a.push_back(std::to_string(w));  // strings: JSON numbers lose 64-bit precision
  return a;
}

Rng::State rng_from_json(const nlohmann::json& a) {
  Rng::State s{};
  if (!a.is_array() || a.size() != 4) throw Error("checkpoint train_state.rng must be 4 strings");
  for (size_t i = 0; i < 4; ++i) s[i] = std::stoull(a[i].get<std::string>());
  return s;
}

double eval_loss(const Model& model, const std::vector<Batch>& batches) {
  NoGradGuard no_grad;
  double total = 0.0;
  for (const Batch& b : batches) total += static_cast<double>(Model::loss(model.forward(b.x, b.B, b.T), b.y).item());
  return batches.empty() ? 0.0 : total / static_cast<double>(batches.size());
}

// Keeps only the records of steps before `step` (the ones the checkpoint covers).
void rewind_metrics(const std::string& path, int64_t step) {
  std::string kept;
  for (const std::string& line : read_complete_lines(path)) {
    try {
      auto j = nlohmann::json::parse(line);
      if (j.value("step", int64_t{0}) < step && j.value("kind", "") != "resume") kept += line + "\n";
    } catch (const nlohmann::json::exception&) {
      // a corrupt line is dropped
    }
  }
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
      const bool ours = tail.empty() || (tail.size() > 1 && tail[0] == '.' &&
                                         tail.find_first_not_of("0123456789", 1) == std::string::npos);
      if (ours && e.is_regular_file(ec)) std::filesystem::remove(e.path(), ec);
    }
  }
}

}  // namespace

std::string default_run_dir(const Config& cfg) { return cfg.train.out_dir + "/" + cfg.train.name; }

RunStatus train(Config cfg, const TrainOptions& opt) {
  const std::string dir = opt.run_dir, ckpt_path = dir + "/checkpoints/latest.safetensors";
  const int threads = cfg.train.threads > 0 ? cfg.train.threads : static_cast<int>(std::thread::hardware_concurrency());
  set_num_threads(threads);  // BLAS and the OpenMP kernels alike

  auto data = make_data(cfg, opt.resume && std::filesystem::exists(dir + "/vocab.json") && cfg.data.source == SourceKind::Text ? dir + "/vocab.json" : "");
  make_dirs(dir + "/checkpoints");  // after the data loaded: bad data leaves no run directory behind
  remove_stale_temp_files(dir);
  nlohmann::json config_json = to_json(cfg);
  config_json["derived"] = derived_json(cfg);
  const int B = cfg.train.batch_size, T = cfg.model.block_size, L = cfg.model.n_layer;
  const int64_t max_iters = cfg.train.max_iters;

  Model model(cfg.model);
  std::vector<ParamRef> refs;
  for (const auto& p : model.parameters()) refs.push_back({p.name, p.tensor, decays(p.info, cfg.optim)});
  auto optimizer = make_optimizer(cfg.optim, refs);
  Rng rng(cfg.train.seed);
  int64_t start_step = 0;
  double best_val = kInf, wall_before = 0.0;
  std::vector<double> update_norms;

  bool resume = opt.resume;
  if (resume && !std::filesystem::exists(ckpt_path)) {
    std::printf("%s: no checkpoint yet (the run stopped before its first one); starting from step 0\n", dir.c_str());
    resume = false;
  }
  if (resume) {
    Checkpoint c = load_checkpoint(ckpt_path, model, *optimizer, config_json);
    const auto& st = c.train_state;
    try {  // a hand-edited or foreign train_state: a clear error, not an internal one
      start_step = st.at("step").get<int64_t>();
      rng.set_state(rng_from_json(st.at("rng")));
      best_val = st.at("best_val_loss").is_null() ? kInf : st.at("best_val_loss").get<double>();
      wall_before = st.value("wall_seconds", 0.0);
      update_norms = st.at("last_update_norms").get<std::vector<double>>();
    } catch (const nlohmann::json::exception& e) {
      throw Error(ckpt_path + ": train_state is malformed: " + e.what());
    } catch (const std::logic_error& e) {  // std::stoull on a bad rng word
      throw Error(ckpt_path + ": train_state.rng is malformed: " + e.what());
    }
    if (start_step < 0 || start_step > max_iters)
      throw Error(ckpt_path + ": train_state.step " + std::to_string(start_step) + " is outside [0, train.max_iters=" +
                  std::to_string(max_iters) + "]");
    truncate_torn_tail(dir + "/metrics.jsonl");
    rewind_metrics(dir + "/metrics.jsonl", start_step);
  } else {
    model.init_weights(cfg.train.seed);
    write_file_atomic(dir + "/config.json", config_json.dump(2) + "\n");
    write_file_atomic(dir + "/metrics.jsonl", "");
  }
  if (cfg.data.source == SourceKind::Text && !resume) {
    // The vocabulary is part of the run: sampling and resuming must not depend on the corpus file.
    if (auto* text = dynamic_cast<TextSource*>(data.get())) text->save_vocab(dir + "/vocab.json");
  }
  LineLog metrics(dir + "/metrics.jsonl");
  const nlohmann::json refs_json = to_json(data->reference_losses(T));

  const std::vector<Batch> val_batches = data->eval_batches(cfg.train.eval_iters, B, T, false);
  const std::vector<Batch> train_eval_batches = data->eval_batches(cfg.train.eval_iters, B, T, true);

  std::printf("%s\n%s%s -> %s\n", describe_model(cfg, model.num_parameters()).c_str(),
              resume ? "resuming at step " : "training", resume ? std::to_string(start_step).c_str() : "",
              dir.c_str());
  std::printf("reference losses: uniform %.4f, unigram %.4f, optimal %s\n", refs_json["uniform"].get<double>(),
              refs_json["unigram"].get<double>(), refs_json["optimal"].is_null() ? "unknown" : std::to_string(refs_json["optimal"].get<double>()).c_str());
  std::fflush(stdout);
  metrics.write_line(nlohmann::json{{"step", start_step},
                                    {"kind", resume ? "resume" : "start"},
                                    {"n_layer", L},
                                    {"n_params", model.num_parameters()},
                                    {"wiring", wiring_id(cfg.model)},
                                    {"formula", describe_wiring(cfg.model)},
                                    {"reference_losses", refs_json},
                                    {"tokens_per_step", B * T},
                                    {"layer_metrics", layer_metrics_json()}}
                         .dump());

  double last_train_loss = NAN, last_val = NAN, last_train_eval = NAN;
  int64_t last_eval_step = -1;
  nlohmann::json divergence = nullptr;  // {step, reason, blocks} once the run diverged
  RunStatus status = RunStatus::kCompleted;
  const auto t_start = Clock::now();
  auto window_start = Clock::now();
  int64_t window_steps = 0;
  double ms_avg = 0.0;

  auto write_summary = [&](const char* state, int64_t steps_done) {
    const double wall = wall_before + seconds_since(t_start);
    nlohmann::json s = {{"status", state},
                        {"final_train_loss", finite_or_null(last_train_eval)},
                        {"final_val_loss", finite_or_null(last_val)},
                        {"final_eval_step", last_eval_step < 0 ? nlohmann::json(nullptr) : nlohmann::json(last_eval_step)},
                        {"best_val_loss", finite_or_null(best_val)},
                        {"last_batch_loss", finite_or_null(last_train_loss)},
                        {"reference_losses", refs_json},
                        {"steps", steps_done},
                        {"max_iters", max_iters},
                        {"wall_seconds", wall},
                        {"tokens_per_sec", wall > 0 ? static_cast<double>(steps_done - start_step) * B * T / seconds_since(t_start) : 0.0},
                        {"diverged", !divergence.is_null()},
                        {"divergence", divergence},
                        {"wiring", wiring_id(cfg.model)},
                        {"n_layer", L},
                        {"version", STACKLAB_VERSION},
                        {"command", opt.command_line}};
    write_file_atomic(dir + "/summary.json", s.dump(2) + "\n");
  };
  auto checkpoint = [&](int64_t next_step) {
    nlohmann::json st = {{"step", next_step},
                         {"optimizer_steps", optimizer->steps()},
                         {"rng", rng_to_json(rng.state())},
                         {"best_val_loss", finite_or_null(best_val)},
                         {"wall_seconds", wall_before + seconds_since(t_start)},
                         {"last_update_norms", update_norms}};
    save_checkpoint(ckpt_path, model, *optimizer, config_json, st);
  };
  auto evaluate = [&](int64_t step) {
    last_eval_step = step;
    last_val = eval_loss(model, val_batches);
    last_train_eval = eval_loss(model, train_eval_batches);
    if (last_val < best_val) best_val = last_val;
    metrics.write_line(nlohmann::json{{"step", step}, {"kind", "eval"}, {"val_loss", finite_or_null(last_val)},
                                      {"train_loss", finite_or_null(last_train_eval)}}
                           .dump());
    std::printf("%sstep %lld/%lld | eval: val loss %.4f, train loss %.4f\n", opt.progress_tty ? "\r\033[K" : "",
                static_cast<long long>(step), static_cast<long long>(max_iters), last_val, last_train_eval);
    std::fflush(stdout);
  };

  write_summary("running", start_step);
  int64_t step = start_step;
  for (; step < max_iters; ++step) {
    if (step % cfg.train.eval_interval == 0) evaluate(step);
    const auto t0 = Clock::now();
    Batch batch = data->train_batch(B, T, rng);
    const bool layer_step = step % cfg.log.layer_interval == 0;
    ForwardTrace trace;
    std::vector<double> stream_grads;
    Tensor logits = model.forward(batch.x, B, T, layer_step ? &trace : nullptr);
    Tensor loss = Model::loss(logits, batch.y);
    if (layer_step) hook_stream_grads(trace, stream_grads);
    loss.backward();
    last_train_loss = static_cast<double>(loss.item());
    const double gnorm = global_grad_norm(refs);

    LayerStats stats;
    if (layer_step || !std::isfinite(gnorm) || !std::isfinite(last_train_loss)) {
      if (!layer_step) {  // re-measure what we can for the divergence report
        trace = ForwardTrace{};
      }
      stats = measure_layers(model, trace, stream_grads, update_norms);
      nlohmann::json rec = to_json(stats, cfg.log.params);
      rec["step"] = step;
      rec["kind"] = "layers";
      rec["loss"] = finite_or_null(last_train_loss);
      metrics.write_line(rec.dump());
    }
    if (!std::isfinite(gnorm) || !std::isfinite(last_train_loss)) {
      nlohmann::json blocks = nlohmann::json::array();
      for (int l = 0; l < L; ++l)
        if (!std::isfinite(stats.at("grad_norm")[static_cast<size_t>(l)])) blocks.push_back(l);
      const std::string reason = !std::isfinite(last_train_loss) ? "non-finite loss" : "non-finite gradient norm";
      divergence = {{"step", step}, {"reason", reason}, {"blocks", blocks}};
      metrics.write_line(nlohmann::json{{"step", step}, {"kind", "diverged"}, {"reason", reason}, {"blocks", blocks}}.dump());
      std::printf("%sstep %lld: diverged (%s, %zu blocks non-finite); the run stops here without applying "
                  "this step\n",
                  opt.progress_tty ? "\r\033[K" : "", static_cast<long long>(step), reason.c_str(), blocks.size());
      status = RunStatus::kDiverged;
      break;
    }

    if (cfg.optim.grad_clip > 0) clip_grad_norm(refs, cfg.optim.grad_clip);
    const double lr = learning_rate_at(cfg.optim, step, max_iters);
    optimizer->step(static_cast<float>(lr));
    update_norms = optimizer->last_update_norms();
    optimizer->zero_grad();

    const double ms = 1000.0 * seconds_since(t0);
    ms_avg = window_steps == 0 ? ms : ms_avg + (ms - ms_avg) / static_cast<double>(window_steps + 1);
    ++window_steps;
    if (step % cfg.log.log_interval == 0 || step == max_iters - 1) {
      const double tok_s = static_cast<double>(window_steps) * B * T / seconds_since(window_start);
      metrics.write_line(nlohmann::json{{"step", step}, {"kind", "train"}, {"loss", last_train_loss}, {"lr", lr},
                                        {"grad_norm", gnorm}, {"tokens_per_sec", tok_s}, {"ms_per_step", ms_avg}}
                             .dump());
      std::printf("%sstep %lld/%lld | loss %.4f | lr %.2e | grad norm %.3g | %.1f ms/step | %.0f tok/s | ETA %s\n",
                  opt.progress_tty ? "\r\033[K" : "", static_cast<long long>(step), static_cast<long long>(max_iters),
                  last_train_loss, lr, gnorm, ms_avg, tok_s,
                  format_eta(static_cast<double>(max_iters - step - 1) * ms_avg / 1000.0).c_str());
      std::fflush(stdout);
      window_start = Clock::now();
      window_steps = 0;
    } else if (opt.progress_tty) {
      std::printf("\r\033[Kstep %lld/%lld | loss %.4f | %.1f ms/step", static_cast<long long>(step),
                  static_cast<long long>(max_iters), last_train_loss, ms_avg);
      std::fflush(stdout);
    }
    if (cfg.train.ckpt_interval > 0 && (step + 1) % cfg.train.ckpt_interval == 0 && step + 1 < max_iters)
      checkpoint(step + 1);
    if (opt.stop && opt.stop->load() != 0) {
      ++step;
      checkpoint(step);
      status = RunStatus::kInterrupted;
      std::printf("\nstopped by signal after step %lld; checkpoint written. Continue with: stacklab train --resume %s\n",
                  static_cast<long long>(step - 1), dir.c_str());
      break;
    }
  }
  if (status == RunStatus::kCompleted) {
    evaluate(max_iters);
    checkpoint(max_iters);
    step = max_iters;
  }
  write_summary(status == RunStatus::kCompleted ? "completed"
                : status == RunStatus::kDiverged ? "diverged"
                                                 : "interrupted",
                step);
  std::printf("%s: %s after %lld steps; val loss %.4f (best %.4f); %s/summary.json\n",
              status == RunStatus::kCompleted ? "done" : "stopped",
              status == RunStatus::kCompleted ? "completed" : status == RunStatus::kDiverged ? "diverged" : "interrupted",
              static_cast<long long>(step), last_val, best_val, dir.c_str());
  return status;
}

}  // namespace sl
