// Step timing and the sgemm ceiling for `stacklab bench` (formulas in bench.h).
#include "train/bench.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "core/blas.h"
#include "core/fpmode.h"
#include "core/ops.h"
#include "core/rng.h"
#include "nn/dropout.h"
#include "nn/model.h"
#include "train/optimizer.h"
#include "train/setup.h"
#include "util/error.h"
#include "util/peak.h"
#include "util/profile.h"

namespace sl {
namespace {

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int resolve_threads(int requested) {
  return requested > 0 ? requested : static_cast<int>(std::thread::hardware_concurrency());
}

// One short round of the FMA peak.
void time_peak(BenchResult& r) {
  const FmaPeak peak = fma_peak(r.threads, 0.02);
  r.peak_gflops.push_back(peak.gflops);
  r.peak_isa = peak.isa;
}

// One round of the ceiling: OpenBLAS on the config's Linear shapes and, in a libxsmm build, the
// build's own path on them too (short timings: the rounds give the repeats), with a short round
// of the FMA peak before, between and after them, so that the peak's best round sees no less
// of the machine than the products beside it.
void time_ceiling(BenchResult& r, const std::vector<GemmShape>& shapes) {
  time_peak(r);
  r.ceiling_gflops.push_back(gemm_ceiling_gflops(time_gemms(shapes, r.threads, 0.02, true)));
  time_peak(r);
  if (has_libxsmm()) {
    r.ceiling_build_gflops.push_back(
        gemm_ceiling_gflops(time_gemms(shapes, r.threads, 0.02, false)));
    time_peak(r);
  }
}

// The CPUs this process may run on (its affinity mask), else the hardware's count.
int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::thread::hardware_concurrency());
}

// `steps` more training steps with the op profile on: r.profile and r.profiled_step_ms. Apart
// from the timed steps, so that the profile's clocks never touch their figures.
void profile_steps(BenchResult& r, Model& model, Optimizer& optimizer, const Batch& batch, int B,
                   int T, int accum, const ForwardMode& mode, float lr, int steps) {
  double fwd_ms = 0, bwd_ms = 0, opt_ms = 0;
  std::vector<op_profile::Row> rows;
  {
    op_profile::Scope scope;
    for (int s = 0; s < steps; ++s) {
      op_profile::mark();
      for (int m = 0; m < accum; ++m) {  // the timed step's micro-batches (run_bench)
        const auto t0 = Clock::now();
        Tensor loss = Model::loss(model.forward(batch.x, B, T, mode), batch.y);
        if (accum > 1) loss = scale(loss, 1.0f / static_cast<float>(accum));
        const auto t1 = Clock::now();
        loss.backward();
        fwd_ms += ms_between(t0, t1);
        bwd_ms += ms_between(t1, Clock::now());
      }
      const auto t2 = Clock::now();
      optimizer.step(lr);
      optimizer.zero_grad();
      opt_ms += ms_between(t2, Clock::now());
    }
    rows = op_profile::rows();
  }
  const double n = steps;
  double fwd_rows = 0, bwd_rows = 0;
  for (const auto& row : rows) {
    ProfileRow p{
        row.op,
        static_cast<double>(row.forward_calls ? row.forward_calls : row.backward_calls) / n,
        row.forward_ms / n,
        row.forward_sgemm_ms / n,
        row.backward_ms / n,
        row.backward_sgemm_ms / n};
    fwd_rows += p.forward_ms;
    bwd_rows += p.backward_ms;
    r.profile.push_back(p);
  }
  r.profile.push_back({"optimizer (step + zero_grad)", 1, 0, 0, opt_ms / n, 0});
  r.profile.push_back({"(forward: after the last recorded op)", 1, fwd_ms / n - fwd_rows, 0, 0, 0});
  r.profile.push_back(
      {"(backward: the sweep's sort and release)", 1, 0, 0, bwd_ms / n - bwd_rows, 0});
  r.profiled_step_ms = (fwd_ms + bwd_ms + opt_ms) / n;
}

}  // namespace

