// `stacklab bench CONFIG [--steps N] [--warmup W] [--threads T] [--rounds R] [--no-ceiling]
// [--profile] [--json]
// [--section.key=value ...]` times full training steps (forward, backward, optimizer) and reports
// ms/step, its split, tokens/s, GFLOP/s (formula in train/bench.h), peak RSS, and the ratio to the
// sgemm ceiling on the model's own Linear shapes, timed in R rounds between blocks of the steps.
// `stacklab bench --sgemm [CONFIG] [--threads T] [--json]` times OpenBLAS sgemm on the shapes of
// CONFIG's Linear layers (default: configs/bench/b5.json from the current directory): the
// machine's own ceiling.
// --profile: then N more steps with the op profile on (util/profile.h), printed as a table of
// every op's forward and backward time per step, each split into sgemm and the rest.
#include <algorithm>
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/loader.h"
#include "core/blas.h"
#include "core/fpmode.h"
#include "train/bench.h"

namespace sl {
namespace {

int run_sgemm(const Args& a, const Config& cfg) {
  const int threads = static_cast<int>(a.get_int("threads", 0));
  set_flush_subnormals(
      cfg.train.flush_subnormals);  // threads time_gemms adds are made by this flushed one
  const auto shapes = model_gemm_shapes(cfg.model, cfg.train.batch_size, cfg.model.block_size);
  const auto timings = time_gemms(shapes, threads);
  const double ceiling = gemm_ceiling_gflops(timings);
  // A libxsmm build times its own path on the same shapes too (each shape's path is fixed by its
  // shape).
  const auto build =
      has_libxsmm() ? time_gemms(shapes, threads, 0.2, false) : std::vector<GemmTiming>{};
  if (a.has("json")) {
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < timings.size(); ++i) {
      const auto& t = timings[i];
      rows.push_back({{"name", t.shape.name},
                      {"M", t.shape.M},
                      {"N", t.shape.N},
                      {"K", t.shape.K},
                      {"trans_a", t.shape.trans_a},
                      {"trans_b", t.shape.trans_b},
                      {"ms", t.ms},
                      {"gflops", t.gflops}});
      if (!build.empty()) rows.back()["build_gflops"] = build[i].gflops;
    }
    nlohmann::json j = {{"config", cfg.source_path},
                        {"threads", threads},
                        {"shapes", rows},
                        {"ceiling_gflops", ceiling},
                        {"matmul", matmul_path()},
                        {"flush_subnormals", flush_subnormals_on()}};
    if (!build.empty()) j["ceiling_build_gflops"] = gemm_ceiling_gflops(build);
    std::printf("%s\n", j.dump().c_str());
    return kExitOk;
  }
  std::printf("sgemm on the Linear shapes of %s (B*T = %d rows), %d threads\n",
              cfg.source_path.c_str(), cfg.train.batch_size * cfg.model.block_size, threads);
  std::printf("  %-16s %6s %6s %6s  %5s %9s %9s%s\n", "gemm", "M", "N", "K", "op", "ms", "GFLOP/s",
              build.empty() ? "" : "  build GFLOP/s");
  for (size_t i = 0; i < timings.size(); ++i) {
    const auto& t = timings[i];
    std::printf("  %-16s %6lld %6lld %6lld  %c%c %9.3f %9.1f", t.shape.name.c_str(),
                static_cast<long long>(t.shape.M), static_cast<long long>(t.shape.N),
                static_cast<long long>(t.shape.K), t.shape.trans_a ? 'T' : 'N',
                t.shape.trans_b ? 'T' : 'N', t.ms, t.gflops);
    if (!build.empty()) std::printf("  %13.1f", build[i].gflops);
    std::printf("\n");
  }
  std::printf("ceiling (total FLOPs / total time over these shapes): %.1f GFLOP/s OpenBLAS\n",
              ceiling);
  if (!build.empty())
    std::printf("this build's path (%s): %.1f GFLOP/s\n", matmul_path().c_str(),
                gemm_ceiling_gflops(build));
  return kExitOk;
}

// The op profile as a table, the costliest rows first.
void print_profile(const BenchResult& r) {
  std::vector<ProfileRow> rows = r.profile;
  auto total = [](const ProfileRow& p) { return p.forward_ms + p.backward_ms; };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const ProfileRow& a, const ProfileRow& b) { return total(a) > total(b); });
  double sgemm = 0;
  for (const ProfileRow& p : rows) sgemm += p.forward_sgemm_ms + p.backward_sgemm_ms;
  std::printf(
      "  op profile, %.2f ms per profiled step (%.2f ms of it in sgemm, %.0f %%); ms per step, "
      "each split as sgemm + rest:\n",
      r.profiled_step_ms, sgemm, 100.0 * sgemm / r.profiled_step_ms);
  if (r.threads > 1)
    std::printf(
        "    (%d threads: the sgemm columns add up the time of every thread in a split product, so "
        "they can exceed the op's wall time)\n",
        r.threads);
  std::printf("    %-42s %7s %17s %17s %6s\n", "op", "calls", "forward", "backward", "share");
  for (const ProfileRow& p : rows)
    std::printf("    %-42s %7.0f %7.2f (%7.2f) %7.2f (%7.2f) %5.1f%%\n", p.op.c_str(), p.calls,
                p.forward_ms, p.forward_sgemm_ms, p.backward_ms, p.backward_sgemm_ms,
                100.0 * total(p) / r.profiled_step_ms);
}

// The FMA peak's line: the best of its rounds and step/peak, with what says the machine was
// loaded when anything does; a best round below a product beside it is no peak, so no ratio.
void print_peak(const nlohmann::json& j, const BenchResult& r) {
  std::string signs;
  for (const auto& s : j["peak_load_signs"])
    signs += (signs.empty() ? "" : "; ") + s.get<std::string>();
  if (j["fma_peak_gflops"].is_null()) {
    std::printf(
        "  peak       not measured: the machine was loaded (%s); no step/peak ratio (run bench "
        "again on idle cores)\n",
        signs.c_str());
    return;
  }
  std::printf(
      "  peak       %8.2f GFLOP/s FP32 FMA in registers (%s, %d threads, best of %zu short rounds "
      "between the products); step/peak %.2f%s\n",
      j["fma_peak_gflops"].get<double>(), r.peak_isa.c_str(), r.threads, r.peak_gflops.size(),
      j["peak_ratio"].get<double>(), j["peak_loaded"].get<bool>() ? ", not clean:" : "");
  if (j["peak_loaded"].get<bool>())
    std::printf("             the machine was loaded (%s); run bench again on idle cores\n",
                signs.c_str());
}

}  // namespace

int cmd_bench(const ArgList& argv) {
  Args a = parse_args("bench", argv, {"steps", "warmup", "threads", "rounds"},
                      {"json", "sgemm", "no-ceiling", "profile"}, true);
  if (a.positional.size() > 1) throw Error("expected one CONFIG file");
  if (a.positional.empty() && !a.has("sgemm")) throw Error("expected a CONFIG file (or --sgemm)");
  const std::string path =
      a.positional.empty() ? std::string("configs/bench/b5.json") : a.positional[0];
  Config cfg = load_config(path, a.overrides);
  // 0: every core, as train.threads (which refuses a negative count too).
  if (a.has("threads")) cfg.train.threads = a.get_int_in("threads", 0, 0, 4096);
  if (a.has("sgemm")) {
    for (const char* f : {"steps", "warmup", "rounds", "no-ceiling", "profile"})
      if (a.has(f))
        throw Error(std::string("--") + f +
                    " does not apply to --sgemm, which times the products alone (no steps)");
    return run_sgemm(a, cfg);
  }

  BenchOptions opt;
  constexpr int kMaxSteps = 1000000;
  opt.steps = a.get_int_in("steps", opt.steps, 1, kMaxSteps);
  opt.warmup = a.get_int_in("warmup", opt.warmup, 0, kMaxSteps);
  opt.threads = cfg.train.threads;
  opt.rounds = a.get_int_in("rounds", opt.rounds, 1, kMaxSteps);
  opt.ceiling = !a.has("no-ceiling");
  opt.profile = a.has("profile");
  const BenchResult r = run_bench(cfg, opt);
  const nlohmann::json j = to_json(r, cfg);
  if (a.has("json")) {
    std::printf("%s\n", j.dump().c_str());
    return kExitOk;
  }
  const ModelConfig& m = cfg.model;
  std::printf(
      "bench %s: %d layers x %d wide, %d heads, T %d, B %d, vocab %d; %lld parameters (%lld in "
      "Linear "
      "weights); %d threads, %d steps after %d warm-up\n",
      path.c_str(), m.n_layer, m.n_embd, m.n_head, m.block_size, cfg.train.batch_size, m.vocab_size,
      static_cast<long long>(r.n_params), static_cast<long long>(r.n_matmul_params), r.threads,
      opt.steps, opt.warmup);
  std::printf("  step       %8.2f ms median (min %.2f, max %.2f)\n", j["ms_per_step"].get<double>(),
              j["ms_min"].get<double>(), j["ms_max"].get<double>());
  std::printf("  forward    %8.2f ms\n  backward   %8.2f ms\n  optimizer  %8.2f ms\n",
              j["forward_ms"].get<double>(), j["backward_ms"].get<double>(),
              j["optimizer_ms"].get<double>());
  std::printf("  tokens/s   %8.0f\n", j["tokens_per_sec"].get<double>());
  std::printf("  GFLOP/s    %8.2f  (%.3g FLOPs/step = 6*N_matmul*B*T + 12*L*B*T^2*C, full T^2)\n",
              j["gflops"].get<double>(), r.flops_per_step);
  std::printf("  peak RSS   %8.1f MB (%.0f page faults per timed step)\n",
              j["peak_rss_mb"].get<double>(), r.page_faults_per_step);
  if (j.contains("ceiling_gflops"))
    std::printf(
        "  ceiling    %8.2f GFLOP/s OpenBLAS sgemm on this model's Linear shapes, %d threads "
        "(median of %zu "
        "rounds alternating with the steps); step/ceiling %.2f\n",
        j["ceiling_gflops"].get<double>(), r.threads, r.ceiling_gflops.size(),
        j["ceiling_ratio"].get<double>());
  if (j.contains("ceiling_build_gflops"))
    std::printf(
        "  ceiling    %8.2f GFLOP/s this build's path (%s) on the same shapes; step/ceiling %.2f\n",
        j["ceiling_build_gflops"].get<double>(), matmul_path().c_str(),
        j["ceiling_build_ratio"].get<double>());
  if (j.contains("fma_peak_gflops")) print_peak(j, r);
  std::printf("  numerics   matrix products %s; OpenBLAS kernels %s; vector loops %s\n",
              matmul_path().c_str(), openblas_core().c_str(), simd_clone().c_str());
  if (!r.profile.empty()) print_profile(r);
  return kExitOk;
}

}  // namespace sl