double median(std::vector<double> v) {
  SL_CHECK(!v.empty(), "median of an empty list");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double train_step_flops(const ModelConfig& m, int64_t B, int64_t T, int64_t n_matmul_params) {
  const double tokens = static_cast<double>(B * T);
  const double attn = m.attention ? 12.0 * m.n_layer * static_cast<double>(B) *
                                        static_cast<double>(T * T) * m.n_embd
                                  : 0.0;
  return 6.0 * static_cast<double>(n_matmul_params) * tokens + attn;
}

BenchResult run_bench(Config cfg, const BenchOptions& opt) {
  if (opt.steps < 1) throw Error("--steps must be >= 1, got " + std::to_string(opt.steps));
  if (opt.warmup < 0) throw Error("--warmup must be >= 0, got " + std::to_string(opt.warmup));
  BenchResult r;
  r.threads = resolve_threads(opt.threads > 0 ? opt.threads : cfg.train.threads);
  r.loadavg = load_average();  // what else ran on the cores before the bench started
  r.cpus = usable_cpus();
  set_num_threads(r.threads);
  set_flush_subnormals(cfg.train.flush_subnormals);

  auto data = make_data(cfg);
  const int B = cfg.train.batch_size, T = cfg.model.block_size;
  Model model(cfg.model);
  model.init_weights(cfg.train.seed);
  std::vector<ParamRef> refs;
  for (const auto& p : model.parameters()) {
    refs.push_back({p.name, p.tensor, true});
    r.n_params += p.tensor.numel();
    if (p.info.role == ParamRole::Weight) r.n_matmul_params += p.tensor.numel();
  }
  if (cfg.model.tie_weights)
    r.n_matmul_params += static_cast<int64_t>(cfg.model.vocab_size) * cfg.model.n_embd;
  auto optimizer = make_optimizer(cfg.optim, refs);
  Rng rng(cfg.train.seed);
  const Batch batch = data->train_batch(B, T, rng);  // one fixed batch: data loading is not timed
  const int accum = cfg.train.grad_accum_steps;
  r.tokens_per_step = static_cast<int64_t>(B) * T * accum;
  r.flops_per_step = accum * train_step_flops(cfg.model, B, T, r.n_matmul_params);
  const auto lr = static_cast<float>(cfg.optim.learning_rate);
  Rng dropout_rng(cfg.train.seed ^ 0xd409c0ffee5eedULL);  // as the trainer's
  const ForwardMode mode = ForwardMode::train(static_cast<float>(cfg.model.dropout), dropout_rng);

  // The ceiling is timed between blocks of steps (alternating), so that both see the same load.
  const auto shapes = model_gemm_shapes(cfg.model, B, T);
  const int rounds = opt.ceiling ? std::max(1, std::min(opt.rounds, opt.steps)) : 1;
  long faults = 0;
  for (int s = 0; s < opt.warmup + opt.steps; ++s) {
    const int timed = s - opt.warmup;
    if (opt.ceiling && timed > 0 &&
        timed * rounds / opt.steps != (timed - 1) * rounds / opt.steps) {
      // after each block of steps/rounds steps; its page faults are not the step's
      rusage ru{};
      getrusage(RUSAGE_SELF, &ru);
      faults += ru.ru_minflt + ru.ru_majflt;
      if (r.peak_rss_kb == 0)
        r.peak_rss_kb = ru.ru_maxrss;  // the steps' peak, before the ceiling's matrices
      time_ceiling(r, shapes);
      getrusage(RUSAGE_SELF, &ru);
      faults -= ru.ru_minflt + ru.ru_majflt;
    }
    if (s == opt.warmup) {
      rusage ru{};
      getrusage(RUSAGE_SELF, &ru);
      faults -= ru.ru_minflt + ru.ru_majflt;
    }
    // The trainer's step (train/trainer.cpp accumulate): train.grad_accum_steps micro-batches
    // (the fixed batch each time), each forward in train mode with model.dropout's masks, the
    // loss scaled by 1/grad_accum_steps; forward_ms and backward_ms add up the micro-batches'.
    Clock::duration fwd{}, bwd{};
    const auto t0 = Clock::now();
    for (int m = 0; m < accum; ++m) {
      const auto f0 = Clock::now();
      Tensor loss = Model::loss(model.forward(batch.x, B, T, mode), batch.y);
      r.final_loss = static_cast<double>(loss.item());
      if (accum > 1) loss = scale(loss, 1.0f / static_cast<float>(accum));
      const auto f1 = Clock::now();
      loss.backward();
      fwd += f1 - f0;
      bwd += Clock::now() - f1;
    }
    const auto t2 = Clock::now();
    optimizer->step(lr);
    optimizer->zero_grad();
    const auto t3 = Clock::now();
    if (s < opt.warmup) continue;
    r.forward_ms.push_back(std::chrono::duration<double, std::milli>(fwd).count());
    r.backward_ms.push_back(std::chrono::duration<double, std::milli>(bwd).count());
    r.optimizer_ms.push_back(ms_between(t2, t3));
    r.step_ms.push_back(ms_between(t0, t3));
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  // The steady state allocates nothing new (0 page faults per step), so the peak measured before
  // the first ceiling round is the steps' own; the ceiling's matrices never count.
  if (r.peak_rss_kb == 0) r.peak_rss_kb = ru.ru_maxrss;
  r.page_faults_per_step = static_cast<double>(ru.ru_minflt + ru.ru_majflt + faults) / opt.steps;
  if (opt.ceiling) time_ceiling(r, shapes);  // the last round
  if (opt.profile) profile_steps(r, model, *optimizer, batch, B, T, accum, mode, lr, opt.steps);
  return r;
}

PeakReading peak_reading(const BenchResult& r, double step_gflops) {
  std::vector<PeakProduct> products = {{"the training step", step_gflops}};
  for (double g : r.ceiling_gflops) products.push_back({"OpenBLAS sgemm", g});
  for (double g : r.ceiling_build_gflops) products.push_back({"this build's products", g});
  return read_peak(r.peak_gflops, products, r.loadavg, r.cpus, r.threads);
}

nlohmann::json to_json(const BenchResult& r, const Config& cfg) {
  const double med = median(r.step_ms);
  const auto [lo, hi] = std::minmax_element(r.step_ms.begin(), r.step_ms.end());
  nlohmann::json j = {{"config", cfg.source_path},
                      {"model", to_json(cfg)["model"]},
                      {"batch_size", cfg.train.batch_size},
                      {"grad_accum_steps", cfg.train.grad_accum_steps},
                      {"dropout", cfg.model.dropout},
                      {"threads", r.threads},
                      {"steps", r.step_ms.size()},
                      {"n_params", r.n_params},
                      {"n_matmul_params", r.n_matmul_params},
                      {"tokens_per_step", r.tokens_per_step},
                      {"flops_per_step", r.flops_per_step},
                      {"flops_formula", "6*N_matmul*B*T + 12*L*B*T^2*C (full T^2)"},
                      {"ms_per_step", med},
                      {"ms_min", *lo},
                      {"ms_max", *hi},
                      {"forward_ms", median(r.forward_ms)},
                      {"backward_ms", median(r.backward_ms)},
                      {"optimizer_ms", median(r.optimizer_ms)},
                      {"tokens_per_sec", static_cast<double>(r.tokens_per_step) / (med / 1000.0)},
                      {"gflops", r.flops_per_step / (med * 1e6)},
                      {"peak_rss_mb", static_cast<double>(r.peak_rss_kb) / 1024.0},
                      {"page_faults_per_step", r.page_faults_per_step},
                      {"numeric_path",
                       {{"matmul", matmul_path()},
                        {"openblas_core", openblas_core()},
                        {"vector_loops", simd_clone()},
                        {"flush_subnormals", flush_subnormals_on()}}},
                      {"final_loss", r.final_loss}};
  if (!r.ceiling_gflops.empty()) {
    const double ceiling = median(r.ceiling_gflops);
    j["ceiling_gflops"] = ceiling;
    j["ceiling_rounds"] = r.ceiling_gflops.size();
    j["ceiling_ratio"] = j["gflops"].get<double>() / ceiling;
  }
  j["loadavg"] = std::isfinite(r.loadavg) ? nlohmann::json(r.loadavg) : nlohmann::json();
  j["cpus"] = r.cpus;
  if (!r.peak_gflops.empty()) {
    const PeakReading p = peak_reading(r, j["gflops"].get<double>());
    // A best round below a product measured beside it is no peak: null, with the reason.
    j["fma_peak_gflops"] = p.below_product ? nlohmann::json() : nlohmann::json(p.gflops);
    j["fma_peak_best_round_gflops"] = p.gflops;
    j["fma_peak_rounds"] = r.peak_gflops.size();
    j["fma_peak_spread"] = p.spread;
    j["fma_peak_isa"] = r.peak_isa;
    j["peak_ratio"] =
        p.below_product ? nlohmann::json() : nlohmann::json(j["gflops"].get<double>() / p.gflops);
    j["peak_loaded"] = p.loaded;
    j["peak_load_signs"] = p.signs;
  }
  if (!r.profile.empty()) {
    nlohmann::json rows = nlohmann::json::array();
    for (const ProfileRow& p : r.profile)
      rows.push_back({{"op", p.op},
                      {"calls_per_step", p.calls},
                      {"forward_ms", p.forward_ms},
                      {"forward_sgemm_ms", p.forward_sgemm_ms},
                      {"backward_ms", p.backward_ms},
                      {"backward_sgemm_ms", p.backward_sgemm_ms}});
    j["profile"] = rows;
    j["profiled_ms_per_step"] = r.profiled_step_ms;
  }
  if (!r.ceiling_build_gflops.empty()) {
    j["ceiling_build_gflops"] = median(r.ceiling_build_gflops);
    j["ceiling_build_ratio"] = j["gflops"].get<double>() / median(r.ceiling_build_gflops);
  }
  return j;
}

std::vector<GemmShape> model_gemm_shapes(const ModelConfig& m, int64_t B, int64_t T) {
  const int64_t R = B * T, C = m.n_embd, H = static_cast<int64_t>(m.mlp_ratio) * C,
                V = m.vocab_size;
  std::vector<GemmShape> out;
  // A Linear (in -> out) on R rows: y = x w^T, dx = dy w, dw = dy^T x (as core/ops/matmul.cpp).
  auto linear = [&](const std::string& name, int64_t in, int64_t outf) {
    out.push_back({name + ".fwd", R, outf, in, false, true});
    out.push_back({name + ".dx", R, in, outf, false, false});
    out.push_back({name + ".dw", outf, in, R, true, false});
  };
  if (m.attention) {
    linear("qkv", C, 3 * C);
    linear("attn.proj", C, C);
  }
  if (m.mlp) {
    linear("mlp.fc", C, H);
    linear("mlp.proj", H, C);
  }
  linear("head", C, V);
  return out;
}

std::vector<GemmTiming> time_gemms(const std::vector<GemmShape>& shapes, int threads,
                                   double min_seconds, bool openblas_only) {
  const auto product = openblas_only ? gemm_openblas : gemm;
  set_num_threads(resolve_threads(threads));
  std::vector<GemmTiming> out;
  Rng rng(1);
  for (const GemmShape& s : shapes) {
    std::vector<float> a(static_cast<size_t>(s.M * s.K)), b(static_cast<size_t>(s.K * s.N)),
        c(static_cast<size_t>(s.M * s.N), 0.0f);
    for (float& x : a) x = static_cast<float>(rng.normal());
    for (float& x : b) x = static_cast<float>(rng.normal());
    for (int i = 0; i < 3; ++i)
      product(s.trans_a, s.trans_b, s.M, s.N, s.K, 1.0f, a.data(), b.data(), 0.0f, c.data());
    std::vector<double> per_call;
    const auto start = Clock::now();
    while (per_call.size() < 5 || ms_between(start, Clock::now()) < min_seconds * 1000.0) {
      const auto t0 = Clock::now();
      product(s.trans_a, s.trans_b, s.M, s.N, s.K, 1.0f, a.data(), b.data(), 0.0f, c.data());
      per_call.push_back(ms_between(t0, Clock::now()));
    }
    GemmTiming t{s, median(per_call), 0.0};
    t.gflops = 2.0 * static_cast<double>(s.M * s.N * s.K) / (t.ms * 1e6);
    out.push_back(t);
  }
  return out;
}

double gemm_ceiling_gflops(const std::vector<GemmTiming>& t) {
  double flops = 0.0, ms = 0.0;
  for (const auto& g : t) {
    flops += 2.0 * static_cast<double>(g.shape.M * g.shape.N * g.shape.K);
    ms += g.ms;
  }
  return ms > 0 ? flops / (ms * 1e6) : 0.0;
}

}  // namespace sl
